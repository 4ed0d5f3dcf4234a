//! The measuring of one bench and the macros that declare a suite of them: shared by this
//! crate's canister (every `userstore` engine, [`crate::benches`]) and the bench canister of
//! the ic-sqlite-vfs peer (`canisters/ic-sqlite-vfs`, feature `canbench`), whose SQLite cannot
//! share a Wasm with rusqlite's. The same workloads, phases and names in both, so that the two
//! results files read as one suite.
//!
//! Bench names are `<engine>_<workload>_<n>` (for example `sqlite_wal_insert_append_100`) and
//! `<engine>_rows_<size>_<workload>_<n>` for the smaller tables. Each bench reports scopes
//! `cold`, `warmup` and `warm` (see [`crate::ids::Phase`]); the total is their sum plus the
//! few thousand instructions of the scopes themselves.
//!
//! The three phases run in one query, so a stable-memory page the cold or warm-up phase
//! already wrote is not charged again in the warm phase (docs/metering.md §6: 1,000 per 4 KiB
//! page newly dirtied by the message). A separate update message pays that charge again.
//!
//! A crate that declares benches with these macros depends on `canbench-rs` itself (its
//! `bench` attribute names it).

use crate::ids::Phase;
use crate::tables::TableSize;
use crate::workloads::{execute, prepare, Workload};
use canbench_rs::{bench_fn, bench_scope, BenchResult};
use userstore::UserStore;

#[doc(hidden)]
pub use paste;

/// Prepares the three phases of `workload` on `store`, the table of `size` of `engine` (as
/// the trap of a failed phase names it), and measures them, each in its scope. Any wrong
/// answer traps, so no bench can pass on missing work.
pub fn measure(
    engine: impl std::fmt::Debug,
    store: &mut dyn UserStore,
    size: TableSize,
    workload: Workload,
) -> BenchResult {
    let mut inputs: Vec<_> = Phase::ALL
        .into_iter()
        .map(|phase| (phase, prepare(workload, size.rows(), phase)))
        .collect();
    bench_fn(|| {
        for (phase, input) in inputs.iter_mut() {
            let phase = *phase;
            let _scope = bench_scope(phase.scope());
            if let Err(error) = execute(store, input) {
                ic_cdk::trap(format!("{engine:?} {workload:?} {phase:?}: {error}"));
            }
        }
    })
}

/// One bench per batch size `n` of a workload on the 1,000,000-row table. `$bench` is called
/// as `$bench(TableSize, Workload) -> BenchResult`.
#[macro_export]
macro_rules! sized_benches {
    ($engine_name:ident, $bench:expr, $workload_name:ident, $workload:ident, [$($n:literal),*]) => {
        $crate::suite::paste::paste! { $(
            #[canbench_rs::bench(raw)]
            fn [<$engine_name _ $workload_name _ $n>]() -> canbench_rs::BenchResult {
                ($bench)(
                    $crate::tables::TableSize::Rows1m,
                    $crate::workloads::Workload::$workload($n),
                )
            }
        )* }
    };
}

/// The table-size comparison: the 1-row insert, 1-row get and 100-row page on a smaller table.
#[macro_export]
macro_rules! table_size_benches {
    ($engine_name:ident, $bench:expr, $size_name:tt, $size:ident) => {
        $crate::suite::paste::paste! {
            #[canbench_rs::bench(raw)]
            fn [<$engine_name _rows_ $size_name _insert_middle_1>]() -> canbench_rs::BenchResult {
                ($bench)(
                    $crate::tables::TableSize::$size,
                    $crate::workloads::Workload::InsertMiddle(1),
                )
            }
            #[canbench_rs::bench(raw)]
            fn [<$engine_name _rows_ $size_name _get_1>]() -> canbench_rs::BenchResult {
                ($bench)($crate::tables::TableSize::$size, $crate::workloads::Workload::Get(1))
            }
            #[canbench_rs::bench(raw)]
            fn [<$engine_name _rows_ $size_name _page_100>]() -> canbench_rs::BenchResult {
                ($bench)($crate::tables::TableSize::$size, $crate::workloads::Workload::Page(100))
            }
        }
    };
}

/// Every bench of one engine on the 1,000,000-row table.
#[macro_export]
macro_rules! engine_benches {
    ($engine_name:ident, $bench:expr) => {
        $crate::sized_benches!(
            $engine_name,
            $bench,
            insert_middle,
            InsertMiddle,
            [1, 10, 100, 1000, 10000]
        );
        $crate::sized_benches!(
            $engine_name,
            $bench,
            insert_append,
            InsertAppend,
            [1, 10, 100, 1000, 10000]
        );
        $crate::sized_benches!(
            $engine_name,
            $bench,
            insert_middle_autocommit,
            InsertMiddleAutocommit,
            [1, 10, 100, 1000]
        );
        $crate::sized_benches!($engine_name, $bench, get, Get, [1, 10, 100, 1000, 10000]);
        $crate::sized_benches!($engine_name, $bench, get_missing, GetMissing, [100]);
        $crate::sized_benches!($engine_name, $bench, page, Page, [100, 10000]);
        $crate::sized_benches!($engine_name, $bench, update, Update, [1, 10, 100, 1000]);
        $crate::sized_benches!($engine_name, $bench, delete, Delete, [1, 10, 100, 1000]);
        $crate::suite::paste::paste! {
            #[canbench_rs::bench(raw)]
            fn [<$engine_name _count>]() -> canbench_rs::BenchResult {
                ($bench)(
                    $crate::tables::TableSize::Rows1m,
                    $crate::workloads::Workload::Count,
                )
            }
        }
    };
}
