//! Cutting a function body into the replica's basic blocks (docs/metering.md §2).
//!
//! The result is a list of charge points: where the instrumentation injects a
//! counter decrement, how much it decrements, and whether it checks for
//! overflow. Positions are indices into the body's operator list (including the
//! final `end`); a charge point at position `p` is injected just before operator `p`.

use crate::prices::operator_cost;
use wasmparser::Operator;

/// How the size operand of a bulk memory or table operation is typed on the stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeOperand {
    /// An `i32` size (wasm32 memories and tables, `memory.init`, `table.init`).
    I32,
    /// An `i64` size (wasm64 memories and tables).
    I64,
}

/// What is injected at a charge point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charge {
    /// Subtract a statically known cost; `checked` adds the `counter < 0` test
    /// (function entry and loop bodies, docs/metering.md §2).
    Static {
        /// Instructions charged for the block that starts here.
        cost: u64,
        /// Whether the injected code checks the counter for overflow.
        checked: bool,
    },
    /// Subtract the size operand on top of the stack (docs/metering.md §3: bulk
    /// memory costs 1 per byte or element, taken just before the operator runs).
    Dynamic(SizeOperand),
}

/// One injection: `charge` is inserted before operator number `position`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChargePoint {
    /// Index of the operator the charge is injected before.
    pub position: usize,
    /// What is charged there.
    pub charge: Charge,
}

/// Index types of a module's memories and tables, needed to type the size
/// operand of bulk operations.
#[derive(Clone, Debug, Default)]
pub struct IndexTypes {
    /// `true` for each memory (imported first, then defined) that is 64-bit.
    pub memories64: Vec<bool>,
    /// `true` for each table (imported first, then defined) that is 64-bit.
    pub tables64: Vec<bool>,
}

impl IndexTypes {
    fn memory(&self, index: u32) -> SizeOperand {
        Self::operand(&self.memories64, index)
    }

    fn table(&self, index: u32) -> SizeOperand {
        Self::operand(&self.tables64, index)
    }

    fn operand(is64: &[bool], index: u32) -> SizeOperand {
        match is64.get(index as usize) {
            Some(true) => SizeOperand::I64,
            _ => SizeOperand::I32,
        }
    }

    /// A copy between two 64-bit spaces takes an i64 size; otherwise an i32.
    fn copy(a: SizeOperand, b: SizeOperand) -> SizeOperand {
        if a == SizeOperand::I64 && b == SizeOperand::I64 {
            SizeOperand::I64
        } else {
            SizeOperand::I32
        }
    }

    /// Whether the main memory (memory 0) is 64-bit, which prices loads and stores.
    pub fn main_memory64(&self) -> bool {
        self.memories64.first().copied().unwrap_or(false)
    }
}

/// The charge points of one function body, in injection order.
///
/// docs/metering.md §2: the function entry is a checked point starting at cost 1;
/// after `loop` comes a checked point; after `if` an unchecked one; after `else`,
/// `br`, `br_if`, `br_table`, `end`, `return` and `unreachable` a new unchecked
/// point; a terminator's own cost belongs to the block it ends; `block` and
/// `call` do not split; unchecked points of cost zero are dropped. Bulk
/// operations get a dynamic point right before them.
pub fn charge_points(ops: &[Operator], index_types: &IndexTypes) -> Vec<ChargePoint> {
    let memory64 = index_types.main_memory64();
    let mut points = Vec::new();
    // docs/metering.md §2: an empty function costs 1.
    let mut current = (0usize, 1u64, true);
    for (position, op) in ops.iter().enumerate() {
        current.1 += operator_cost(op, memory64);
        let next_checked = match op {
            Operator::Loop { .. } => Some(true),
            Operator::If { .. }
            | Operator::Else
            | Operator::Br { .. }
            | Operator::BrIf { .. }
            | Operator::BrTable { .. }
            | Operator::End
            | Operator::Return
            | Operator::Unreachable
            | Operator::ReturnCall { .. }
            | Operator::ReturnCallIndirect { .. } => Some(false),
            _ => None,
        };
        if let Some(checked) = next_checked {
            points.push(static_point(current));
            current = (position + 1, 0, checked);
        }
        if let Some(size) = dynamic_operand(op, index_types) {
            points.push(ChargePoint {
                position,
                charge: Charge::Dynamic(size),
            });
        }
    }
    // The last operator is the body's `end`, so `current` is an empty block past
    // the end of the body; it is never injected.
    points.retain(|p| match p.charge {
        Charge::Static { cost, checked } => checked || cost > 0,
        Charge::Dynamic(_) => true,
    });
    // A stable sort keeps a dynamic point ahead of a block charge found later
    // at the same position, as the replica does.
    points.sort_by_key(|p| p.position);
    points
}

fn static_point((position, cost, checked): (usize, u64, bool)) -> ChargePoint {
    ChargePoint {
        position,
        charge: Charge::Static { cost, checked },
    }
}

/// The size operand type of a bulk operation, or `None` for other operators.
fn dynamic_operand(op: &Operator, types: &IndexTypes) -> Option<SizeOperand> {
    match op {
        Operator::MemoryFill { mem } => Some(types.memory(*mem)),
        Operator::MemoryCopy { dst_mem, src_mem } => Some(IndexTypes::copy(
            types.memory(*dst_mem),
            types.memory(*src_mem),
        )),
        Operator::TableFill { table } => Some(types.table(*table)),
        Operator::TableCopy {
            dst_table,
            src_table,
        } => Some(IndexTypes::copy(
            types.table(*dst_table),
            types.table(*src_table),
        )),
        // `memory.init` and `table.init` take an i32 size even on 64-bit spaces.
        Operator::MemoryInit { .. } | Operator::TableInit { .. } => Some(SizeOperand::I32),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statics(points: &[ChargePoint]) -> Vec<(usize, u64, bool)> {
        points
            .iter()
            .filter_map(|p| match p.charge {
                Charge::Static { cost, checked } => Some((p.position, cost, checked)),
                Charge::Dynamic(_) => None,
            })
            .collect()
    }

    #[test]
    fn empty_function_costs_one() {
        let points = charge_points(&[Operator::End], &IndexTypes::default());
        // Entry point: 1 (docs/metering.md §2) + end 0.
        assert_eq!(statics(&points), vec![(0, 1, true)]);
    }

    #[test]
    fn if_else_split() {
        use Operator::*;
        let ops = [
            I32Const { value: 1 }, // 0: 1
            If {
                blockty: wasmparser::BlockType::Empty,
            }, // 1: 2 -> entry = 1+1+2 = 4
            Nop,                   // 2: 1
            Else,                  // 3: 0 -> then-block = 1
            Nop,                   // 4: 1
            Nop,                   // 5: 1
            End,                   // 6: 0 -> else-block = 2
            End,                   // 7: 0 -> after-if block = 0, dropped
        ];
        let points = charge_points(&ops, &IndexTypes::default());
        assert_eq!(
            statics(&points),
            vec![(0, 4, true), (2, 1, false), (4, 2, false)]
        );
    }
}
