//! `edge-bench`: what one request to the edge component costs on the real `wasmtime serve`,
//! per engine, on an aged table, with a fresh instance per request (cold) and with instances
//! reused (warm): latency percentiles and requests per second with 1 and with several
//! clients, as medians over repeated runs with their spread (every engine's table is filled
//! first, then each run measures every engine and mode in turn, so that a slow spell of the
//! machine falls on all engines, not on one), beside figures that do not
//! depend on the machine's load (the Wasm instructions a request executes, counted on the
//! metering host `edge-meter` in the same mode; syncs, bytes read and written per request,
//! bytes on disk per row). Wall-clock figures are compared within one run only.
//!
//! Usage: edge-bench [--rows N] [--requests R] [--batch-requests B] [--runs K]
//!                   [--clients C] [--engines KEY,KEY] [--out FILE]
//! The engines are the registry's `[[edge]]` configurations (canisters/engines.toml), every
//! one by default; their components are built by scripts/build_edge.sh and
//! scripts/build_edge_peers.sh.

mod results;
mod stats;
mod workloads;

use edge_bench::client::Client;
use edge_bench::host::{component_path, repository_root, Host, HostConfig};
use engine_registry::{edge_engines, EdgeEngine};
use results::{
    Counts, EngineCounts, EngineResult, Floor, Machine, ModeCounts, ModeResult, Results,
    WorkloadCount, WorkloadResult,
};
use stats::{Latencies, OverRuns};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use workloads::{Plan, Request, Workload};

/// The write credential the benchmark's hosts are given.
const TOKEN: &str = "edge-bench-token";

/// Users per fill request (the API's largest batch, as the canister benchmark fills).
const FILL_BATCH: usize = 10_000;

/// The host modes: a fresh instance per request (`wasmtime serve`'s default), and instances
/// reused for up to a million requests each.
const MODES: [(&str, &[&str]); 2] = [
    ("cold", &[]),
    ("warm", &["--max-instance-reuse-count", "1000000"]),
];

/// The metering host's count of a request's Wasm instructions (benches/edge-meter).
const METER_HEADER: &str = "x-wasm-instructions";

/// The seed of the aged table's order and of every request drawn from it.
const SEED: u64 = 0xED9E_2026_1126;

struct Options {
    rows: u64,
    requests: u64,
    batch_requests: u64,
    runs: u64,
    clients: u64,
    engines: Vec<String>,
    out: PathBuf,
    /// Only the counts on the metering host, no timed runs (`--instructions-only`).
    instructions_only: bool,
}

