//! The registry of store canisters, `canisters/engines.toml`: the one list of engines that
//! the end-to-end tests and the per-call benchmark read (the scripts read the same file).
//!
//! Each engine's configurations are Candid text, encoded with the types of the canister's
//! committed `.did` file, so nothing here names an engine's Rust types: a new engine is its
//! folder, its canister crate and one entry in the file.

use candid::types::value::IDLValue;
use candid::types::{Label, Type, TypeInner};
use candid::{IDLArgs, TypeEnv};
use candid_parser::utils::CandidSource;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The registry file, as committed.
const REGISTRY: &str = include_str!("../../engines.toml");

/// One store canister.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Engine {
    /// The engine's `StorageEngine::NAME`: the case of its configuration in Candid.
    pub name: String,
    /// The canister's name: its folder under `canisters/`, its `.did` file, its `dfx.json`
    /// entry and `target/canisters/<canister>.wasm`.
    pub canister: String,
    /// Its Cargo package.
    pub package: String,
    /// The Wasm target it builds for.
    pub target: String,
    /// Whether its Wasm is converted with wasi2ic.
    pub wasi2ic: bool,
    /// How reports name it.
    pub label: String,
    /// What the tests and benchmarks install it with.
    pub configurations: Vec<Configuration>,
    /// A published library measured beside this crate's engines (benchmarks and tests).
    #[serde(default)]
    pub peer: bool,
    /// The Cargo manifest that builds it, relative to the repository, when it is a
    /// workspace of its own.
    #[serde(default)]
    pub manifest: Option<String>,
}

/// One configuration of a store canister.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Configuration {
    /// Its name in results (`btree`, `sqlite_memory`, ...).
    pub key: String,
    /// The engine's configuration in Candid text, typed by the canister's `.did`; `None`
    /// for the engine's default.
    #[serde(default)]
    pub config: Option<String>,
    /// Whether its headline calls are traced (one configuration per engine).
    #[serde(default)]
    pub traced: bool,
}

/// One configuration of an edge component (`[[edge]]`): the same API over HTTP on a WASI
/// host, the engine on a file.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EdgeEngine {
    /// Its name in results.
    pub key: String,
    /// How reports name it.
    pub label: String,
    /// The component: `target/edge/<component>.wasm`.
    pub component: String,
    /// The environment the host gives the component.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// An embedded store measured beside this crate's engines.
    #[serde(default)]
    pub peer: bool,
}

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Registry {
    engine: Vec<Engine>,
    #[serde(default)]
    edge: Vec<EdgeEngine>,
}

fn parse_registry(text: &str) -> Result<Registry, String> {
    toml::from_str(text).map_err(|error| format!("canisters/engines.toml: {error}"))
}

/// Parses registry text: its store canisters.
pub fn parse(text: &str) -> Result<Vec<Engine>, String> {
    parse_registry(text).map(|registry| registry.engine)
}

/// The committed registry.
fn registry() -> &'static Registry {
    static REGISTRY_PARSED: OnceLock<Registry> = OnceLock::new();
    REGISTRY_PARSED.get_or_init(|| match parse_registry(REGISTRY) {
        Ok(registry) => registry,
        // The file is committed and checked by this crate's tests.
        Err(error) => panic!("{error}"),
    })
}

/// Every engine of the committed registry, in its order.
pub fn engines() -> &'static [Engine] {
    &registry().engine
}

/// Every edge configuration of the committed registry, in its order.
pub fn edge_engines() -> &'static [EdgeEngine] {
    &registry().edge
}

/// This crate's own engines (without the peers).
pub fn own_engines() -> impl Iterator<Item = &'static Engine> {
    engines().iter().filter(|engine| !engine.peer)
}

/// The engine whose canister is `canister`.
pub fn engine(canister: &str) -> Option<&'static Engine> {
    engines().iter().find(|engine| engine.canister == canister)
}

/// The repository's root.
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A canister's Candid service, parsed.
pub struct Service {
    env: TypeEnv,
    actor: Type,
}

impl Service {
    /// The committed `.did` of `canister`.
    pub fn of(canister: &str) -> Result<Service, String> {
        let path = repository()
            .join("canisters")
            .join(canister)
            .join(format!("{canister}.did"));
        let text = std::fs::read_to_string(&path)
            .map_err(|error| format!("reading {}: {error}", path.display()))?;
        let (env, actor) = CandidSource::Text(&text)
            .load()
            .map_err(|error| format!("{}: {error}", path.display()))?;
        let actor = actor.ok_or_else(|| format!("{} declares no service", path.display()))?;
        Ok(Service { env, actor })
    }

    /// The init argument types.
    fn init_types(&self) -> Result<&[Type], String> {
        match self.actor.as_ref() {
            TypeInner::Class(args, _) => Ok(args),
            _ => Err("the service takes no init argument".into()),
        }
    }

