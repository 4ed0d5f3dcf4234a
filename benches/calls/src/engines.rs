//! The engine configurations measured: each store canister, the SQLite canister in every
//! journal mode and the stable-memory SQLite canister in each journal mode it accepts (chosen
//! by an upgrade argument, as a deployment would).

use userstore::{InitArgs, JournalMode, SqliteConfig};

/// One configuration of one store canister.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Its key in the results (`btree`, `sqlite_memory`, ...).
    pub key: String,
    /// The upgrade argument that selects the configuration.
    pub upgrade: Option<InitArgs>,
    /// Whether its headline calls are traced (one configuration per canister).
    pub traced: bool,
}

/// The store canisters, in the order they are measured.
pub const CANISTERS: [&str; 3] = ["btree", "sqlite", "stable-sqlite"];

/// The configurations of canister `wasm`.
pub fn configurations(wasm: &'static str) -> Vec<EngineConfig> {
    match wasm {
        "sqlite" => JournalMode::ALL
            .into_iter()
            .map(|mode| EngineConfig {
                key: format!("sqlite_{}", mode.as_sql()),
                upgrade: Some(InitArgs {
                    sqlite: Some(SqliteConfig::with_journal_mode(mode)),
                    ..InitArgs::default()
                }),
                // The canisters' default configuration.
                traced: mode == SqliteConfig::default().journal_mode,
            })
            .collect(),
        "stable-sqlite" => [JournalMode::Memory, JournalMode::Off]
            .into_iter()
            .map(|mode| EngineConfig {
                key: format!("stable_sqlite_{}", mode.as_sql()),
                upgrade: Some(InitArgs {
                    sqlite: Some(SqliteConfig::for_stable_sqlite_with_journal_mode(mode)),
                    ..InitArgs::default()
                }),
                traced: mode == SqliteConfig::for_stable_sqlite().journal_mode,
            })
            .collect(),
        _ => vec![EngineConfig {
            key: wasm.to_string(),
            upgrade: None,
            traced: true,
        }],
    }
}