fn main() {
    if let Err(message) = run() {
        eprintln!("edge-bench: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let options = parse_options()?;
    let wasmtime = HostConfig::wasmtime_binary()?;
    let meter = HostConfig::meter_binary()?;
    let engines = selected_engines(&options.engines)?;
    let work = repository_root().join("target/edge-bench");
    if options.instructions_only {
        return count_only(&options, &wasmtime, &meter, &engines, &work);
    }
    let mut results = Results {
        machine: Machine::read(&wasmtime),
        rows: options.rows,
        usernames: userstore_benches::tables::USERNAME_ORDER,
        requests: options.requests,
        batch_requests: options.batch_requests,
        runs: options.runs,
        clients: options.clients,
        floor: Floor::default(),
        engines: Vec::new(),
    };
    let plan = Plan::new(options.rows, SEED);
    let mut tables = Vec::new();
    for engine in engines {
        let cold = prepare(engine, &wasmtime, &work)?;
        let fill_seconds = fill_table(engine, &cold, &plan)?;
        let bytes_on_disk = directory_bytes(&cold.data_dir);
        tables.push(Table {
            engine,
            cold,
            fill_seconds,
            bytes_on_disk,
            next_index: BTreeMap::new(),
            samples: MODES
                .iter()
                .map(|_| Workload::ALL.iter().map(|_| Samples::default()).collect())
                .collect(),
        });
    }
    // Run by run, every engine and mode in each: the engines are measured one after another,
    // and a slow spell of a shared machine would otherwise fall on whichever engine ran
    // during it; interleaved, it falls on every engine's run of that round, and the medians
    // over the runs set it aside (docs/edge.md, "The handoff").
    for run in 0..options.runs {
        for (mode_index, (mode, serve_args)) in MODES.iter().enumerate() {
            for table in &mut tables {
                let host = Host::start(&table.config(serve_args)).map_err(|e| e.to_string())?;
                if results.floor.empty_request_us.median == 0.0 {
                    results.floor = measure_floor(&host, &table.cold.data_dir, &options)?;
                }
                if *mode == "warm" {
                    warm_up(&host, options.clients)?;
                }
                measure_run(
                    &host,
                    &plan,
                    &options,
                    &mut table.next_index,
                    &mut table.samples[mode_index],
                )?;
            }
        }
        eprintln!("run {} of {}: every engine measured", run + 1, options.runs);
    }
    // Then the counts, on the metering host in the same modes, on the same files.
    for (engine, ping) in meter_all(tables, &meter, &plan, &options)? {
        if results.floor.empty_request_instructions == 0 {
            results.floor.empty_request_instructions = ping;
        }
        results.engines.push(engine);
    }
    results.write(&options.out)?;
    print!("{}", results.table());
    Ok(())
}

/// Meters every table after its timed runs, several at once: a count of Wasm instructions does
/// not depend on what else runs, so the metering hosts (one request at a time each) share the
/// machine's cores instead of taking turns (the time each part of a run takes: docs/edge.md,
/// "The full run"). Returns each table's result, in the order given, with the instructions of its host's first
/// `/ping`.
fn meter_all(
    tables: Vec<Table<'_>>,
    meter: &Path,
    plan: &Plan,
    options: &Options,
) -> Result<Vec<(EngineResult, u64)>, String> {
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(tables.len())
        .max(1);
    let queue = Mutex::new(tables.into_iter().enumerate());
    let metered = Mutex::new(Vec::new());
    let worker = || -> Result<(), String> {
        loop {
            let next = queue
                .lock()
                .map_err(|_| "the metering queue was poisoned".to_string())?
                .next();
            let Some((index, table)) = next else {
                return Ok(());
            };
            let result = meter_table(table, meter, plan, options);
            if result.is_err() {
                // Nothing more to meter once one table failed: the whole run fails.
                if let Ok(mut queue) = queue.lock() {
                    queue.by_ref().for_each(drop);
                }
            }
            metered
                .lock()
                .map_err(|_| "the metered results were poisoned".to_string())?
                .push((index, result?));
        }
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers).map(|_| scope.spawn(worker)).collect();
        handles.into_iter().try_for_each(|handle| {
            handle
                .join()
                .map_err(|_| "a metering worker panicked".to_string())?
        })
    })?;
    let mut metered = metered
        .into_inner()
        .map_err(|_| "the metered results were poisoned".to_string())?;
    metered.sort_by_key(|(index, _)| *index);
    Ok(metered.into_iter().map(|(_, result)| result).collect())
}

/// One table's counts in every mode, joined to its timed samples: its result, and the
/// instructions of the metering host's first `/ping`.
fn meter_table(
    table: Table<'_>,
    meter: &Path,
    plan: &Plan,
    options: &Options,
) -> Result<(EngineResult, u64), String> {
    let mut modes = Vec::new();
    let mut next_index = table.next_index.clone();
    let mut ping = 0;
    for ((mode, serve_args), samples) in MODES.iter().zip(&table.samples) {
        let metering = HostConfig {
            program: meter.to_owned(),
            ..table.config(serve_args)
        };
        let counts = count_mode(&metering, plan, options, &mut next_index, &mut ping)?;
        let workloads = Workload::ALL
            .iter()
            .zip(samples)
            .zip(counts)
            .map(|((workload, samples), count)| {
                samples.result(*workload, options, count.instructions_per_request)
            })
            .collect();
        modes.push(ModeResult {
            mode: mode.to_string(),
            workloads,
        });
    }
    eprintln!("{}: counted", table.engine.key);
    let result = EngineResult {
        engine: table.engine.key.clone(),
        label: table.engine.label.clone(),
        peer: table.engine.peer,
        fill_seconds: (table.fill_seconds * 10.0).round() / 10.0,
        bytes_on_disk_per_row: table.bytes_on_disk as f64 / options.rows as f64,
        modes,
    };
    Ok((result, ping))
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        rows: 1_000_000,
        requests: 200,
        batch_requests: 10,
        runs: 3,
        clients: 8,
        engines: Vec::new(),
        out: repository_root().join("edge_results.yml"),
        instructions_only: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "--instructions-only" {
            options.instructions_only = true;
            continue;
        }
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {value}"))
        };
        match flag.as_str() {
            "--rows" => options.rows = number()?,
            "--requests" => options.requests = number()?,
            "--batch-requests" => options.batch_requests = number()?,
            "--runs" => options.runs = number()?,
            "--clients" => options.clients = number()?,
            "--engines" => options.engines = value.split(',').map(str::to_string).collect(),
            "--out" => options.out = PathBuf::from(value),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    if options.requests == 0 || options.runs == 0 {
        return Err("need --requests >= 1 and --runs >= 1".into());
    }
    // Requests per workload in a table's life: two modes, each run sequential and concurrent,
    // then once more on the metering host.
    let drawn = |requests: u64| requests * (options.runs * 2 + 1) * MODES.len() as u64;
    if options.instructions_only && options.out == repository_root().join("edge_results.yml") {
        options.out = repository_root().join("edge_instructions.yml");
    }
    if drawn(options.requests) > options.rows / 2
        || drawn(options.batch_requests) > options.rows / workloads::BATCH_ROWS
    {
        return Err(format!(
            "--rows {} is too small for distinct ids: each one-row workload draws {} ids from \
             half the table, each batch workload {} blocks of {} rows",
            options.rows,
            drawn(options.requests),
            drawn(options.batch_requests),
            workloads::BATCH_ROWS
        ));
    }
    Ok(options)
}

