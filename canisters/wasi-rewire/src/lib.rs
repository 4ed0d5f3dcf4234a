//! The build step that makes a `wasm32-wasip1` canister an IC canister.
//!
//! The SQLite canisters are built for `wasm32-wasip1` with ic-wasi-polyfill linked in. The
//! polyfill implements every WASI function on the IC and exports each one as
//! `__ic_custom_<name>` (`__ic_custom_fd_write` for `fd_write`), but the module still imports
//! the WASI functions themselves, which the IC does not provide. This step rewires every call
//! to an imported WASI function to the polyfill's function of the same name and type, makes
//! the module's `_initialize` (the WASI reactor's constructor, which runs the static
//! initializers) its start function, drops the `_initialize` export, removes what is no longer
//! used, and checks that the module imports nothing but `ic0`.
//!
//! This is the conversion the `wasi2ic` tool performs; wasi2ic 0.2.16 gives the same bytes
//! for our canisters (docs/wasi-rewire.md says how that was checked). It is done here, on
//! walrus alone, because wasi2ic depends on ic-wasm with binaryen's C++ (unused by the
//! conversion), whose build took most of a fresh machine's set-up.

use std::collections::HashMap;
use std::fmt;

use walrus::ir::{dfs_pre_order_mut, VisitorMut};
use walrus::{
    ConstExpr, ElementItems, ExportItem, FunctionId, GlobalKind, ImportKind, Module, ModuleConfig,
};

/// The import modules whose functions are rewired: WASI preview 1 under both of its names.
const WASI_MODULES: [&str; 2] = ["wasi_snapshot_preview1", "wasi_unstable"];
/// The prefix of the polyfill's function for each WASI function.
const POLYFILL_PREFIX: &str = "__ic_custom_";
/// The only import module a canister may keep: the IC's system API.
const IC_MODULE: &str = "ic0";
/// The WASI reactor's constructor, which becomes the start function.
const INITIALIZE: &str = "_initialize";

/// A rewired module.
#[derive(Debug)]
pub struct Rewired {
    /// The module's bytes.
    pub wasm: Vec<u8>,
    /// How many imported WASI functions were rewired to the polyfill's.
    pub imports_rewired: usize,
}

/// Why a module cannot be made an IC canister.
#[derive(Debug, PartialEq, Eq)]
pub enum RewireError {
    /// The input is not a module walrus can read.
    Parse(String),
    /// A polyfill function has another type than the WASI function it stands for.
    TypeMismatch {
        /// The import, as `module.name`.
        import: String,
        /// The polyfill function's name.
        replacement: String,
    },
    /// Imports other than `ic0` remain (each as `module.name`): WASI functions the polyfill
    /// does not provide, or imports of other modules.
    ForeignImports(Vec<String>),
}

impl fmt::Display for RewireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RewireError::Parse(reason) => write!(f, "not a Wasm module walrus can read: {reason}"),
            RewireError::TypeMismatch {
                import,
                replacement,
            } => write!(f, "{replacement} has another type than the import {import}"),
            RewireError::ForeignImports(imports) => write!(
                f,
                "imports other than {IC_MODULE} remain (a WASI function needs the polyfill's \
                 {POLYFILL_PREFIX}<name>): {}",
                imports.join(", ")
            ),
        }
    }
}

impl std::error::Error for RewireError {}

/// Rewires `wasm` (see the module documentation). A module without any WASI import the
/// polyfill provides is left as it is, apart from walrus' re-encoding; either way the result
/// must import only `ic0`.
pub fn rewire(wasm: &[u8]) -> Result<Rewired, RewireError> {
    let mut config = ModuleConfig::new();
    // Names kept (traces and flame graphs read them); no producers section added.
    config.generate_name_section(true);
    config.generate_producers_section(false);
    let mut module = config
        .parse(wasm)
        .map_err(|e| RewireError::Parse(e.to_string()))?;

    let replacements = polyfill_replacements(&module)?;
    if !replacements.is_empty() {
        redirect(&mut module, &replacements);
        start_with_initialize(&mut module);
        walrus::passes::gc::run(&mut module);
    }
    let foreign: Vec<String> = module
        .imports
        .iter()
        .filter(|import| import.module != IC_MODULE)
        .map(qualified)
        .collect();
    if !foreign.is_empty() {
        return Err(RewireError::ForeignImports(foreign));
    }
    Ok(Rewired {
        wasm: module.emit_wasm(),
        imports_rewired: replacements.len(),
    })
}

