//! The calls measured, and the ids each message touches.
//!
//! Every configuration runs the same workloads, in the same order, on a copy of the same
//! table, and every message draws its ids from one [`Ids`] per run, with fixed seeds:
//! - single-row calls go to ids drawn uniformly over the whole table, [`SPREAD_MESSAGES`]
//!   separate messages each, so their spread (mean, p50, p90, p99, max) shows the splits,
//!   merges and cold pages a user meets;
//! - batches of [`BATCH_SIZES`] rows take consecutive rows from a start drawn uniformly over
//!   the table (a batch of related users: the new ids between one run of existing ones, a
//!   run of existing users), and are reported per row; the scattered batches draw each of
//!   their rows uniformly over the whole table instead (a batch of unrelated users);
//! - every inserted id is new, every updated, read or deleted id exists (and is deleted at
//!   most once), every missing id is absent.

use crate::draw::{Distinct, Rng};
use candid::utils::ArgumentEncoder;
use userstore::User;
use userstore_benches::tables::{preloaded_user, ID_STEP, USERNAME_BYTES};

/// Messages of each single-row workload (the issue asks for at least 200).
pub const SPREAD_MESSAGES: usize = 200;

/// Messages of each batch workload.
pub const BATCH_MESSAGES: usize = 5;

/// Messages of each read of many rows (a page, the count).
pub const READ_MESSAGES: usize = 50;

/// Messages run before the measured ones of every workload, unmeasured.
pub const WARMUP_MESSAGES: usize = 3;

/// Rows per batch message.
pub const BATCH_SIZES: [usize; 2] = [100, 1_000];

/// Rows per scattered batch message.
pub const SCATTERED_BATCH: usize = 1_000;

/// Users a `list_users` message asks for: the page of the suite, and a short one.
pub const PAGE_ROWS: u64 = 100;
pub const SHORT_PAGE_ROWS: u64 = 10;

/// The seed every run draws its ids from.
const IDS_SEED: u64 = 0x1D5_2026_1125;

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

/// A workload: one kind of call, with the rows each message carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// `insert_user` of a new id between existing ones.
    InsertBetween,
    /// `insert_user` of a new id above every id.
    InsertAbove,
    /// `get_user` of an existing id.
    Get(Mode),
    /// `get_user` of an absent id.
    GetMissing,
    /// `get_user_by_name` of an existing user's name.
    GetByName,
    /// `update_username` of an existing id to the name it has.
    UpdateSame,
    /// `update_username` of an existing id.
    Update,
    /// `delete_user` of an existing id.
    Delete,
    /// `insert_users` of `n` new ids between one run of `n` consecutive existing ones.
    InsertBetweenBatch(usize),
    /// `insert_users` of `n` new ids above every id.
    InsertAboveBatch(usize),
    /// `update_users` of `n` consecutive existing ids.
    UpdateBatch(usize),
    /// `delete_users` of `n` consecutive existing ids.
    DeleteBatch(usize),
    /// `insert_users` of `n` new ids between existing ones, spread over the whole table.
    InsertScattered(usize),
    /// `update_users` of `n` existing ids spread over the whole table.
    UpdateScattered(usize),
    /// `list_users` of 100 users after an existing id.
    Page,
    /// `list_users` of 10 users after an existing id.
    ShortPage,
    /// `insert_user` of an id the one-row deletes removed, under a new name (a delete then
    /// an insert of the same id: the two calls are `delete_1` and this).
    Reinsert,
    /// `insert_users` of the `n` ids a batch delete removed, under new names.
    ReinsertBatch(usize),
    /// `count_users`.
    Count,
}

impl Workload {
    /// Every workload, in the order they run on a table (deletes last but one, so every
    /// read before them finds the rows it drew).
    pub fn all() -> Vec<Workload> {
        // The reads by name and the renames to the same name first: no user is renamed yet,
        // so every drawn id still has its preloaded name.
        let mut all = vec![
            Workload::Get(Mode::Query),
            Workload::Get(Mode::Replicated),
            Workload::GetMissing,
            Workload::GetByName,
            Workload::UpdateSame,
            Workload::Page,
            Workload::ShortPage,
            Workload::Count,
            Workload::InsertBetween,
            Workload::InsertAbove,
            Workload::Update,
        ];
        for n in BATCH_SIZES {
            all.extend([
                Workload::InsertBetweenBatch(n),
                Workload::InsertAboveBatch(n),
                Workload::UpdateBatch(n),
            ]);
        }
        all.extend([
            Workload::InsertScattered(SCATTERED_BATCH),
            Workload::UpdateScattered(SCATTERED_BATCH),
        ]);
        all.extend([Workload::Delete, Workload::Reinsert]);
        for n in BATCH_SIZES {
            all.extend([Workload::DeleteBatch(n), Workload::ReinsertBatch(n)]);
        }
        all
    }

