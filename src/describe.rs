//! How a store describes itself to callers (the `config` query): which engine, which
//! version, which configuration.

use crate::engine::{EngineConfig, StorageEngine};
use candid::CandidType;
use serde::{Deserialize, Serialize};

/// What a store is and how it is configured, as reported by the canisters' `config` query.
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct EngineInfo<C> {
    /// The engine's name.
    pub engine: String,
    /// The engine's version: the library it is built on, with its version.
    pub engine_version: String,
    /// The configuration in force: a variant whose one case is the engine's name.
    pub config: C,
}

impl<E: StorageEngine> EngineInfo<EngineConfig<E>> {
    /// What `store` reports of itself.
    pub fn of(store: &E) -> Self {
        Self {
            engine: E::NAME.to_string(),
            engine_version: store.version(),
            config: EngineConfig::new(store.config()),
        }
    }
}
