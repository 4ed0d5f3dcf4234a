//! The calls measured, and the ids each message touches.
//!
//! Every configuration runs the same sequence of workloads on a copy of the same 1,000,000-row
//! table (ids 0, 10, ..., 9,999,990, 100-byte usernames), so the ids are allotted from one
//! [`Ids`] per configuration: every inserted id is new, every updated, read or deleted id
//! exists (and is never deleted twice), every missing id is absent.

use candid::utils::ArgumentEncoder;
use userstore::User;
use userstore_benches::tables::{preloaded_user, ID_STEP, USERNAME_BYTES};

/// Rows of the preloaded table.
pub const ROWS: u64 = 1_000_000;

/// Batch sizes of the batch writes.
pub const BATCH_SIZES: [u64; 4] = [1, 10, 100, 1_000];

/// A prime sharing no factor with the row count: `i × SPREAD mod ROWS` walks every position
/// once, spread over the whole table.
const SPREAD: u64 = 7_919;

/// How a call is executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// An ingress update call.
    Update,
    /// A query call (free on the IC).
    Query,
    /// A query method called as an update (replicated, billed like an update).
    Replicated,
}

impl Mode {
    /// The name in the results.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Update => "update",
            Mode::Query => "query",
            Mode::Replicated => "replicated",
        }
    }
}

/// A workload: one kind of call with its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// `insert_user` of a new id between existing ones.
    InsertUser,
    /// `insert_users` of `n` new ids between existing ones (consecutive).
    InsertMiddle(u64),
    /// `insert_users` of `n` new ids above every existing one.
    InsertAppend(u64),
    /// `update_users` of `n` existing ids spread over the table.
    Update(u64),
    /// `delete_users` of `n` existing ids spread over the table.
    Delete(u64),
    /// `delete_user` of one existing id.
    DeleteUser,
    /// `get_user` of an existing id.
    GetUser(Mode),
    /// `get_user` of an absent id.
    GetMissing(Mode),
    /// `list_users` of 100 users from an existing id.
    Page(Mode),
    /// `count_users`.
    Count(Mode),
}

impl Workload {
    /// Every workload, in the order they run on a table.
    pub fn all() -> Vec<Workload> {
        let mut all = vec![Workload::InsertUser];
        for n in BATCH_SIZES {
            all.extend([
                Workload::InsertMiddle(n),
                Workload::InsertAppend(n),
                Workload::Update(n),
                Workload::Delete(n),
            ]);
        }
        all.push(Workload::DeleteUser);
        for mode in [Mode::Query, Mode::Replicated] {
            all.extend([
                Workload::GetUser(mode),
                Workload::GetMissing(mode),
                Workload::Page(mode),
                Workload::Count(mode),
            ]);
        }
        all
    }

    /// Its key in the results: `<call>_<n>` and, for reads, the mode.
    pub fn key(self) -> String {
        match self {
            Workload::InsertUser => "insert_user_1".into(),
            Workload::InsertMiddle(n) => format!("insert_middle_{n}"),
            Workload::InsertAppend(n) => format!("insert_append_{n}"),
            Workload::Update(n) => format!("update_{n}"),
            Workload::Delete(n) => format!("delete_{n}"),
            Workload::DeleteUser => "delete_user_1".into(),
            Workload::GetUser(mode) => format!("get_user_1_{}", mode.name()),
            Workload::GetMissing(mode) => format!("get_missing_1_{}", mode.name()),
            Workload::Page(mode) => format!("page_100_{}", mode.name()),
            Workload::Count(mode) => format!("count_{}", mode.name()),
        }
    }

    /// The canister method it calls.
    pub fn method(self) -> &'static str {
        match self {
            Workload::InsertUser => "insert_user",
            Workload::InsertMiddle(_) | Workload::InsertAppend(_) => "insert_users",
            Workload::Update(_) => "update_users",
            Workload::Delete(_) => "delete_users",
            Workload::DeleteUser => "delete_user",
            Workload::GetUser(_) | Workload::GetMissing(_) => "get_user",
            Workload::Page(_) => "list_users",
            Workload::Count(_) => "count_users",
        }
    }

    /// How it is executed.
    pub fn mode(self) -> Mode {
        match self {
            Workload::GetUser(mode)
            | Workload::GetMissing(mode)
            | Workload::Page(mode)
            | Workload::Count(mode) => mode,
            _ => Mode::Update,
        }
    }

    /// The headline calls whose traces are kept: one-row insert, get, delete and count.
    pub fn traced(self) -> bool {
        matches!(
            self,
            Workload::InsertUser
                | Workload::GetUser(Mode::Query)
                | Workload::DeleteUser
                | Workload::Count(Mode::Query)
        )
    }
}

