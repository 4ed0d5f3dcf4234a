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
//! With the IC's limit and [`MAX_BATCH_SIZE`](crate::limits::MAX_BATCH_SIZE) rows of at most
//! 600,000 instructions each, every batch the size limit lets through fits; the check bites
//! when a canister is configured with a smaller budget (`InitArgs::instruction_budget`), for
//! example to cap what one call may cost in cycles.

#[cfg(doc)]
use crate::engine::WriteCost;
use crate::error::StoreError;

/// The instruction limit of one update message on an application subnet
/// (docs/metering.md §7: 40 billion).
pub const UPDATE_INSTRUCTION_LIMIT: u64 = 40_000_000_000;

/// The smallest instruction budget a canister accepts: enough for the fixed part of a
/// SQLite batch and a few hundred rows of any write.
pub const MIN_INSTRUCTION_BUDGET: u64 = 100_000_000;

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
    use crate::engine::{BatchWrite, StorageEngine};

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

    #[test]
    fn budgets_outside_the_range_are_refused() {
        assert!(check_budget(MIN_INSTRUCTION_BUDGET).is_ok());
        assert!(check_budget(UPDATE_INSTRUCTION_LIMIT).is_ok());
        assert!(check_budget(MIN_INSTRUCTION_BUDGET - 1).is_err());
        assert!(check_budget(UPDATE_INSTRUCTION_LIMIT + 1).is_err());
    }
}
