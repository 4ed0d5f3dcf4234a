//! Rewriting a canister module with the replica's instruction metering
//! (docs/metering.md §1-3).
//!
//! The output module differs from the input in these ways:
//! - a first function import `__icrun.out_of_instructions : [] -> []` (so every
//!   original function index shifts by one; calls, exports, element segments,
//!   `ref.func` and the start function are remapped);
//! - with tracing, two more imports `__icrun.trace_enter : [i32] -> []` and
//!   `__icrun.trace_exit : [i32] -> []` (indices shift by three), called with the
//!   original function index at every function entry and exit and around every
//!   call of an imported function. The body of each function is wrapped in a
//!   block so that every way out (a `return`, now a branch to that block, or a
//!   branch to the function's label) passes the exit hook. Like every injected
//!   instruction these are free: charges are computed on the original operators;
//! - a mutable `i64` global, the instruction counter, exported as
//!   `canister counter_instructions`, that the injected code counts down;
//! - a charge at the start of every basic block ([`crate::partition`]) and a call
//!   to an unmetered helper before every bulk memory/table operation;
//! - the start function is no longer a start section but the export
//!   `canister_start`, so that it runs metered after the counter is set (as the
//!   replica does);
//! - memory 0 is exported as `memory` and every mutable global is also exported
//!   as `__icrun_global_<index>` so the runtime can snapshot and restore it;
//! - table 0, if any, is also exported as `__icrun_table`, so the runtime can
//!   call inter-canister callbacks `table[fun](env)` (the replica exports the
//!   table too); table contents are function references, unaffected by the
//!   index shift;
//! - the `name` custom section is dropped; other custom sections are kept.

use crate::partition::{charge_points, Charge, ChargePoint, IndexTypes, SizeOperand};
use std::fmt;
use wasm_encoder::reencode::{self, Reencode};
use wasm_encoder::{
    CodeSection, ConstExpr, EntityType, ExportKind, ExportSection, Function, FunctionSection,
    GlobalSection, GlobalType, ImportSection, Instruction, Module, SectionId, TypeSection, ValType,
};
use wasmparser::{ExternalKind, Operator, Parser, Payload, TypeRef};

/// Import module of the functions the instrumentation adds.
pub const HOST_MODULE: &str = "__icrun";
/// Name of the imported function the injected code calls when the counter goes negative.
pub const OUT_OF_INSTRUCTIONS: &str = "out_of_instructions";
/// Name of the imported trace hook called at function entries (tracing only).
pub const TRACE_ENTER: &str = "trace_enter";
/// Name of the imported trace hook called at function exits (tracing only).
pub const TRACE_EXIT: &str = "trace_exit";
/// Export name of the instruction counter global (the replica's name, docs/metering.md §1).
pub const COUNTER_EXPORT: &str = "canister counter_instructions";
/// Export name of the module's start function, if it had one.
pub const START_EXPORT: &str = "canister_start";
/// Export name of memory 0.
pub const MEMORY_EXPORT: &str = "memory";
/// Prefix of the extra exports of mutable globals (`__icrun_global_<index>`).
pub const GLOBAL_EXPORT_PREFIX: &str = "__icrun_global_";
/// Export name of table 0 (callbacks of inter-canister calls are its entries).
pub const TABLE_EXPORT: &str = "__icrun_table";

/// Why a module could not be instrumented.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstrumentError {
    /// The bytes are not a valid core Wasm module.
    Parse(String),
    /// The module exports a name the runtime reserves.
    ReservedExport(String),
    /// The module uses a feature the instrumentation cannot rewrite.
    Unsupported(String),
}

impl fmt::Display for InstrumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstrumentError::Parse(msg) => write!(f, "invalid Wasm module: {msg}"),
            InstrumentError::ReservedExport(name) => {
                write!(f, "the module exports the reserved name '{name}'")
            }
            InstrumentError::Unsupported(msg) => write!(f, "unsupported Wasm module: {msg}"),
        }
    }
}

impl std::error::Error for InstrumentError {}

impl From<wasmparser::BinaryReaderError> for InstrumentError {
    fn from(e: wasmparser::BinaryReaderError) -> Self {
        InstrumentError::Parse(e.to_string())
    }
}

impl<E: fmt::Debug> From<reencode::Error<E>> for InstrumentError {
    fn from(e: reencode::Error<E>) -> Self {
        InstrumentError::Parse(format!("{e:?}"))
    }
}

