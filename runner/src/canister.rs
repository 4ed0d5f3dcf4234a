//! A canister: one live instance between messages, and the message semantics
//! of the IC (install, update, query, upgrade, inspect_message, rollback on
//! trap or when a limit is exceeded: heap, globals and stable memory; not the
//! Wasm tables, see [`crate::heap`]).

use crate::errors::{CallResult, ErrorCode, Reject, RejectCode};
use crate::heap::Snapshot;
use crate::heap_layout::HeapLayout;
use crate::instrument::{custom_section, InstrumentError, START_EXPORT};
use crate::ledger::Breakdown;
use crate::live::{shared_engine, Failure, Live, LoadError, Loaded};
use crate::memory_limits::MemoryLimits;
use crate::prices::{Metering, WASM64_HEAP_DIRTY_FACTOR};
use crate::stable::StableMemory;
use crate::state::{
    Closure, Env, HostState, Limits, MessageContext, MessageKind, Options, Reading, Response,
};
use crate::system_api;
use crate::trace::{Recorder, Trace, TraceEvent};
use candid::Principal;
use std::fmt;
use std::sync::Arc;
use wasmtime::{Engine, Linker};

/// Why installing or upgrading failed; the canister is unchanged.
#[derive(Debug)]
pub enum InstallError {
    /// The module could not be loaded (invalid, or an import the runtime lacks).
    Load(LoadError),
    /// `canister_start`, `canister_init`, `canister_pre_upgrade` or
    /// `canister_post_upgrade` trapped or exceeded a limit.
    Trapped(Box<CallResult>),
    /// [`crate::World`]: no canister has this id (textual form).
    UnknownCanister(String),
    /// [`crate::World::install`]: the canister (textual id) already has a module.
    AlreadyInstalled(String),
    /// [`crate::World::upgrade`]: the canister (textual id) has no module to upgrade.
    NotInstalled(String),
    /// [`crate::World`]: the sender is not a controller of the canister.
    NotController {
        /// The canister, textual id.
        canister: String,
        /// The sender, textual principal.
        sender: String,
    },
}

impl fmt::Display for InstallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InstallError::Load(e) => write!(f, "{e}"),
            InstallError::Trapped(result) => match &result.reply {
                Err(reject) => write!(f, "{reject}"),
                Ok(_) => write!(f, "installation failed"),
            },
            InstallError::UnknownCanister(id) => write!(f, "Canister {id} not found"),
            InstallError::AlreadyInstalled(id) => write!(
                f,
                "Canister {id} is already installed: it has a Wasm module (upgrade it instead)"
            ),
            InstallError::NotInstalled(id) => write!(
                f,
                "Canister {id} has no Wasm module to upgrade (install one first)"
            ),
            InstallError::NotController { canister, sender } => write!(
                f,
                "Only the controllers of the canister {canister} can control it; sender {sender} is not one of them"
            ),
        }
    }
}

impl std::error::Error for InstallError {}

impl From<LoadError> for InstallError {
    fn from(e: LoadError) -> Self {
        InstallError::Load(e)
    }
}

/// A message in progress: the Wasm state and stable memory it started from.
struct Begun {
    snapshot: Snapshot,
    kind: MessageKind,
}

/// What a message of a [`crate::World`] runs.
pub(crate) enum Entry {
    /// An exported function, e.g. `canister_update <name>`.
    Export(String),
    /// A callback `table[fun](env)`.
    Closure(Closure),
}

/// A finished message of a [`crate::World`].
pub(crate) struct Executed {
    /// The result as [`Canister::update`] builds it (`reply` holds the trap
    /// message and `error` the replica's code when the message failed).
    pub result: CallResult,
    /// Whether the message ran to completion (its changes were kept, if it persists).
    pub ok: bool,
    /// Its context at the end: response and outgoing calls (valid when `ok`).
    pub msg: MessageContext,
}

/// A canister with its live instance, heap and stable memory.
pub struct Canister {
    engine: Engine,
    linker: Linker<HostState>,
    live: Live,
    limits: Limits,
    /// How far the memories may grow in later messages.
    memory_limits: MemoryLimits,
    /// Whether messages record a [`Trace`] (the module must have trace hooks).
    record_traces: bool,
    /// Whether messages record their `performance_counter(0)` readings.
    record_readings: bool,
    /// The trace of the last message, when recorded.
    last_trace: Option<Trace>,
    /// The `performance_counter(0)` readings of the last message, when recorded.
    last_readings: Vec<Reading>,
}