/// Each imported WASI function that the polyfill provides, mapped to the polyfill's function:
/// found by its name, else among the exports (a renamed function keeps its export name).
fn polyfill_replacements(module: &Module) -> Result<HashMap<FunctionId, FunctionId>, RewireError> {
    let mut replacements = HashMap::new();
    for import in module.imports.iter() {
        let ImportKind::Function(imported) = import.kind else {
            continue;
        };
        if !WASI_MODULES.contains(&import.module.as_str()) {
            continue;
        }
        let wanted = format!("{POLYFILL_PREFIX}{}", import.name);
        let by_name = module
            .funcs
            .iter()
            .find(|function| function.name.as_deref() == Some(wanted.as_str()))
            .map(|function| function.id());
        let by_export = || {
            module.exports.iter().find_map(|export| match export.item {
                ExportItem::Function(function) if export.name == wanted => Some(function),
                _ => None,
            })
        };
        let Some(replacement) = by_name.or_else(by_export) else {
            continue;
        };
        if module.funcs.get(imported).ty() != module.funcs.get(replacement).ty() {
            return Err(RewireError::TypeMismatch {
                import: qualified(import),
                replacement: wanted,
            });
        }
        replacements.insert(imported, replacement);
    }
    Ok(replacements)
}

/// Replaces every reference to a rewired import: calls, tail calls and `ref.func` in every
/// function body, the function tables' element segments and the globals' initial values.
fn redirect(module: &mut Module, replacements: &HashMap<FunctionId, FunctionId>) {
    let replace = |function: &mut FunctionId| redirect_one(replacements, function);
    for element in module.elements.iter_mut() {
        match &mut element.items {
            ElementItems::Functions(functions) => functions.iter_mut().for_each(replace),
            ElementItems::Expressions(_, expressions) => {
                for expression in expressions.iter_mut() {
                    if let ConstExpr::RefFunc(function) = expression {
                        replace(function);
                    }
                }
            }
        }
    }
    let globals: Vec<_> = module.globals.iter().map(|global| global.id()).collect();
    for global in globals {
        if let GlobalKind::Local(ConstExpr::RefFunc(function)) =
            &mut module.globals.get_mut(global).kind
        {
            replace(function);
        }
    }
    let mut visitor = Redirect { replacements };
    for (_, body) in module.funcs.iter_local_mut() {
        let entry = body.entry_block();
        dfs_pre_order_mut(&mut visitor, body, entry);
    }
}

/// Visits every function reference of a body's instructions.
struct Redirect<'a> {
    replacements: &'a HashMap<FunctionId, FunctionId>,
}

impl VisitorMut for Redirect<'_> {
    fn visit_function_id_mut(&mut self, function: &mut FunctionId) {
        redirect_one(self.replacements, function);
    }
}

/// Points `function` to its replacement, if it has one.
fn redirect_one(replacements: &HashMap<FunctionId, FunctionId>, function: &mut FunctionId) {
    if let Some(replacement) = replacements.get(function) {
        *function = *replacement;
    }
}

/// An import as `module.name`, as the errors give it.
fn qualified(import: &walrus::Import) -> String {
    format!("{}.{}", import.module, import.name)
}