    /// Its key in the results.
    pub fn key(self) -> String {
        match self {
            Workload::InsertBetween => "insert_between_1".into(),
            Workload::InsertAbove => "insert_above_1".into(),
            Workload::Get(Mode::Replicated) => "get_1_replicated".into(),
            Workload::Get(_) => "get_1".into(),
            Workload::GetMissing => "get_missing_1".into(),
            Workload::GetByName => "get_by_name_1".into(),
            Workload::UpdateSame => "update_same_name_1".into(),
            Workload::ShortPage => "page_10".into(),
            Workload::Reinsert => "reinsert_1".into(),
            Workload::ReinsertBatch(n) => format!("reinsert_{n}"),
            Workload::Update => "update_1".into(),
            Workload::Delete => "delete_1".into(),
            Workload::InsertBetweenBatch(n) => format!("insert_between_{n}"),
            Workload::InsertAboveBatch(n) => format!("insert_above_{n}"),
            Workload::UpdateBatch(n) => format!("update_{n}"),
            Workload::DeleteBatch(n) => format!("delete_{n}"),
            Workload::InsertScattered(n) => format!("insert_scattered_{n}"),
            Workload::UpdateScattered(n) => format!("update_scattered_{n}"),
            Workload::Page => "page_100".into(),
            Workload::Count => "count".into(),
        }
    }

    /// The canister method it calls.
    pub fn method(self) -> &'static str {
        match self {
            Workload::InsertBetween | Workload::InsertAbove | Workload::Reinsert => "insert_user",
            Workload::Get(_) | Workload::GetMissing => "get_user",
            Workload::GetByName => "get_user_by_name",
            Workload::Update | Workload::UpdateSame => "update_username",
            Workload::ReinsertBatch(_) => "insert_users",
            Workload::Delete => "delete_user",
            Workload::InsertBetweenBatch(_)
            | Workload::InsertAboveBatch(_)
            | Workload::InsertScattered(_) => "insert_users",
            Workload::UpdateBatch(_) | Workload::UpdateScattered(_) => "update_users",
            Workload::DeleteBatch(_) => "delete_users",
            Workload::Page | Workload::ShortPage => "list_users",
            Workload::Count => "count_users",
        }
    }

    /// How it is executed.
    pub fn mode(self) -> Mode {
        match self {
            Workload::Get(mode) => mode,
            Workload::GetMissing
            | Workload::GetByName
            | Workload::Page
            | Workload::ShortPage
            | Workload::Count => Mode::Query,
            _ => Mode::Update,
        }
    }

    /// Rows each message carries (what a batch's figures are divided by).
    pub fn rows(self) -> usize {
        match self {
            Workload::InsertBetweenBatch(n)
            | Workload::InsertAboveBatch(n)
            | Workload::UpdateBatch(n)
            | Workload::DeleteBatch(n)
            | Workload::InsertScattered(n)
            | Workload::UpdateScattered(n)
            | Workload::ReinsertBatch(n) => n,
            _ => 1,
        }
    }

    /// Measured messages.
    pub fn messages(self) -> usize {
        match self {
            Workload::InsertBetweenBatch(_)
            | Workload::InsertAboveBatch(_)
            | Workload::UpdateBatch(_)
            | Workload::DeleteBatch(_)
            | Workload::InsertScattered(_)
            | Workload::UpdateScattered(_)
            | Workload::ReinsertBatch(_) => BATCH_MESSAGES,
            Workload::Page
            | Workload::ShortPage
            | Workload::Count
            | Workload::Get(Mode::Replicated) => READ_MESSAGES,
            _ => SPREAD_MESSAGES,
        }
    }

    /// The headline calls: traced, with their page maps.
    pub fn traced(self) -> bool {
        matches!(
            self,
            Workload::InsertBetween
                | Workload::Get(Mode::Query)
                | Workload::GetByName
                | Workload::Delete
                | Workload::Update
        )
    }
}