/// A copy of a canister's whole state (heap, globals, stable memory, environment), taken
/// between messages with [`Canister::snapshot`] and put back with [`Canister::restore`]:
/// icrun's counterpart of the IC's canister snapshots.
pub struct CanisterSnapshot {
    loaded: Arc<Loaded>,
    heap: Vec<u8>,
    globals: Snapshot,
    stable: StableMemory,
    env: Env,
}

impl Canister {
    /// Installs `wasm` with the IC's limits and [`Metering::PocketIc13`]: instruments it,
    /// instantiates it, runs its start function and `canister_init` with `init_arg` (one
    /// install message, docs/metering.md §7: 300 billion instructions). `caller` is the
    /// installing principal; it becomes the controller when `env.controllers` is empty.
    pub fn install(
        wasm: &[u8],
        init_arg: &[u8],
        caller: Principal,
        env: Env,
    ) -> Result<(Canister, CallResult), InstallError> {
        Self::install_with(wasm, init_arg, caller, env, Options::default())
    }

    /// [`Canister::install`] with other limits, another metering profile or trace hooks.
    pub fn install_with(
        wasm: &[u8],
        init_arg: &[u8],
        caller: Principal,
        env: Env,
        options: Options,
    ) -> Result<(Canister, CallResult), InstallError> {
        let engine = shared_engine()?;
        let mut linker = Linker::new(&engine);
        system_api::register(&mut linker)
            .map_err(|e| InstallError::Load(LoadError::Wasm(e.to_string())))?;
        let loaded = Loaded::cached(&engine, &linker, wasm, options.tracing)?;
        let mut state = HostState {
            env,
            metering: options.metering,
            ..HostState::default()
        };
        // The installer controls the canister unless controllers were given.
        if state.env.controllers.is_empty() {
            state.env.controllers.push(caller);
        }
        state.env.canister_version += 1;
        let live = Live::new(&engine, &linker, loaded, state).map_err(|failed| failed.0)?;
        if options.metering == Metering::Current && !live.tracks_pages() {
            return Err(InstallError::Load(LoadError::Wasm(
                "the current metering profile needs heap page tracking, which needs Unix signals"
                    .into(),
            )));
        }
        let mut canister = Canister {
            engine,
            linker,
            live,
            limits: options.limits,
            memory_limits: MemoryLimits {
                stable_pages: options.stable_memory_limit,
                heap_pages: options.heap_limit,
            },
            record_traces: options.tracing,
            record_readings: false,
            last_trace: None,
            last_readings: Vec::new(),
        };
        let exports = canister.install_exports("canister_init");
        let (result, _) = canister.run(
            MessageKind::Init,
            "canister_init",
            &exports,
            init_arg,
            caller.as_slice(),
        );
        match result.reply {
            Ok(_) => Ok((canister, result)),
            Err(_) => Err(InstallError::Trapped(Box::new(result))),
        }
    }

    /// The exports an install or upgrade runs: the start function, then `main`, when present.
    fn install_exports(&self, main: &str) -> Vec<String> {
        let loaded = &self.live.loaded;
        [START_EXPORT, main]
            .into_iter()
            .filter(|name| loaded.exports_function(name))
            .map(str::to_string)
            .collect()
    }

    /// Calls the update method `method` (export `canister_update <method>`),
    /// after `canister_inspect_message` when the module exports it.
    pub fn update(&mut self, method: &str, arg: &[u8], caller: Principal) -> CallResult {
        let export = format!("canister_update {method}");
        if !self.live.loaded.exports_function(&export) {
            return CallResult::failed(
                ErrorCode::CanisterMethodNotFound,
                format!("Canister has no update method '{method}'."),
            );
        }
        if let Some(rejected) = self.inspect(method, arg, caller.as_slice()) {
            return rejected;
        }
        let kind = MessageKind::Update;
        self.run(kind, method, &[export], arg, caller.as_slice()).0
    }

