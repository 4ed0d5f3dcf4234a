//! icrun's instruction traces on the benchmark canister: the traced one-row insert of each
//! engine adds up, function by function, to the instructions canbench's `bench_fn` measured
//! without the hooks, to the instruction (docs/metering.md §1: the hooks are free).
//!
//! icrun only: tracing is icrun's own instrumentation (PocketIC has canbench's, which
//! estimates its overhead instead). The tables are the benchmark's 10,000-row ones, seeded
//! here through the canister's `seed` update (the 1,000,000-row image is `scripts/bench.sh`'s).

use candid::{Decode, Encode, Principal};
use icrun::{Canister, Env, Limits, Options, Window};
use icrun_cli::bench::BenchResult;
use std::path::PathBuf;

/// Every engine of the registry but the peers, as the benchmark canister names it: its
/// canister (the `seed` update's engine) and its traced configuration's key (the prefix of
/// its benches).
fn bench_engines() -> Vec<(&'static str, &'static str)> {
    engine_registry::own_engines()
        .map(|engine| (engine.canister.as_str(), engine.traced().key.as_str()))
        .collect()
}

fn benches_wasm() -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/canisters/benches.wasm");
    std::fs::read(&path).unwrap_or_else(|error| {
        panic!(
            "{}: {error}; build it with scripts/build.sh benches",
            path.display()
        )
    })
}

/// The benchmark canister, installed with `options` and no tables.
fn installed(options: Options) -> Canister {
    let (canister, _) = Canister::install_with(
        &benches_wasm(),
        &[],
        Principal::anonymous(),
        Env::default(),
        options,
    )
    .expect("installs");
    canister
}

/// The benchmark canister with its 10,000-row tables, with or without trace hooks.
fn seeded(tracing: bool) -> Canister {
    let anonymous = Principal::anonymous();
    let mut canister = installed(Options {
        limits: Limits::unlimited(),
        tracing,
        ..Options::default()
    });
    for (engine, _) in bench_engines() {
        let arg = Encode!(&engine, &"10k", &0u64, &10_000u64).expect("encodes");
        let reply = canister
            .update("seed", &arg, anonymous)
            .reply
            .expect("seeds");
        let rows = Decode!(&reply, Result<u64, String>).expect("decodes");
        assert_eq!(rows, Ok(10_000), "{engine}");
    }
    canister
}

/// The benchmark canister seeds exactly the registry's own engines, in the registry's order
/// (the snapshot tool seeds its tables in the order `seeded_tables` gives), and names them
/// all when it refuses an engine it does not know.
#[test]
fn the_benchmark_canister_seeds_the_registry_engines() {
    let anonymous = Principal::anonymous();
    let mut canister = installed(Options::default());
    let reply = canister
        .query("seeded_tables", &Encode!().expect("encodes"), anonymous)
        .reply
        .expect("answers");
    let tables = Decode!(&reply, Vec<(String, String, u64)>).expect("decodes");
    let registry: Vec<&str> = bench_engines()
        .into_iter()
        .map(|(engine, _)| engine)
        .collect();
    let sizes = ["10k", "100k", "1m"];
    assert_eq!(tables.len(), sizes.len() * registry.len(), "{tables:?}");
    for (tables, size) in tables.chunks(registry.len()).zip(sizes) {
        let engines: Vec<&str> = tables
            .iter()
            .map(|(engine, _, _)| engine.as_str())
            .collect();
        assert_eq!(engines, registry, "the engines of the {size} tables");
        assert!(
            tables.iter().all(|(_, table, _)| table == size),
            "{tables:?}"
        );
    }
    let arg = Encode!(&"no-such-engine", &"10k", &0u64, &1u64).expect("encodes");
    let reply = canister
        .update("seed", &arg, anonymous)
        .reply
        .expect("answers");
    let refused = Decode!(&reply, Result<u64, String>).expect("decodes");
    let message = refused.expect_err("an unknown engine is refused");
    for engine in &registry {
        assert!(message.contains(engine), "{message}");
    }
}

fn run_bench(canister: &mut Canister, bench: &str) -> BenchResult {
    let method = format!("__canbench__{bench}");
    let reply = canister
        .query(&method, b"DIDL\x00\x00", Principal::anonymous())
        .reply
        .unwrap_or_else(|reject| panic!("{bench}: {reject}"));
    BenchResult::from_candid(&reply).expect("a BenchResult")
}

#[test]
fn traces_of_the_one_row_insert_add_up_to_the_bench_exactly() {
    let mut plain = seeded(false);
    let mut traced = seeded(true);
    for (_, prefix) in bench_engines() {
        let bench = &format!("{prefix}_rows_10k_insert_middle_1");
        let measured = run_bench(&mut plain, bench);
        traced.record_traces(true);
        let again = run_bench(&mut traced, bench);
        assert_eq!(
            again, measured,
            "{bench}: the hooks changed the measurement"
        );
        let instructions = measured.total.instructions;
        let trace = traced.last_trace().expect("traced");
        let folded = trace
            .fold(bench, Window::Bench { instructions })
            .expect("the bench window is in the trace");
        assert_eq!(folded.total(), instructions, "{bench}");
        // The insert itself shows up by name.
        let functions = folded.functions();
        assert!(
            functions.iter().any(|f| f.name.contains("insert_batch")),
            "{bench}: {:?}",
            functions
                .iter()
                .take(10)
                .map(|f| &f.name)
                .collect::<Vec<_>>()
        );
    }
}