    /// Encodes the Candid text `args` as the init (and upgrade) argument.
    pub fn encode_init(&self, args: &str) -> Result<Vec<u8>, String> {
        let parsed = candid_parser::parse_idl_args(args)
            .map_err(|error| format!("invalid Candid arguments {args:?}: {error}"))?;
        parsed
            .to_bytes_with_types(&self.env, self.init_types()?)
            .map_err(|error| format!("cannot encode {args:?}: {error}"))
    }

    /// The engine configuration an init argument in Candid text gives (the value of its
    /// `config` field, an `EngineConfig` variant), typed as the canister takes it; `None`
    /// if it gives none.
    pub fn config_given(&self, init: &str) -> Result<Option<IDLValue>, String> {
        let bytes = self.encode_init(init)?;
        let args = IDLArgs::from_bytes_with_types(&bytes, &self.env, self.init_types()?)
            .map_err(|error| format!("decoding {init:?}: {error}"))?;
        let config = match args.args.first() {
            Some(IDLValue::Opt(record)) => field(record, "config").cloned(),
            _ => None,
        };
        Ok(match config {
            Some(IDLValue::Opt(config)) => Some(*config),
            _ => None,
        })
    }

    /// The engine configuration a `config` reply reports (its `engine.config`).
    pub fn config_reported(&self, reply: &[u8]) -> Result<IDLValue, String> {
        let function = self
            .env
            .get_method(&self.actor, "config")
            .map_err(|error| format!("config: {error}"))?;
        let args = IDLArgs::from_bytes_with_types(reply, &self.env, &function.rets)
            .map_err(|error| format!("decoding the config reply: {error}"))?;
        args.args
            .first()
            .and_then(|reply| field(reply, "engine"))
            .and_then(|engine| field(engine, "config"))
            .cloned()
            .ok_or_else(|| "the config reply has no engine.config".to_string())
    }

    /// Decodes the reply `bytes` of `method` to Candid text.
    pub fn decode_reply(&self, method: &str, bytes: &[u8]) -> Result<String, String> {
        let function = self
            .env
            .get_method(&self.actor, method)
            .map_err(|error| format!("{method}: {error}"))?;
        IDLArgs::from_bytes_with_types(bytes, &self.env, &function.rets)
            .map(|args| args.to_string())
            .map_err(|error| format!("decoding the reply of {method}: {error}"))
    }
}

/// The field `name` of a record value.
fn field<'a>(record: &'a IDLValue, name: &str) -> Option<&'a IDLValue> {
    match record {
        IDLValue::Record(fields) => fields
            .iter()
            .find(|field| field.id == Label::Named(name.to_string()))
            .map(|field| &field.val),
        _ => None,
    }
}

impl Engine {
    /// The Candid text of an init or upgrade argument that gives `configuration`'s engine
    /// configuration (and nothing else), or no argument for the engine's default.
    pub fn init_text(&self, configuration: &Configuration) -> String {
        match &configuration.config {
            Some(config) => format!(
                "(opt record {{ config = opt variant {{ {} = {config} }} }})",
                self.name
            ),
            None => "(null)".into(),
        }
    }

    /// [`Engine::init_text`], encoded with the types of the canister's `.did`.
    pub fn init_arg(&self, configuration: &Configuration) -> Result<Vec<u8>, String> {
        Service::of(&self.canister)?.encode_init(&self.init_text(configuration))
    }

    /// The configuration traced by the benchmarks (the first one if none is marked).
    pub fn traced(&self) -> &Configuration {
        self.configurations
            .iter()
            .find(|configuration| configuration.traced)
            .unwrap_or(&self.configurations[0])
    }
}

