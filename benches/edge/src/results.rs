//! The edge benchmark's results file (`edge_results.yml`) and the table it prints.

use crate::stats::OverRuns;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;

/// Everything one run of the benchmark measured.
#[derive(Serialize)]
pub struct Results {
    /// Where it ran: wall-clock figures hold for this machine and this run only.
    pub machine: Machine,
    /// Rows of each engine's aged table.
    pub rows: u64,
    /// How the table's usernames are ordered against the ids
    /// (`userstore_benches::tables::USERNAME_ORDER`).
    pub usernames: &'static str,
    /// Requests per run of a one-row workload.
    pub requests: u64,
    /// Requests per run of a 1,000-row workload.
    pub batch_requests: u64,
    /// Runs each figure is the median of.
    pub runs: u64,
    /// Concurrent clients of the `rps_n_clients` figures.
    pub clients: u64,
    /// The host's own cost, with no storage.
    pub floor: Floor,
    /// Per engine.
    pub engines: Vec<EngineResult>,
}

/// The machine and the host.
#[derive(Serialize)]
pub struct Machine {
    /// The CPU model.
    pub cpu: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// The kernel.
    pub kernel: String,
    /// `wasmtime --version`.
    pub wasmtime: String,
}

impl Machine {
    /// Reads them off this machine.
    pub fn read(wasmtime: &Path) -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|line| line.strip_prefix("model name"))
            .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_string())
            .unwrap_or_else(|| "unknown".into());
        let cpus = std::thread::available_parallelism().map_or(0, usize::from);
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|text| text.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        let wasmtime = std::process::Command::new(wasmtime)
            .arg("--version")
            .output()
            .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        Self {
            cpu,
            cpus,
            kernel,
            wasmtime,
        }
    }
}

/// The host's floor.
#[derive(Serialize, Default)]
pub struct Floor {
    /// p50 of `GET /ping`: a fresh instance and HTTP, no storage (µs).
    pub empty_request_us: OverRuns,
    /// p50 of one 4 KiB write and `fdatasync` in the data directory, natively (µs).
    pub bare_sync_us: OverRuns,
    /// Wasm instructions of `GET /ping` on a fresh instance (the metering host).
    pub empty_request_instructions: u64,
}

/// One engine.
#[derive(Serialize)]
pub struct EngineResult {
    /// The registry's key.
    pub engine: String,
    /// How reports name it.
    pub label: String,
    /// A peer, not one of this crate's engines.
    pub peer: bool,
    /// Seconds to fill the aged table through `insert_users` of 10,000 users.
    pub fill_seconds: f64,
    /// The data directory's bytes after the fill, per row.
    pub bytes_on_disk_per_row: f64,
    /// Cold (a fresh instance per request) and warm (instances reused).
    pub modes: Vec<ModeResult>,
}

/// One engine in one host mode.
#[derive(Serialize)]
pub struct ModeResult {
    /// `cold` or `warm`.
    pub mode: String,
    /// Per workload.
    pub workloads: Vec<WorkloadResult>,
}

/// One workload: latencies in microseconds, requests per second, and the load-independent
/// counters the component reports.
#[derive(Serialize)]
pub struct WorkloadResult {
    /// Its name.
    pub workload: String,
    /// Median latency.
    pub p50_us: OverRuns,
    /// 99th percentile.
    pub p99_us: OverRuns,
    /// Mean.
    pub mean_us: OverRuns,
    /// Requests per second, one client.
    pub rps_1_client: OverRuns,
    /// Requests per second, `clients` concurrent clients.
    pub rps_n_clients: OverRuns,
    /// Syncs per request (the component's `x-userstore-syncs`).
    pub syncs_per_request: f64,
    /// Bytes the component read per request.
    pub bytes_read_per_request: f64,
    /// Bytes the component wrote per request (journal and file).
    pub bytes_written_per_request: f64,
    /// Wasm instructions per request, the mean over one run's requests on the metering host
    /// (`edge-meter`, wasmtime's fuel) in the same mode: a fresh instance's include its
    /// instantiation.
    pub instructions_per_request: f64,
}

