//! The host's settings, from its environment.
//!
//! - `USERSTORE_ENGINE`: `page_tree` (default), `btree`, or `stable_sqlite` (in the component
//!   built with SQLite, `userstore-edge-sqlite`);
//! - `USERSTORE_DATA`: the data file (default `/data/userstore.db`);
//! - `USERSTORE_WRITE_TOKEN`: the bearer token writes need; unset or empty, every write is
//!   refused with 401;
//! - `USERSTORE_HOST_EPOCH`: an identifier of this host run, set per host start by the
//!   scripts (see [`crate::edge::lock`]);
//! - `USERSTORE_LOCK_STALE_MS`: age after which a lock of this epoch is taken as abandoned
//!   (default 30,000);
//! - `USERSTORE_LOCK_WAIT_MS`: how long a request waits for the lock before 503 (default
//!   10,000);
//! - `USERSTORE_LOCK_SPIN_US`: how long a request at the front of the lock's line watches it
//!   without sleeping (default 5,000; 0 on a host that should never spin; see
//!   [`crate::edge::lock`], "The handoff");
//! - `USERSTORE_SHARED_READS`: `1` (default) lets reads run without the lock, beside the
//!   writer ([`crate::edge::readers`]); `0` makes every request take the lock.

use crate::btree::BTreeCanisterStore;
use crate::engine::StorageEngine;
use crate::error::StoreError;
use crate::page_tree::PageTreeStore;
use std::path::PathBuf;
use std::time::Duration;

/// The engines the edge serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// [`PageTreeStore`].
    PageTree,
    /// [`crate::BTreeStore`] (ic-stable-structures' `StableBTreeMap`).
    BTree,
    /// `StableSqliteStore`: SQLite through this crate's VFS on the file's pages, in the
    /// component built with feature `edge-sqlite` only.
    StableSqlite,
}

/// The engine name of `StableSqliteStore` (its `StorageEngine::NAME`, which a test holds it
/// to), known without SQLite in the build.
const STABLE_SQLITE_NAME: &str = "StableSqlite";

impl Engine {
    /// The engine's name as recorded in the data: its `StorageEngine::NAME`.
    pub fn name(self) -> &'static str {
        match self {
            Self::PageTree => <PageTreeStore<crate::engine::EngineMemory> as StorageEngine>::NAME,
            Self::BTree => <BTreeCanisterStore as StorageEngine>::NAME,
            Self::StableSqlite => STABLE_SQLITE_NAME,
        }
    }

    /// The engine a `USERSTORE_ENGINE` value names.
    pub fn from_setting(value: &str) -> Result<Self, StoreError> {
        match value {
            "page_tree" => Ok(Self::PageTree),
            "btree" => Ok(Self::BTree),
            "stable_sqlite" if cfg!(any(feature = "sqlite", feature = "stable-sqlite")) => {
                Ok(Self::StableSqlite)
            }
            "stable_sqlite" => Err(StoreError::invalid_config(
                "USERSTORE_ENGINE=stable_sqlite needs SQLite, which this component was built \
                 without: serve userstore-edge-sqlite.wasm (scripts/build_edge.sh)",
            )),
            other => Err(StoreError::invalid_config(format!(
                "USERSTORE_ENGINE={other:?} names no engine; use page_tree, btree or \
                 stable_sqlite"
            ))),
        }
    }
}

/// The default data file.
pub const DEFAULT_DATA: &str = "/data/userstore.db";

/// The default `USERSTORE_LOCK_STALE_MS`.
pub const DEFAULT_LOCK_STALE: Duration = Duration::from_secs(30);

/// The default `USERSTORE_LOCK_WAIT_MS`.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(10);

/// The default `USERSTORE_LOCK_SPIN_US`: a few one-row requests' time, so that a handoff
/// behind a one-row request never waits for a sleep, while a waiter behind a long request
/// (a batch, SQLite's `count_users`) stops spinning soon.
pub const DEFAULT_LOCK_SPIN: Duration = Duration::from_millis(5);

/// Everything a host run needs to know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeConfig {
    /// The engine this host runs.
    pub engine: Engine,
    /// The data file.
    pub data: PathBuf,
    /// The write token; `None`: writes are refused.
    pub write_token: Option<String>,
    /// This host run's epoch.
    pub host_epoch: String,
    /// Age after which a lock of this epoch is abandoned.
    pub lock_stale: Duration,
    /// How long a request waits for the lock.
    pub lock_wait: Duration,
    /// How long a request at the front of the lock's line spins before it sleeps.
    pub lock_spin: Duration,
    /// Whether reads run without the lock ([`crate::edge::readers`]).
    pub shared_reads: bool,
}

impl EdgeConfig {
    /// The settings from the process environment.
    pub fn from_env() -> Result<Self, StoreError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The settings from `lookup`, which gives an environment variable's value.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, StoreError> {
        let engine = match lookup("USERSTORE_ENGINE") {
            Some(value) => Engine::from_setting(&value)?,
            None => Engine::PageTree,
        };
        let duration = |name: &str,
                        default: Duration,
                        unit: fn(u64) -> Duration,
                        unit_name: &str|
         -> Result<Duration, StoreError> {
            match lookup(name) {
                None => Ok(default),
                Some(value) => value.parse().map(unit).map_err(|_| {
                    StoreError::invalid_config(format!("{name}={value:?} is not {unit_name}"))
                }),
            }
        };
        let millis = |name: &str, default: Duration| {
            duration(name, default, Duration::from_millis, "milliseconds")
        };
        Ok(Self {
            engine,
            data: PathBuf::from(
                lookup("USERSTORE_DATA").unwrap_or_else(|| DEFAULT_DATA.to_owned()),
            ),
            write_token: lookup("USERSTORE_WRITE_TOKEN").filter(|token| !token.is_empty()),
            host_epoch: lookup("USERSTORE_HOST_EPOCH").unwrap_or_default(),
            lock_stale: millis("USERSTORE_LOCK_STALE_MS", DEFAULT_LOCK_STALE)?,
            lock_wait: millis("USERSTORE_LOCK_WAIT_MS", DEFAULT_LOCK_WAIT)?,
            lock_spin: duration(
                "USERSTORE_LOCK_SPIN_US",
                DEFAULT_LOCK_SPIN,
                Duration::from_micros,
                "microseconds",
            )?,
            shared_reads: match lookup("USERSTORE_SHARED_READS").as_deref() {
                None | Some("1") => true,
                Some("0") => false,
                Some(other) => {
                    return Err(StoreError::invalid_config(format!(
                        "USERSTORE_SHARED_READS={other:?} is not 0 or 1"
                    )))
                }
            },
        })
    }
}

#[cfg(all(test, any(feature = "sqlite", feature = "stable-sqlite")))]
mod tests {
    use super::*;

    #[test]
    fn the_stable_sqlite_name_is_the_engine_s() {
        assert_eq!(
            Engine::StableSqlite.name(),
            <crate::StableSqliteStore as StorageEngine>::NAME
        );
        assert_eq!(
            Engine::from_setting("stable_sqlite").expect("built with SQLite"),
            Engine::StableSqlite
        );
    }
}