/// Every configuration of every engine, with its engine.
pub fn configurations() -> impl Iterator<Item = (&'static Engine, &'static Configuration)> {
    engines().iter().flat_map(|engine| {
        engine
            .configurations
            .iter()
            .map(move |configuration| (engine, configuration))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn the_registry_parses_with_distinct_names_canisters_and_keys() {
        let engines = engines();
        assert!(!engines.is_empty());
        let names: BTreeSet<&str> = engines.iter().map(|engine| engine.name.as_str()).collect();
        let canisters: BTreeSet<&str> = engines.iter().map(|e| e.canister.as_str()).collect();
        let keys: BTreeSet<&str> = configurations().map(|(_, c)| c.key.as_str()).collect();
        assert_eq!(names.len(), engines.len());
        assert_eq!(canisters.len(), engines.len());
        assert_eq!(keys.len(), configurations().count());
        for engine in engines {
            assert!(!engine.configurations.is_empty(), "{}", engine.name);
            let traced = engine.configurations.iter().filter(|c| c.traced).count();
            assert_eq!(traced, 1, "{}: one traced configuration", engine.name);
        }
    }

    #[test]
    fn every_configuration_encodes_with_its_canister_s_types() {
        for (engine, configuration) in configurations() {
            let encoded = engine.init_arg(configuration);
            assert!(encoded.is_ok(), "{}: {encoded:?}", configuration.key);
        }
    }

    #[test]
    fn edge_configurations_have_distinct_keys_and_components_the_scripts_build() {
        let edge = edge_engines();
        assert!(
            edge.iter().any(|engine| !engine.peer),
            "no engine of ours on the edge"
        );
        let keys: std::collections::BTreeSet<_> = edge.iter().map(|e| &e.key).collect();
        assert_eq!(keys.len(), edge.len(), "edge keys repeat");
        let scripts = ["scripts/build_edge.sh", "scripts/build_edge_peers.sh"]
            .map(|script| std::fs::read_to_string(repository().join(script)).expect(script))
            .join("\n");
        for engine in edge {
            assert!(
                scripts.contains(&format!("{}.wasm", engine.component)),
                "{}: no script builds target/edge/{}.wasm",
                engine.key,
                engine.component
            );
        }
    }

    #[test]
    fn a_registry_with_an_unknown_field_is_refused() {
        let text = "[[engine]]\nname = \"X\"\ncanister = \"x\"\npackage = \"x\"\n\
                    target = \"t\"\nwasi2ic = false\nlabel = \"X\"\nconfigurations = []\n\
                    colour = \"blue\"\n";
        assert!(parse(text).is_err());
    }

    /// The canisters icp.yaml and dfx.json deploy: every store canister of the registry and
    /// the client.
    fn deployed_canisters() -> BTreeSet<String> {
        let mut canisters: BTreeSet<String> =
            engines().iter().map(|e| e.canister.clone()).collect();
        canisters.insert("client".into());
        canisters
    }

    /// icp.yaml builds every store canister of the registry (and the client) with
    /// scripts/build.sh, as dfx.json does, and installs each store with every setting at its
    /// default.
    #[test]
    fn icp_yaml_builds_every_registered_canister() {
        let icp = std::fs::read_to_string(repository().join("icp.yaml")).expect("icp.yaml");
        let icp: serde_yaml::Value = serde_yaml::from_str(&icp).expect("icp.yaml is YAML");
        let canisters = icp["canisters"]
            .as_sequence()
            .expect("icp.yaml has canisters");
        let name_of = |entry: &serde_yaml::Value| entry["name"].as_str().map(str::to_string);
        let listed: BTreeSet<String> = canisters.iter().filter_map(name_of).collect();
        assert_eq!(listed, deployed_canisters(), "icp.yaml's canisters");
        for entry in canisters {
            let name = name_of(entry).expect("a name");
            let steps = entry["build"]["steps"].as_sequence().expect("build steps");
            assert_eq!(steps.len(), 1, "{name}: one build step");
            assert_eq!(steps[0]["type"].as_str(), Some("script"), "{name}");
            let commands: Vec<&str> = steps[0]["commands"]
                .as_sequence()
                .expect("commands")
                .iter()
                .filter_map(serde_yaml::Value::as_str)
                .collect();
            let copy = format!("cp target/canisters/{name}.wasm \"$ICP_WASM_OUTPUT_PATH\"");
            assert_eq!(
                commands,
                [
                    format!("bash scripts/build.sh {name}").as_str(),
                    copy.as_str()
                ],
                "{name}"
            );
            let init = entry["init_args"].as_str();
            if name == "client" {
                assert_eq!(init, None, "the client's argument is its store's principal");
            } else {
                assert_eq!(init, Some("(null)"), "{name}");
            }
        }
    }

    /// dfx.json deploys every store canister of the registry (and the client), each with
    /// its build command, Wasm and committed Candid.
    #[test]
    fn dfx_json_deploys_every_registered_canister() {
        let dfx = std::fs::read_to_string(repository().join("dfx.json")).expect("dfx.json");
        let dfx: serde_json::Value = serde_json::from_str(&dfx).expect("dfx.json is JSON");
        let canisters = dfx["canisters"]
            .as_object()
            .expect("dfx.json has canisters");
        let listed: BTreeSet<String> = canisters.keys().cloned().collect();
        assert_eq!(listed, deployed_canisters(), "dfx.json's canisters");
        for engine in engines() {
            let entry = &canisters[&engine.canister];
            let field = |name: &str| entry[name].as_str().map(str::to_string);
            let name = &engine.canister;
            assert_eq!(
                field("build"),
                Some(format!("bash scripts/build.sh {name}"))
            );
            assert_eq!(field("wasm"), Some(format!("target/canisters/{name}.wasm")));
            assert_eq!(
                field("candid"),
                Some(format!("canisters/{name}/{name}.did"))
            );
        }
    }
}