/// An instrumented module and what the runtime needs to know about it.
#[derive(Debug, Clone)]
pub(crate) struct Instrumented {
    /// The rewritten module binary.
    pub wasm: Vec<u8>,
    /// Whether memory 0 is 64-bit (docs/metering.md §3 and §6 price wasm64 differently).
    pub memory64: bool,
    /// Whether the module carries trace hooks.
    pub tracing: bool,
}

/// Reads the custom section `name` of a module (e.g. `icp:public candid:service`).
///
/// Returns `Ok(None)` when the module has no such section.
pub(crate) fn custom_section(wasm: &[u8], name: &str) -> Result<Option<Vec<u8>>, InstrumentError> {
    for payload in Parser::new(0).parse_all(wasm) {
        if let Payload::CustomSection(section) = payload? {
            if section.name() == name {
                return Ok(Some(section.data().to_vec()));
            }
        }
    }
    Ok(None)
}

/// Facts about the original module gathered before rewriting it.
#[derive(Debug, Default)]
struct ModuleFacts {
    type_count: u32,
    /// The results of each function type (by type index).
    type_results: Vec<Vec<wasmparser::ValType>>,
    /// The type index of each defined function.
    function_types: Vec<u32>,
    imported_globals: u32,
    defined_globals: u32,
    mutable_globals: Vec<u32>,
    index_types: IndexTypes,
    start: Option<u32>,
    imported_functions: u32,
    defined_functions: u32,
    memory0_exported: bool,
}

fn scan(wasm: &[u8]) -> Result<ModuleFacts, InstrumentError> {
    let mut facts = ModuleFacts::default();
    for payload in Parser::new(0).parse_all(wasm) {
        match payload? {
            Payload::Version {
                encoding: wasmparser::Encoding::Component,
                ..
            } => {
                return Err(InstrumentError::Unsupported(
                    "components are not canister modules".into(),
                ))
            }
            Payload::TypeSection(section) => {
                for group in section {
                    for ty in group?.types() {
                        facts.type_count += 1;
                        let results = match &ty.composite_type.inner {
                            wasmparser::CompositeInnerType::Func(func) => func.results().to_vec(),
                            _ => Vec::new(),
                        };
                        facts.type_results.push(results);
                    }
                }
            }
            Payload::ImportSection(section) => {
                for import in section.into_imports() {
                    let import = import?;
                    match import.ty {
                        TypeRef::Func(_) | TypeRef::FuncExact(_) => facts.imported_functions += 1,
                        TypeRef::Global(g) => {
                            if g.mutable {
                                facts.mutable_globals.push(facts.imported_globals);
                            }
                            facts.imported_globals += 1;
                        }
                        TypeRef::Memory(m) => facts.index_types.memories64.push(m.memory64),
                        TypeRef::Table(t) => facts.index_types.tables64.push(t.table64),
                        _ => {}
                    }
                }
            }
            Payload::MemorySection(section) => {
                for memory in section {
                    facts.index_types.memories64.push(memory?.memory64);
                }
            }
            Payload::TableSection(section) => {
                for table in section {
                    facts.index_types.tables64.push(table?.ty.table64);
                }
            }
            Payload::GlobalSection(section) => {
                for global in section {
                    if global?.ty.mutable {
                        facts
                            .mutable_globals
                            .push(facts.imported_globals + facts.defined_globals);
                    }
                    facts.defined_globals += 1;
                }
            }
            Payload::ExportSection(section) => {
                for export in section {
                    let export = export?;
                    check_reserved(export.name)?;
                    if export.kind == ExternalKind::Memory && export.index == 0 {
                        facts.memory0_exported = true;
                    } else if export.name == MEMORY_EXPORT {
                        return Err(InstrumentError::ReservedExport(MEMORY_EXPORT.into()));
                    }
                }
            }
            Payload::StartSection { func, .. } => facts.start = Some(func),
            Payload::FunctionSection(section) => {
                facts.defined_functions = section.count();
                for ty in section {
                    facts.function_types.push(ty?);
                }
            }
            _ => {}
        }
    }
    Ok(facts)
}

fn check_reserved(name: &str) -> Result<(), InstrumentError> {
    let reserved = name == COUNTER_EXPORT
        || name == START_EXPORT
        || name.starts_with("canister counter_")
        || name == TABLE_EXPORT
        || name.starts_with(GLOBAL_EXPORT_PREFIX);
    if reserved {
        Err(InstrumentError::ReservedExport(name.to_string()))
    } else {
        Ok(())
    }
}

