//! The two states every 1,000,000-row table is measured in, and how each is reached.
//!
//! Both hold the same users: ids 0, 10, ..., 9,999,990 with 100-byte usernames
//! (`userstore_benches::tables`), so ids ending in 5 are free "between" ids and ids from
//! 10,000,000 on are free ids "above every id". They differ in the order the rows went in,
//! each batch through the canister's own `insert_users`, [`FILL_BATCH`] rows a message (the
//! smaller tables of the size sweep in [`FILL_MESSAGES`] messages, [`fill_batch`]):
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

    /// The state named `name` ([`TableState::name`]).
    pub fn named(name: &str) -> Option<TableState> {
        TableState::ALL
            .into_iter()
            .find(|state| state.name() == name)
    }

    /// The positions (id ÷ [`ID_STEP`]) of a table of `rows` in the order they are inserted.
    pub fn insertion_order(self, rows: u64) -> Vec<u64> {
        let mut positions: Vec<u64> = (0..rows).collect();
        if self == TableState::Aged {
            Rng::new(AGED_SEED).shuffle(&mut positions);
        }
        positions
    }
}

/// Messages a table is filled in, at least (of at most [`FILL_BATCH`] users each): an engine
/// that sorts a batch before it inserts it would otherwise fill a small table in ascending
/// order whatever its state.
pub const FILL_MESSAGES: u64 = 100;

/// Users per `insert_users` message when filling a table of `rows`.
pub fn fill_batch(rows: u64) -> usize {
    (rows / FILL_MESSAGES).clamp(1, FILL_BATCH as u64) as usize
}

/// Fills `canister` with the table of `rows` users in `state` through `insert_users`, in
/// batches of [`fill_batch`]; returns the instructions its messages took.
pub fn fill(canister: &mut Canister, state: TableState, rows: u64) -> Result<u64, String> {
    let mut instructions = 0;
    for batch in state.insertion_order(rows).chunks(fill_batch(rows)) {
        let users: Vec<User> = batch
            .iter()
            .map(|position| preloaded_user(position * ID_STEP))
            .collect();
        let arg = candid::encode_one(&users).map_err(|e| e.to_string())?;
        let result = canister.update("insert_users", &arg, owner());
        checked::<u64>(&result, "insert_users (filling)")?;
        instructions += result.instructions;
    }
    Ok(instructions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_orders_hold_every_position_once() {
        for state in TableState::ALL {
            let mut order = state.insertion_order(ROWS);
            order.sort_unstable();
            assert_eq!(order, (0..ROWS).collect::<Vec<_>>(), "{state:?}");
        }
        let aged = TableState::Aged.insertion_order(ROWS);
        assert_ne!(aged[..10], (0..10).collect::<Vec<_>>()[..]);
        assert_eq!(
            aged,
            TableState::Aged.insertion_order(ROWS),
            "the same every run"
        );
    }

    #[test]
    fn a_state_is_found_by_its_name_and_no_other() {
        for state in TableState::ALL {
            assert_eq!(TableState::named(state.name()), Some(state));
        }
        assert_eq!(TableState::named("Aged"), None);
        assert_eq!(TableState::named(""), None);
    }
}
