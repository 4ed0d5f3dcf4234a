//! `wasmtime-serve serve [OPTIONS] COMPONENT`: wasmtime-cli's `serve` command, with its options
//! and behaviour, built in the workspace.
//!
//! The tests and CI's small edge run start their components on this binary (scripts/test.sh
//! sets `WASMTIME_BIN` to it): it shares the runner's wasmtime build, where a `cargo install
//! wasmtime-cli` compiles wasmtime a second time. The edge benchmark's timed run keeps the
//! installed release CLI (scripts/setup.sh, `ensure_edge_host`).

use std::process::ExitCode;

use clap::Parser;
use wasmtime_cli::commands::ServeCommand;

/// The command line: `serve` and `wasmtime serve`'s own arguments, so that a launcher written
/// for `wasmtime` (benches/edge/src/host.rs) runs this binary unchanged.
#[derive(Parser)]
#[command(name = "wasmtime-serve", version)]
enum Command {
    /// Serves a wasi:http/proxy component, as `wasmtime serve` does.
    Serve(ServeCommand),
}

fn main() -> ExitCode {
    let Command::Serve(serve) = Command::parse();
    match serve.execute() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            // As wasmtime's CLI reports a failed command: the error with its causes.
            eprintln!("Error: {error:?}");
            ExitCode::FAILURE
        }
    }
}