/// The registry's edge configurations named in `keys`, in the registry's order; every one
/// when `keys` is empty.
fn selected_engines(keys: &[String]) -> Result<Vec<&'static EdgeEngine>, String> {
    if let Some(unknown) = keys
        .iter()
        .find(|key| !edge_engines().iter().any(|engine| &engine.key == *key))
    {
        return Err(format!(
            "no edge configuration {unknown} in canisters/engines.toml"
        ));
    }
    Ok(edge_engines()
        .iter()
        .filter(|engine| keys.is_empty() || keys.contains(&engine.key))
        .collect())
}

/// Fills the table through `insert_users`; returns the seconds it took.
fn fill(host: &Host, plan: &Plan) -> Result<f64, String> {
    let mut client = Client::new(host.address(), Some(TOKEN));
    let started = Instant::now();
    for request in plan.fill_batches(FILL_BATCH) {
        send_checked(&mut client, &request, 200)?;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// One request, whose status must be `expected`: a benchmark of failing requests measures
/// nothing.
fn send_checked(
    client: &mut Client,
    request: &Request,
    expected: u16,
) -> Result<edge_bench::client::Response, String> {
    let response = client
        .send(request.method, &request.path, &[], request.body.as_deref())
        .map_err(|error| format!("{} {}: {error}", request.method, request.path))?;
    if response.status != expected {
        return Err(format!(
            "{} {}: status {} (expected {expected}): {}",
            request.method,
            request.path,
            response.status,
            String::from_utf8_lossy(&response.body)
        ));
    }
    Ok(response)
}

/// One engine's filled table and what its runs measured so far.
struct Table<'a> {
    engine: &'a EdgeEngine,
    /// Its host settings, with a fresh instance per request.
    cold: HostConfig,
    fill_seconds: f64,
    bytes_on_disk: u64,
    /// Each workload's next request index in this table's life: no id is drawn twice.
    next_index: BTreeMap<&'static str, u64>,
    /// Per mode (as [`MODES`]), per workload (as [`Workload::ALL`]): each run's figures.
    samples: Vec<Vec<Samples>>,
}

impl Table<'_> {
    /// The host settings of this table in a mode.
    fn config(&self, serve_args: &[&str]) -> HostConfig {
        HostConfig {
            serve_args: serve_args.iter().map(|arg| arg.to_string()).collect(),
            ..self.cold.clone()
        }
    }
}

/// One workload's figures, one entry per run.
#[derive(Default)]
struct Samples {
    p50: Vec<f64>,
    p99: Vec<f64>,
    mean: Vec<f64>,
    rps_one: Vec<f64>,
    rps_many: Vec<f64>,
    /// The component's counters of the last run's sequential requests.
    counters: Counters,
}

