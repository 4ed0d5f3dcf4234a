//! The replica's static cost of each Wasm operator (ic-metering.md §3).
//!
//! Costs are computed on the operators of the *original* module; the code the
//! instrumentation injects is free (ic-metering.md §1).

use wasmparser::Operator;

/// Static cost, in IC instructions, of executing `op` once.
///
/// `memory64` selects the wasm64 price of loads and stores (ic-metering.md §3:
/// 1 on wasm32, 2 on wasm64). Bulk memory and table operators return only their
/// static part (100); their per-byte part is charged at run time.
pub fn operator_cost(op: &Operator, memory64: bool) -> u64 {
    use Operator::*;
    // ic-metering.md §3: loads and stores cost 1 on wasm32, 2 on wasm64.
    let memory_access = if memory64 { 2 } else { 1 };
    match op {
        // ic-metering.md §3: cost 0, block markers.
        Block { .. } | Loop { .. } | Else | End => 0,

        // ic-metering.md §3: cost 1 (wasm32) / 2 (wasm64), scalar and v128 memory access.
        I32Load { .. }
        | I64Load { .. }
        | F32Load { .. }
        | F64Load { .. }
        | I32Load8S { .. }
        | I32Load8U { .. }
        | I32Load16S { .. }
        | I32Load16U { .. }
        | I64Load8S { .. }
        | I64Load8U { .. }
        | I64Load16S { .. }
        | I64Load16U { .. }
        | I64Load32S { .. }
        | I64Load32U { .. }
        | I32Store { .. }
        | I64Store { .. }
        | F32Store { .. }
        | F64Store { .. }
        | I32Store8 { .. }
        | I32Store16 { .. }
        | I64Store8 { .. }
        | I64Store16 { .. }
        | I64Store32 { .. }
        | V128Load { .. }
        | V128Load8x8S { .. }
        | V128Load8x8U { .. }
        | V128Load16x4S { .. }
        | V128Load16x4U { .. }
        | V128Load32x2S { .. }
        | V128Load32x2U { .. }
        | V128Load8Splat { .. }
        | V128Load16Splat { .. }
        | V128Load32Splat { .. }
        | V128Load64Splat { .. }
        | V128Load32Zero { .. }
        | V128Load64Zero { .. }
        | V128Store { .. }
        | V128Load8Lane { .. }
        | V128Load16Lane { .. }
        | V128Load32Lane { .. }
        | V128Load64Lane { .. }
        | V128Store8Lane { .. }
        | V128Store16Lane { .. }
        | V128Store32Lane { .. }
        | V128Store64Lane { .. } => memory_access,

        // ic-metering.md §3: cost 2.
        GlobalGet { .. }
        | GlobalSet { .. }
        | If { .. }
        | Br { .. }
        | BrIf { .. }
        | BrTable { .. }
        | F32Add
        | F32Sub
        | F32Mul
        | F32Ceil
        | F32Floor
        | F32Trunc
        | F32Nearest
        | F64Add
        | F64Sub
        | F64Mul
        | F64Ceil
        | F64Floor
        | F64Trunc
        | F64Nearest
        | F32Copysign => 2,

        // ic-metering.md §3: cost 3.
        F32Div | F64Copysign | F32Eq | F32Ne | F32Lt | F32Gt | F32Le | F32Ge | F64Eq | F64Ne
        | F64Lt | F64Gt | F64Le | F64Ge | F32ConvertI32S | F32ConvertI64S | F64ConvertI32S
        | F64ConvertI64S => 3,

        // ic-metering.md §3: cost 5 (the current replica; an older one charged 10 per call).
        Call { .. } | F64Div | F32Sqrt | TableGet { .. } | TableSet { .. } | RefIsNull => 5,

        // ic-metering.md §3: cost 8.
        F64Sqrt => 8,

        // ic-metering.md §3: cost 10.
        I32DivS
        | I32DivU
        | I32RemS
        | I32RemU
        | I64DivS
        | I64DivU
        | I64RemS
        | I64RemU
        | CallIndirect { .. } => 10,

        // ic-metering.md §3: cost 16, unsigned int -> float.
        F32ConvertI32U | F32ConvertI64U | F64ConvertI32U | F64ConvertI64U => 16,

        // ic-metering.md §3: cost 18, float min/max.
        F32Min | F32Max | F64Min | F64Max => 18,

        // ic-metering.md §3: cost 20, memory.size and every float -> int truncation.
        MemorySize { .. }
        | I32TruncF32S
        | I32TruncF32U
        | I32TruncF64S
        | I32TruncF64U
        | I64TruncF32S
        | I64TruncF32U
        | I64TruncF64S
        | I64TruncF64U
        | I32TruncSatF32S
        | I32TruncSatF32U
        | I32TruncSatF64S
        | I32TruncSatF64U
        | I64TruncSatF32S
        | I64TruncSatF32U
        | I64TruncSatF64S
        | I64TruncSatF64U => 20,

        // ic-metering.md §3: cost 100, table.size and the static part of bulk operations.
        TableSize { .. }
        | MemoryFill { .. }
        | MemoryCopy { .. }
        | MemoryInit { .. }
        | TableFill { .. }
        | TableCopy { .. }
        | TableInit { .. } => 100,

        // ic-metering.md §3: cost 130.
        RefFunc { .. } => 130,

        // ic-metering.md §3: cost 300.
        MemoryGrow { .. } | TableGrow { .. } | DataDrop { .. } | ElemDrop { .. } => 300,

        // Tail calls are not in ic-metering.md; the replica's table (see the file
        // header of ic-metering.md) prices them 3 and 60.
        ReturnCall { .. } => 3,
        ReturnCallIndirect { .. } => 60,

        // ic-metering.md §3: "a few SIMD operators cost 2-14"; the values of the
        // replica's table.
        other => simd_cost(other),
    }
}

