//! `bench-calls`: what one call to a store canister costs, message by message.
//!
//! canbench measures inside one query, so its `warm` scope never pays what every real update
//! pays again: the stable pages it dirties, the heap pages it dirties, the Candid request and
//! reply. This tool runs the store canisters themselves (`target/canisters/*.wasm`) on icrun,
//! each on a table of 1,000,000 users, and measures each workload as separate ingress
//! messages: a few warm-up messages, then several measured ones, of which the median is
//! reported with the breakdown of its instructions, the cycles the IC bills and, for the
//! headline calls, a trace. Every engine configuration runs under both metering profiles
//! (docs/metering.md §6).
//!
//! Usage: `bench-calls <canister-dir> <results.yml> <flamegraph-dir>`, or
//! `bench-calls --page-sizes <canister-dir> <results.yml>` for the stable-memory SQLite
//! canister's page-size sweep (`page_sizes`).

mod engines;
mod fees;
mod page_sizes;
mod results;
mod run;
mod workloads;

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match args.as_slice() {
        [flag, canisters, results] if flag == "--page-sizes" => {
            page_sizes::sweep(Path::new(canisters), Path::new(results))
        }
        [canisters, results, flamegraphs] => run::all(
            Path::new(canisters),
            Path::new(results),
            Path::new(flamegraphs),
        ),
        _ => {
            eprintln!(
                "usage: bench-calls <canister-dir> <results.yml> <flamegraph-dir>\n       \
                 bench-calls --page-sizes <canister-dir> <results.yml>"
            );
            return ExitCode::from(2);
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("bench-calls: {message}");
            ExitCode::FAILURE
        }
    }
}