/// The ids of one run's messages, drawn so that no two messages collide.
#[derive(Debug, Clone)]
pub struct Ids {
    /// Rows of the table the run starts from.
    rows: u64,
    /// Positions of the table (id ÷ [`ID_STEP`]) not yet deleted, drawn uniformly.
    existing: Rng,
    /// Positions deleted, never drawn again for a read or an update.
    deleted: Distinct,
    /// Positions whose "between" id (`position × 10 + 5`) is still free.
    between: Distinct,
    /// The next position above every id.
    above: u64,
    /// Renames so far: each rename gives a name no user had.
    renames: u64,
    /// Ids the one-row deletes removed, and the runs the batch deletes did, for the inserts
    /// of the same ids after them.
    deleted_ones: std::collections::VecDeque<u64>,
    deleted_runs: std::collections::VecDeque<Vec<u64>>,
}

impl Ids {
    /// The draws of a run on a table of `rows` users (ids `0, 10, ...`).
    pub fn new(rows: u64) -> Self {
        Ids {
            rows,
            existing: Rng::new(IDS_SEED),
            deleted: Distinct::new(IDS_SEED ^ 0xDE1E7E, rows),
            between: Distinct::new(IDS_SEED ^ 0xB37, rows),
            above: rows,
            renames: 0,
            deleted_ones: Default::default(),
            deleted_runs: Default::default(),
        }
    }

    /// User `id` under a name no user had: a rename, or the insert of a deleted id.
    fn renamed(&mut self, id: u64) -> User {
        self.renames += 1;
        let name = format!("renamed-{:0>12}-{id}", self.renames);
        User::new(id, format!("{name:x<width$}", width = USERNAME_BYTES))
    }

    /// The next id a one-row delete removed.
    fn deleted_one(&mut self) -> Result<u64, String> {
        self.deleted_ones
            .pop_front()
            .ok_or_else(|| "no deleted id left to insert again".to_string())
    }

    /// The next run a batch delete removed.
    fn deleted_run(&mut self) -> Result<Vec<u64>, String> {
        self.deleted_runs
            .pop_front()
            .ok_or_else(|| "no deleted run left to insert again".to_string())
    }

    /// `n` new ids between `n` consecutive existing ones, from a start drawn uniformly.
    fn between_run(&mut self, n: usize) -> Result<Vec<u64>, String> {
        self.between
            .take_run(n as u64)
            .map(|run| run.map(|position| position * ID_STEP + 5).collect())
            .ok_or_else(|| format!("no run of {n} free ids between the table's left"))
    }

    /// `n` consecutive existing ids (none deleted), from a start drawn uniformly.
    fn existing_run(&mut self, n: usize) -> Vec<u64> {
        loop {
            let start = self.existing.below(self.rows - n as u64 + 1);
            let run = start..start + n as u64;
            if run.clone().all(|position| !self.deleted.contains(position)) {
                return run.map(|position| position * ID_STEP).collect();
            }
        }
    }

    /// `n` consecutive existing ids, each deleted from now on, from a start drawn uniformly.
    fn delete_run(&mut self, n: usize) -> Result<Vec<u64>, String> {
        self.deleted
            .take_run(n as u64)
            .map(|run| run.map(|position| position * ID_STEP).collect())
            .ok_or_else(|| format!("no run of {n} rows left to delete"))
    }

    /// `n` new ids between existing ones, spread over the table.
    fn between(&mut self, n: usize) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .between
            .take(n)
            .into_iter()
            .map(|position| position * ID_STEP + 5)
            .collect();
        ids.sort_unstable();
        ids
    }

    /// `n` new ids above every id, in ascending order.
    fn above(&mut self, n: usize) -> Vec<u64> {
        let ids = (self.above..self.above + n as u64)
            .map(|position| position * ID_STEP)
            .collect();
        self.above += n as u64;
        ids
    }

    /// An existing id, drawn uniformly among those not deleted.
    fn existing(&mut self) -> u64 {
        loop {
            let position = self.existing.below(self.rows);
            if !self.deleted_contains(position) {
                return position * ID_STEP;
            }
        }
    }

    /// An existing id with at least `n` rows above it, drawn as [`Ids::existing`] draws
    /// (the same draws wherever the table is large enough that none lands that high).
    fn existing_below_last(&mut self, n: u64) -> u64 {
        loop {
            let id = self.existing();
            if id / ID_STEP + n < self.rows {
                return id;
            }
        }
    }

    fn deleted_contains(&self, position: u64) -> bool {
        self.deleted.contains(position)
    }

    /// `n` distinct existing ids, in ascending order.
    fn existing_batch(&mut self, n: usize) -> Vec<u64> {
        let mut ids = std::collections::BTreeSet::new();
        while ids.len() < n {
            ids.insert(self.existing());
        }
        ids.into_iter().collect()
    }

    /// `n` existing ids, each deleted from now on, in ascending order.
    fn take_for_deletion(&mut self, n: usize) -> Vec<u64> {
        let mut ids: Vec<u64> = self
            .deleted
            .take(n)
            .into_iter()
            .map(|position| position * ID_STEP)
            .collect();
        ids.sort_unstable();
        ids
    }
}

