//! Runs every configuration in every table state under every metering profile, and writes
//! the results.
//!
//! For each configuration of each registered store canister and each [`TableState`], one base
//! state is built once: the canister installed with that configuration and filled through
//! `insert_users` with the 1,000,000 users in the state's order. Its heap is kept with it, so
//! the measured canister starts as a canister that has lived through those inserts (its
//! caches warm), not as one just upgraded. Each profile then measures every workload on a
//! fresh copy of that state (with trace hooks, which cost nothing, docs/metering.md §1):
//! [`WARMUP_MESSAGES`] unmeasured messages, then the workload's measured ones.

use crate::engines::{self, EngineConfig};
use crate::fees::{calls_per_round, update_call_cycles};
use crate::reply::{checked, decoded, owner};
use crate::results::{Call, Charges, FunctionRow, Results, TraceSummary};
use crate::stats::Spread;
use crate::storage::Storage;
use crate::tables::{fill, TableState, ROWS};
use crate::workloads::{argument, Ids, Mode, Workload, WARMUP_MESSAGES};
use icrun::{CallResult, Canister, CanisterSnapshot, Env, Folded, Metering, Options, Trace};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;
use userstore::StoreError;

/// Functions listed per trace summary.
const TOP_FUNCTIONS: usize = 12;

/// The profiles measured, the IC's current meter first.
pub const PROFILES: [Metering; 2] = [Metering::Current, Metering::PocketIc13];

/// What to measure.
#[derive(Debug, Clone)]
pub struct Selection {
    /// Configuration keys to measure; every one when empty.
    pub configurations: Vec<String>,
    /// Table states to measure.
    pub states: Vec<TableState>,
    /// Profiles to measure.
    pub profiles: Vec<Metering>,
    /// Whether to trace the headline calls and draw their flame graphs.
    pub traces: bool,
}

impl Selection {
    /// Everything.
    pub fn everything() -> Self {
        Selection {
            configurations: Vec::new(),
            states: TableState::ALL.to_vec(),
            profiles: PROFILES.to_vec(),
            traces: true,
        }
    }

    fn includes(&self, key: &str) -> bool {
        self.configurations.is_empty() || self.configurations.iter().any(|k| k == key)
    }
}

/// Measures `selection` and returns the results, writing the headline flame graphs into
/// `flamegraphs` (named `<state>_<configuration>_<workload>.svg`).
pub fn measure(
    canisters: &Path,
    flamegraphs: &Path,
    selection: &Selection,
) -> Result<Results, String> {
    let started = Instant::now();
    std::fs::create_dir_all(flamegraphs)
        .map_err(|error| format!("creating {}: {error}", flamegraphs.display()))?;
    let mut out = Results::default();
    for engine in engine_registry::engines() {
        let path = canisters.join(format!("{}.wasm", engine.canister));
        let configurations: Vec<EngineConfig> = engines::configurations(engine)?
            .into_iter()
            .filter(|config| selection.includes(&config.key))
            .collect();
        if configurations.is_empty() {
            continue;
        }
        let wasm = std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        for config in &configurations {
            for state in &selection.states {
                let (base, storage) = filled(&wasm, config, *state)?;
                eprintln!(
                    "{} {}: {ROWS} rows ({:.0?} so far)",
                    config.key,
                    state.name(),
                    started.elapsed()
                );
                out.storage
                    .entry(state.name().to_string())
                    .or_default()
                    .insert(config.key.clone(), storage);
                for metering in &selection.profiles {
                    let traced = selection.traces
                        && config.traced
                        && *metering == Metering::Current
                        && *state == TableState::Aged;
                    let run = Run {
                        wasm: &wasm,
                        base: &base,
                        config,
                        state: *state,
                        metering: *metering,
                        traced,
                    };
                    let calls = run.measure(&mut out, flamegraphs)?;
                    out.calls
                        .entry(metering.name().to_string())
                        .or_default()
                        .entry(state.name().to_string())
                        .or_default()
                        .insert(config.key.clone(), calls);
                    eprintln!(
                        "  {metering} {} {} ({:.0?} so far)",
                        state.name(),
                        config.key,
                        started.elapsed()
                    );
                }
            }
        }
    }
    Ok(out)
}

