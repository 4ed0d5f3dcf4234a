//! `icrun call`: installs a canister, calls one method and prints the reply, the
//! instructions and, on request, where they went (`--breakdown`) and a flame graph of the
//! call (`--trace FILE.svg`).

use crate::breakdown;
use crate::candid_io::{
    decode_reply, encode, encode_call, encode_init, Interface, SERVICE_SECTIONS,
};
use crate::flamegraph;
use candid::Principal;
use icrun::{Canister, Env, Metering, Options};
use std::path::PathBuf;

/// Usage text of `icrun call`.
pub const USAGE: &str = "usage: icrun call <wasm> <method> ['(<candid args>)'] [--query] \
[--init '(<candid>)'] [--did FILE] [--stable-memory FILE] [--show-output] \
[--metering pocketic-13|current] [--breakdown] [--trace FILE.svg]";

/// The parsed command line of `icrun call`.
#[derive(Debug, Default, PartialEq)]
pub struct CallOptions {
    /// The canister module.
    pub wasm: PathBuf,
    /// The method to call.
    pub method: String,
    /// The argument in Candid text.
    pub args: String,
    /// Call it as a query.
    pub query: bool,
    /// The init argument in Candid text.
    pub init: Option<String>,
    /// A `.did` file typing the arguments and the reply.
    pub did: Option<PathBuf>,
    /// A raw stable memory image loaded after install.
    pub stable_memory: Option<PathBuf>,
    /// Print the canister's debug output.
    pub show_output: bool,
    /// The metering profile (default: [`Metering::Current`], the IC's meter today; `icrun
    /// bench` keeps canbench's [`Metering::PocketIc13`]).
    pub metering: Metering,
    /// Print the breakdown of the call's instructions.
    pub breakdown: bool,
    /// Write a flame graph of the call here.
    pub trace: Option<PathBuf>,
}

impl CallOptions {
    /// Parses the arguments after `call`.
    pub fn parse(args: &[String]) -> Result<CallOptions, String> {
        let mut options = CallOptions {
            args: "()".into(),
            metering: Metering::Current,
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
                "--breakdown" => options.breakdown = true,
                "--init" => options.init = Some(value("--init")?),
                "--did" => options.did = Some(PathBuf::from(value("--did")?)),
                "--trace" => options.trace = Some(PathBuf::from(value("--trace")?)),
                "--metering" => options.metering = parse_metering(&value("--metering")?)?,
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
}

/// A metering profile by its command-line name (or a former name, e.g. `master-2026` for
/// `current`).
pub fn parse_metering(name: &str) -> Result<Metering, String> {
    Metering::from_name(name).ok_or_else(|| {
        let known: Vec<&str> = Metering::ALL.iter().map(|m| m.name()).collect();
        format!(
            "unknown metering profile {name:?} (one of {})",
            known.join(", ")
        )
    })
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
        tracing: options.trace.is_some(),
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
        ])
        .expect("valid");
        assert_eq!(options.metering, Metering::Current);
        assert!(options.breakdown);
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
