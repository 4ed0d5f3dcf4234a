//! `icrun call`: installs a canister, calls one method and prints the reply, the
//! instructions and, on request, where they went (`--breakdown`), a flame graph of the
//! call (`--trace FILE.svg`) and the memory pages it touched (`--page-map`).

use crate::args;
use crate::breakdown;
use crate::candid_io::{
    decode_reply, encode, encode_call, encode_init, Interface, SERVICE_SECTIONS,
};
use crate::page_map;
use candid::Principal;
use clap::Args;
use icrun::{flamegraph, Canister, Env, Metering, Options};
use std::path::PathBuf;

/// The parsed command line of `icrun call`.
#[derive(Debug, PartialEq, Args)]
pub struct CallOptions {
    /// The canister module.
    pub wasm: PathBuf,
    /// The method to call.
    pub method: String,
    /// The argument in Candid text.
    #[arg(default_value = "()")]
    pub args: String,
    /// Call it as a query.
    #[arg(long)]
    pub query: bool,
    /// The init argument in Candid text (default: `()`).
    #[arg(long, value_name = "CANDID")]
    pub init: Option<String>,
    /// A `.did` file typing the arguments and the reply.
    #[arg(long, value_name = "FILE")]
    pub did: Option<PathBuf>,
    /// A raw stable memory image loaded after install.
    #[arg(long, value_name = "FILE")]
    pub stable_memory: Option<PathBuf>,
    /// Print the canister's debug output.
    #[arg(long)]
    pub show_output: bool,
    /// The metering profile: current (the IC's meter today, the default) or pocketic-13
    /// (canbench's PocketIC 13); master-2026, the former name of current, is accepted.
    /// `icrun bench` keeps canbench's pocketic-13.
    #[arg(long, value_name = "PROFILE", default_value_t = Metering::Current,
          value_parser = args::metering)]
    pub metering: Metering,
    /// Print the breakdown of the call's instructions.
    #[arg(long)]
    pub breakdown: bool,
    /// Write a flame graph of the call here.
    #[arg(long, value_name = "FILE.svg")]
    pub trace: Option<PathBuf>,
    /// Print every 64 KiB page of heap and stable memory the call touched: what it holds,
    /// the functions that first accessed and first wrote it, and its charge (metering
    /// `current` only, the profile that charges these pages).
    #[arg(long)]
    pub page_map: bool,
}

impl CallOptions {
    /// Parses the arguments after `call`.
    pub fn parse(args: &[String]) -> Result<CallOptions, String> {
        args::parse("call", args)
    }
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

/// Runs the call; `Ok(false)` when it was rejected.
pub fn run(options: &CallOptions) -> Result<bool, String> {
    if options.page_map && options.metering != Metering::Current {
        // docs/metering.md §6: only the current meter charges 64 KiB pages.
        return Err(format!(
            "--page-map needs --metering current: {} charges no 64 KiB pages",
            options.metering
        ));
    }
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
    let runtime = Options {
        metering: options.metering,
        // The page map is recorded by the trace hooks (free, docs/metering.md §1).
        tracing: options.trace.is_some() || options.page_map,
        ..Options::default()
    };
    let anonymous = Principal::anonymous();
    let (mut canister, installed) =
        Canister::install_with(&wasm, &init_arg, anonymous, Env::default(), runtime)
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
        canister.query(&options.method, &arg, anonymous)
    } else {
        canister.update(&options.method, &arg, anonymous)
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
    if options.breakdown {
        print!("{}", breakdown::render(&result.breakdown));
    }
    if let (Some(path), Some(trace)) = (&options.trace, canister.last_trace()) {
        let dirtied = result.breakdown.heap_pages_dirtied;
        let folded = trace
            .fold_with_heap_charge(&options.method, dirtied.pages, dirtied.instructions)
            .map_err(|e| e.to_string())?;
        flamegraph::write(&folded, &options.method, path)?;
        println!("flame graph: {}", path.display());
    }
    if options.page_map {
        let trace = canister
            .last_trace()
            .ok_or("the call recorded no trace for its page map")?;
        let layout = canister.heap_layout();
        print!(
            "{}",
            page_map::render(trace.page_touches(), &layout, &result.breakdown)
        );
    }
    Ok(replied)
}

fn print_output(options: &CallOptions, lines: &[String]) {
    if options.show_output {
        for line in lines {
            eprintln!("[canister] {line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<CallOptions, String> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        CallOptions::parse(&args)
    }

    #[test]
    fn flags() {
        let options = parse(&[
            "c.wasm",
            "get",
            "(1)",
            "--metering",
            // The former name of `current`.
            "master-2026",
            "--breakdown",
            "--trace",
            "t.svg",
            "--page-map",
        ])
        .expect("valid");
        assert_eq!(options.metering, Metering::Current);
        assert!(options.breakdown);
        assert!(options.page_map);
        assert!(!parse(&["c.wasm", "get"]).expect("valid").page_map);
        assert_eq!(options.trace, Some(PathBuf::from("t.svg")));
        assert_eq!(options.args, "(1)");
        assert!(parse(&["c.wasm", "get", "--metering", "mainnet"]).is_err());
        // The IC's current meter is the default; pocketic-13 is chosen explicitly.
        assert_eq!(
            parse(&["c.wasm", "get"]).expect("valid").metering,
            Metering::Current
        );
        let pinned = parse(&["c.wasm", "get", "--metering", "pocketic-13"]).expect("valid");
        assert_eq!(pinned.metering, Metering::PocketIc13);
        assert!(parse(&["c.wasm"]).is_err());
    }
}
