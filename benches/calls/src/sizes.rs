//! The size sweep (`bench-calls --sizes`): what the headline calls cost as the table grows,
//! from 10,000 users to as many as the run is given, for one configuration of every engine
//! of the registry (the one it traces) and the ic-sqlite-vfs peer, on aged and ascending
//! tables, under both metering profiles, the IC's current meter first.
//!
//! Every size is its own table, filled through the canister's `insert_users` in the order
//! of its state (the same orders as the 1,000,000-row suite: [`TableState::insertion_order`]),
//! and every workload runs on a fresh copy of it, so a figure is the cost of a call on a
//! table of exactly that many rows. The fill's own instructions, under the current meter, are
//! reported per row with the stable memory the table takes.
//!
//! On the 1,000,000-row tables the sweep also measures the seed's batch table
//! ([`SEED_BATCHES`]), for those configurations and for the journal modes the seed published
//! besides ([`SEED_ONLY_CONFIGURATIONS`]), which are filled for it alone.
//!
//! Every table is also held to the rules at its size: after every measured upgrade the table
//! is read back through the API ([`check_table`]), and under the current meter a sequence of
//! writes and reads then runs against userstore's model, followed by another upgrade
//! ([`check_against_model`]). Neither is measured, and every measure starts from a fresh copy.
//!
//! The results file keeps the sizes a run did not measure: the large sizes, which take hours,
//! are measured by a run given a larger `--up-to` and kept while later runs measure the
//! small ones again. `--check` measures and compares instead of writing, figure for figure
//! (instruction counts are deterministic).

use crate::check::against_file;
use crate::integrity::check_table;
use crate::model_check::check_against_model;
use crate::reply::owner;
use crate::run::{measure_workload, no_argument, Plan, PROFILES};
use crate::stats::Spread;
use crate::storage::Storage;
use crate::tables::{fill, TableState};
use crate::workloads::{Ids, Mode, Workload, SCATTERED_BATCH};
use engine_registry::{Configuration, Engine};
use icrun::{Canister, CanisterSnapshot, Env, Metering, Options};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

/// The table sizes of the sweep, in rows.
pub const SIZES: [u64; 9] = [
    10_000,
    30_000,
    100_000,
    300_000,
    1_000_000,
    3_000_000,
    10_000_000,
    30_000_000,
    100_000_000,
];

/// The key of the upgrade's figure among the workloads'.
pub const UPGRADE: &str = "upgrade";

/// The batch size of the sweep's batch workloads.
const BATCH: usize = 1_000;

/// The workloads of the sweep, in the order they run (each on its own copy of the table).
pub fn workloads() -> Vec<Workload> {
    vec![
        Workload::Get(Mode::Query),
        Workload::GetMissing,
        Workload::Page,
        Workload::Count,
        Workload::InsertBetween,
        Workload::Update,
        Workload::Delete,
        Workload::InsertBetweenBatch(BATCH),
        Workload::InsertAboveBatch(BATCH),
        Workload::InsertScattered(SCATTERED_BATCH),
    ]
}

/// The seed's batch table (issue 26 §2): `insert_users` of `n` new users between existing
/// ones, one message, on the 1,000,000-row table, for these `n`.
pub const SEED_BATCHES: [usize; 6] = [1, 10, 50, 100, 1_000, 10_000];

/// The table size of the seed's batch table.
pub const SEED_BATCH_ROWS: u64 = 1_000_000;

/// Configurations measured for the seed's batch table only, beside every engine's traced
/// one: the journal modes of SQLite on the WASI polyfill that the seed's published table has
/// columns for besides `MEMORY` (its "SQLite", ic-rusqlite's default `PERSIST`, and its "no
/// journal", `OFF`; ../shared/anchors.md A), so that every published column has ours beside
/// it. They are filled at [`SEED_BATCH_ROWS`] rows and measure nothing else.
pub const SEED_ONLY_CONFIGURATIONS: [&str; 2] = ["sqlite_persist", "sqlite_off"];

/// A batch workload's messages in the sweep: one unmeasured, then
/// [`BATCH_MESSAGES_MEASURED`], so that the smallest table holds the rows they draw.
const BATCH_MESSAGES_MEASURED: usize = 3;

