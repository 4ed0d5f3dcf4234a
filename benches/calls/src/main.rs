//! `bench-calls`: what one call to a store canister costs, message by message.
//!
//! canbench measures inside one query, so its `warm` scope never pays what every real update
//! pays again: the pages it touches, the Candid request and reply. This tool runs the store
//! canisters themselves (`target/canisters/*.wasm`, every engine of the registry) on icrun,
//! each on a table of 1,000,000 users in two states (aged: filled in a random order;
//! ascending), and measures each workload as separate ingress messages: single-row calls at
//! ids spread over the whole table, 200 messages each, reported as their spread (mean, p50,
//! p90, p99, max) with the median message's breakdown, the cycles the IC bills, the calls
//! one canister executes per round and, for the headline calls, a trace. Every configuration
//! runs under both metering profiles, the IC's current meter first (docs/metering.md §6).
//!
//! Usage:
//! - `bench-calls <canister-dir> <results.yml> <flamegraph-dir>`: measure everything
//!   (`--only KEY,...` first: only those configurations);
//! - `bench-calls --check <canister-dir> <results.yml> <flamegraph-dir>`: measure the subset
//!   CI checks ([`check::subset`]) and fail if any of its figures differs from the committed
//!   file (its flame graphs go to the directory, for the caller to compare);
//! - `bench-calls --btree-layouts ROWS <results.yml>`: the B-tree's bytes per row under
//!   layouts of its index ([`btree_layouts`]);
//! - `bench-calls --page-sizes <canister-dir> <results.yml>`: the stable-memory SQLite
//!   canister's page-size sweep ([`page_sizes`]);
//! - `bench-calls --sizes [--check] [--from ROWS] [--up-to ROWS] [--only KEY,...]
//!   [--state aged|ascending] <canister-dir> <size_results.yml>`: the size sweep
//!   ([`sizes`]), merged into the file
//!   (or, with `--check`, compared with it); `bench-calls --sizes --merge PART.yml ...
//!   <size_results.yml>` merges the files of sweeps run side by side into it;
//! - `bench-calls --upgrade-trace [--check] [--only KEY,...] ROWS[,ROWS...] <canister-dir>
//!   <upgrade_results.yml> <flamegraph-dir>`: the trace and page map of every engine's
//!   upgrade on the aged table of each size ([`upgrade_trace`]).

mod btree_layouts;
mod check;
mod draw;
mod engines;
mod fees;
mod index_build;
mod integrity;
mod model_check;
mod page_map;
mod page_sizes;
mod reply;
mod results;
mod run;
mod sizes;
mod stats;
mod storage;
mod tables;
#[cfg(test)]
mod test_canister;
mod upgrade_trace;
mod workloads;

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--sizes") {
        return finish(size_sweep(&args[1..]));
    }
    if args.first().map(String::as_str) == Some("--upgrade-trace") {
        return finish(upgrade_traces(&args[1..]));
    }
    let outcome = match args.as_slice() {
        [flag, rows, canisters, fixtures, results] if flag == "--index-build" => rows
            .parse()
            .map_err(|_| format!("not a number of rows: {rows}"))
            .and_then(|rows| {
                index_build::measure(
                    rows,
                    Path::new(canisters),
                    Path::new(fixtures),
                    Path::new(results),
                )
            }),
        [flag, rows, results] if flag == "--btree-layouts" => rows
            .parse()
            .map_err(|_| format!("not a number of rows: {rows}"))
            .and_then(|rows| btree_layouts::measure(rows, Path::new(results))),
        [flag, canisters, results] if flag == "--page-sizes" => {
            page_sizes::sweep(Path::new(canisters), Path::new(results))
        }
        [flag, canisters, results, flamegraphs] if flag == "--check" => check::against(
            Path::new(canisters),
            Path::new(results),
            Path::new(flamegraphs),
        ),
        [canisters, results, flamegraphs] => measure_all(
            Path::new(canisters),
            Path::new(results),
            Path::new(flamegraphs),
            run::Selection::everything(),
        ),
        [flag, keys, canisters, results, flamegraphs] if flag == "--only" => measure_all(
            Path::new(canisters),
            Path::new(results),
            Path::new(flamegraphs),
            run::Selection {
                configurations: keys.split(',').map(str::to_string).collect(),
                ..run::Selection::everything()
            },
        ),
        _ => {
            eprintln!(
                "usage: bench-calls [--only KEY,...] <canister-dir> <results.yml> <flamegraph-dir>\n       \
                 bench-calls --check <canister-dir> <results.yml> <flamegraph-dir>\n       \
                 bench-calls --page-sizes <canister-dir> <results.yml>\n       \
                 bench-calls --btree-layouts ROWS <results.yml>\n       \
                 bench-calls --index-build ROWS <canister-dir> <fixture-dir> <results.yml>\n       \
                 bench-calls --sizes [--check] [--from ROWS] [--up-to ROWS] [--only KEY,...] \
                 <canister-dir> <size_results.yml>\n       \
                 bench-calls --sizes --merge PART.yml [--merge PART.yml ...] <size_results.yml>\n       \
                 bench-calls --upgrade-trace [--check] [--only KEY,...] ROWS[,ROWS...] \
                 <canister-dir> <upgrade_results.yml> <flamegraph-dir>"
            );
            return ExitCode::from(2);
        }
    };
    finish(outcome)
}