impl Samples {
    /// The workload's result: medians over the runs with their spread.
    fn result(&self, workload: Workload, options: &Options, instructions: f64) -> WorkloadResult {
        let requests = requests_of(workload, options);
        let per_request = |total: u64| total as f64 / requests as f64;
        WorkloadResult {
            workload: workload.name().to_string(),
            p50_us: OverRuns::of(&self.p50),
            p99_us: OverRuns::of(&self.p99),
            mean_us: OverRuns::of(&self.mean),
            rps_1_client: OverRuns::of(&self.rps_one),
            rps_n_clients: OverRuns::of(&self.rps_many),
            syncs_per_request: per_request(self.counters.syncs),
            bytes_read_per_request: per_request(self.counters.bytes_read).round(),
            bytes_written_per_request: per_request(self.counters.bytes_written).round(),
            instructions_per_request: instructions,
        }
    }
}

/// Requests per run of `workload`.
fn requests_of(workload: Workload, options: &Options) -> u64 {
    if workload.is_batch() {
        options.batch_requests
    } else {
        options.requests
    }
}

/// `clients` pings at once on a host that reuses instances: each client's connection finds
/// an instance ready, so that the first workload's requests do not pay the instantiation.
fn warm_up(host: &Host, clients: u64) -> Result<(), String> {
    std::thread::scope(|scope| {
        let pings: Vec<_> = (0..clients)
            .map(|_| {
                scope.spawn(move || {
                    let mut client = Client::new(host.address(), None);
                    match client.get("/ping") {
                        Ok(response) if response.status == 200 => Ok(()),
                        Ok(response) => Err(format!("GET /ping: status {}", response.status)),
                        Err(error) => Err(format!("GET /ping: {error}")),
                    }
                })
            })
            .collect();
        pings
            .into_iter()
            .try_for_each(|ping| ping.join().map_err(|_| "a ping panicked".to_string())?)
    })
}

/// Every workload once, sequentially and from `options.clients` clients: one run's figures
/// added to `samples` (one per workload, as [`Workload::ALL`]).
fn measure_run(
    host: &Host,
    plan: &Plan,
    options: &Options,
    next_index: &mut BTreeMap<&'static str, u64>,
    samples: &mut [Samples],
) -> Result<(), String> {
    for (workload, samples) in Workload::ALL.into_iter().zip(samples) {
        let requests = requests_of(workload, options);
        let next_index = next_index.entry(workload.name()).or_default();
        let batch: Vec<Request> = (0..requests)
            .map(|i| plan.request(workload, *next_index + i))
            .collect();
        *next_index += requests;
        let (durations, elapsed, counters) = sequential(host, workload, &batch)?;
        let latencies = Latencies::new(&durations);
        samples.p50.push(latencies.percentile(0.5));
        samples.p99.push(latencies.percentile(0.99));
        samples.mean.push(latencies.mean());
        samples
            .rps_one
            .push(requests as f64 / elapsed.as_secs_f64());
        samples.counters = counters;
        let concurrent: Vec<Request> = (0..requests)
            .map(|i| plan.request(workload, *next_index + i))
            .collect();
        *next_index += requests;
        let elapsed = concurrently(host, workload, &concurrent, options.clients)?;
        samples
            .rps_many
            .push(requests as f64 / elapsed.as_secs_f64());
        eprintln!(
            "  {}: p50 {:.0} µs",
            workload.name(),
            latencies.percentile(0.5)
        );
    }
    Ok(())
}

/// Every workload once more, sequentially, on the metering host (`edge-meter`): each
/// workload's mean Wasm instructions per request, from the `x-wasm-instructions` header.
fn count_instructions(
    meter: &Host,
    plan: &Plan,
    options: &Options,
    next_index: &mut BTreeMap<&'static str, u64>,
) -> Result<Vec<WorkloadCount>, String> {
    let mut client = Client::new(meter.address(), Some(TOKEN));
    let mut counts = Vec::new();
    for workload in Workload::ALL {
        let requests = if workload.is_batch() {
            options.batch_requests
        } else {
            options.requests
        };
        let next_index = next_index.entry(workload.name()).or_default();
        let mut instructions = 0;
        for i in 0..requests {
            let request = plan.request(workload, *next_index + i);
            let response = send_checked(&mut client, &request, workload.expected_status())?;
            instructions += metered(&response, &request.path)?;
        }
        *next_index += requests;
        counts.push(WorkloadCount {
            workload: workload.name().to_string(),
            instructions_per_request: (instructions as f64 / requests as f64).round(),
        });
    }
    Ok(counts)
}