/// The ids a configuration's messages take, allotted so that no two messages collide.
#[derive(Debug, Clone)]
pub struct Ids {
    /// Next free middle position (ids `position × 10 + 5`), from the middle of the table.
    middle: u64,
    /// Next free position above the table (ids `position × 10`).
    append: u64,
    /// Next index of the spread walk over existing positions.
    spread: u64,
}

impl Default for Ids {
    fn default() -> Self {
        Ids {
            middle: ROWS / 2,
            append: ROWS,
            spread: 1,
        }
    }
}

impl Ids {
    fn middle(&mut self, n: u64) -> Vec<u64> {
        let ids = (self.middle..self.middle + n)
            .map(|position| position * ID_STEP + 5)
            .collect();
        self.middle += n;
        ids
    }

    fn append(&mut self, n: u64) -> Vec<u64> {
        let ids = (self.append..self.append + n)
            .map(|position| position * ID_STEP)
            .collect();
        self.append += n;
        ids
    }

    /// `n` existing ids, each taken once in the whole sequence.
    fn existing(&mut self, n: u64) -> Vec<u64> {
        let ids = (self.spread..self.spread + n)
            .map(|i| (i * SPREAD) % ROWS * ID_STEP)
            .collect();
        self.spread += n;
        ids
    }
}

/// A user with a new id and a 100-byte username.
fn new_user(id: u64) -> User {
    preloaded_user(id)
}

/// A renamed user: the same id, another 100-byte username.
fn renamed(id: u64) -> User {
    User::new(id, "r".repeat(USERNAME_BYTES))
}

fn encode<A: ArgumentEncoder>(args: A) -> Result<Vec<u8>, String> {
    candid::encode_args(args).map_err(|error| error.to_string())
}

/// The Candid argument of the next message of `workload`.
pub fn argument(workload: Workload, ids: &mut Ids) -> Result<Vec<u8>, String> {
    match workload {
        Workload::InsertUser => encode((new_user(ids.middle(1)[0]),)),
        Workload::InsertMiddle(n) => {
            encode((ids.middle(n).into_iter().map(new_user).collect::<Vec<_>>(),))
        }
        Workload::InsertAppend(n) => {
            encode((ids.append(n).into_iter().map(new_user).collect::<Vec<_>>(),))
        }
        Workload::Update(n) => {
            encode((ids.existing(n).into_iter().map(renamed).collect::<Vec<_>>(),))
        }
        Workload::Delete(n) => encode((ids.existing(n),)),
        Workload::DeleteUser => encode((ids.existing(1)[0],)),
        Workload::GetUser(_) => encode((ids.existing(1)[0],)),
        // Ids ending in 7 are never inserted.
        Workload::GetMissing(_) => encode((ids.existing(1)[0] + 7,)),
        Workload::Page(_) => encode((Some(ids.existing(1)[0]), 100u32)),
        Workload::Count(_) => encode(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_never_collide() {
        let mut ids = Ids::default();
        let existing: Vec<u64> = (0..20).flat_map(|_| ids.existing(1_000)).collect();
        assert_eq!(
            existing.iter().collect::<HashSet<_>>().len(),
            existing.len()
        );
        assert!(existing
            .iter()
            .all(|id| id % 10 == 0 && *id < ROWS * ID_STEP));
        let middle = ids.middle(100);
        assert!(middle.iter().all(|id| id % 10 == 5));
        assert!(ids.append(3).iter().all(|id| *id >= ROWS * ID_STEP));
    }

    #[test]
    fn every_workload_has_a_distinct_key() {
        let keys: HashSet<String> = Workload::all().into_iter().map(Workload::key).collect();
        assert_eq!(keys.len(), Workload::all().len());
    }
}