/// The Candid argument `(null)`: an install or upgrade with every setting as it is.
pub(crate) fn no_argument() -> Vec<u8> {
    candid::encode_one(None::<()>).expect("null encodes")
}

/// The base state of `config` in `state`: installed with the configuration and filled, with
/// the storage it takes.
fn filled(
    wasm: &[u8],
    config: &EngineConfig,
    state: TableState,
) -> Result<(CanisterSnapshot, Storage), String> {
    let (mut canister, _) = Canister::install(wasm, &config.init, owner(), Env::default())
        .map_err(|error| format!("installing {}: {error}", config.key))?;
    fill(&mut canister, state, ROWS)?;
    let storage = Storage::of(canister.stable_memory(), ROWS);
    Ok((canister.snapshot(), storage))
}

/// One configuration in one state under one profile.
struct Run<'a> {
    wasm: &'a [u8],
    base: &'a CanisterSnapshot,
    config: &'a EngineConfig,
    state: TableState,
    metering: Metering,
    /// Whether its headline calls are traced.
    traced: bool,
}

impl Run<'_> {
    /// Every workload, on a fresh copy of the base state.
    fn measure(
        &self,
        out: &mut Results,
        flamegraphs: &Path,
    ) -> Result<BTreeMap<String, Call>, String> {
        let options = Options {
            metering: self.metering,
            tracing: true,
            ..Options::default()
        };
        let (mut canister, _) = Canister::install_with(
            self.wasm,
            &self.config.init,
            owner(),
            Env::default(),
            options,
        )
        .map_err(|error| format!("installing {}: {error}", self.config.key))?;
        canister
            .restore(self.base)
            .map_err(|error| format!("restoring {}: {error}", self.config.key))?;
        let mut ids = Ids::new(ROWS);
        let mut calls = BTreeMap::new();
        for workload in Workload::all() {
            let trace_it = self.traced && workload.traced();
            let (call, traced) = measure_workload(
                &mut canister,
                workload,
                &mut ids,
                Plan::of(workload),
                trace_it,
            )?;
            if let Some((result, trace)) = traced {
                let name = format!(
                    "{}_{}_{}",
                    self.state.name(),
                    self.config.key,
                    workload.key()
                );
                let mut summary = summarize(
                    &name,
                    workload.method(),
                    &result,
                    &trace,
                    self.metering,
                    flamegraphs,
                )?;
                summary.page_map = crate::page_map::rows(&canister, trace.page_touches());
                out.traces.insert(name, summary);
            }
            calls.insert(workload.key(), call);
        }
        Ok(calls)
    }
}

/// How many messages of a workload run: unmeasured first, then measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Messages run first, unmeasured.
    pub warmup: usize,
    /// Messages measured.
    pub measured: usize,
}

impl Plan {
    /// The suite's plan of `workload`: [`WARMUP_MESSAGES`], then [`Workload::messages`].
    pub fn of(workload: Workload) -> Plan {
        Plan {
            warmup: WARMUP_MESSAGES,
            measured: workload.messages(),
        }
    }
}

/// Runs `workload`'s warm-up and measured messages as `plan` says; returns the call's figures
/// and, if `trace_it`, the median message's result and trace.
pub(crate) fn measure_workload(
    canister: &mut Canister,
    workload: Workload,
    ids: &mut Ids,
    plan: Plan,
    trace_it: bool,
) -> Result<(Call, Option<(CallResult, Trace)>), String> {
    let mut measured = Vec::new();
    for message in 0..plan.warmup + plan.measured {
        let arg = argument(workload, ids)?;
        let is_measured = message >= plan.warmup;
        canister.record_traces(trace_it && is_measured);
        let result = execute(canister, workload, &arg);
        check_reply(&result, workload)?;
        if is_measured {
            let trace = canister.last_trace().cloned();
            measured.push((result, trace, arg.len() as u64));
        }
    }
    canister.record_traces(false);
    let samples: Vec<u64> = measured
        .iter()
        .map(|(result, _, _)| result.instructions)
        .collect();
    let rows = workload.rows() as u64;
    let spread = Spread::of(&samples, rows).ok_or("no message measured")?;
    let median = Spread::median_index(&samples).ok_or("no message measured")?;
    let (result, trace, argument_bytes) = measured.swap_remove(median);
    let mean_message = Spread::of(&samples, 1).map_or(0, |spread| spread.mean);
    let (cycles, per_round) = match workload.mode() {
        Mode::Query => (0, 0),
        Mode::Update | Mode::Replicated => (
            update_call_cycles(workload.method(), argument_bytes, mean_message),
            calls_per_round(mean_message),
        ),
    };
    let call = Call {
        mode: workload.mode().name(),
        method: workload.method(),
        rows,
        instructions: spread,
        cycles,
        calls_per_round: per_round,
        argument_bytes,
        breakdown: Charges::from(&result.breakdown),
    };
    Ok((call, trace.map(|trace| (result, trace))))
}