/// `--instructions-only`: every engine's table filled on `wasmtime serve`, then every workload
/// counted on the metering host in both modes; no timed runs. The counts do not depend on the
/// machine's load, so they need no run of their own beside the timings: this is the quick way
/// to them.
fn count_only(
    options: &Options,
    wasmtime: &Path,
    meter: &Path,
    engines: &[&EdgeEngine],
    work: &Path,
) -> Result<(), String> {
    let mut counts = Counts {
        wasmtime: Machine::read(wasmtime).wasmtime,
        rows: options.rows,
        requests: options.requests,
        batch_requests: options.batch_requests,
        empty_request_instructions: 0,
        engines: Vec::new(),
    };
    for engine in engines {
        let cold = prepare(engine, wasmtime, work)?;
        let plan = Plan::new(options.rows, SEED);
        fill_table(engine, &cold, &plan)?;
        let mut next_index = BTreeMap::new();
        let mut modes = Vec::new();
        for (mode, serve_args) in MODES {
            let metering = HostConfig {
                program: meter.to_owned(),
                serve_args: serve_args.iter().map(|arg| arg.to_string()).collect(),
                ..cold.clone()
            };
            let workloads = count_mode(
                &metering,
                &plan,
                options,
                &mut next_index,
                &mut counts.empty_request_instructions,
            )?;
            eprintln!("  {mode}: counted");
            modes.push(ModeCounts {
                mode: mode.to_string(),
                workloads,
            });
        }
        counts.engines.push(EngineCounts {
            engine: engine.key.clone(),
            label: engine.label.clone(),
            peer: engine.peer,
            modes,
        });
    }
    counts.write(&options.out)?;
    print!("{}", counts.table());
    Ok(())
}

/// An engine's host settings on a fresh data directory: `wasmtime serve` with a fresh instance
/// per request, the component's environment with the benchmark's token.
fn prepare(engine: &EdgeEngine, wasmtime: &Path, work: &Path) -> Result<HostConfig, String> {
    let component = component_path(&engine.component);
    if !component.is_file() {
        return Err(format!(
            "{} is missing: build it with scripts/build_edge.sh and scripts/build_edge_peers.sh",
            component.display()
        ));
    }
    let data_dir = work.join(&engine.key);
    let _ = std::fs::remove_dir_all(&data_dir);
    std::fs::create_dir_all(&data_dir).map_err(|e| format!("{}: {e}", data_dir.display()))?;
    let mut env: Vec<(String, String)> = engine
        .env
        .iter()
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    env.push(("USERSTORE_WRITE_TOKEN".into(), TOKEN.into()));
    Ok(HostConfig {
        program: wasmtime.to_owned(),
        component,
        data_dir,
        env,
        serve_args: Vec::new(),
    })
}

/// Fills an engine's table on `wasmtime serve` (`cold`); returns the seconds it took.
fn fill_table(engine: &EdgeEngine, cold: &HostConfig, plan: &Plan) -> Result<f64, String> {
    let host = Host::start(cold).map_err(|e| e.to_string())?;
    let seconds = fill(&host, plan)?;
    eprintln!(
        "{}: {} rows filled in {seconds:.1} s",
        engine.key,
        plan.rows()
    );
    Ok(seconds)
}

/// One mode on the metering host `metering`: every workload counted. The first request starts
/// an instance: `GET /ping`, whose count on a fresh instance is the floor (`ping`, set once);
/// with instances reused it is uncounted, so that every counted request finds its instance.
fn count_mode(
    metering: &HostConfig,
    plan: &Plan,
    options: &Options,
    next_index: &mut BTreeMap<&'static str, u64>,
    ping: &mut u64,
) -> Result<Vec<WorkloadCount>, String> {
    let host = Host::start(metering).map_err(|e| e.to_string())?;
    let first = ping_instructions(&host)?;
    if *ping == 0 {
        *ping = first;
    }
    count_instructions(&host, plan, options, next_index)
}

/// The instructions of `GET /ping` on the metering host: the component's own floor.
fn ping_instructions(meter: &Host) -> Result<u64, String> {
    let mut client = Client::new(meter.address(), None);
    let response = client
        .get("/ping")
        .map_err(|error| format!("GET /ping: {error}"))?;
    metered(&response, "/ping")
}

