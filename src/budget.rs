//! Whether a batch fits one message's instruction budget, decided before it runs.
//!
//! The IC traps an update message that executes more than 40 billion instructions
//! (docs/metering.md §7) and discards everything it did. A canister that lets a caller send a
//! batch too large for that limit wastes the caller's cycles and tells them nothing useful.
//! So the store canisters estimate a batch's cost from an upper bound each engine gives
//! ([`crate::engine::StorageEngine::write_cost`], a [`WriteCost`]) and refuse, up front, a batch that might not fit, with
//! [`StoreError::LimitExceeded`] whose `max` is the number of rows that do fit.
//!
//! With the IC's limit and [`MAX_BATCH_SIZE`](crate::limits::MAX_BATCH_SIZE) rows of at most
//! 600,000 instructions each, every batch the size limit lets through fits; the check bites
//! when a canister is configured with a smaller budget (`InitArgs::instruction_budget`), for
//! example to cap what one call may cost in cycles.

use crate::error::{Limit, StoreError};

/// The instruction limit of one update message on an application subnet
/// (docs/metering.md §7: 40 billion).
pub const UPDATE_INSTRUCTION_LIMIT: u64 = 40_000_000_000;

/// The smallest instruction budget a canister accepts: enough for the fixed part of a
/// SQLite batch and a few hundred rows of any write.
pub const MIN_INSTRUCTION_BUDGET: u64 = 100_000_000;

/// The three batch writes whose cost is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchWrite {
    /// `insert_users`.
    Insert,
    /// `update_users`.
    Update,
    /// `delete_users`.
    Delete,
}

impl BatchWrite {
    /// The three writes.
    pub const ALL: [BatchWrite; 3] = [Self::Insert, Self::Update, Self::Delete];
}

/// An upper bound of what a batch write costs on one engine.
///
/// Engines set each bound at about twice the worst per-row figure the benchmark suite
/// measured for that write (`docs/RESULTS.md`: 1,000,000-row tables, 1,000-row batches, cold
/// and warm), so that a batch that passes the check also fits on larger tables and with the
/// longest usernames. The margin also covers decoding the request and the heap dirty-page
/// charge after the message (docs/metering.md §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteCost {
    /// Instructions a batch costs whatever its size (transaction, journal, reply).
    pub per_batch: u64,
    /// Instructions each row costs at most.
    pub per_row: u64,
}

impl WriteCost {
    /// How many rows fit in `instructions_left`.
    pub fn rows_that_fit(&self, instructions_left: u64) -> u64 {
        instructions_left.saturating_sub(self.per_batch) / self.per_row
    }

    /// `Ok` if a batch of `rows` fits in `instructions_left`; otherwise
    /// [`StoreError::LimitExceeded`] with [`Limit::InstructionBudget`] and, as `max`, the
    /// number of rows that fit.
    pub fn check(&self, rows: usize, instructions_left: u64) -> Result<(), StoreError> {
        let rows = rows as u64;
        let fit = self.rows_that_fit(instructions_left);
        if rows > fit {
            return Err(StoreError::LimitExceeded {
                limit: Limit::InstructionBudget,
                max: fit,
                actual: rows,
            });
        }
        Ok(())
    }
}

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
mod tests {
    use super::*;

    #[test]
    fn rows_that_fit_leave_the_fixed_part_aside() {
        let cost = WriteCost {
            per_batch: 1_000,
            per_row: 100,
        };
        assert_eq!(cost.rows_that_fit(999), 0);
        assert_eq!(cost.rows_that_fit(1_000), 0);
        assert_eq!(cost.rows_that_fit(1_099), 0);
        assert_eq!(cost.rows_that_fit(1_100), 1);
        assert_eq!(cost.rows_that_fit(11_000), 100);
    }

    #[test]
    fn check_refuses_with_the_number_of_rows_that_fit() {
        let cost = WriteCost {
            per_batch: 1_000,
            per_row: 100,
        };
        assert_eq!(cost.check(100, 11_000), Ok(()));
        assert_eq!(
            cost.check(101, 11_000),
            Err(StoreError::LimitExceeded {
                limit: Limit::InstructionBudget,
                max: 100,
                actual: 101,
            })
        );
    }

    /// Every engine's bounds let the largest batch through under the IC's limit.
    pub(crate) fn assert_every_batch_fits<E: crate::engine::StorageEngine>() {
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
    fn every_batch_the_size_limit_allows_fits_the_ic_limit() {
        assert_every_batch_fits::<crate::btree::BTreeCanisterStore>();
        #[cfg(feature = "sqlite")]
        assert_every_batch_fits::<crate::SqliteStore>();
        #[cfg(feature = "sqlite")]
        assert_every_batch_fits::<crate::StableSqliteStore>();
    }

    #[test]
    fn budgets_outside_the_range_are_refused() {
        assert!(check_budget(MIN_INSTRUCTION_BUDGET).is_ok());
        assert!(check_budget(UPDATE_INSTRUCTION_LIMIT).is_ok());
        assert!(check_budget(MIN_INSTRUCTION_BUDGET - 1).is_err());
        assert!(check_budget(UPDATE_INSTRUCTION_LIMIT + 1).is_err());
    }
}