    /// Runs `canister_inspect_message` if exported; returns the refusal if the message is
    /// not accepted, with the replica's error code (the trap's, or IC0406). Its changes are
    /// always discarded.
    pub(crate) fn inspect(
        &mut self,
        method: &str,
        arg: &[u8],
        caller: &[u8],
    ) -> Option<CallResult> {
        let export = "canister_inspect_message".to_string();
        if !self.live.loaded.exports_function(&export) {
            return None;
        }
        let (result, accepted) =
            self.run(MessageKind::InspectMessage, method, &[export], arg, caller);
        match result.error {
            Some(_) => Some(result),
            None if accepted => None,
            None => Some(CallResult {
                reply: Err(Reject {
                    code: RejectCode::CanisterReject,
                    message: "Canister rejected the message".into(),
                }),
                error: Some(ErrorCode::CanisterRejectedMessage),
                ..result
            }),
        }
    }

    /// Calls the query method `method` (export `canister_query <method>` or
    /// `canister_composite_query <method>`). Its changes are always discarded.
    pub fn query(&mut self, method: &str, arg: &[u8], caller: Principal) -> CallResult {
        self.query_from(method, arg, caller.as_slice(), false)
    }

    /// Calls the query method `method` in replicated mode, as the IC runs a query method an
    /// update call (or another canister) targets: charged like an update (cycles), its
    /// changes discarded like a query's.
    pub fn replicated_query(&mut self, method: &str, arg: &[u8], caller: Principal) -> CallResult {
        self.query_from(method, arg, caller.as_slice(), true)
    }

    /// [`Canister::query`] from the principal bytes `caller`, replicated or not.
    pub(crate) fn query_from(
        &mut self,
        method: &str,
        arg: &[u8],
        caller: &[u8],
        replicated: bool,
    ) -> CallResult {
        let export = [
            format!("canister_query {method}"),
            format!("canister_composite_query {method}"),
        ]
        .into_iter()
        .find(|name| self.live.loaded.exports_function(name));
        match export {
            Some(export) => {
                let kind = MessageKind::Query;
                let limit = self.limits.of(kind);
                let mut context = MessageContext::new(kind, method, arg, caller, limit);
                context.replicated = replicated;
                let snapshot = self.begin_with(context);
                let outcome = self.live.call(&export);
                let (result, _) = self.conclude(kind, outcome, &snapshot);
                self.keep_or_undo(kind, result.error.is_none(), &snapshot);
                result
            }
            None => CallResult::failed(
                ErrorCode::CanisterMethodNotFound,
                format!("Canister has no query method '{method}'."),
            ),
        }
    }

    /// Upgrades to `wasm`: `canister_pre_upgrade` on the current instance, then a
    /// fresh instance (new heap) of the new module keeping stable memory, its
    /// start function and `canister_post_upgrade` with `arg`. One install message
    /// (docs/metering.md §7: 300 billion instructions). On failure nothing changes.
    pub fn upgrade(
        &mut self,
        wasm: &[u8],
        arg: &[u8],
        caller: Principal,
    ) -> Result<CallResult, InstallError> {
        let tracing = self.live.loaded.info.tracing;
        let loaded = Loaded::cached(&self.engine, &self.linker, wasm, tracing)?;
        let kind = MessageKind::PreUpgrade;
        let begun = self.begin(kind, "canister_pre_upgrade", arg, caller.as_slice());
        let pre = self.install_exports_of("canister_pre_upgrade");
        if let Err(failure) = self.call_all(&pre) {
            return Err(InstallError::Trapped(Box::new(self.fail(begun, failure))));
        }
        if let Err(failure) = self.apply_heap_page_charges() {
            return Err(InstallError::Trapped(Box::new(self.fail(begun, failure))));
        }
        let remaining = self.live.counter();
        let state = self.live.store.data_mut();
        let mut env = state.env.clone();
        env.canister_version += 1;
        let next_state = HostState {
            env,
            metering: state.metering,
            ledger: std::mem::take(&mut state.ledger),
            stable: std::mem::take(&mut state.stable),
            msg: MessageContext {
                kind: MessageKind::PostUpgrade,
                ..state.msg.clone()
            },
            // post_upgrade runs on the new instance's heap: its pages are new pages.
            trace: state.trace.take().map(|mut recorder| {
                recorder.new_heap();
                recorder
            }),
            readings: state.readings.take(),
            ..HostState::default()
        };
        let mut next = match Live::new(&self.engine, &self.linker, loaded, next_state) {
            Ok(next) => next,
            Err(failed) => {
                let (e, state) = *failed;
                self.live.store.data_mut().stable = state.stable;
                self.fail(
                    begun,
                    Failure::Trap(ErrorCode::CanisterInvalidWasm, String::new()),
                );
                return Err(InstallError::Load(e));
            }
        };
        std::mem::swap(&mut self.live, &mut next);
        let mut old = next;
        // The old instance's limits end with pre_upgrade (its rollback must not be refused);
        // the new one's apply from post_upgrade on, not to its instantiation.
        old.store.data_mut().memory_limits = MemoryLimits::default();
        self.live.store.data_mut().memory_limits = self.memory_limits;
        self.live.set_counter(remaining);
        let fresh = self.live.begin(MessageKind::PostUpgrade);
        let post = self.install_exports("canister_post_upgrade");
        let outcome = self.call_all(&post);
        let (result, _) = self.conclude(kind, outcome, &fresh);
        if result.error.is_none() {
            self.live.store.data_mut().stable.commit();
            self.live.commit(&fresh);
            return Ok(result);
        }
        // Put the old instance back, with the stable memory of before the upgrade.
        let stable = std::mem::take(&mut self.live.store.data_mut().stable);
        self.live = old;
        self.live.store.data_mut().stable = stable;
        self.live.store.data_mut().stable.rollback();
        self.rollback_heap(&begun.snapshot);
        Err(InstallError::Trapped(Box::new(result)))
    }