/// Costs of the SIMD operators that are not 1 (ic-metering.md §3 refers to the
/// replica's table for these); every other operator costs 1.
fn simd_cost(op: &Operator) -> u64 {
    use Operator::*;
    match op {
        I8x16Shuffle { .. }
        | I8x16Popcnt
        | I8x16Shl
        | I8x16ShrS
        | I32x4ExtAddPairwiseI16x8U
        | I64x2ShrS
        | I32x4TruncSatF64x2UZero => 3,
        I8x16LtU
        | I8x16GtU
        | I16x8LtU
        | I16x8GtU
        | I32x4LtU
        | I32x4GtU
        | I8x16ShrU
        | I16x8ExtAddPairwiseI8x16U
        | I16x8Shl
        | I16x8ShrS
        | I16x8ShrU
        | I16x8ExtMulHighI8x16S
        | I16x8ExtMulHighI8x16U
        | I32x4Shl
        | I32x4ShrS
        | I32x4ShrU
        | I32x4Mul
        | I32x4ExtMulLowI16x8S
        | I32x4ExtMulHighI16x8S
        | I32x4ExtMulLowI16x8U
        | I32x4ExtMulHighI16x8U
        | I64x2Shl
        | I64x2ShrU
        | F32x4Ceil
        | F32x4Floor
        | F32x4Trunc
        | F32x4Nearest
        | F32x4Abs
        | F32x4Neg
        | F32x4Add
        | F32x4Sub
        | F32x4Mul
        | F64x2Ceil
        | F64x2Floor
        | F64x2Trunc
        | F64x2Nearest
        | F64x2Abs
        | F64x2Neg
        | F64x2Add
        | F64x2Sub
        | F64x2Mul
        | I32x4TruncSatF32x4S
        | I32x4TruncSatF64x2SZero => 2,
        I64x2Mul | F32x4Min | F32x4Max | F64x2Min | I32x4TruncSatF32x4U | F32x4ConvertI32x4U => 4,
        F32x4Sqrt | F64x2Max => 5,
        F32x4Div => 10,
        F64x2Div => 12,
        F64x2Sqrt => 14,
        // ic-metering.md §3: everything not listed costs 1.
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_markers_are_free() {
        assert_eq!(operator_cost(&Operator::End, false), 0);
        assert_eq!(operator_cost(&Operator::Else, false), 0);
    }

    #[test]
    fn loads_cost_more_on_wasm64() {
        let load = Operator::I32Load {
            memarg: wasmparser::MemArg {
                align: 2,
                max_align: 2,
                offset: 0,
                memory: 0,
            },
        };
        // ic-metering.md §3: 1 on wasm32, 2 on wasm64.
        assert_eq!(operator_cost(&load, false), 1);
        assert_eq!(operator_cost(&load, true), 2);
    }

    #[test]
    fn unlisted_operators_cost_one() {
        assert_eq!(operator_cost(&Operator::I32Popcnt, false), 1);
        assert_eq!(operator_cost(&Operator::Nop, false), 1);
        assert_eq!(operator_cost(&Operator::I8x16Add, false), 1);
    }
}