/// Makes `_initialize` the start function (unless the module has one) and drops its export:
/// the IC runs the start function at install and upgrade, and calls no `_initialize`.
fn start_with_initialize(module: &mut Module) {
    if module.start.is_none() {
        module.start = module.funcs.by_name(INITIALIZE);
    }
    let export = module
        .exports
        .iter()
        .find(|export| export.name == INITIALIZE && matches!(export.item, ExportItem::Function(_)))
        .map(|export| export.id());
    if let Some(export) = export {
        module.exports.delete(export);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reactor that writes through WASI's `fd_write` (called directly, through the table, by
    /// `ref.func` and from a global), with the polyfill's replacement and an `_initialize`.
    const REACTOR: &str = r#"
        (module
          (import "ic0" "debug_print" (func $print (param i32 i32)))
          (import "wasi_snapshot_preview1" "fd_write"
            (func $fd_write (param i32 i32 i32 i32) (result i32)))
          (import "wasi_snapshot_preview1" "proc_exit" (func $proc_exit (param i32)))
          (memory (export "memory") 1)
          (table (export "table") 2 funcref)
          (elem (i32.const 0) func $fd_write)
          (global $initialized (mut i32) (i32.const 0))
          (global (export "handler") funcref (ref.func $fd_write))
          (func $__ic_custom_fd_write (param i32 i32 i32 i32) (result i32)
            (call $print (i32.const 0) (i32.const 0))
            (i32.const 0))
          (func $_initialize (export "_initialize") (global.set $initialized (i32.const 1)))
          (func (export "canister_update write") (result i32)
            (drop (ref.func $fd_write))
            (block (result i32)
              (call $fd_write (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0)))))
        "#;

    /// `rewire` of the reactor with `from` replaced by `to` in its text.
    fn rewire_edited(from: &str, to: &str) -> Result<Rewired, RewireError> {
        rewire(&wat::parse_str(REACTOR.replace(from, to)).expect("valid WAT"))
    }

    fn parsed(wasm: &[u8]) -> Module {
        Module::from_buffer(wasm).expect("the rewired module parses")
    }

    #[test]
    fn wasi_calls_go_to_the_polyfill_and_only_ic0_stays_imported() {
        let input = wat::parse_str(REACTOR).expect("valid WAT");
        let rewired = rewire(&input).expect("rewired");
        assert_eq!(rewired.imports_rewired, 1);
        let module = parsed(&rewired.wasm);
        let imports: Vec<_> = module
            .imports
            .iter()
            .map(|i| format!("{}.{}", i.module, i.name))
            .collect();
        assert_eq!(imports, ["ic0.debug_print"]);
        let polyfill = module
            .funcs
            .by_name("__ic_custom_fd_write")
            .expect("the polyfill function stays");
        let element = module.elements.iter().next().expect("the table's segment");
        assert!(
            matches!(&element.items, ElementItems::Functions(f) if f == &[polyfill]),
            "the table points to the polyfill"
        );
        let handler = module
            .exports
            .iter()
            .find_map(|e| match e.item {
                ExportItem::Global(global) if e.name == "handler" => Some(global),
                _ => None,
            })
            .expect("the exported global");
        assert!(
            matches!(module.globals.get(handler).kind, GlobalKind::Local(ConstExpr::RefFunc(f)) if f == polyfill),
            "the global points to the polyfill"
        );
        let start = module.start.expect("a start function");
        assert_eq!(module.funcs.get(start).name.as_deref(), Some("_initialize"));
        assert!(module.exports.iter().all(|e| e.name != "_initialize"));
        assert!(module
            .exports
            .iter()
            .any(|e| e.name == "canister_update write"));
        wasmparser_validates(&rewired.wasm);
    }

    #[test]
    fn a_wasi_function_without_a_polyfill_is_refused_by_name() {
        let rewired = rewire_edited(
            "(call $fd_write (i32.const 0)",
            "(call $proc_exit (i32.const 0)) (call $fd_write (i32.const 0)",
        );
        assert_eq!(
            rewired.expect_err("proc_exit has no polyfill"),
            RewireError::ForeignImports(vec!["wasi_snapshot_preview1.proc_exit".into()])
        );
    }

    #[test]
    fn a_polyfill_of_another_type_is_refused() {
        let rewired = rewire_edited(
            "(func $__ic_custom_fd_write (param i32 i32 i32 i32) (result i32)",
            "(func $__ic_custom_fd_write (param i32 i32 i32 i64) (result i32)",
        );
        assert_eq!(
            rewired.expect_err("the types differ"),
            RewireError::TypeMismatch {
                import: "wasi_snapshot_preview1.fd_write".into(),
                replacement: "__ic_custom_fd_write".into(),
            }
        );
    }

    #[test]
    fn bytes_that_are_not_wasm_are_refused() {
        assert!(matches!(rewire(b"not wasm"), Err(RewireError::Parse(_))));
    }

    /// The emitted module is valid Wasm (walrus' parser validates on reading).
    fn wasmparser_validates(wasm: &[u8]) {
        let mut config = ModuleConfig::new();
        config.strict_validate(true);
        config.parse(wasm).expect("a valid module");
    }
}