    fn install_exports_of(&self, name: &str) -> Vec<String> {
        if self.live.loaded.exports_function(name) {
            vec![name.to_string()]
        } else {
            Vec::new()
        }
    }

    /// Runs one message: `exports` in order under one instruction budget.
    /// Returns the result and whether `accept_message` was called.
    fn run(
        &mut self,
        kind: MessageKind,
        method: &str,
        exports: &[String],
        arg: &[u8],
        caller: &[u8],
    ) -> (CallResult, bool) {
        let begun = self.begin(kind, method, arg, caller);
        let outcome = self.call_all(exports);
        let (result, msg) = self.conclude(kind, outcome, &begun.snapshot);
        self.keep_or_undo(kind, result.error.is_none(), &begun.snapshot);
        (result, msg.accepted)
    }

    /// Keeps the changes of a message that completed and persists, else undoes them.
    fn keep_or_undo(&mut self, kind: MessageKind, ok: bool, snapshot: &Snapshot) {
        if ok && kind.persists() {
            self.live.store.data_mut().stable.commit();
            self.live.commit(snapshot);
        } else {
            self.live.store.data_mut().stable.rollback();
            self.rollback_heap(snapshot);
        }
    }

    /// Runs one message of a [`crate::World`] with the prepared `context`
    /// (kind, argument, caller, limit, callback data): calls `entry`, then keeps
    /// or undoes its changes like [`Canister::update`] does.
    pub(crate) fn execute(&mut self, context: MessageContext, entry: &Entry) -> Executed {
        let kind = context.kind;
        let snapshot = self.begin_with(context);
        let outcome = match entry {
            Entry::Export(name) => self.live.call(name),
            Entry::Closure(closure) => self.live.call_closure(*closure),
        };
        let (result, msg) = self.conclude(kind, outcome, &snapshot);
        let ok = result.error.is_none();
        self.keep_or_undo(kind, ok, &snapshot);
        Executed { result, ok, msg }
    }

    /// Whether the module exports a function named `name`.
    pub(crate) fn exports_function(&self, name: &str) -> bool {
        self.live.loaded.exports_function(name)
    }

    /// Sets up the message context, snapshots the state and sets the counter.
    fn begin(&mut self, kind: MessageKind, method: &str, arg: &[u8], caller: &[u8]) -> Begun {
        let context = MessageContext::new(kind, method, arg, caller, self.limits.of(kind));
        let snapshot = self.begin_with(context);
        Begun { snapshot, kind }
    }