/// The sweep's plan of `workload`: the suite's, but fewer batch messages.
fn plan(workload: Workload) -> Plan {
    if workload.rows() > 1 {
        Plan {
            warmup: 1,
            measured: BATCH_MESSAGES_MEASURED,
        }
    } else {
        Plan::of(workload)
    }
}

/// By metering profile, table state, configuration, rows and workload: the spread of the
/// workload's messages (per row for a batch).
pub type SizeCalls =
    BTreeMap<String, BTreeMap<String, BTreeMap<String, BTreeMap<u64, BTreeMap<String, Spread>>>>>;

/// By metering profile, table state, configuration and batch size: the spread per row.
pub type SeedBatches = BTreeMap<String, BTreeMap<String, BTreeMap<String, BTreeMap<u64, Spread>>>>;

/// A filled table of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// Stable memory per row, in bytes (to one decimal).
    pub stable_bytes_per_row: f64,
    /// The engine's own share of it.
    pub engine_bytes_per_row: f64,
    /// Instructions of the fill's `insert_users` messages per row, under the current meter.
    pub fill_instructions_per_row: u64,
}

/// The whole file.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SizeResults {
    /// Every call measured.
    pub calls: SizeCalls,
    /// Every table filled, by state, configuration and rows.
    pub tables: BTreeMap<String, BTreeMap<String, BTreeMap<u64, Table>>>,
    /// The seed's batch table: by profile, state, configuration and batch size, the
    /// spread per row of `insert_users` of that many new users between existing ones, on
    /// the table of [`SEED_BATCH_ROWS`].
    #[serde(default)]
    pub seed_batches: SeedBatches,
}

/// What a sweep measures.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// The largest size measured.
    pub up_to: u64,
    /// The smallest size measured.
    pub from: u64,
    /// Configuration keys to measure; the traced configuration of every engine when empty.
    pub only: Vec<String>,
    /// The table states to measure: both when empty. One state alone lets the two states of
    /// a large size run side by side, or one of them fit a session.
    pub states: Vec<TableState>,
}

/// The file's first line.
const HEADER: &str =
    "# Generated by bench-calls --sizes (scripts/bench.sh --sizes): what one call to \
                      a store canister costs as its table grows. Do not edit.\n";

/// Runs `sweep` and merges its figures into `results` (or, with `check`, compares them with
/// the committed ones there).
pub fn run(canisters: &Path, results: &Path, sweep: &Sweep, check: bool) -> Result<(), String> {
    let measured = measure(canisters, sweep)?;
    if check {
        return against_file(&measured, results, "bench-calls --sizes --check");
    }
    merge_into(results, [measured])
}

/// Merges the results files `parts` (each written by a sweep of its own, for example two run
/// side by side on different engines) into `results`.
pub fn merge_files(results: &Path, parts: &[&Path]) -> Result<(), String> {
    let parts = parts
        .iter()
        .map(|part| read(part)?.ok_or_else(|| format!("{} does not exist", part.display())))
        .collect::<Result<Vec<_>, String>>()?;
    merge_into(results, parts)
}

/// The results in `path`, if it exists.
fn read(path: &Path) -> Result<Option<SizeResults>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_yaml::from_str(&text)
            .map(Some)
            .map_err(|error| format!("{}: {error}", path.display())),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(format!("reading {}: {error}", path.display())),
    }
}

/// `parts` written over the results in `results`, in order.
fn merge_into(results: &Path, parts: impl IntoIterator<Item = SizeResults>) -> Result<(), String> {
    let mut merged = read(results)?.unwrap_or_default();
    for part in parts {
        merge(&mut merged, part);
    }
    let yaml = serde_yaml::to_string(&merged).map_err(|error| error.to_string())?;
    std::fs::write(results, format!("{HEADER}{yaml}"))
        .map_err(|error| format!("writing {}: {error}", results.display()))
}

/// `measured` written over `into`, entry by entry: what it did not measure stays.
fn merge(into: &mut SizeResults, measured: SizeResults) {
    for (profile, states) in measured.calls {
        for (state, configurations) in states {
            for (configuration, sizes) in configurations {
                into.calls
                    .entry(profile.clone())
                    .or_default()
                    .entry(state.clone())
                    .or_default()
                    .entry(configuration)
                    .or_default()
                    .extend(sizes);
            }
        }
    }
    for (profile, states) in measured.seed_batches {
        for (state, configurations) in states {
            for (configuration, batches) in configurations {
                into.seed_batches
                    .entry(profile.clone())
                    .or_default()
                    .entry(state.clone())
                    .or_default()
                    .insert(configuration, batches);
            }
        }
    }
    for (state, configurations) in measured.tables {
        for (configuration, sizes) in configurations {
            into.tables
                .entry(state.clone())
                .or_default()
                .entry(configuration)
                .or_default()
                .extend(sizes);
        }
    }
}

