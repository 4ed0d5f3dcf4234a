//! The canbench suite over ic-sqlite-vfs (feature `canbench`; `canbench.yml` beside): the
//! benches of `userstore-benches` ([`userstore_benches::suite`]: the same workloads, phases
//! and names as this crate's engines', under the prefix `ic_sqlite_vfs`) on a preloaded
//! 1,000,000-row table, and the methods `bench-snapshot` fills that table with.
//!
//! One table, where the canister keeps its own: each open registers the database's memory
//! with ic-sqlite-vfs, which takes one registration per memory, and each open builds the
//! library's memory manager anew from the stable header, which two managers growing their
//! memories in turn would each contradict. The smaller tables of the engines' table-size
//! comparison are not built: the size sweep (`size_results.yml`) measures this peer at every
//! size.
//!
//! The table is opened once per message: a bench is a query (its heap is dropped after it), a
//! seeding call an update that keeps the open store for the next.

use crate::engine::IcSqliteVfsStore;
use canbench_rs::BenchResult;
use std::cell::RefCell;
use userstore::{StoreError, UserStore};
use userstore_benches::suite::measure;
use userstore_benches::tables::{insert_preloaded, TableSize};
use userstore_benches::workloads::Workload;

/// The engine's name in `seed` and `table_rows` calls.
const ENGINE: &str = "ic-sqlite-vfs";

/// The one table's size.
const TABLE: TableSize = TableSize::Rows1m;

/// The virtual memory of the library's manager that holds the database: the one the store
/// canister gives an engine with a manager of its own (`userstore::layout`'s
/// `ENGINE_DATA_MEMORY_ID`; a test holds the two equal).
pub const DATABASE_MEMORY_ID: u8 = 3;

thread_local! {
    static STORE: RefCell<Option<IcSqliteVfsStore>> = const { RefCell::new(None) };
}

/// Runs `use_store` on the table, opened at the first call of the message.
fn with_store<T>(
    use_store: impl FnOnce(&mut IcSqliteVfsStore) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    STORE.with(|slot| {
        let mut slot = slot.borrow_mut();
        let store = match slot.as_mut() {
            Some(store) => store,
            None => slot.insert(IcSqliteVfsStore::open(DATABASE_MEMORY_ID)?),
        };
        use_store(store)
    })
}

/// Measures `workload` on the table of `size` (the suite's macros call it).
fn bench(size: TableSize, workload: Workload) -> BenchResult {
    if size != TABLE {
        ic_cdk::trap(format!("{ENGINE} has no {size:?} table"));
    }
    with_store(|store| Ok(measure(ENGINE, store, size, workload)))
        .unwrap_or_else(|error| ic_cdk::trap(format!("opening {ENGINE}: {error}")))
}

userstore_benches::engine_benches!(ic_sqlite_vfs, bench);

/// Refuses any table but the one this canister measures.
fn check_table(engine: &str, table: &str) -> Result<(), String> {
    if engine != ENGINE || table != TABLE.name() {
        return Err(format!(
            "unknown table '{engine}' '{table}' (this canister measures '{ENGINE}' '{}')",
            TABLE.name()
        ));
    }
    Ok(())
}

/// The tables `bench-snapshot` seeds: the one, as (engine, table, rows).
#[ic_cdk::query]
fn seeded_tables() -> Vec<(String, String, u64)> {
    vec![(ENGINE.to_string(), TABLE.name().to_string(), TABLE.rows())]
}

/// Inserts the preloaded users at positions `from..from + count` into the table, in batches
/// of the library's largest size. Returns the table's row count afterwards.
#[ic_cdk::update]
fn seed(engine: String, table: String, from: u64, count: u64) -> Result<u64, String> {
    check_table(&engine, &table)?;
    with_store(|store| {
        insert_preloaded(store, TABLE, from, count)?;
        store.count()
    })
    .map_err(|error| error.to_string())
}

/// The table's row count.
#[ic_cdk::query]
fn table_rows(engine: String, table: String) -> Result<u64, String> {
    check_table(&engine, &table)?;
    with_store(|store| store.count()).map_err(|error| error.to_string())
}

/// Bytes of stable memory the table occupies: its virtual memory's size (64 KiB Wasm pages),
/// read by ic-stable-structures' memory manager, whose stable layout ic-sqlite-vfs's manager
/// keeps (the store canister's settings share it the same way, `crate::engine`).
#[ic_cdk::query]
fn table_bytes(engine: String, table: String) -> Result<u64, String> {
    use ic_stable_structures::memory_manager::{MemoryId, MemoryManager};
    use ic_stable_structures::{DefaultMemoryImpl, Memory};
    check_table(&engine, &table)?;
    with_store(|_| Ok(())).map_err(|error| error.to_string())?;
    let manager = MemoryManager::init(DefaultMemoryImpl::default());
    Ok(manager.get(MemoryId::new(DATABASE_MEMORY_ID)).size() * 65_536)
}

#[cfg(test)]
mod tests {
    use super::DATABASE_MEMORY_ID;
    use ic_stable_structures::memory_manager::MemoryId;

    /// The table lies where the store canister keeps this engine's data.
    #[test]
    fn the_table_is_where_the_canister_keeps_it() {
        assert_eq!(
            MemoryId::new(DATABASE_MEMORY_ID),
            userstore::layout::ENGINE_DATA_MEMORY_ID
        );
    }
}
