//! `icrun`: run canister methods offline with the replica's metering.
//!
//! ```text
//! icrun call <wasm> <method> ['(<candid args>)'] [--query] [--init '(<candid>)']
//!            [--did FILE] [--stable-memory FILE] [--show-output]
//! icrun bench [PATTERN] [--config FILE] [--persist] [--csv] [--noise-threshold PCT]
//!             [--show-canister-output] [--less-verbose] [--hide-results]
//!             [--show-summary] [--fail-on-regression | --fail-on-change]
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

use icrun::bench::{self, style::Style, BenchOptions};
use icrun::candid_io::{
    decode_reply, encode, encode_call, encode_init, Interface, SERVICE_SECTIONS,
};
use icrun::{Canister, Env, ANONYMOUS};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: icrun call <wasm> <method> ['(<candid args>)'] [--query] \
[--init '(<candid>)'] [--did FILE] [--stable-memory FILE] [--show-output]
       icrun bench [PATTERN] [--config FILE] [--persist] [--csv] [--noise-threshold PCT] \
[--show-canister-output] [--less-verbose] [--hide-results] [--show-summary] \
[--fail-on-regression | --fail-on-change]
       icrun speed [--wasm FILE [--init '(<candid>)'] [--query METHOD [--runs N] | \
--batches N --batch-size N] [--repeat N]] [--heap-messages N] [--large-heap-mib N]";

/// The parsed command line of `icrun call`.
#[derive(Debug, Default)]
struct CallOptions {
    wasm: PathBuf,
    method: String,
    args: String,
    query: bool,
    init: Option<String>,
    did: Option<PathBuf>,
    stable_memory: Option<PathBuf>,
    show_output: bool,
}

fn parse_call(args: &[String]) -> Result<CallOptions, String> {
    let mut options = CallOptions {
        args: "()".into(),
        ..CallOptions::default()
    };
    let mut positional = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = |flag: &str| {
            iter.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match arg.as_str() {
            "--query" => options.query = true,
            "--show-output" => options.show_output = true,
            "--init" => options.init = Some(value("--init")?),
            "--did" => options.did = Some(PathBuf::from(value("--did")?)),
            "--stable-memory" => {
                options.stable_memory = Some(PathBuf::from(value("--stable-memory")?))
            }
            flag if flag.starts_with("--") => return Err(format!("unknown option {flag}")),
            _ => positional.push(arg.clone()),
        }
    }
    match positional.as_slice() {
        [wasm, method] => {
            options.wasm = PathBuf::from(wasm);
            options.method = method.clone();
        }
        [wasm, method, call_args] => {
            options.wasm = PathBuf::from(wasm);
            options.method = method.clone();
            options.args = call_args.clone();
        }
        _ => return Err(USAGE.into()),
    }
    Ok(options)
}

/// The service description: `--did`, else the module's metadata, else none.
fn interface(options: &CallOptions, canister: &Canister) -> Result<Option<Interface>, String> {
    if let Some(path) = &options.did {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        return Interface::parse(&text).map(Some);
    }
    for name in SERVICE_SECTIONS {
        if let Ok(Some(bytes)) = canister.custom_section(name) {
            let text = String::from_utf8_lossy(&bytes);
            return Interface::parse(&text).map(Some);
        }
    }
    Ok(None)
}

fn run_call(options: &CallOptions) -> Result<bool, String> {
    let wasm = std::fs::read(&options.wasm)
        .map_err(|e| format!("cannot read {}: {e}", options.wasm.display()))?;
    // The init argument is typed by a `--did` class if there is one; the
    // module's metadata is only readable after install.
    let did_interface = match &options.did {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            Some(Interface::parse(&text)?)
        }
        None => None,
    };
    // Without --init the argument is an empty tuple (an absent `opt` decodes as null).
    let init_arg = match &options.init {
        Some(text) => encode_init(text, did_interface.as_ref())?,
        None => encode("()", None)?,
    };
    let (mut canister, installed) = Canister::install(&wasm, &init_arg, ANONYMOUS, Env::default())
        .map_err(|e| format!("install failed: {e}"))?;
    print_output(options, &installed.debug_output);
    if let Some(path) = &options.stable_memory {
        canister
            .stable_memory_mut()
            .load_file(path)
            .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
    }
    let interface = interface(options, &canister)?;
    let arg = encode_call(&options.args, interface.as_ref(), &options.method)?;
    let result = if options.query {
        canister.query(&options.method, &arg, ANONYMOUS)
    } else {
        canister.update(&options.method, &arg, ANONYMOUS)
    };
    print_output(options, &result.debug_output);
    let replied = match &result.reply {
        Ok(bytes) => {
            println!(
                "{}",
                decode_reply(bytes, interface.as_ref(), &options.method)?
            );
            true
        }
        Err(reject) => {
            println!("{reject}");
            false
        }
    };
    println!("instructions: {}", result.instructions);
    Ok(replied)
}

fn print_output(options: &CallOptions, lines: &[String]) {
    if options.show_output {
        for line in lines {
            eprintln!("[canister] {line}");
        }
    }
}

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
    let outcome = match args.split_first() {
        Some((command, rest)) if command == "call" => parse_call(rest).and_then(|o| run_call(&o)),
        Some((command, rest)) if command == "bench" => run_bench(rest),
        Some((command, rest)) if command == "speed" => icrun::speed::cli::run(rest).map(|()| true),
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
