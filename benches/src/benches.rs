//! The `#[bench]` functions of this crate's engines: every workload for every engine and
//! journal mode on the 1,000,000-row tables, and the table-size comparison on 10,000 and
//! 100,000 rows (the names, phases and scopes: [`crate::suite`]).

use crate::stores::{self, EngineKind};
use crate::suite::measure;
use crate::tables::TableSize;
use crate::workloads::Workload;
use canbench_rs::BenchResult;
use userstore::JournalMode;

/// Opens `engine`'s table of `size` and measures `workload` on it.
fn bench(engine: EngineKind, size: TableSize, workload: Workload) -> BenchResult {
    let mut store = stores::open(engine, size)
        .unwrap_or_else(|error| ic_cdk::trap(format!("opening {engine:?} {size:?}: {error}")));
    measure(engine, store.as_mut(), size, workload)
}

/// Every bench of one engine: the suite's on 1,000,000 rows, and the table-size comparison.
macro_rules! every_bench {
    ($engine_name:ident, $engine:expr) => {
        crate::engine_benches!($engine_name, |size, workload| bench(
            $engine, size, workload
        ));
        crate::table_size_benches!(
            $engine_name,
            |size, workload| bench($engine, size, workload),
            10k,
            Rows10k
        );
        crate::table_size_benches!(
            $engine_name,
            |size, workload| bench($engine, size, workload),
            100k,
            Rows100k
        );
    };
}

every_bench!(btree, EngineKind::BTree);
every_bench!(sqlite_delete, EngineKind::Sqlite(JournalMode::Delete));
every_bench!(sqlite_truncate, EngineKind::Sqlite(JournalMode::Truncate));
every_bench!(sqlite_persist, EngineKind::Sqlite(JournalMode::Persist));
every_bench!(sqlite_memory, EngineKind::Sqlite(JournalMode::Memory));
every_bench!(sqlite_wal, EngineKind::Sqlite(JournalMode::Wal));
every_bench!(sqlite_off, EngineKind::Sqlite(JournalMode::Off));
every_bench!(
    stable_sqlite_memory,
    EngineKind::StableSqlite(JournalMode::Memory)
);
every_bench!(
    stable_sqlite_off,
    EngineKind::StableSqlite(JournalMode::Off)
);
every_bench!(page_tree, EngineKind::PageTree);