/// The count the metering host put on a response; a response without one is an error (the
/// benchmark must not report a count of zero it did not measure).
fn metered(response: &edge_bench::client::Response, path: &str) -> Result<u64, String> {
    response
        .header(METER_HEADER)
        .and_then(|value| value.trim().parse().ok())
        .ok_or_else(|| format!("{path}: the metering host gave no {METER_HEADER}"))
}

#[derive(Default, Clone, Copy)]
struct Counters {
    syncs: u64,
    bytes_read: u64,
    bytes_written: u64,
}

/// The requests one after another on one connection: each one's latency, the whole time,
/// and the component's own counters (the `x-userstore-*` headers), summed.
fn sequential(
    host: &Host,
    workload: Workload,
    requests: &[Request],
) -> Result<(Vec<Duration>, Duration, Counters), String> {
    let mut client = Client::new(host.address(), Some(TOKEN));
    let mut durations = Vec::with_capacity(requests.len());
    let mut counters = Counters::default();
    let started = Instant::now();
    for request in requests {
        let sent = Instant::now();
        let response = send_checked(&mut client, request, workload.expected_status())?;
        durations.push(sent.elapsed());
        counters.syncs += response.counter("x-userstore-syncs");
        counters.bytes_read += response.counter("x-userstore-bytes-read");
        counters.bytes_written += response.counter("x-userstore-bytes-written");
    }
    Ok((durations, started.elapsed(), counters))
}

/// The requests shared among `clients` concurrent connections; the whole time.
fn concurrently(
    host: &Host,
    workload: Workload,
    requests: &[Request],
    clients: u64,
) -> Result<Duration, String> {
    let share = requests.len().div_ceil(clients.max(1) as usize).max(1);
    let started = Instant::now();
    std::thread::scope(|scope| {
        let workers: Vec<_> = requests
            .chunks(share)
            .map(|part| {
                scope.spawn(move || {
                    let mut client = Client::new(host.address(), Some(TOKEN));
                    part.iter().try_for_each(|r| {
                        send_checked(&mut client, r, workload.expected_status()).map(|_| ())
                    })
                })
            })
            .collect();
        workers
            .into_iter()
            .try_for_each(|worker| worker.join().map_err(|_| "a client panicked".to_string())?)
    })?;
    Ok(started.elapsed())
}

/// The floor: an empty request through the same host (instantiation and HTTP, no storage),
/// and one bare sync on the data directory's disk.
fn measure_floor(host: &Host, data_dir: &Path, options: &Options) -> Result<Floor, String> {
    let mut empty = Vec::new();
    let mut sync = Vec::new();
    for _ in 0..options.runs {
        let mut client = Client::new(host.address(), None);
        let mut durations = Vec::new();
        for _ in 0..options.requests {
            let sent = Instant::now();
            let response = client
                .get("/ping")
                .map_err(|error| format!("GET /ping: {error}"))?;
            if response.status != 200 {
                return Err(format!("GET /ping: status {}", response.status));
            }
            durations.push(sent.elapsed());
        }
        empty.push(Latencies::new(&durations).percentile(0.5));
        sync.push(bare_sync(data_dir, options.requests)?);
    }
    Ok(Floor {
        empty_request_us: OverRuns::of(&empty),
        bare_sync_us: OverRuns::of(&sync),
        // Counted on the metering host, after the timed runs.
        empty_request_instructions: 0,
    })
}

/// The median of `count` 4 KiB writes each followed by `fdatasync`, in microseconds.
fn bare_sync(dir: &Path, count: u64) -> Result<f64, String> {
    use std::io::Write;
    let path = dir.join("sync-probe");
    let mut file = std::fs::File::create(&path).map_err(|e| e.to_string())?;
    let mut durations = Vec::new();
    for _ in 0..count {
        let started = Instant::now();
        file.write_all(&[7u8; 4096]).map_err(|e| e.to_string())?;
        file.sync_data().map_err(|e| e.to_string())?;
        durations.push(started.elapsed());
    }
    drop(file);
    let _ = std::fs::remove_file(&path);
    Ok(Latencies::new(&durations).percentile(0.5))
}

/// Bytes of every file in `dir`.
fn directory_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|entry| entry.metadata().ok())
                .filter(|metadata| metadata.is_file())
                .map(|metadata| metadata.len())
                .sum()
        })
        .unwrap_or(0)
}