/// The exit code of `outcome`, its error printed.
fn finish(outcome: Result<(), String>) -> ExitCode {
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bench-calls: {message}");
            ExitCode::FAILURE
        }
    }
}

/// `--sizes`' arguments parsed, and the sweep run.
fn size_sweep(args: &[String]) -> Result<(), String> {
    let mut sweep = sizes::Sweep {
        up_to: 1_000_000,
        from: 0,
        only: Vec::new(),
        states: Vec::new(),
    };
    let mut check = false;
    let mut merged: Vec<String> = Vec::new();
    let mut paths = Vec::new();
    let mut args = args.iter();
    let rows = |value: Option<&String>, flag: &str| -> Result<u64, String> {
        value
            .and_then(|value| value.replace('_', "").parse().ok())
            .ok_or_else(|| format!("{flag} needs a number of rows"))
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => check = true,
            "--merge" => merged.push(args.next().ok_or("--merge needs a results file")?.clone()),
            "--up-to" => sweep.up_to = rows(args.next(), "--up-to")?,
            "--from" => sweep.from = rows(args.next(), "--from")?,
            "--only" => {
                let keys = args.next().ok_or("--only needs configuration keys")?;
                sweep.only = keys.split(',').map(str::to_string).collect();
            }
            "--state" => {
                let names = args.next().ok_or("--state needs aged or ascending")?;
                sweep.states = names
                    .split(',')
                    .map(|name| {
                        tables::TableState::named(name)
                            .ok_or_else(|| format!("--state: no table state {name:?}"))
                    })
                    .collect::<Result<_, _>>()?;
            }
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            path => paths.push(path),
        }
    }
    if !merged.is_empty() {
        let [results] = paths.as_slice() else {
            return Err("--sizes --merge needs <size_results.yml>".into());
        };
        let parts: Vec<&Path> = merged.iter().map(Path::new).collect();
        return sizes::merge_files(Path::new(results), &parts);
    }
    let [canisters, results] = paths.as_slice() else {
        return Err("--sizes needs <canister-dir> <size_results.yml>".into());
    };
    sizes::run(Path::new(canisters), Path::new(results), &sweep, check)
}

/// `--upgrade-trace`'s arguments parsed, and the upgrades traced.
fn upgrade_traces(args: &[String]) -> Result<(), String> {
    let mut check = false;
    let mut only = Vec::new();
    let mut paths = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => check = true,
            "--only" => {
                let keys = args.next().ok_or("--only needs configuration keys")?;
                only = keys.split(',').map(str::to_string).collect();
            }
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            path => paths.push(path),
        }
    }
    let [sizes, canisters, results, flamegraphs] = paths.as_slice() else {
        return Err("--upgrade-trace needs ROWS[,ROWS...] <canister-dir> \
                    <upgrade_results.yml> <flamegraph-dir>"
            .into());
    };
    let rows = sizes
        .split(',')
        .map(|size| {
            size.replace('_', "")
                .parse()
                .map_err(|_| format!("--upgrade-trace: not a number of rows: {size:?}"))
        })
        .collect::<Result<Vec<u64>, _>>()?;
    upgrade_trace::run(
        &rows,
        &only,
        Path::new(canisters),
        Path::new(results),
        Path::new(flamegraphs),
        check,
    )
}

/// Measures `selection` and writes `results`.
fn measure_all(
    canisters: &Path,
    results: &Path,
    flamegraphs: &Path,
    selection: run::Selection,
) -> Result<(), String> {
    let out = run::measure(canisters, flamegraphs, &selection)?;
    let yaml = serde_yaml::to_string(&out).map_err(|error| error.to_string())?;
    let header =
        "# Generated by bench-calls (scripts/bench.sh): what one call to a store canister \
                  costs, on 1,000,000-row tables. Do not edit.\n";
    std::fs::write(results, format!("{header}{yaml}"))
        .map_err(|error| format!("writing {}: {error}", results.display()))
}
