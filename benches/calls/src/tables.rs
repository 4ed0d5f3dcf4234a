//! The two states every 1,000,000-row table is measured in, and how each is reached.
//!
//! Both hold the same users: ids 0, 10, ..., 9,999,990 with 100-byte usernames
//! (`userstore_benches::tables`), so ids ending in 5 are free "between" ids and ids from
//! 10,000,000 on are free ids "above every id". They differ in the order the rows went in,
//! each batch through the canister's own `insert_users`, [`FILL_BATCH`] rows a message:
//! - [`TableState::Ascending`]: in ascending id order, as a table of increasing ids grows;
//! - [`TableState::Aged`]: in a random order (a permutation of the positions drawn from
//!   [`AGED_SEED`]), as a table that has lived a while was written.

use crate::draw::Rng;
use crate::reply::{checked, owner};
use icrun::Canister;
use userstore::User;
use userstore_benches::tables::{preloaded_user, ID_STEP};

/// Rows of every table.
pub const ROWS: u64 = 1_000_000;

/// Users per `insert_users` message when filling a table (the API's largest batch).
pub const FILL_BATCH: usize = 10_000;

/// The seed of the aged table's insertion order.
pub const AGED_SEED: u64 = 0xA9ED_2026_1125;

/// The order a table's rows were inserted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TableState {
    /// Random order: the table as it is after a life of inserts (the headline).
    Aged,
    /// Ascending id order.
    Ascending,
}

impl TableState {
    /// Both states, the headline first.
    pub const ALL: [TableState; 2] = [TableState::Aged, TableState::Ascending];

    /// Its name in the results.
    pub fn name(self) -> &'static str {
        match self {
            TableState::Aged => "aged",
            TableState::Ascending => "ascending",
        }
    }

    /// The positions (id ÷ [`ID_STEP`]) in the order they are inserted.
    pub fn insertion_order(self) -> Vec<u64> {
        let mut positions: Vec<u64> = (0..ROWS).collect();
        if self == TableState::Aged {
            Rng::new(AGED_SEED).shuffle(&mut positions);
        }
        positions
    }
}

/// Fills `canister` with the table of `state` through `insert_users`.
pub fn fill(canister: &mut Canister, state: TableState) -> Result<(), String> {
    for batch in state.insertion_order().chunks(FILL_BATCH) {
        let users: Vec<User> = batch
            .iter()
            .map(|position| preloaded_user(position * ID_STEP))
            .collect();
        let arg = candid::encode_one(&users).map_err(|e| e.to_string())?;
        let result = canister.update("insert_users", &arg, owner());
        checked::<u64>(&result, "insert_users (filling)")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_orders_hold_every_position_once() {
        for state in TableState::ALL {
            let mut order = state.insertion_order();
            order.sort_unstable();
            assert_eq!(order, (0..ROWS).collect::<Vec<_>>(), "{state:?}");
        }
        let aged = TableState::Aged.insertion_order();
        assert_ne!(aged[..10], (0..10).collect::<Vec<_>>()[..]);
        assert_eq!(
            aged,
            TableState::Aged.insertion_order(),
            "the same every run"
        );
    }
}
