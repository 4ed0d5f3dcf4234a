//! The engine configurations measured: every configuration of every store canister in the
//! registry (`canisters/engines.toml`), each chosen by the init argument, as a deployment
//! would.

use engine_registry::Engine;

/// One configuration of one store canister.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Its key in the results (`btree`, `sqlite_memory`, ...).
    pub key: String,
    /// The Candid init argument that selects the configuration.
    pub init: Vec<u8>,
    /// Whether its headline calls are traced (one configuration per canister).
    pub traced: bool,
}

/// The configurations of `engine`.
pub fn configurations(engine: &Engine) -> Result<Vec<EngineConfig>, String> {
    engine
        .configurations
        .iter()
        .map(|configuration| {
            Ok(EngineConfig {
                key: configuration.key.clone(),
                init: engine.init_arg(configuration)?,
                traced: configuration.traced,
            })
        })
        .collect()
}
