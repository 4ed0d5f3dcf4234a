//! Whether a batch fits one message's instruction budget, decided before it runs.
//!
//! The IC traps an update message that executes more than 40 billion instructions
//! (docs/metering.md §7) and discards everything it did. A canister that lets a caller send a
//! batch too large for that limit wastes the caller's cycles and tells them nothing useful.
//! So the store canisters estimate a batch's cost from an upper bound each engine gives
//! ([`crate::engine::StorageEngine::write_cost`], a [`WriteCost`]) and refuse, up front, a
//! batch that might not fit, with
//! [`StoreError::LimitExceeded`] whose `max` is the number of rows that do fit.
//!
//! The bounds are set at about twice the dearest call measured under the IC's current meter
//! (`per_call_results.yml`), and a test holds every bound above every measured call. With
//! the IC's limit and [`MAX_BATCH_SIZE`](crate::limits::MAX_BATCH_SIZE) rows at the dearest
//! bound (under 3 million instructions a row), every batch the size limit lets through fits;
//! the check bites when a canister is configured with a smaller budget
//! (`InitArgs::instruction_budget`), for example to cap what one call may cost in cycles. A
//! budget below an engine's `per_batch` would let no batch through on that engine (SQLite on
//! the WASI polyfill, whose commit may run a WAL checkpoint), so [`MIN_INSTRUCTION_BUDGET`]
//! lies above every engine's.

#[cfg(doc)]
use crate::engine::WriteCost;
use crate::error::StoreError;

/// The instruction limit of one update message on an application subnet
/// (docs/metering.md §7: 40 billion).
pub const UPDATE_INSTRUCTION_LIMIT: u64 = 40_000_000_000;

/// The smallest instruction budget a canister accepts: enough for the fixed part of a
/// SQLite batch (a WAL checkpoint under the IC's current meter, 250 million in its bound) and a
/// few hundred rows of any write. Checked when a budget is given, at install or upgrade; an
/// upgrade without one keeps the canister's, so a canister installed with a smaller budget
/// still upgrades.
pub const MIN_INSTRUCTION_BUDGET: u64 = 1_000_000_000;

/// Checks a configured budget: from [`MIN_INSTRUCTION_BUDGET`] to [`UPDATE_INSTRUCTION_LIMIT`].
pub fn check_budget(budget: u64) -> Result<(), StoreError> {
    if (MIN_INSTRUCTION_BUDGET..=UPDATE_INSTRUCTION_LIMIT).contains(&budget) {
        return Ok(());
    }
    Err(StoreError::invalid_config(format!(
        "instruction_budget must be from {MIN_INSTRUCTION_BUDGET} to {UPDATE_INSTRUCTION_LIMIT} \
         (the IC's update limit), not {budget}"
    )))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::engine::{BatchWrite, StorageEngine, WriteCost};

    /// Every engine's bounds let the largest batch through under the IC's limit.
    pub(crate) fn assert_every_batch_fits<E: StorageEngine>() {
        for write in BatchWrite::ALL {
            let fit = E::write_cost(write).rows_that_fit(UPDATE_INSTRUCTION_LIMIT);
            assert!(
                fit >= crate::limits::MAX_BATCH_SIZE as u64,
                "{}: {write:?}: {fit}",
                std::any::type_name::<E>()
            );
        }
    }

    /// Every engine's bound covers every write measured in `per_call_results.yml`: each
    /// message of each batch size, under both meters, on both table states (a bound below a
    /// measured call would let a configured budget be overrun).
    #[cfg(feature = "sqlite")]
    #[test]
    fn every_bound_covers_every_write_measured() {
        use crate::page_tree::PageTreeStore;
        use crate::{engine::EngineMemory, BTreeCanisterStore, SqliteStore, StableSqliteStore};
        use measured_writes::{check_bounds, WriteKind, RESULTS};

        fn bound_of(engine: &str, write: BatchWrite) -> Option<WriteCost> {
            Some(match engine {
                "btree" => BTreeCanisterStore::write_cost(write),
                "page_tree" => PageTreeStore::<EngineMemory>::write_cost(write),
                stable if stable.starts_with("stable_sqlite_") => {
                    StableSqliteStore::write_cost(write)
                }
                wasi if wasi.starts_with("sqlite_") => SqliteStore::write_cost(write),
                // The peer's bounds live in its own workspace (canisters/ic-sqlite-vfs), which
                // this crate cannot link; its own test holds them to the same results.
                _ => return None,
            })
        }

        let checked = check_bounds(RESULTS, |measured| {
            let write = match measured.kind {
                WriteKind::Insert => BatchWrite::Insert,
                WriteKind::Update => BatchWrite::Update,
                WriteKind::Delete => BatchWrite::Delete,
            };
            let cost = bound_of(&measured.engine, write)?;
            Some(cost.per_batch + cost.per_row * measured.rows)
        })
        .expect("every bound covers its measured writes");
        assert!(checked > 100, "only {checked} writes found");
    }

    #[test]
    fn budgets_outside_the_range_are_refused() {
        assert!(check_budget(MIN_INSTRUCTION_BUDGET).is_ok());
        assert!(check_budget(UPDATE_INSTRUCTION_LIMIT).is_ok());
        assert!(check_budget(MIN_INSTRUCTION_BUDGET - 1).is_err());
        assert!(check_budget(UPDATE_INSTRUCTION_LIMIT + 1).is_err());
    }
}