/// Indices of everything the instrumentation adds.
#[derive(Debug, Clone, Copy)]
struct Injected {
    /// Function index of the `out_of_instructions` import (always 0).
    out_of_instructions: u32,
    /// Function indices of the `trace_enter` and `trace_exit` imports, with tracing.
    trace_hooks: Option<(u32, u32)>,
    /// Type index of `[] -> []`.
    void_type: u32,
    /// Type index of `[i64] -> [i64]` (the bulk-memory charge helper).
    charge_type: u32,
    /// Type index of `[i32] -> []` (the trace hooks).
    hook_type: u32,
    /// Global index of the instruction counter.
    counter: u32,
}

impl Injected {
    /// How many functions the instrumentation imports ahead of the module's own.
    fn imported_functions(&self) -> u32 {
        if self.trace_hooks.is_some() {
            3
        } else {
            1
        }
    }
}

/// The re-encoder: shifts function indices by the injected imports.
struct Shift(u32);

impl Reencode for Shift {
    type Error = std::convert::Infallible;

    fn function_index(&mut self, func: u32) -> Result<u32, reencode::Error<Self::Error>> {
        Ok(func + self.0)
    }
}

/// Rewrites `wasm` with the replica's metering (see the module documentation), with trace
/// hooks when `tracing`.
pub(crate) fn instrument(wasm: &[u8], tracing: bool) -> Result<Instrumented, InstrumentError> {
    let facts = scan(wasm)?;
    let injected = Injected {
        out_of_instructions: 0,
        trace_hooks: tracing.then_some((1, 2)),
        void_type: facts.type_count,
        charge_type: facts.type_count + 1,
        hook_type: facts.type_count + 2,
        counter: facts.imported_globals + facts.defined_globals,
    };
    let mut writer = Writer {
        facts: &facts,
        injected,
        shift: Shift(injected.imported_functions()),
        module: Module::new(),
        emitted: Vec::new(),
        multi_result_types: multi_result_types(&facts),
        next_body: 0,
    };
    writer.rewrite(wasm)?;
    Ok(Instrumented {
        wasm: writer.module.finish(),
        memory64: facts.index_types.main_memory64(),
        tracing,
    })
}

/// The encoder's form of a value type (references are re-encoded without index shifts:
/// they name types, which the instrumentation does not renumber).
fn value_type(ty: wasmparser::ValType) -> Option<ValType> {
    Shift(0).val_type(ty).ok()
}

/// For each function type with more than one result, the index of the block type
/// `[] -> results` the tracing wrapper needs (added after the injected types).
fn multi_result_types(facts: &ModuleFacts) -> Vec<(u32, u32)> {
    let mut next = facts.type_count + 3;
    let mut map = Vec::new();
    for (index, results) in facts.type_results.iter().enumerate() {
        if results.len() > 1 {
            map.push((index as u32, next));
            next += 1;
        }
    }
    map
}

/// Position of a section in the binary order of a module.
fn section_rank(id: SectionId) -> u8 {
    match id {
        SectionId::Type => 1,
        SectionId::Import => 2,
        SectionId::Function => 3,
        SectionId::Table => 4,
        SectionId::Memory => 5,
        SectionId::Tag => 6,
        SectionId::Global => 7,
        SectionId::Export => 8,
        SectionId::Start => 9,
        SectionId::Element => 10,
        SectionId::DataCount => 11,
        SectionId::Code => 12,
        SectionId::Data => 13,
        _ => 0,
    }
}

/// Sections the instrumentation always writes, even if the input lacks them.
const REQUIRED: [SectionId; 6] = [
    SectionId::Type,
    SectionId::Import,
    SectionId::Function,
    SectionId::Global,
    SectionId::Export,
    SectionId::Code,
];

struct Writer<'f> {
    facts: &'f ModuleFacts,
    injected: Injected,
    shift: Shift,
    module: Module,
    emitted: Vec<SectionId>,
    /// (function type, block type `[] -> results`) for multi-result functions (tracing).
    multi_result_types: Vec<(u32, u32)>,
    /// Index of the next defined function body (among the defined functions).
    next_body: u32,
}