    /// Starts the message of `context`: snapshots the state, begins the stable
    /// memory's change set, the ledger, the trace and the page tracking, and sets the
    /// counter to the message's limit.
    fn begin_with(&mut self, context: MessageContext) -> Snapshot {
        let kind = context.kind;
        let snapshot = self.live.begin(kind);
        let limit = context.limit;
        let (record_traces, record_readings) = (self.record_traces, self.record_readings);
        let state = self.live.store.data_mut();
        state.stable.begin();
        state.memory_limits = self.memory_limits;
        state.msg = context;
        state.ledger = Default::default();
        let imported = self.live.loaded.names.imported();
        state.trace = record_traces.then(|| Recorder::new(imported));
        state.readings = record_readings.then(Vec::new);
        self.live.set_counter(limit as i64);
        snapshot
    }

    fn call_all(&mut self, exports: &[String]) -> Result<(), Failure> {
        for export in exports {
            self.live.call(export)?;
        }
        Ok(())
    }

    /// Applies the page charges the heap tracker took since the last system call
    /// ([`Metering::Current`]), as the next system call would.
    fn apply_heap_page_charges(&mut self) -> Result<(), Failure> {
        system_api::apply_heap_page_charges(&mut self.live.store).map_err(crate::live::failure_of)
    }

    /// Turns the outcome of a message into its result, adding the charges the replica
    /// makes after the message (docs/metering.md §6). Returns the result and the message's
    /// final context (without the debug output, moved into the result). Keeps the
    /// message's trace and readings.
    fn conclude(
        &mut self,
        kind: MessageKind,
        outcome: Result<(), Failure>,
        before: &Snapshot,
    ) -> (CallResult, MessageContext) {
        let mut outcome = outcome;
        if outcome.is_ok() {
            outcome = self.apply_heap_page_charges();
        }
        let limit = self.live.store.data().msg.limit;
        let counter = self.live.counter();
        let mut instructions = (limit as i64).saturating_sub(counter).max(0) as u64;
        if outcome.is_ok() && counter < 0 {
            outcome = Err(Failure::OutOfInstructions);
        }
        if let Some(recorder) = self.live.store.data_mut().trace.as_mut() {
            recorder.events.push(TraceEvent::End { at: instructions });
        }
        let pages = self.live.store.data().metering.pages();
        if outcome.is_ok() && kind.persists() && pages.heap_dirty_4k_after > 0 {
            // §6 (PocketIC 13): per 4 KiB heap page dirtied, after the message (×4 on wasm64).
            let factor = if self.live.loaded.info.memory64 {
                WASM64_HEAP_DIRTY_FACTOR
            } else {
                1
            };
            let dirty = self.live.dirty_pages(before);
            let charge = pages.heap_dirty_4k_after * factor * dirty;
            self.live
                .store
                .data_mut()
                .ledger
                .memory
                .heap_pages_dirtied
                .add(dirty, charge);
            instructions = instructions.saturating_add(charge);
            if instructions > limit {
                outcome = Err(Failure::OutOfInstructions);
            }
        }
        self.live.finish(before);
        let state = self.live.store.data_mut();
        state.memory_limits = MemoryLimits::default();
        let breakdown = state.ledger.breakdown(instructions);
        let mut msg = std::mem::take(&mut state.msg);
        self.last_readings = state.readings.take().unwrap_or_default();
        self.last_trace = state
            .trace
            .take()
            .map(|recorder| recorder.finish(Arc::clone(&self.live.loaded.names)));
        let (reply, error) = match outcome {
            Err(Failure::OutOfInstructions) => (
                Err(Reject {
                    code: RejectCode::CanisterError,
                    message: format!(
                        "Canister exceeded the limit of {limit} instructions for single message execution."
                    ),
                }),
                Some(ErrorCode::CanisterInstructionLimitExceeded),
            ),
            Err(Failure::Trap(code, message)) => (
                Err(Reject {
                    code: RejectCode::CanisterError,
                    message,
                }),
                Some(code),
            ),
            Ok(()) => (reply_of(kind, msg.response.clone()), None),
        };
        let result = CallResult {
            reply,
            error,
            instructions,
            breakdown,
            debug_output: std::mem::take(&mut msg.debug_output),
        };
        (result, msg)
    }

