//! The command line of `icrun speed`.

use super::heap_size::touch_time;
use super::workload::{measure, Workload};
use crate::candid_io::encode;
use std::path::PathBuf;
use std::time::Duration;

/// Usage text of `icrun speed`.
pub const USAGE: &str = "usage: icrun speed [--wasm FILE [--init '(<candid>)'] \
[--query METHOD [--runs N] | --batches N --batch-size N] [--repeat N]] [--heap-messages N] \
[--large-heap-mib N]";

/// Parsed options of `icrun speed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpeedOptions {
    /// The canister to run the workload on (none: only the heap-size probe).
    pub wasm: Option<PathBuf>,
    /// Init argument in Candid text.
    pub init: String,
    /// The workload.
    pub workload: Workload,
    /// How many times the workload is measured (the median is reported).
    pub repeat: usize,
    /// Messages timed per heap size.
    pub heap_messages: usize,
    /// The large heap of the heap-size probe, in MiB (the small one is 1 MiB).
    pub large_heap_mib: usize,
}

impl SpeedOptions {
    /// Parses the arguments after `speed`.
    pub fn parse(args: &[String]) -> Result<SpeedOptions, String> {
        let mut wasm = None;
        let mut init = "()".to_string();
        let mut query = None;
        let (mut runs, mut batches, mut batch_size) = (5, 20, 1000);
        let (mut heap_messages, mut large_heap_mib, mut repeat) = (200, 1024, 3);
        let mut iter = args.iter();
        while let Some(flag) = iter.next() {
            let value = iter
                .next()
                .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
            let number = || {
                value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("{flag} needs a positive number, not {value:?}"))
            };
            match flag.as_str() {
                "--wasm" => wasm = Some(PathBuf::from(value)),
                "--init" => init = value.clone(),
                "--query" => query = Some(value.clone()),
                "--runs" => runs = number()?,
                "--batches" => batches = number()?,
                "--batch-size" => batch_size = number()?,
                "--heap-messages" => heap_messages = number()?,
                "--repeat" => repeat = number()?,
                "--large-heap-mib" => large_heap_mib = number()?,
                other => return Err(format!("unknown option {other}\n{USAGE}")),
            }
        }
        let workload = match query {
            Some(method) => Workload::Query { method, runs },
            None => Workload::InsertUsers {
                batches,
                batch_size,
            },
        };
        Ok(SpeedOptions {
            wasm,
            init,
            workload,
            repeat,
            heap_messages,
            large_heap_mib,
        })
    }
}

fn micros(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}

/// Runs `icrun speed` and prints the figures.
pub fn run(args: &[String]) -> Result<(), String> {
    let options = SpeedOptions::parse(args)?;
    if let Some(path) = &options.wasm {
        let wasm = crate::bench::run::read_wasm(path)?;
        let init_arg = encode(&options.init, None)?;
        println!(
            "workload:       {:?} on {}",
            options.workload,
            path.display()
        );
        let mut runs = Vec::new();
        for _ in 0..options.repeat {
            let speed = measure(&wasm, &init_arg, &options.workload)?;
            println!(
                "run:            {} instructions in {} messages; icrun {:.3} s CPU \
                 ({:.3} billion instructions/s), plain wasmtime {:.3} s CPU: {:.2}x",
                speed.instructions,
                speed.messages,
                speed.metered.as_secs_f64(),
                speed.instructions_per_second() / 1e9,
                speed.plain.as_secs_f64(),
                speed.slowdown()
            );
            runs.push(speed);
        }
        runs.sort_by(|a, b| a.slowdown().total_cmp(&b.slowdown()));
        if let Some(median) = runs.get(runs.len() / 2) {
            println!(
                "median:         {:.3} billion instructions/s, {:.2}x slowdown against plain \
                 wasmtime (uninstrumented, same host functions, no charges)",
                median.instructions_per_second() / 1e9,
                median.slowdown()
            );
        }
    }
    let small = touch_time(1 << 20, options.heap_messages)?;
    let large = touch_time(options.large_heap_mib << 20, options.heap_messages)?;
    println!(
        "small update, median CPU time of {}: {} with a 1 MiB heap, {} with a {} MiB heap",
        options.heap_messages,
        micros(small),
        micros(large),
        options.large_heap_mib
    );
    Ok(())
}
