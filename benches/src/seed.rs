//! Builds the preloaded tables by calls to the canister, each within the IC's message limits
//! (benches/snapshot drives them and saves the stable memory image).

use crate::stores::{self, EngineKind};
use crate::tables::{insert_preloaded, TableSize};
use userstore::{JournalMode, UserStore};

/// The journal mode the SQLite tables are built with (the canisters' default).
const SEED_JOURNAL_MODE: JournalMode = JournalMode::Memory;

/// Every engine this canister seeds and measures, in the order of the registry
/// (`canisters/engines.toml`): its canister's name there, which the `seed` update takes, and
/// the store its benches open. `tests/tracing.rs` holds this list to the registry's own
/// engines, so the registry stays the one list of engines.
const SEEDED_ENGINES: [(&str, EngineKind); 4] = [
    ("btree", EngineKind::BTree),
    ("sqlite", EngineKind::Sqlite(SEED_JOURNAL_MODE)),
    ("stable-sqlite", EngineKind::StableSqlite(SEED_JOURNAL_MODE)),
    ("page-tree", EngineKind::PageTree),
];

fn engine_named(engine: &str) -> Result<EngineKind, String> {
    SEEDED_ENGINES
        .iter()
        .find(|(name, _)| *name == engine)
        .map(|(_, kind)| *kind)
        .ok_or_else(|| {
            let names: Vec<&str> = SEEDED_ENGINES.iter().map(|(name, _)| *name).collect();
            format!("unknown engine '{engine}' ({})", names.join(", "))
        })
}

fn size_named(table: &str) -> Result<TableSize, String> {
    TableSize::from_name(table).ok_or_else(|| format!("unknown table '{table}' (10k, 100k, 1m)"))
}

/// Inserts the preloaded users at positions `from..from + count` into `engine`'s `table`, in
/// batches of the library's largest size. Returns the table's row count afterwards.
#[ic_cdk::update]
fn seed(engine: String, table: String, from: u64, count: u64) -> Result<u64, String> {
    let size = size_named(&table)?;
    let kind = engine_named(&engine)?;
    if kind == EngineKind::PageTree {
        // Its row count is written at close, as the canister's pre_upgrade does, so that
        // every bench opens it without counting.
        let mut store = stores::open_page_tree(size).map_err(|e| e.to_string())?;
        insert_preloaded(&mut store, size, from, count).map_err(|e| e.to_string())?;
        let rows = store.count().map_err(|e| e.to_string())?;
        store.close().map_err(|e| e.to_string())?;
        return Ok(rows);
    }
    let mut store = stores::open(kind, size).map_err(|e| e.to_string())?;
    insert_preloaded(store.as_mut(), size, from, count).map_err(|e| e.to_string())?;
    store.count().map_err(|e| e.to_string())
}

/// The tables `bench-snapshot` seeds, in the order it seeds them (the memory manager hands
/// out its buckets in that order, so the image depends on it): every size, smallest first, and
/// in each every engine of [`SEEDED_ENGINES`]. Each as (engine, table, rows).
#[ic_cdk::query]
fn seeded_tables() -> Vec<(String, String, u64)> {
    TableSize::ALL
        .into_iter()
        .flat_map(|size| {
            SEEDED_ENGINES
                .map(|(engine, _)| (engine.to_string(), size.name().to_string(), size.rows()))
        })
        .collect()
}

/// The row count of `engine`'s `table`.
#[ic_cdk::query]
fn table_rows(engine: String, table: String) -> Result<u64, String> {
    let size = size_named(&table)?;
    let store = stores::open(engine_named(&engine)?, size).map_err(|e| e.to_string())?;
    store.count().map_err(|e| e.to_string())
}

/// Bytes of stable memory `engine`'s `table` occupies (see `stores::table_bytes`).
#[ic_cdk::query]
fn table_bytes(engine: String, table: String) -> Result<u64, String> {
    Ok(stores::table_bytes(
        engine_named(&engine)?,
        size_named(&table)?,
    ))
}

/// Makes the SQLite `table` look like a database that has committed a transaction with an
/// on-disk journal: one PERSIST-mode write that rewrites user 0 with its own name creates the
/// journal file, as any canister's first write does. Without it the cold phase of the first
/// bench in a rollback-journal mode would also pay for creating that file, once. Returns the
/// row count (unchanged).
#[ic_cdk::update]
fn prime_journal(table: String) -> Result<u64, String> {
    let size = size_named(&table)?;
    let mut store =
        stores::open(EngineKind::Sqlite(JournalMode::Persist), size).map_err(|e| e.to_string())?;
    let user = crate::tables::preloaded_user(0);
    store
        .update_username(user.id, &user.username)
        .map_err(|e| e.to_string())?;
    store.count().map_err(|e| e.to_string())
}
