//! The names of a module's functions, by index, for traces and page maps.

use std::collections::HashMap;

/// Function names of a module by function index: the name section's, demangled, and
/// `module::name` for imports without one.
#[derive(Debug, Clone, Default)]
pub struct FunctionNames {
    pub(crate) names: HashMap<u32, String>,
    /// How many functions are imported (they come first).
    pub(crate) imported: u32,
}

impl FunctionNames {
    /// Reads the names of `wasm` (an unreadable name section gives no names).
    pub(crate) fn of(wasm: &[u8]) -> FunctionNames {
        use wasmparser::{Name, Parser, Payload, TypeRef};
        let mut names = HashMap::new();
        let mut imported = 0u32;
        for payload in Parser::new(0).parse_all(wasm).flatten() {
            match payload {
                Payload::ImportSection(section) => {
                    for import in section.into_imports().flatten() {
                        if matches!(import.ty, TypeRef::Func(_) | TypeRef::FuncExact(_)) {
                            names.insert(imported, format!("{}::{}", import.module, import.name));
                            imported += 1;
                        }
                    }
                }
                Payload::CustomSection(section) => {
                    let wasmparser::KnownCustom::Name(reader) = section.as_known() else {
                        continue;
                    };
                    for subsection in reader.flatten() {
                        if let Name::Function(map) = subsection {
                            for naming in map.into_iter().flatten() {
                                // Imports keep their `module::name`.
                                if naming.index >= imported {
                                    let name = rustc_demangle::demangle(naming.name);
                                    names.insert(naming.index, format!("{name:#}"));
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        FunctionNames { names, imported }
    }

    /// How many of the module's functions are imports (indices below this).
    pub(crate) fn imported(&self) -> u32 {
        self.imported
    }

    /// The name of function `index`.
    pub fn name(&self, index: u32) -> String {
        self.names
            .get(&index)
            .cloned()
            .unwrap_or_else(|| format!("func_{index}"))
    }
}