    /// Undoes a failed message of `begun` and builds its result.
    fn fail(&mut self, begun: Begun, failure: Failure) -> CallResult {
        let (result, _) = self.conclude(begun.kind, Err(failure), &begun.snapshot);
        self.live.store.data_mut().stable.rollback();
        self.rollback_heap(&begun.snapshot);
        result
    }

    /// Restores the heap and globals; if the memory grew, onto a fresh instance.
    fn rollback_heap(&mut self, snapshot: &Snapshot) {
        // Growing a fresh instance back to the snapshot's size is the runtime's, not the
        // canister's: no memory limit applies.
        self.live.store.data_mut().memory_limits = MemoryLimits::default();
        if self.live.restore(snapshot).is_ok() {
            return;
        }
        let heap = self.live.heap_prefix(snapshot.heap_len());
        let mut state = self.live.take_state();
        let handles = (
            state.counter.take(),
            state.memory.take(),
            state.tracker.take(),
        );
        let loaded = Arc::clone(&self.live.loaded);
        match Live::new(&self.engine, &self.linker, loaded, state) {
            Ok(mut fresh) => {
                // A fresh instance is never larger than the snapshot it came from.
                let _ = fresh.adopt(&heap, snapshot);
                self.live = fresh;
            }
            Err(failed) => {
                // The module instantiated before, so this should not fail; if it
                // does, keep the grown instance with its restored state.
                let (_, mut state) = *failed;
                (state.counter, state.memory, state.tracker) = handles;
                *self.live.store.data_mut() = state;
            }
        }
    }

    /// Copies the canister's whole state (heap, globals, stable memory, environment), to put
    /// it back later with [`Canister::restore`].
    pub fn snapshot(&mut self) -> CanisterSnapshot {
        let globals = self.live.globals_snapshot();
        let heap = self.live.heap_prefix(self.live.heap_bytes());
        let state = self.live.store.data();
        CanisterSnapshot {
            loaded: Arc::clone(&self.live.loaded),
            heap,
            globals,
            stable: state.stable.clone(),
            env: state.env.clone(),
        }
    }

    /// Puts back the state `snapshot` holds, on a fresh instance of this canister's module,
    /// which must be the snapshot's module (with or without trace hooks: a state taken
    /// without hooks can be traced from then on).
    pub fn restore(&mut self, snapshot: &CanisterSnapshot) -> Result<(), InstallError> {
        if snapshot.loaded.original != self.live.loaded.original {
            return Err(InstallError::Load(LoadError::Wasm(
                "the snapshot was taken of another module".into(),
            )));
        }
        let state = HostState {
            env: snapshot.env.clone(),
            metering: self.live.store.data().metering,
            stable: snapshot.stable.clone(),
            ..HostState::default()
        };
        let loaded = Arc::clone(&self.live.loaded);
        let mut fresh =
            Live::new(&self.engine, &self.linker, loaded, state).map_err(|failed| failed.0)?;
        fresh
            .adopt(&snapshot.heap, &snapshot.globals)
            .map_err(|_| {
                InstallError::Load(LoadError::Wasm(
                    "the snapshot's heap does not fit a fresh instance".into(),
                ))
            })?;
        self.live = fresh;
        Ok(())
    }

    /// The canister's query methods (`canister_query <name>` and
    /// `canister_composite_query <name>` exports), e.g. to find canbench's
    /// `__canbench__*` benches.
    pub fn query_methods(&self) -> Vec<String> {
        let loaded = &self.live.loaded;
        let mut names = loaded.exported_functions("canister_query ");
        names.extend(loaded.exported_functions("canister_composite_query "));
        names
    }

    /// The canister's update methods (`canister_update <name>` exports).
    pub fn update_methods(&self) -> Vec<String> {
        self.live.loaded.exported_functions("canister_update ")
    }

    /// Changes the instruction limits of later messages.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// The instruction limits in force.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Changes how large stable memory may grow in later messages, in 64 KiB pages (`None`:
    /// the IC's maximum); see [`Options::stable_memory_limit`]. A limit below the current size
    /// keeps the memory and its content as they are; every grow then returns −1.
    pub fn set_stable_memory_limit(&mut self, pages: Option<u64>) {
        self.memory_limits.stable_pages = pages;
    }

    /// The stable memory limit in force, in 64 KiB pages (`None`: the IC's maximum).
    pub fn stable_memory_limit(&self) -> Option<u64> {
        self.memory_limits.stable_pages
    }