/// A user with a new id and a 100-byte username.
fn new_user(id: u64) -> User {
    preloaded_user(id)
}

/// `args` Candid-encoded, an error as text.
pub(crate) fn encode<A: ArgumentEncoder>(args: A) -> Result<Vec<u8>, String> {
    candid::encode_args(args).map_err(|error| error.to_string())
}

/// The Candid argument of the next message of `workload`.
pub fn argument(workload: Workload, ids: &mut Ids) -> Result<Vec<u8>, String> {
    match workload {
        Workload::InsertBetween => encode((new_user(ids.between(1)[0]),)),
        Workload::InsertAbove => encode((new_user(ids.above(1)[0]),)),
        Workload::Get(_) => encode((ids.existing(),)),
        // Ids ending in 7 are never inserted.
        Workload::GetMissing => encode((ids.existing() + 7,)),
        Workload::Update => {
            let id = ids.existing();
            let user = ids.renamed(id);
            encode((user.id, user.username))
        }
        Workload::UpdateSame => {
            let user = preloaded_user(ids.existing());
            encode((user.id, user.username))
        }
        Workload::GetByName => encode((preloaded_user(ids.existing()).username,)),
        Workload::Delete => {
            let id = ids.take_for_deletion(1)[0];
            ids.deleted_ones.push_back(id);
            encode((id,))
        }
        Workload::Reinsert => {
            let id = ids.deleted_one()?;
            encode((ids.renamed(id),))
        }
        Workload::ReinsertBatch(n) => {
            let run = ids.deleted_run()?;
            if run.len() != n {
                return Err(format!("a deleted run of {} rows, not {n}", run.len()));
            }
            encode((run
                .into_iter()
                .map(|id| ids.renamed(id))
                .collect::<Vec<_>>(),))
        }
        Workload::InsertBetweenBatch(n) => encode((ids
            .between_run(n)?
            .into_iter()
            .map(new_user)
            .collect::<Vec<_>>(),)),
        Workload::InsertScattered(n) => {
            encode((ids.between(n).into_iter().map(new_user).collect::<Vec<_>>(),))
        }
        Workload::InsertAboveBatch(n) => {
            encode((ids.above(n).into_iter().map(new_user).collect::<Vec<_>>(),))
        }
        Workload::UpdateBatch(n) => {
            let run = ids.existing_run(n);
            encode((run
                .into_iter()
                .map(|id| ids.renamed(id))
                .collect::<Vec<_>>(),))
        }
        Workload::UpdateScattered(n) => {
            let batch = ids.existing_batch(n);
            encode((batch
                .into_iter()
                .map(|id| ids.renamed(id))
                .collect::<Vec<_>>(),))
        }
        Workload::DeleteBatch(n) => {
            let run = ids.delete_run(n)?;
            ids.deleted_runs.push_back(run.clone());
            encode((run,))
        }
        Workload::Page => encode((Some(ids.existing_below_last(PAGE_ROWS)), PAGE_ROWS as u32)),
        Workload::ShortPage => encode((
            Some(ids.existing_below_last(SHORT_PAGE_ROWS)),
            SHORT_PAGE_ROWS as u32,
        )),
        Workload::Count => encode(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::ROWS;
    use std::collections::HashSet;

    #[test]
    fn ids_never_collide() {
        let mut ids = Ids::new(ROWS);
        let deleted: Vec<u64> = (0..20).flat_map(|_| ids.take_for_deletion(500)).collect();
        assert_eq!(deleted.iter().collect::<HashSet<_>>().len(), deleted.len());
        assert!(deleted
            .iter()
            .all(|id| id % 10 == 0 && *id < ROWS * ID_STEP));
        for _ in 0..10_000 {
            let id = ids.existing();
            assert!(!deleted.contains(&id), "{id} was deleted");
        }
        let between: Vec<u64> = (0..10).flat_map(|_| ids.between(100)).collect();
        assert!(between.iter().all(|id| id % 10 == 5));
        assert_eq!(between.iter().collect::<HashSet<_>>().len(), between.len());
        assert!(ids.above(3).iter().all(|id| *id >= ROWS * ID_STEP));
    }

    #[test]
    fn every_workload_has_a_distinct_key() {
        let keys: HashSet<String> = Workload::all().into_iter().map(Workload::key).collect();
        assert_eq!(keys.len(), Workload::all().len());
    }
}
