//! Running a canbench configuration on icrun: build, install on a subnet
//! without instruction limits, load the stable memory image, run each
//! `__canbench__<name>` query and report (docs/metering.md §9).
//!
//! With `--instruction-tracing`, a second canister of the same module with icrun's trace
//! hooks runs each bench again, and the trace of canbench's bench window (from the first
//! `performance_counter` reading to the one the bench's total later) becomes
//! `<bench>.svg` beside the results file, as canbench names it. The hooks cost nothing, so
//! the traced instructions add up to the bench's total exactly; a trace that does not is an
//! error. With `--breakdown`, the same window's charges are printed after each bench.

use super::compare::entries;
use super::config::{BenchConfig, CONFIG_FILE_ENV, DEFAULT_CONFIG_FILE};
use super::gate;
use super::measurement::BenchResult;
use super::options::BenchOptions;
use super::report::{self, SEPARATOR};
use super::results_file::{self, Results};
use super::style::Style;
use super::summary::summary;
use super::table::{self, MAX_DISPLAYED_ROWS};
use candid::Principal;
use icrun::{Canister, Env, Limits, Options, Window};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Prefix of the query exports canbench runs as benches.
pub const BENCH_PREFIX: &str = "__canbench__";

/// Candid encoding of `()`, the argument of every bench query.
const UNIT_ARGUMENT: &[u8] = b"DIDL\x00\x00";

/// What a run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The results of the benches that ran, by name.
    pub results: Results,
    /// Why the `--fail-on-*` gate failed (empty: the run passed).
    pub failures: Vec<String>,
}

/// Runs the benches of the configuration `options` name, writing the report
/// to `out` (canister output and build output go to stderr/stdout directly).
pub fn run(options: &BenchOptions, style: Style, out: &mut dyn Write) -> Result<Outcome, String> {
    let config = BenchConfig::load(&config_path(options))?;
    if config.env_vars_file.is_some() {
        return Err("env_vars (canister environment variables) is not supported by icrun".into());
    }
    let old = results_file::read(&config.results_path)?;
    if let Some(command) = &config.build_cmd {
        build(command, &config.dir)?;
    }
    let wasm = read_wasm(&config.wasm_path)?;
    let mut canister = install(&wasm, &config, options, false)?;
    canister.record_readings(options.breakdown);
    let mut tracer = match options.instruction_tracing {
        true => Some(install(&wasm, &config, options, true)?),
        false => None,
    };

    let mut text = String::new();
    let mut results = Results::new();
    for name in bench_names(&canister, options) {
        let result = run_bench(&mut canister, &name, options.show_canister_output)?;
        if let Some(tracer) = tracer.as_mut() {
            let path = crate::flamegraph::bench_svg_path(&config.results_path, &name);
            trace_bench(tracer, &name, result.total.instructions, &path)?;
            text.push_str(&format!(
                "Instruction traces written to {}\n",
                path.display()
            ));
        }
        if options.breakdown {
            match canister.last_window_breakdown(result.total.instructions) {
                Some(breakdown) => {
                    text.push_str(&format!("Breakdown of {name}:\n"));
                    text.push_str(&crate::breakdown::render(&breakdown));
                }
                None => text.push_str(&format!("{name}: no bench window to break down\n")),
            }
        }
        if !options.hide_results {
            text.push_str(&format!("{SEPARATOR}\n\n"));
            let previous = old.get(&name);
            report::benchmark(
                &mut text,
                &name,
                &result,
                previous,
                options.noise_threshold,
                style,
            );
            text.push('\n');
        }
        results.insert(name, result);
        flush(out, &mut text)?;
    }
    text.push_str(&format!("{SEPARATOR}\n"));
    let rows = entries(&results, &old);
    if !options.less_verbose || options.show_summary {
        text.push('\n');
        summary(&mut text, &rows, options.noise_threshold);
        text.push_str(&format!("\n{SEPARATOR}\n"));
        let significant = table::significant(&rows, options.noise_threshold);
        if !significant.is_empty() {
            text.push_str("\nOnly significant changes:\n");
            table::table(&mut text, &significant, MAX_DISPLAYED_ROWS);
            text.push_str(&format!("\n{SEPARATOR}\n"));
        }
    }
    if options.csv {
        let path = &config.csv_results_path;
        std::fs::write(path, super::csv::render(&rows))
            .map_err(|e| format!("cannot write CSV results to {}: {e}", path.display()))?;
        text.push_str(&format!("CSV results saved to {}\n", path.display()));
    }
    if options.persist {
        results_file::write(&config.results_path, &results)?;
        let path = config.results_path.display();
        text.push_str(&format!("Successfully persisted results to {path}\n"));
    }
    flush(out, &mut text)?;

    let asked: Results = old
        .into_iter()
        .filter(|(name, _)| options.selects(name))
        .collect();
    let failures = gate::check(options.gate, &results, &asked, options.noise_threshold);
    Ok(Outcome { results, failures })
}

fn flush(out: &mut dyn Write, text: &mut String) -> Result<(), String> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot write the report: {e}"))?;
    text.clear();
    Ok(())
}

