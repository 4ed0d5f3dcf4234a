//! The workloads, each prepared outside the measured scope (ids and users built in advance)
//! and executed inside it, so a measurement counts the store's work only.

use crate::ids::{self, Phase};
use crate::tables::preloaded_user;
use userstore::{User, UserStore};

/// What a bench does to the table, with its operation count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// `n` new middle ids in one batch (one transaction).
    InsertMiddle(u64),
    /// `n` ids above every existing id in one batch.
    InsertAppend(u64),
    /// `n` new middle ids, one single-row insert (transaction) each.
    InsertMiddleAutocommit(u64),
    /// `n` existing ids read one by one.
    Get(u64),
    /// `n` absent ids looked up one by one.
    GetMissing(u64),
    /// One page of `n` consecutive users from the middle.
    Page(u32),
    /// `n` existing users renamed in one batch (one transaction).
    Update(u64),
    /// `n` existing users deleted in one batch (one transaction).
    Delete(u64),
    /// Counting the rows.
    Count,
}

/// A workload's inputs for one phase, built before the measurement.
pub enum Prepared {
    /// Users for one batch insert.
    Batch(Vec<User>),
    /// Users for single-row inserts.
    Singles(Vec<User>),
    /// Ids to read.
    Gets(Vec<u64>),
    /// Ids that must be absent.
    Misses(Vec<u64>),
    /// A page: the id to start after and the page size.
    Page(u64, u32),
    /// Users with their new names.
    Updates(Vec<User>),
    /// Ids to delete.
    Deletes(Vec<u64>),
    /// A count, and the row count it must return.
    Count(u64),
}

/// Builds the inputs of `workload` for `phase` on a table of `rows` preloaded rows.
pub fn prepare(workload: Workload, rows: u64, phase: Phase) -> Prepared {
    let users = |ids: Vec<u64>| ids.into_iter().map(preloaded_user).collect();
    match workload {
        Workload::InsertMiddle(n) => Prepared::Batch(users(ids::middle_ids(
            rows,
            phase,
            ids::operations(phase, n),
        ))),
        Workload::InsertAppend(n) => Prepared::Batch(users(ids::append_ids(rows, phase, n))),
        Workload::InsertMiddleAutocommit(n) => Prepared::Singles(users(ids::middle_ids(
            rows,
            phase,
            ids::operations(phase, n),
        ))),
        Workload::Get(n) => {
            Prepared::Gets(ids::existing_ids(rows, phase, ids::operations(phase, n)))
        }
        Workload::GetMissing(n) => {
            Prepared::Misses(ids::missing_ids(rows, phase, ids::operations(phase, n)))
        }
        Workload::Page(n) => {
            let size = ids::operations(phase, u64::from(n));
            // `operations` never exceeds max(n, 1,000), which fits a u32.
            Prepared::Page(
                ids::page_start(rows, phase),
                u32::try_from(size).unwrap_or(n),
            )
        }
        Workload::Update(n) => {
            let ids = ids::existing_ids(rows, phase, ids::operations(phase, n));
            Prepared::Updates(ids.into_iter().map(crate::tables::renamed_user).collect())
        }
        Workload::Delete(n) => {
            Prepared::Deletes(ids::existing_ids(rows, phase, ids::operations(phase, n)))
        }
        Workload::Count => Prepared::Count(rows),
    }
}