/// Executes one message of `workload` with `arg`.
fn execute(canister: &mut Canister, workload: Workload, arg: &[u8]) -> CallResult {
    let method = workload.method();
    match workload.mode() {
        Mode::Update => canister.update(method, arg, owner()),
        Mode::Query => canister.query(method, arg, owner()),
        Mode::Replicated => canister.replicated_query(method, arg, owner()),
    }
}

/// Checks that the message did its work: it replied, and with `Ok` (a missing id must be
/// `NotFound`, a page must be full).
fn check_reply(result: &CallResult, workload: Workload) -> Result<(), String> {
    let what = workload.key();
    match workload {
        Workload::InsertBetween | Workload::InsertAbove | Workload::Reinsert => {
            checked::<()>(result, &what)
        }
        Workload::Get(_)
        | Workload::GetByName
        | Workload::Update
        | Workload::UpdateSame
        | Workload::Delete => checked::<userstore::User>(result, &what).map(|_| ()),
        Workload::GetMissing => match decoded::<userstore::User>(result, &what)? {
            Err(StoreError::NotFound { .. }) => Ok(()),
            other => Err(format!("{what}: expected NotFound, got {other:?}")),
        },
        Workload::Page | Workload::ShortPage => {
            let page = checked::<Vec<userstore::User>>(result, &what)?;
            let rows = if workload == Workload::Page {
                crate::workloads::PAGE_ROWS
            } else {
                crate::workloads::SHORT_PAGE_ROWS
            };
            if page.len() as u64 == rows {
                Ok(())
            } else {
                Err(format!("{what}: a page of {} users", page.len()))
            }
        }
        _ => checked::<u64>(result, &what).map(|_| ()),
    }
}

/// The trace of a headline call (or an upgrade) whose root frame is `root`: folded, checked
/// against the message's instructions, drawn into `flamegraphs` as `<name>.svg`, and
/// summarized.
pub(crate) fn summarize(
    name: &str,
    root: &str,
    result: &CallResult,
    trace: &Trace,
    metering: Metering,
    flamegraphs: &Path,
) -> Result<TraceSummary, String> {
    let dirtied = result.breakdown.heap_pages_dirtied;
    let folded: Folded = trace
        .fold_with_heap_charge(root, dirtied.pages, dirtied.instructions)
        .map_err(|error| format!("{name}: {error}"))?;
    if folded.total() != result.instructions {
        return Err(format!(
            "{name}: the trace adds up to {}, the message used {}",
            folded.total(),
            result.instructions
        ));
    }
    let file = format!("{name}.svg");
    icrun::flamegraph::write(&folded, name, &flamegraphs.join(&file))?;
    let functions = folded.functions();
    let top_inclusive = functions
        .iter()
        .filter(|cost| cost.name != root)
        .take(TOP_FUNCTIONS)
        .map(FunctionRow::from)
        .collect();
    let mut by_self: Vec<_> = functions.iter().collect();
    by_self.sort_by(|a, b| {
        b.self_instructions
            .cmp(&a.self_instructions)
            .then_with(|| a.name.cmp(&b.name))
    });
    let top_self = by_self
        .into_iter()
        .take(TOP_FUNCTIONS)
        .map(FunctionRow::from)
        .collect();
    Ok(TraceSummary {
        profile: metering.name().to_string(),
        instructions: result.instructions,
        flamegraph: file,
        top_inclusive,
        top_self,
        page_map: Vec::new(),
    })
}