    /// Changes how large the heap may grow in later messages, in 64 KiB Wasm pages (`None`:
    /// the IC's maximum); see [`Options::heap_limit`]. A limit below the current size keeps
    /// the heap as it is; every `memory.grow` then returns −1.
    pub fn set_heap_limit(&mut self, pages: Option<u64>) {
        self.memory_limits.heap_pages = pages;
    }

    /// The heap limit in force, in 64 KiB Wasm pages (`None`: the IC's maximum).
    pub fn heap_limit(&self) -> Option<u64> {
        self.memory_limits.heap_pages
    }

    /// The metering profile the canister runs under.
    pub fn metering(&self) -> Metering {
        self.live.store.data().metering
    }

    /// Whether later messages record a [`Trace`] (see [`Canister::last_trace`]). Only a
    /// canister installed with [`Options::tracing`] has the hooks; without them this is a
    /// no-op and no trace is recorded.
    pub fn record_traces(&mut self, on: bool) {
        self.record_traces = on && self.live.loaded.info.tracing;
    }

    /// The trace of the last message, if it recorded one.
    pub fn last_trace(&self) -> Option<&Trace> {
        self.last_trace.as_ref()
    }

    /// Whether later messages record their `performance_counter(0)` readings, with the
    /// charges made up to each (see [`Canister::last_window_breakdown`]).
    pub fn record_readings(&mut self, on: bool) {
        self.record_readings = on;
    }

    /// The breakdown of canbench's bench window in the last message: from its first
    /// `performance_counter(0)` reading to the reading `instructions` later. `None` without
    /// recorded readings or without such a pair.
    pub fn last_window_breakdown(&self, instructions: u64) -> Option<Breakdown> {
        let start = self.last_readings.first()?;
        let end = self
            .last_readings
            .iter()
            .find(|reading| reading.at == start.at + instructions)?;
        Some(end.ledger.since(&start.ledger, instructions))
    }

    /// Sets what `ic0.time` returns, in nanoseconds since the epoch.
    pub fn set_time(&mut self, nanos: u64) {
        self.live.store.data_mut().env.time_nanos = nanos;
    }

    /// The canister's environment (identity, controllers, time, balance).
    pub fn env(&self) -> &Env {
        &self.live.store.data().env
    }

    /// Mutable access to the environment.
    pub fn env_mut(&mut self) -> &mut Env {
        &mut self.live.store.data_mut().env
    }

    /// The stable memory.
    pub fn stable_memory(&self) -> &StableMemory {
        &self.live.store.data().stable
    }

    /// Mutable access to the stable memory (e.g. to load canbench's
    /// `stable_memory.file` after install with [`StableMemory::load_file`]).
    pub fn stable_memory_mut(&mut self) -> &mut StableMemory {
        &mut self.live.store.data_mut().stable
    }

    /// Current heap (memory 0) size in bytes.
    pub fn heap_bytes(&self) -> usize {
        self.live.heap_bytes()
    }

    /// The layout of the installed module's heap: its stack, static data and where the heap
    /// proper starts, read from the module (see [`HeapLayout`] for how, and its limits). With
    /// it, the heap pages of [`Trace::page_touches`] can be told apart
    /// ([`HeapLayout::regions_of_page`]).
    pub fn heap_layout(&self) -> HeapLayout {
        HeapLayout::of(&self.live.loaded.original)
    }

    /// The custom section `name` of the installed module, e.g.
    /// `icp:public candid:service`.
    pub fn custom_section(&self, name: &str) -> Result<Option<Vec<u8>>, InstrumentError> {
        custom_section(&self.live.loaded.original, name)
    }
}

/// The reply of a message that ran to completion.
fn reply_of(kind: MessageKind, response: Option<Response>) -> Result<Vec<u8>, Reject> {
    match response {
        Some(Response::Reply(bytes)) => Ok(bytes),
        Some(Response::Reject(message)) => Err(Reject {
            code: RejectCode::CanisterReject,
            message,
        }),
        None if kind.can_reply() => Err(Reject {
            code: RejectCode::CanisterError,
            message: "Canister did not reply to the call".into(),
        }),
        None => Ok(Vec::new()),
    }
}
