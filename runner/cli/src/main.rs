//! `icrun`: run canister methods offline with the replica's metering.
//!
//! ```text
//! icrun call <wasm> <method> ['(<candid args>)'] [--query] [--init '(<candid>)']
//!            [--did FILE] [--stable-memory FILE] [--show-output]
//!            [--metering current|pocketic-13] [--breakdown] [--trace FILE.svg]
//!            [--page-map]
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
//! Its metering defaults to `current`, the IC's meter today; `--page-map` lists every
//! 64 KiB page of heap and stable memory the call touched, the functions that first
//! accessed and wrote it and its charge (their total is the call's page charge).
//! `bench` is a drop-in for `canbench` on a `canbench.yml` (metering `pocketic-13`, as
//! canbench 0.7's PocketIC 13); `speed` measures icrun itself (metered instructions per
//! second, slowdown against plain wasmtime, per-message cost against heap size).
//! `icrun <command> --help` describes every option.
//!
//! Exit status: 0 on success (and for `--help`), 1 when a call is rejected or a
//! `--fail-on-*` check fails, 2 on usage or runtime errors.

use clap::{Parser, Subcommand};
use icrun_cli::bench::{self, style::Style, BenchOptions};
use icrun_cli::call::{self, CallOptions};
use icrun_cli::speed::cli::SpeedOptions;
use std::process::ExitCode;

/// Run Internet Computer canisters offline, metered as the replica meters them.
#[derive(Debug, Parser)]
#[command(name = "icrun")]
struct Cli {
    #[command(subcommand)]
    command: Subcommands,
}

#[derive(Debug, Subcommand)]
enum Subcommands {
    /// Install a canister, call one method, print the reply and the instructions.
    Call(CallOptions),
    /// Run a canbench suite (canbench.yml) on icrun: a drop-in for canbench.
    Bench(BenchOptions),
    /// Measure icrun itself: instructions per second, slowdown, cost against heap size.
    Speed(SpeedOptions),
}

/// `icrun bench`: Ok(false) when a `--fail-on-*` check failed.
fn run_bench(options: &BenchOptions) -> Result<bool, String> {
    let outcome = bench::run(options, Style::for_stdout(), &mut std::io::stdout())?;
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
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            // Help and version go to stdout with status 0; usage errors to stderr with 2.
            let _ = error.print();
            return if error.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    let outcome = match &cli.command {
        Subcommands::Call(options) => call::run(options),
        Subcommands::Bench(options) => run_bench(options),
        Subcommands::Speed(options) => icrun_cli::speed::cli::run(options).map(|()| true),
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use icrun::Metering;

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn call_defaults_to_current_and_bench_to_pocketic_13() {
        let call = Cli::try_parse_from(["icrun", "call", "c.wasm", "get"]).expect("valid");
        let Subcommands::Call(call) = call.command else {
            panic!("not call: {call:?}");
        };
        assert_eq!(call.metering, Metering::Current);
        let bench = Cli::try_parse_from(["icrun", "bench"]).expect("valid");
        let Subcommands::Bench(bench) = bench.command else {
            panic!("not bench: {bench:?}");
        };
        assert_eq!(bench, BenchOptions::default());
        assert!(Cli::try_parse_from(["icrun", "frobnicate"]).is_err());
    }
}