/// A configuration of an engine of the registry and the table sizes it is measured at.
#[derive(Debug)]
struct Planned {
    engine: &'static Engine,
    configuration: &'static Configuration,
    sizes: Vec<u64>,
    /// One of [`SEED_ONLY_CONFIGURATIONS`]: its tables serve the seed's batch table alone.
    seed_only: bool,
}

/// What `sweep` measures: each configuration with the sizes it is measured at, in the
/// registry's order. Every engine's traced configuration at every size of the sweep, and the
/// [`SEED_ONLY_CONFIGURATIONS`] at [`SEED_BATCH_ROWS`] alone; `--only` picks among them, and
/// naming a configuration the sweep would measure at none of its sizes is an error (before
/// any table is filled), not an empty run.
fn planned(sweep: &Sweep) -> Result<Vec<Planned>, String> {
    let sizes: Vec<u64> = SIZES
        .into_iter()
        .filter(|rows| (sweep.from..=sweep.up_to).contains(rows))
        .collect();
    let mut planned = Vec::new();
    for (engine, configuration) in engine_registry::configurations() {
        let seed_only = SEED_ONLY_CONFIGURATIONS.contains(&configuration.key.as_str());
        let sizes: Vec<u64> = if configuration.key == engine.traced().key {
            sizes.clone()
        } else if seed_only {
            sizes
                .iter()
                .copied()
                .filter(|rows| *rows == SEED_BATCH_ROWS)
                .collect()
        } else {
            Vec::new()
        };
        let picked = sweep.only.is_empty() || sweep.only.contains(&configuration.key);
        if picked && !sizes.is_empty() {
            planned.push(Planned {
                engine,
                configuration,
                sizes,
                seed_only,
            });
        }
    }
    for key in &sweep.only {
        if !planned
            .iter()
            .any(|planned| &planned.configuration.key == key)
        {
            return Err(format!(
                "--only {key}: the sweep measures it at none of its sizes from {} to {} rows \
                 (it measures every engine's traced configuration at every size, and {} at \
                 {SEED_BATCH_ROWS} rows only)",
                sweep.from,
                sweep.up_to,
                SEED_ONLY_CONFIGURATIONS.join(" and ")
            ));
        }
    }
    Ok(planned)
}

/// Measures `sweep`.
fn measure(canisters: &Path, sweep: &Sweep) -> Result<SizeResults, String> {
    let started = Instant::now();
    let mut out = SizeResults::default();
    for Planned {
        engine,
        configuration,
        sizes,
        seed_only,
    } in planned(sweep)?
    {
        let path = canisters.join(format!("{}.wasm", engine.canister));
        let canister = Subject {
            key: &configuration.key,
            init: engine.init_arg(configuration)?,
            wasm: std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?,
        };
        for state in TableState::ALL {
            if !sweep.states.is_empty() && !sweep.states.contains(&state) {
                continue;
            }
            for rows in &sizes {
                let table_started = Instant::now();
                let (base, table) = canister.filled(state, *rows)?;
                let filled_in = table_started.elapsed();
                if !seed_only {
                    out.tables
                        .entry(state.name().to_string())
                        .or_default()
                        .entry(canister.key.to_string())
                        .or_default()
                        .insert(*rows, table);
                }
                for metering in PROFILES {
                    let mut run = canister.run(&base, state, *rows, metering)?;
                    if !seed_only {
                        let mut calls = BTreeMap::new();
                        for workload in workloads() {
                            calls.insert(workload.key(), run.workload(workload)?);
                        }
                        calls.insert(UPGRADE.to_string(), run.upgrade()?);
                        if metering == Metering::Current {
                            run.model_check()?;
                        }
                        out.calls
                            .entry(metering.name().to_string())
                            .or_default()
                            .entry(state.name().to_string())
                            .or_default()
                            .entry(canister.key.to_string())
                            .or_default()
                            .insert(*rows, calls);
                    }
                    if *rows != SEED_BATCH_ROWS {
                        continue;
                    }
                    let mut batches = BTreeMap::new();
                    for n in SEED_BATCHES {
                        batches.insert(n as u64, run.workload(Workload::InsertBetweenBatch(n))?);
                    }
                    out.seed_batches
                        .entry(metering.name().to_string())
                        .or_default()
                        .entry(state.name().to_string())
                        .or_default()
                        .insert(canister.key.to_string(), batches);
                }
                eprintln!(
                    "{} {} {rows} rows: filled in {:.1?}, measured in {:.1?} ({:.0?} so far)",
                    canister.key,
                    state.name(),
                    filled_in,
                    table_started.elapsed() - filled_in,
                    started.elapsed()
                );
            }
        }
    }
    Ok(out)
}