impl Writer<'_> {
    fn rewrite(&mut self, wasm: &[u8]) -> Result<(), InstrumentError> {
        let mut code: Option<CodeSection> = None;
        for payload in Parser::new(0).parse_all(wasm) {
            match payload? {
                Payload::TypeSection(s) => {
                    self.before(SectionId::Type)?;
                    let mut types = TypeSection::new();
                    self.shift.parse_type_section(&mut types, s)?;
                    self.add_types(&mut types);
                    self.module.section(&types);
                }
                Payload::ImportSection(s) => {
                    self.before(SectionId::Import)?;
                    let mut imports = ImportSection::new();
                    self.add_imports(&mut imports);
                    for import in s.into_imports() {
                        let import = import?;
                        let ty = self.shift.entity_type(import.ty)?;
                        imports.import(import.module, import.name, ty);
                    }
                    self.module.section(&imports);
                }
                Payload::FunctionSection(s) => {
                    self.before(SectionId::Function)?;
                    let mut functions = FunctionSection::new();
                    self.shift.parse_function_section(&mut functions, s)?;
                    functions.function(self.injected.charge_type);
                    self.module.section(&functions);
                }
                Payload::TableSection(s) => {
                    self.before(SectionId::Table)?;
                    let mut tables = wasm_encoder::TableSection::new();
                    self.shift.parse_table_section(&mut tables, s)?;
                    self.module.section(&tables);
                }
                Payload::MemorySection(s) => {
                    self.before(SectionId::Memory)?;
                    let mut memories = wasm_encoder::MemorySection::new();
                    self.shift.parse_memory_section(&mut memories, s)?;
                    self.module.section(&memories);
                }
                Payload::TagSection(s) => {
                    self.before(SectionId::Tag)?;
                    let mut tags = wasm_encoder::TagSection::new();
                    self.shift.parse_tag_section(&mut tags, s)?;
                    self.module.section(&tags);
                }
                Payload::GlobalSection(s) => {
                    self.before(SectionId::Global)?;
                    let mut globals = GlobalSection::new();
                    self.shift.parse_global_section(&mut globals, s)?;
                    Self::add_counter(&mut globals);
                    self.module.section(&globals);
                }
                Payload::ExportSection(s) => {
                    self.before(SectionId::Export)?;
                    let mut exports = ExportSection::new();
                    for export in s {
                        let export = export?;
                        let kind = self.shift.export_kind(export.kind)?;
                        let index = self.shift.external_index(export.kind, export.index)?;
                        let name = if kind == ExportKind::Memory && index == 0 {
                            MEMORY_EXPORT
                        } else {
                            export.name
                        };
                        exports.export(name, kind, index);
                    }
                    self.add_exports(&mut exports);
                    self.module.section(&exports);
                }
                // The start function becomes the `canister_start` export.
                Payload::StartSection { .. } => self.before(SectionId::Start)?,
                Payload::ElementSection(s) => {
                    self.before(SectionId::Element)?;
                    let mut elements = wasm_encoder::ElementSection::new();
                    self.shift.parse_element_section(&mut elements, s)?;
                    self.module.section(&elements);
                }
                Payload::DataCountSection { count, .. } => {
                    self.before(SectionId::DataCount)?;
                    self.module
                        .section(&wasm_encoder::DataCountSection { count });
                }
                Payload::CodeSectionStart { .. } => {
                    self.before(SectionId::Code)?;
                    code = Some(CodeSection::new());
                }
                Payload::CodeSectionEntry(body) => {
                    let section = code.get_or_insert_with(CodeSection::new);
                    let function = self.instrument_body(&body)?;
                    section.function(&function);
                }
                Payload::DataSection(s) => {
                    self.finish_code(&mut code);
                    self.before(SectionId::Data)?;
                    let mut data = wasm_encoder::DataSection::new();
                    self.shift.parse_data_section(&mut data, s)?;
                    self.module.section(&data);
                }
                Payload::CustomSection(s) => {
                    self.finish_code(&mut code);
                    if s.name() != "name" {
                        self.module.section(&wasm_encoder::CustomSection {
                            name: s.name().into(),
                            data: s.data().into(),
                        });
                    }
                }
                Payload::End(_) => {
                    self.finish_code(&mut code);
                    self.flush_missing(u8::MAX)?;
                }
                Payload::Version { .. } => {}
                other => {
                    return Err(InstrumentError::Unsupported(format!(
                        "unexpected section {:?}",
                        other.as_section().map(|(id, _)| id)
                    )))
                }
            }
        }
        Ok(())
    }

    /// Writes the code section under construction, with the charge helper appended.
    fn finish_code(&mut self, code: &mut Option<CodeSection>) {
        if let Some(mut section) = code.take() {
            section.function(&self.charge_helper());
            self.module.section(&section);
        }
    }

    /// Called before writing section `id`: writes the required sections the
    /// input lacks that come before it.
    fn before(&mut self, id: SectionId) -> Result<(), InstrumentError> {
        self.flush_missing(section_rank(id))?;
        self.emitted.push(id);
        Ok(())
    }

    fn flush_missing(&mut self, rank: u8) -> Result<(), InstrumentError> {
        for id in REQUIRED {
            if section_rank(id) < rank && !self.emitted.contains(&id) {
                self.emitted.push(id);
                self.write_synthetic(id);
            }
        }
        Ok(())
    }

    /// Writes a required section the input module does not have.
    fn write_synthetic(&mut self, id: SectionId) {
        match id {
            SectionId::Type => {
                let mut types = TypeSection::new();
                self.add_types(&mut types);
                self.module.section(&types);
            }
            SectionId::Import => {
                let mut imports = ImportSection::new();
                self.add_imports(&mut imports);
                self.module.section(&imports);
            }
            SectionId::Function => {
                let mut functions = FunctionSection::new();
                functions.function(self.injected.charge_type);
                self.module.section(&functions);
            }
            SectionId::Global => {
                let mut globals = GlobalSection::new();
                Self::add_counter(&mut globals);
                self.module.section(&globals);
            }
            SectionId::Export => {
                let mut exports = ExportSection::new();
                self.add_exports(&mut exports);
                self.module.section(&exports);
            }
            SectionId::Code => {
                let mut code = CodeSection::new();
                code.function(&self.charge_helper());
                self.module.section(&code);
            }
            _ => {}
        }
    }

    fn add_types(&self, types: &mut TypeSection) {
        types.ty().function([], []);
        types.ty().function([ValType::I64], [ValType::I64]);
        types.ty().function([ValType::I32], []);
        for (function_type, _) in &self.multi_result_types {
            let results = &self.facts.type_results[*function_type as usize];
            let results: Vec<ValType> = results.iter().filter_map(|ty| value_type(*ty)).collect();
            types.ty().function([], results);
        }
    }

    fn add_imports(&self, imports: &mut ImportSection) {
        imports.import(
            HOST_MODULE,
            OUT_OF_INSTRUCTIONS,
            EntityType::Function(self.injected.void_type),
        );
        if self.injected.trace_hooks.is_some() {
            let hook = EntityType::Function(self.injected.hook_type);
            imports.import(HOST_MODULE, TRACE_ENTER, hook);
            imports.import(HOST_MODULE, TRACE_EXIT, hook);
        }
    }

    fn add_counter(globals: &mut GlobalSection) {
        globals.global(
            GlobalType {
                val_type: ValType::I64,
                mutable: true,
                shared: false,
            },
            &ConstExpr::i64_const(0),
        );
    }

    fn add_exports(&self, exports: &mut ExportSection) {
        exports.export(COUNTER_EXPORT, ExportKind::Global, self.injected.counter);
        if let Some(start) = self.facts.start {
            exports.export(START_EXPORT, ExportKind::Func, start + 1);
        }
        if !self.facts.memory0_exported && !self.facts.index_types.memories64.is_empty() {
            exports.export(MEMORY_EXPORT, ExportKind::Memory, 0);
        }
        if !self.facts.index_types.tables64.is_empty() {
            exports.export(TABLE_EXPORT, ExportKind::Table, 0);
        }
        for global in &self.facts.mutable_globals {
            let name = format!("{GLOBAL_EXPORT_PREFIX}{global}");
            exports.export(&name, ExportKind::Global, *global);
        }
    }

    /// Index of the charge helper: after the injected imports, the original
    /// imports and every defined function.
    fn charge_helper_index(&self) -> u32 {
        self.injected.imported_functions()
            + self.facts.imported_functions
            + self.facts.defined_functions
    }

    /// The unmetered helper `[i64] -> [i64]`: subtracts its argument from the
    /// counter (saturating at `i64::MIN`), calls `out_of_instructions` if the
    /// counter went negative, and returns its argument unchanged.
    fn charge_helper(&self) -> Function {
        let counter = self.injected.counter;
        let mut f = Function::new([(1, ValType::I64)]);
        let new_value = 1;
        f.instruction(&Instruction::GlobalGet(counter))
            .instruction(&Instruction::LocalGet(0))
            .instruction(&Instruction::I64Sub)
            .instruction(&Instruction::LocalTee(new_value))
            .instruction(&Instruction::GlobalGet(counter))
            .instruction(&Instruction::I64GtS)
            .instruction(&Instruction::If(wasm_encoder::BlockType::Result(
                ValType::I64,
            )))
            .instruction(&Instruction::I64Const(i64::MIN))
            .instruction(&Instruction::Else)
            .instruction(&Instruction::LocalGet(new_value))
            .instruction(&Instruction::End)
            .instruction(&Instruction::GlobalSet(counter));
        self.overflow_check(&mut f);
        f.instruction(&Instruction::LocalGet(0))
            .instruction(&Instruction::End);
        f
    }

    fn overflow_check(&self, f: &mut Function) {
        f.instruction(&Instruction::GlobalGet(self.injected.counter))
            .instruction(&Instruction::I64Const(0))
            .instruction(&Instruction::I64LtS)
            .instruction(&Instruction::If(wasm_encoder::BlockType::Empty))
            .instruction(&Instruction::Call(self.injected.out_of_instructions))
            .instruction(&Instruction::End);
    }

    fn instrument_body(
        &mut self,
        body: &wasmparser::FunctionBody<'_>,
    ) -> Result<Function, InstrumentError> {
        let defined = self.next_body;
        self.next_body += 1;
        let mut function = self.shift.new_function_with_parsed_locals(body)?;
        let mut reader = body.get_operators_reader()?;
        let mut ops: Vec<Operator> = Vec::new();
        while !reader.eof() {
            ops.push(reader.read()?);
        }
        let points = charge_points(&ops, &self.facts.index_types);
        let mut next = points.iter().peekable();
        let Some((enter, exit)) = self.injected.trace_hooks else {
            for (position, op) in ops.into_iter().enumerate() {
                while let Some(point) = next.next_if(|p| p.position == position) {
                    self.inject(&mut function, point);
                }
                function.instruction(&self.shift.instruction(op)?);
            }
            return Ok(function);
        };
        // Tracing: the original index of this function, its wrapper block and its hooks.
        let index = self.facts.imported_functions + defined;
        let hook = |f: &mut Function, hook: u32, function_index: u32| {
            f.instruction(&Instruction::I32Const(function_index as i32))
                .instruction(&Instruction::Call(hook));
        };
        hook(&mut function, enter, index);
        function.instruction(&Instruction::Block(self.wrapper_type(defined)));
        let last = ops.len().saturating_sub(1);
        // Blocks open inside the wrapper: a `return` becomes a branch to the wrapper.
        let mut depth: u32 = 0;
        for (position, op) in ops.into_iter().enumerate() {
            while let Some(point) = next.next_if(|p| p.position == position) {
                self.inject(&mut function, point);
            }
            match &op {
                _ if position == last => {
                    function.instruction(&Instruction::End);
                    hook(&mut function, exit, index);
                }
                Operator::Block { .. } | Operator::Loop { .. } | Operator::If { .. } => {
                    depth += 1;
                }
                Operator::End => depth = depth.saturating_sub(1),
                Operator::Return => {
                    function.instruction(&Instruction::Br(depth));
                    continue;
                }
                Operator::ReturnCall { .. } | Operator::ReturnCallIndirect { .. } => {
                    hook(&mut function, exit, index);
                }
                Operator::Call { function_index }
                    if *function_index < self.facts.imported_functions =>
                {
                    let callee = *function_index;
                    hook(&mut function, enter, callee);
                    function.instruction(&self.shift.instruction(op)?);
                    hook(&mut function, exit, callee);
                    continue;
                }
                _ => {}
            }
            function.instruction(&self.shift.instruction(op)?);
        }
        Ok(function)
    }

    /// The block type of the tracing wrapper of defined function `defined`: its results.
    fn wrapper_type(&self, defined: u32) -> wasm_encoder::BlockType {
        let Some(function_type) = self.facts.function_types.get(defined as usize).copied() else {
            return wasm_encoder::BlockType::Empty;
        };
        let results = &self.facts.type_results[function_type as usize];
        match results.as_slice() {
            [] => wasm_encoder::BlockType::Empty,
            [single] => match value_type(*single) {
                Some(ty) => wasm_encoder::BlockType::Result(ty),
                None => wasm_encoder::BlockType::Empty,
            },
            _ => self
                .multi_result_types
                .iter()
                .find(|(ty, _)| *ty == function_type)
                .map(|(_, block)| wasm_encoder::BlockType::FunctionType(*block))
                .unwrap_or(wasm_encoder::BlockType::Empty),
        }
    }

    fn inject(&self, f: &mut Function, point: &ChargePoint) {
        match point.charge {
            Charge::Static { cost, checked } => {
                let counter = self.injected.counter;
                f.instruction(&Instruction::GlobalGet(counter))
                    .instruction(&Instruction::I64Const(cost as i64))
                    .instruction(&Instruction::I64Sub)
                    .instruction(&Instruction::GlobalSet(counter));
                if checked {
                    self.overflow_check(f);
                }
            }
            Charge::Dynamic(SizeOperand::I64) => {
                f.instruction(&Instruction::Call(self.charge_helper_index()));
            }
            Charge::Dynamic(SizeOperand::I32) => {
                f.instruction(&Instruction::I64ExtendI32U)
                    .instruction(&Instruction::Call(self.charge_helper_index()))
                    .instruction(&Instruction::I32WrapI64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validate(wasm: &[u8]) {
        let mut validator = wasmparser::Validator::new();
        if let Err(e) = validator.validate_all(wasm) {
            panic!("instrumented module is invalid: {e}");
        }
    }

    fn wat(text: &str) -> Vec<u8> {
        match wat::parse_str(text) {
            Ok(wasm) => wasm,
            Err(e) => panic!("invalid test WAT: {e}"),
        }
    }

    #[test]
    fn empty_module_gets_every_required_section() {
        let out = instrument(&wat("(module)"), false).expect("instruments");
        validate(&out.wasm);
    }

    #[test]
    fn indices_are_remapped_everywhere() {
        let out = instrument(
            &wat(r#"(module
                 (import "ic0" "msg_reply" (func $reply))
                 (type $v (func))
                 (table 2 funcref)
                 (elem (i32.const 0) $a $b)
                 (global $g (mut i32) (i32.const 0))
                 (global $f funcref (ref.func $b))
                 (memory 1)
                 (data (i32.const 0) "x")
                 (func $a call $b (call_indirect (type $v) (i32.const 1)))
                 (func $b ref.func $a drop call $reply)
                 (start $a)
                 (export "canister_update a" (func $a))
                 (@custom "icp:public candid:service" "service : {}"))"#),
            false,
        )
        .expect("instruments");
        validate(&out.wasm);
        let section = custom_section(&out.wasm, "icp:public candid:service").expect("parses");
        assert_eq!(section.as_deref(), Some(&b"service : {}"[..]));
        // The exports name the shifted indices: $a was 1, is now 2.
        let mut exports = Vec::new();
        for payload in Parser::new(0).parse_all(&out.wasm) {
            if let Ok(Payload::ExportSection(section)) = payload {
                for export in section.into_iter().flatten() {
                    exports.push((export.name.to_string(), export.index));
                }
            }
        }
        assert!(exports.contains(&("canister_update a".to_string(), 2)));
        assert!(exports.contains(&(START_EXPORT.to_string(), 2)));
        assert!(exports.contains(&(MEMORY_EXPORT.to_string(), 0)));
        assert!(exports.contains(&(TABLE_EXPORT.to_string(), 0)));
        // The counter is appended after the two globals; $g is mutable.
        assert!(exports.contains(&(COUNTER_EXPORT.to_string(), 2)));
        assert!(exports.contains(&(format!("{GLOBAL_EXPORT_PREFIX}0"), 0)));
    }

    #[test]
    fn reserved_exports_are_refused() {
        let result = instrument(
            &wat(r#"(module (global (export "canister counter_instructions") i64 (i64.const 0)))"#),
            false,
        );
        assert!(matches!(result, Err(InstrumentError::ReservedExport(_))));
    }

    #[test]
    fn garbage_is_a_parse_error() {
        assert!(matches!(
            instrument(b"not wasm", false),
            Err(InstrumentError::Parse(_))
        ));
    }
}
