//! `icrun`: run canister methods offline with the replica's metering.
//!
//! ```text
//! icrun call <wasm> <method> ['(<candid args>)'] [--query] [--init '(<candid>)']
//!            [--did FILE] [--stable-memory FILE] [--show-output]
//!            [--metering pocketic-13|current] [--breakdown] [--trace FILE.svg]
//! icrun bench [PATTERN] [--config FILE] [--persist] [--csv] [--noise-threshold PCT]
//!             [--show-canister-output] [--less-verbose] [--hide-results]
//!             [--show-summary] [--fail-on-regression | --fail-on-change]
//!             [--instruction-tracing] [--breakdown] [--metering PROFILE]
//! icrun speed [--wasm FILE [--init '(<candid>)'] [--query METHOD [--runs N] |
//!             --batches N --batch-size N] [--repeat N]] [--heap-messages N]
//!             [--large-heap-mib N]
//! ```
//! `call` prints the decoded reply (or the reject) and the instructions used;
//! the reply is typed by the module's `candid:service` metadata, or by `--did`.
//! `bench` is a drop-in for `canbench` on a `canbench.yml`; `speed` measures
//! icrun itself (metered instructions per second, slowdown against plain
//! wasmtime, per-message cost against heap size).
//!
//! Exit status: 0 on success, 1 when a call is rejected or a `--fail-on-*`
//! check fails, 2 on usage or runtime errors.

use icrun_cli::bench::{self, style::Style, BenchOptions};
use icrun_cli::call::{self, CallOptions};
use std::process::ExitCode;

const USAGE: &str = "usage: icrun call <wasm> <method> ['(<candid args>)'] [options] \
(icrun call --help)
       icrun bench [PATTERN] [options] (icrun bench --help)
       icrun speed [options] (icrun speed --help)";

/// `icrun bench`: Ok(false) when a `--fail-on-*` check failed.
fn run_bench(args: &[String]) -> Result<bool, String> {
    let options = BenchOptions::parse(args)?;
    let outcome = bench::run(&options, Style::for_stdout(), &mut std::io::stdout())?;
    for failure in &outcome.failures {
        eprintln!("icrun: {failure}");
    }
    if !outcome.failures.is_empty() {
        eprintln!(
            "icrun: {} result(s) differ beyond the {}% noise threshold",
            outcome.failures.len(),
            options.noise_threshold
        );
    }
    Ok(outcome.failures.is_empty())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let help = |usage: &str| Err(usage.to_string());
    let outcome = match args.split_first() {
        Some((command, rest)) if command == "call" => {
            if rest.iter().any(|a| a == "--help") {
                help(call::USAGE)
            } else {
                CallOptions::parse(rest).and_then(|o| call::run(&o))
            }
        }
        Some((command, rest)) if command == "bench" => {
            if rest.iter().any(|a| a == "--help") {
                help(bench::options::USAGE)
            } else {
                run_bench(rest)
            }
        }
        Some((command, rest)) if command == "speed" => {
            icrun_cli::speed::cli::run(rest).map(|()| true)
        }
        _ => Err(USAGE.into()),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(message) => {
            eprintln!("icrun: {message}");
            ExitCode::from(2)
        }
    }
}