/// The store canister of one configuration.
struct Subject<'a> {
    key: &'a str,
    init: Vec<u8>,
    wasm: Vec<u8>,
}

impl Subject<'_> {
    fn install(&self, metering: Metering) -> Result<Canister, String> {
        let options = Options {
            metering,
            ..Options::default()
        };
        Canister::install_with(&self.wasm, &self.init, owner(), Env::default(), options)
            .map(|(canister, _)| canister)
            .map_err(|error| format!("installing {}: {error}", self.key))
    }

    /// The table of `rows` in `state`, filled under the current meter, and its figures.
    fn filled(&self, state: TableState, rows: u64) -> Result<(CanisterSnapshot, Table), String> {
        let mut canister = self.install(Metering::Current)?;
        let fill_instructions = fill(&mut canister, state, rows)?;
        let storage = Storage::of(canister.stable_memory(), rows);
        let table = Table {
            stable_bytes_per_row: storage.stable_bytes_per_row,
            engine_bytes_per_row: storage.engine_bytes_per_row,
            fill_instructions_per_row: (fill_instructions + rows / 2) / rows,
        };
        Ok((canister.snapshot(), table))
    }

    /// A canister under `metering` that measures on copies of `base`.
    fn run<'b>(
        &'b self,
        base: &'b CanisterSnapshot,
        state: TableState,
        rows: u64,
        metering: Metering,
    ) -> Result<Run<'b>, String> {
        Ok(Run {
            subject: self,
            canister: self.install(metering)?,
            base,
            what: format!("{} {} {rows}", self.key, state.name()),
            rows,
        })
    }
}

/// One configuration's table of one size under one meter: every measure starts from a fresh
/// copy of the filled table.
struct Run<'b> {
    subject: &'b Subject<'b>,
    canister: Canister,
    base: &'b CanisterSnapshot,
    /// The configuration, state and size, for errors.
    what: String,
    rows: u64,
}

