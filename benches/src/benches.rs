//! The `#[bench]` functions: every workload for every engine and journal mode on the
//! 1,000,000-row tables, and the table-size comparison on 10,000 and 100,000 rows.
//!
//! Bench names are `<engine>_<workload>_<n>` (for example `sqlite_wal_insert_append_100`) and
//! `<engine>_rows_<size>_<workload>_<n>` for the smaller tables. Each bench reports scopes
//! `cold`, `warmup` and `warm` (see [`crate::ids::Phase`]); the total is their sum plus the
//! few thousand instructions of the scopes themselves.
//!
//! The three phases run in one query, so a stable-memory page the cold or warm-up phase
//! already wrote is not charged again in the warm phase (docs/metering.md §6: 1,000 per 4 KiB
//! page newly dirtied by the message). A separate update message pays that charge again.

use crate::ids::Phase;
use crate::stores::{self, EngineKind};
use crate::tables::TableSize;
use crate::workloads::{execute, prepare, Workload};
use canbench_rs::{bench_fn, bench_scope, BenchResult};
use userstore::JournalMode;

/// Opens `engine`'s table of `size`, prepares the three phases of `workload`, and measures
/// them, each in its scope. Any wrong answer traps, so no bench can pass on missing work.
fn measure(engine: EngineKind, size: TableSize, workload: Workload) -> BenchResult {
    let mut store = stores::open(engine, size)
        .unwrap_or_else(|error| ic_cdk::trap(format!("opening {engine:?} {size:?}: {error}")));
    let inputs: Vec<_> = Phase::ALL
        .into_iter()
        .map(|phase| (phase, prepare(workload, size.rows(), phase)))
        .collect();
    let mut inputs = inputs;
    bench_fn(|| {
        for (phase, input) in inputs.iter_mut() {
            let phase = *phase;
            let _scope = bench_scope(phase.scope());
            if let Err(error) = execute(store.as_mut(), input) {
                ic_cdk::trap(format!("{engine:?} {workload:?} {phase:?}: {error}"));
            }
        }
    })
}

/// One bench per batch size `n` of a workload on the 1M-row table.
macro_rules! sized_benches {
    ($engine_name:ident, $engine:expr, $workload_name:ident, $workload:ident, [$($n:literal),*]) => {
        paste::paste! { $(
            #[canbench_rs::bench(raw)]
            fn [<$engine_name _ $workload_name _ $n>]() -> BenchResult {
                measure($engine, TableSize::Rows1m, Workload::$workload($n))
            }
        )* }
    };
}

/// The table-size comparison: the 1-row insert, 1-row get and 100-row page on a smaller table.
macro_rules! table_size_benches {
    ($engine_name:ident, $engine:expr, $size_name:tt, $size:expr) => {
        paste::paste! {
            #[canbench_rs::bench(raw)]
            fn [<$engine_name _rows_ $size_name _insert_middle_1>]() -> BenchResult {
                measure($engine, $size, Workload::InsertMiddle(1))
            }
            #[canbench_rs::bench(raw)]
            fn [<$engine_name _rows_ $size_name _get_1>]() -> BenchResult {
                measure($engine, $size, Workload::Get(1))
            }
            #[canbench_rs::bench(raw)]
            fn [<$engine_name _rows_ $size_name _page_100>]() -> BenchResult {
                measure($engine, $size, Workload::Page(100))
            }
        }
    };
}

/// Every bench of one engine.
macro_rules! engine_benches {
    ($engine_name:ident, $engine:expr) => {
        sized_benches!(
            $engine_name,
            $engine,
            insert_middle,
            InsertMiddle,
            [1, 10, 100, 1000, 10000]
        );
        sized_benches!(
            $engine_name,
            $engine,
            insert_append,
            InsertAppend,
            [1, 10, 100, 1000, 10000]
        );
        sized_benches!(
            $engine_name,
            $engine,
            insert_middle_autocommit,
            InsertMiddleAutocommit,
            [1, 10, 100, 1000]
        );
        sized_benches!($engine_name, $engine, get, Get, [1, 10, 100, 1000, 10000]);
        sized_benches!($engine_name, $engine, get_missing, GetMissing, [100]);
        sized_benches!($engine_name, $engine, page, Page, [100, 10000]);
        sized_benches!($engine_name, $engine, update, Update, [1, 10, 100, 1000]);
        sized_benches!($engine_name, $engine, delete, Delete, [1, 10, 100, 1000]);
        paste::paste! {
            #[canbench_rs::bench(raw)]
            fn [<$engine_name _count>]() -> BenchResult {
                measure($engine, TableSize::Rows1m, Workload::Count)
            }
        }
        table_size_benches!($engine_name, $engine, 10k, TableSize::Rows10k);
        table_size_benches!($engine_name, $engine, 100k, TableSize::Rows100k);
    };
}

engine_benches!(btree, EngineKind::BTree);
engine_benches!(sqlite_delete, EngineKind::Sqlite(JournalMode::Delete));
engine_benches!(sqlite_truncate, EngineKind::Sqlite(JournalMode::Truncate));
engine_benches!(sqlite_persist, EngineKind::Sqlite(JournalMode::Persist));
engine_benches!(sqlite_memory, EngineKind::Sqlite(JournalMode::Memory));
engine_benches!(sqlite_wal, EngineKind::Sqlite(JournalMode::Wal));
engine_benches!(sqlite_off, EngineKind::Sqlite(JournalMode::Off));
engine_benches!(
    stable_sqlite_memory,
    EngineKind::StableSqlite(JournalMode::Memory)
);
engine_benches!(
    stable_sqlite_off,
    EngineKind::StableSqlite(JournalMode::Off)
);
engine_benches!(page_tree, EngineKind::PageTree);