/// `--config`, else `$CANBENCH_CFG_FILE`, else `canbench.yml`.
fn config_path(options: &BenchOptions) -> PathBuf {
    options
        .config
        .clone()
        .or_else(|| std::env::var_os(CONFIG_FILE_ENV).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CONFIG_FILE))
}

/// Runs `build_cmd` in `dir` with bash, as canbench does (sh where there is no bash).
fn build(command: &str, dir: &Path) -> Result<(), String> {
    let run_with = |shell: &str| {
        Command::new(shell)
            .arg("-c")
            .arg(command)
            .current_dir(dir)
            .status()
    };
    let status = match run_with("bash") {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => run_with("sh"),
        other => other,
    }
    .map_err(|e| format!("cannot run build_cmd {command:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("build_cmd {command:?} failed ({status})"))
    }
}

/// Reads the Wasm, decompressing it when the file name ends in `.gz`.
pub fn read_wasm(path: &Path) -> Result<Vec<u8>, String> {
    let bytes = std::fs::read(path).map_err(|e| {
        format!(
            "Couldn't read file at {}. Are you sure the file exists? ({e})",
            path.display()
        )
    })?;
    if path.extension().is_some_and(|ext| ext == "gz") {
        let mut wasm = Vec::new();
        flate2::read::GzDecoder::new(bytes.as_slice())
            .read_to_end(&mut wasm)
            .map_err(|e| format!("cannot decompress {}: {e}", path.display()))?;
        return Ok(wasm);
    }
    Ok(bytes)
}

/// Installs with `init_args` on a subnet without instruction limits (canbench's
/// benchmarking subnet, docs/metering.md §9), with trace hooks if `tracing`, then loads the
/// stable memory image.
fn install(
    wasm: &[u8],
    config: &BenchConfig,
    bench: &BenchOptions,
    tracing: bool,
) -> Result<Canister, String> {
    let show_output = bench.show_canister_output;
    let options = Options {
        limits: Limits::unlimited(),
        metering: bench.metering,
        tracing,
        ..Options::default()
    };
    let (mut canister, installed) = Canister::install_with(
        wasm,
        &config.init_args,
        Principal::anonymous(),
        Env::default(),
        options,
    )
    .map_err(|e| format!("installing {} failed: {e}", config.wasm_path.display()))?;
    show(show_output, &canister, &installed.debug_output);
    if let Some(path) = &config.stable_memory_file {
        canister
            .stable_memory_mut()
            .load_file(path)
            .map_err(|e| format!("Error reading stable memory file {}: {e}", path.display()))?;
    }
    Ok(canister)
}

/// The selected benches, sorted by name.
fn bench_names(canister: &Canister, options: &BenchOptions) -> Vec<String> {
    let mut names: Vec<String> = canister
        .query_methods()
        .into_iter()
        .filter_map(|method| method.strip_prefix(BENCH_PREFIX).map(str::to_string))
        .filter(|name| options.selects(name))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Runs one bench query; a query never keeps its changes, so every bench
/// starts from the state after install and the stable memory image.
fn run_bench(
    canister: &mut Canister,
    name: &str,
    show_output: bool,
) -> Result<BenchResult, String> {
    let method = format!("{BENCH_PREFIX}{name}");
    let result = canister.query(&method, UNIT_ARGUMENT, Principal::anonymous());
    show(show_output, canister, &result.debug_output);
    match &result.reply {
        Ok(bytes) => BenchResult::from_candid(bytes),
        Err(reject) => Err(format!(
            "Error executing benchmark {name}. Error:\n{}: {}",
            reject.code as u8, reject.message
        )),
    }
}

/// Runs bench `name` on the traced canister and writes the flame graph of its window
/// (`instructions` long, the untraced run's total) to `path`.
fn trace_bench(
    tracer: &mut Canister,
    name: &str,
    instructions: u64,
    path: &std::path::Path,
) -> Result<(), String> {
    tracer.record_traces(true);
    let method = format!("{BENCH_PREFIX}{name}");
    let result = tracer.query(&method, UNIT_ARGUMENT, Principal::anonymous());
    if let Err(reject) = &result.reply {
        return Err(format!("Error tracing benchmark {name}: {reject}"));
    }
    let trace = tracer
        .last_trace()
        .ok_or_else(|| format!("no trace was recorded for {name}"))?;
    let folded = trace
        .fold(name, Window::Bench { instructions })
        .map_err(|e| format!("tracing {name}: {e}"))?;
    if folded.total() != instructions {
        return Err(format!(
            "the trace of {name} adds up to {} instructions, the bench measured {instructions}",
            folded.total()
        ));
    }
    icrun::flamegraph::write(&folded, name, path)
}

/// Prints the canister's debug output to stderr, as PocketIC logs it.
fn show(enabled: bool, canister: &Canister, lines: &[String]) {
    if !enabled {
        return;
    }
    let id = canister.env().canister_id.to_text();
    for line in lines {
        eprintln!("[Canister {id}] {line}");
    }
}