impl Run<'_> {
    fn fresh(&mut self) -> Result<(), String> {
        self.canister
            .restore(self.base)
            .map_err(|error| format!("restoring {}: {error}", self.what))
    }

    /// The spread of `workload`'s messages (per row for a batch).
    fn workload(&mut self, workload: Workload) -> Result<Spread, String> {
        self.fresh()?;
        let mut ids = Ids::new(self.rows);
        measure_workload(
            &mut self.canister,
            workload,
            &mut ids,
            plan(workload),
            false,
        )
        .map(|(call, _)| call.instructions)
        .map_err(|error| format!("{} {}: {error}", self.what, workload.key()))
    }

    /// An upgrade to the same Wasm: pre_upgrade and post_upgrade in one message, which must
    /// fit the install limit at any size (docs/metering.md §7); the table must come out of it
    /// whole ([`check_table`]).
    fn upgrade(&mut self) -> Result<Spread, String> {
        self.fresh()?;
        let upgraded = self
            .canister
            .upgrade(&self.subject.wasm, &no_argument(), owner())
            .map_err(|error| format!("upgrading {}: {error}", self.what))?;
        check_table(&mut self.canister, self.rows, &self.what)?;
        Spread::of(&[upgraded.instructions], 1).ok_or_else(|| "an upgrade measured nothing".into())
    }

    /// Writes and reads on the upgraded table against the model, then another upgrade
    /// ([`check_against_model`]). Once a table (under one meter: the meter changes no
    /// reply); it measures nothing, and every later measure starts from a fresh copy.
    fn model_check(&mut self) -> Result<(), String> {
        check_against_model(
            &mut self.canister,
            &self.subject.wasm,
            self.rows,
            &self.what,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(mean: u64) -> Spread {
        Spread {
            messages: 1,
            mean,
            p50: mean,
            p90: mean,
            p99: mean,
            max: mean,
        }
    }

    #[test]
    fn a_merge_keeps_the_sizes_a_run_did_not_measure() {
        let mut committed = SizeResults::default();
        let mut measured = SizeResults::default();
        let at = |results: &mut SizeResults, rows: u64, mean: u64| {
            results
                .calls
                .entry("current".into())
                .or_default()
                .entry("aged".into())
                .or_default()
                .entry("page_tree".into())
                .or_default()
                .entry(rows)
                .or_default()
                .insert("get_1".into(), spread(mean));
        };
        at(&mut committed, 10_000, 1);
        at(&mut committed, 10_000_000, 2);
        at(&mut measured, 10_000, 3);
        merge(&mut committed, measured);
        let sizes = &committed.calls["current"]["aged"]["page_tree"];
        assert_eq!(sizes[&10_000]["get_1"].mean, 3, "measured again");
        assert_eq!(sizes[&10_000_000]["get_1"].mean, 2, "kept");
    }

    #[test]
    fn the_seed_only_configurations_are_registered_and_not_traced() {
        // A traced configuration is measured at every size already; an unknown key would
        // be measured nowhere.
        for key in SEED_ONLY_CONFIGURATIONS {
            let (engine, _) = engine_registry::configurations()
                .find(|(_, configuration)| configuration.key == key)
                .unwrap_or_else(|| panic!("{key} is not a configuration of the registry"));
            assert_ne!(engine.traced().key, key, "{key} is measured at every size");
        }
    }

    fn sweep(from: u64, up_to: u64, only: &[&str]) -> Sweep {
        Sweep {
            up_to,
            from,
            only: only.iter().map(|key| key.to_string()).collect(),
            states: Vec::new(),
        }
    }

    fn keys_and_sizes(sweep: &Sweep) -> Result<Vec<(String, Vec<u64>)>, String> {
        planned(sweep).map(|planned| {
            planned
                .into_iter()
                .map(|planned| (planned.configuration.key.clone(), planned.sizes))
                .collect()
        })
    }

    #[test]
    fn the_seed_only_configurations_are_measured_at_the_seed_table_alone() {
        let small = keys_and_sizes(&sweep(0, 30_000, &[])).expect("a sweep");
        let traced: Vec<String> = engine_registry::engines()
            .iter()
            .map(|engine| engine.traced().key.clone())
            .collect();
        assert_eq!(
            small.iter().map(|(key, _)| key.clone()).collect::<Vec<_>>(),
            traced,
            "below {SEED_BATCH_ROWS} rows only the traced configurations"
        );
        assert!(small.iter().all(|(_, sizes)| sizes == &[10_000, 30_000]));
        let seed = keys_and_sizes(&sweep(0, 3_000_000, &["sqlite_persist", "page_tree"]))
            .expect("a sweep");
        assert_eq!(
            seed,
            vec![
                ("sqlite_persist".to_string(), vec![SEED_BATCH_ROWS]),
                (
                    "page_tree".to_string(),
                    vec![10_000, 30_000, 100_000, 300_000, 1_000_000, 3_000_000]
                ),
            ]
        );
    }

    #[test]
    fn naming_a_configuration_the_sweep_does_not_measure_is_an_error() {
        for only in ["sqlite_wal", "no_such_key"] {
            let error = planned(&sweep(0, 100_000_000, &[only])).expect_err(only);
            assert!(error.contains(only), "{error}");
        }
        // A seed-only configuration, on a sweep that stops below the seed's table.
        let error = planned(&sweep(0, 300_000, &["sqlite_off"])).expect_err("below 1M");
        assert!(error.contains("sqlite_off"), "{error}");
    }

    #[test]
    fn every_sweep_workload_fits_the_smallest_table() {
        // A workload draws at most its messages' rows of new or deleted ids from a table
        // that is copied afresh for it.
        for workload in workloads() {
            let plan = plan(workload);
            let drawn = ((plan.warmup + plan.measured) * workload.rows()) as u64;
            // Runs of consecutive ids are drawn at random: at most half the table, so that
            // free runs are left (a random packing of runs fills about three quarters).
            assert!(drawn * 2 <= SIZES[0], "{} draws {drawn}", workload.key());
        }
    }
}
