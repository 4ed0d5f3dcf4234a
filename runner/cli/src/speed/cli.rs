//! The command line of `icrun speed`.

use super::heap_size::touch_time;
use super::workload::{measure, Workload};
use crate::args;
use crate::candid_io::encode;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// Parsed options of `icrun speed`.
#[derive(Debug, Clone, PartialEq, Eq, Args)]
pub struct SpeedOptions {
    /// The canister to run the workload on (none: only the heap-size probe).
    #[arg(long, value_name = "FILE")]
    pub wasm: Option<PathBuf>,
    /// Init argument in Candid text.
    #[arg(long, value_name = "CANDID", default_value = "()")]
    pub init: String,
    /// Run this query `--runs` times instead of the `insert_users` batches.
    #[arg(long, value_name = "METHOD")]
    pub query: Option<String>,
    /// Calls of the `--query`.
    #[arg(long, value_name = "N", default_value = "5", value_parser = args::positive)]
    pub runs: usize,
    /// Update calls of `insert_users`.
    #[arg(long, value_name = "N", default_value = "20", value_parser = args::positive)]
    pub batches: usize,
    /// New users per `insert_users` call.
    #[arg(long, value_name = "N", default_value = "1000", value_parser = args::positive)]
    pub batch_size: usize,
    /// How many times the workload is measured (the median is reported).
    #[arg(long, value_name = "N", default_value = "3", value_parser = args::positive)]
    pub repeat: usize,
    /// Messages timed per heap size.
    #[arg(long, value_name = "N", default_value = "200", value_parser = args::positive)]
    pub heap_messages: usize,
    /// The large heap of the heap-size probe, in MiB (the small one is 1 MiB).
    #[arg(long, value_name = "N", default_value = "1024", value_parser = args::positive)]
    pub large_heap_mib: usize,
}

impl SpeedOptions {
    /// Parses the arguments after `speed`.
    pub fn parse(args: &[String]) -> Result<SpeedOptions, String> {
        args::parse("speed", args)
    }

    /// The workload: `--query` `--runs` times, else the `insert_users` batches.
    pub fn workload(&self) -> Workload {
        match &self.query {
            Some(method) => Workload::Query {
                method: method.clone(),
                runs: self.runs,
            },
            None => Workload::InsertUsers {
                batches: self.batches,
                batch_size: self.batch_size,
            },
        }
    }
}

fn micros(duration: Duration) -> String {
    format!("{:.1} µs", duration.as_secs_f64() * 1e6)
}

/// Runs `icrun speed` and prints the figures.
pub fn run(options: &SpeedOptions) -> Result<(), String> {
    let workload = options.workload();
    if let Some(path) = &options.wasm {
        let wasm = crate::bench::run::read_wasm(path)?;
        let init_arg = encode(&options.init, None)?;
        println!("workload:       {:?} on {}", workload, path.display());
        let mut runs = Vec::new();
        for _ in 0..options.repeat {
            let speed = measure(&wasm, &init_arg, &workload)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<SpeedOptions, String> {
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        SpeedOptions::parse(&args)
    }

    #[test]
    fn defaults_and_workloads() {
        let options = parse(&[]).expect("valid");
        assert_eq!(options.wasm, None);
        assert_eq!(options.init, "()");
        assert_eq!(
            (
                options.repeat,
                options.heap_messages,
                options.large_heap_mib
            ),
            (3, 200, 1024)
        );
        let batches = Workload::InsertUsers {
            batches: 20,
            batch_size: 1000,
        };
        assert_eq!(options.workload(), batches);
        let query = parse(&["--wasm", "b.wasm", "--query", "__canbench__x", "--runs=7"]);
        let query = query.expect("valid");
        assert_eq!(query.wasm, Some(PathBuf::from("b.wasm")));
        let method = "__canbench__x".to_string();
        assert_eq!(query.workload(), Workload::Query { method, runs: 7 });
    }

    #[test]
    fn errors() {
        assert!(parse(&["--runs", "0"]).is_err());
        assert!(parse(&["--repeat", "x"]).is_err());
        assert!(parse(&["--heap-messages"]).is_err());
        assert!(parse(&["--bogus", "1"]).is_err());
        assert!(parse(&["b.wasm"]).is_err());
    }
}