/// Runs prepared inputs against `store` and checks every answer, so a bench can only
/// measure work that really happened. Returns the number of rows the phase touched. The
/// inputs are borrowed (single-row inserts take their users out), so freeing them happens
/// after the measured scope.
pub fn execute(store: &mut dyn UserStore, prepared: &mut Prepared) -> Result<u64, String> {
    let fail = |what: &str, error: userstore::StoreError| format!("{what}: {error}");
    match prepared {
        Prepared::Batch(users) => store
            .insert_batch(users)
            .map_err(|e| fail("insert_batch", e)),
        Prepared::Singles(users) => {
            let count = users.len() as u64;
            for user in users.drain(..) {
                store.insert(user).map_err(|e| fail("insert", e))?;
            }
            Ok(count)
        }
        Prepared::Gets(ids) => {
            for id in ids.iter() {
                store.get(*id).map_err(|e| fail("get", e))?;
            }
            Ok(ids.len() as u64)
        }
        Prepared::Misses(ids) => {
            for id in ids.iter() {
                if store.get(*id).is_ok() {
                    return Err(format!("id {id} should be absent"));
                }
            }
            Ok(ids.len() as u64)
        }
        Prepared::Page(after, size) => {
            let (after, size) = (*after, *size);
            let page = store.page(Some(after), size).map_err(|e| fail("page", e))?;
            if page.len() != size as usize {
                return Err(format!("page of {size} returned {}", page.len()));
            }
            Ok(page.len() as u64)
        }
        Prepared::Updates(users) => store
            .update_batch(users)
            .map_err(|e| fail("update_batch", e)),
        Prepared::Deletes(ids) => store.delete_batch(ids).map_err(|e| fail("delete_batch", e)),
        Prepared::Count(expected_at_least) => {
            let expected_at_least = *expected_at_least;
            let count = store.count().map_err(|e| fail("count", e))?;
            if count < expected_at_least {
                return Err(format!("count {count} < {expected_at_least}"));
            }
            Ok(count)
        }
    }
}

// The tests run the workloads on this crate's engines, SQLite among them.
#[cfg(all(test, feature = "engines"))]
mod tests {
    use super::*;
    use crate::tables::preloaded_users;
    use ic_stable_structures::VectorMemory;
    use userstore::{BTreeStore, SqliteConfig, SqliteStore};

    const ROWS: u64 = 20_000;

    fn preloaded(store: &mut dyn UserStore) {
        for from in (0..ROWS).step_by(10_000) {
            store.insert_batch(&preloaded_users(from, 10_000)).unwrap();
        }
    }

    fn every_workload() -> Vec<Workload> {
        vec![
            Workload::InsertMiddle(100),
            Workload::InsertAppend(100),
            Workload::InsertMiddleAutocommit(10),
            Workload::Get(100),
            Workload::GetMissing(100),
            Workload::Page(100),
            Workload::Update(10),
            Workload::Delete(10),
            Workload::Count,
        ]
    }

    /// Each workload runs all three phases on a fresh preloaded table of each engine.
    #[test]
    fn every_workload_runs_every_phase_on_both_engines() {
        for workload in every_workload() {
            let mut btree = BTreeStore::open(VectorMemory::default()).unwrap();
            let mut sqlite = SqliteStore::open_in_memory(SqliteConfig::default()).unwrap();
            for store in [&mut btree as &mut dyn UserStore, &mut sqlite] {
                preloaded(store);
                for phase in Phase::ALL {
                    let touched = execute(store, &mut prepare(workload, ROWS, phase));
                    assert!(touched.is_ok(), "{workload:?} {phase:?}: {touched:?}");
                }
            }
        }
    }

    #[test]
    fn inserts_add_exactly_their_rows_and_deletes_remove_theirs() {
        let mut store = BTreeStore::open(VectorMemory::default()).unwrap();
        preloaded(&mut store);
        execute(
            &mut store,
            &mut prepare(Workload::InsertAppend(10), ROWS, Phase::Cold),
        )
        .unwrap();
        assert_eq!(store.count(), Ok(ROWS + 10));
        execute(
            &mut store,
            &mut prepare(Workload::Delete(10), ROWS, Phase::Cold),
        )
        .unwrap();
        assert_eq!(store.count(), Ok(ROWS));
        // A workload that finds nothing fails instead of measuring nothing.
        assert!(execute(
            &mut store,
            &mut prepare(Workload::Delete(10), ROWS, Phase::Cold)
        )
        .is_err());
    }
}