impl Results {
    /// Writes the YAML file.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let yaml = serde_yaml::to_string(self).map_err(|error| error.to_string())?;
        let text = format!(
            "# Written by edge-bench (scripts/bench.sh --edge). Wall-clock figures: medians of \
             the runs with the lowest and highest run, for this machine and this run only.\n{yaml}"
        );
        std::fs::write(path, text).map_err(|error| format!("{}: {error}", path.display()))
    }

    /// The headline table: p50 latency and requests per second with several clients, cold.
    pub fn table(&self) -> String {
        let mut text = String::new();
        let _ = writeln!(
            text,
            "\nedge, {} rows (aged), cold instances: p50 µs | rps with {} clients | syncs/request \
             | Wasm instructions/request",
            self.rows, self.clients
        );
        let _ = writeln!(
            text,
            "floor: empty request p50 {} µs ({} Wasm instructions), bare sync p50 {} µs",
            self.floor.empty_request_us.median,
            self.floor.empty_request_instructions,
            self.floor.bare_sync_us.median
        );
        for engine in &self.engines {
            let _ = writeln!(text, "{}:", engine.engine);
            for mode in engine.modes.iter().filter(|mode| mode.mode == "cold") {
                for workload in &mode.workloads {
                    let _ = writeln!(
                        text,
                        "  {:<22} {:>10} | {:>8} | {} | {}",
                        workload.workload,
                        workload.p50_us.median,
                        workload.rps_n_clients.median,
                        workload.syncs_per_request,
                        workload.instructions_per_request
                    );
                }
            }
        }
        text
    }
}

/// The counts alone (`edge-bench --instructions-only`, `edge_instructions.yml`): the Wasm
/// instructions of every workload on the metering host, per engine and mode.
#[derive(Serialize)]
pub struct Counts {
    /// The `wasmtime serve` that filled the tables (`wasmtime --version`).
    pub wasmtime: String,
    /// Rows of each engine's aged table.
    pub rows: u64,
    /// Requests counted per one-row workload.
    pub requests: u64,
    /// Requests counted per 1,000-row workload.
    pub batch_requests: u64,
    /// Wasm instructions of `GET /ping` on a fresh instance.
    pub empty_request_instructions: u64,
    /// Per engine.
    pub engines: Vec<EngineCounts>,
}

/// One engine's counts.
#[derive(Serialize)]
pub struct EngineCounts {
    /// The registry's key.
    pub engine: String,
    /// How reports name it.
    pub label: String,
    /// A peer, not one of this crate's engines.
    pub peer: bool,
    /// Cold (a fresh instance per request) and warm (an instance reused).
    pub modes: Vec<ModeCounts>,
}

/// One engine's counts in one host mode.
#[derive(Serialize)]
pub struct ModeCounts {
    /// `cold` or `warm`.
    pub mode: String,
    /// Per workload.
    pub workloads: Vec<WorkloadCount>,
}

/// One workload's count.
#[derive(Serialize)]
pub struct WorkloadCount {
    /// Its name.
    pub workload: String,
    /// Wasm instructions per request, the mean over the requests counted.
    pub instructions_per_request: f64,
}

impl Counts {
    /// Writes the YAML file.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let yaml = serde_yaml::to_string(self).map_err(|error| error.to_string())?;
        let text = format!(
            "# Written by edge-bench --instructions-only: Wasm instructions per request on the \
             metering host (benches/edge-meter), which do not depend on the machine's load.\n{yaml}"
        );
        std::fs::write(path, text).map_err(|error| format!("{}: {error}", path.display()))
    }

    /// Every engine's counts, fresh instance / reused instance.
    pub fn table(&self) -> String {
        let mut text = String::new();
        let _ = writeln!(
            text,
            "\nedge, {} rows (aged): Wasm instructions per request, fresh / reused instance \
             (GET /ping on a fresh instance: {})",
            self.rows, self.empty_request_instructions
        );
        for engine in &self.engines {
            let _ = writeln!(text, "{}:", engine.engine);
            let by_mode = |mode: &str| {
                engine
                    .modes
                    .iter()
                    .find(|m| m.mode == mode)
                    .map(|m| m.workloads.as_slice())
                    .unwrap_or_default()
            };
            for (cold, warm) in by_mode("cold").iter().zip(by_mode("warm")) {
                let _ = writeln!(
                    text,
                    "  {:<22} {:>12} / {:>12}",
                    cold.workload, cold.instructions_per_request, warm.instructions_per_request
                );
            }
        }
        text
    }
}
