//! A canister: one live instance between messages, and the message semantics
//! of the IC (install, update, query, upgrade, inspect_message, rollback on
//! trap or when a limit is exceeded: heap, globals and stable memory; not the
//! Wasm tables, see [`crate::heap`]).

use crate::errors::ErrorCode;
use crate::heap::Snapshot;
use crate::instrument::{custom_section, InstrumentError, START_EXPORT};
use crate::live::{shared_engine, Failure, Live, LoadError, Loaded};
use crate::stable::StableMemory;
use crate::state::{Closure, Env, HostState, Limits, MessageContext, MessageKind, Response};
use crate::system_api;
use std::fmt;
use std::sync::Arc;
use wasmtime::{Engine, Linker};

// ic-metering.md §4: after an update, init or upgrade message the replica
// charges 1000 instructions per 4 KiB heap page the message dirtied (x4 on wasm64).
const HEAP_DIRTY_PAGE: u64 = 1000;
const HEAP_DIRTY_PAGE_WASM64_FACTOR: u64 = 4;

/// The IC's reject codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RejectCode {
    /// Fatal system error.
    SysFatal = 1,
    /// Transient system error.
    SysTransient = 2,
    /// The destination (canister or method) does not exist.
    DestinationInvalid = 3,
    /// The canister rejected the message explicitly (`msg_reject`).
    CanisterReject = 4,
    /// The canister trapped, exceeded a limit, or did not reply.
    CanisterError = 5,
}

/// A rejected call: code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reject {
    /// The reject code.
    pub code: RejectCode,
    /// The reject message (for traps, the replica's wording with the trap text).
    pub message: String,
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "reject code {}: {}", self.code as u8, self.message)
    }
}

/// What a message produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResult {
    /// The reply bytes, or the reject.
    pub reply: Result<Vec<u8>, Reject>,
    /// Instructions the message used: what `performance_counter(0)` would read at
    /// its end, plus the heap dirty-page charge of update/init/upgrade messages.
    pub instructions: u64,
    /// Text of each `debug_print` of the message, in order.
    pub debug_output: Vec<String>,
}

impl CallResult {
    pub(crate) fn reject(code: RejectCode, message: String) -> CallResult {
        CallResult {
            reply: Err(Reject { code, message }),
            instructions: 0,
            debug_output: Vec::new(),
        }
    }
}

/// Why installing or upgrading failed; the canister is unchanged.
#[derive(Debug)]
pub enum InstallError {
    /// The module could not be loaded (invalid, or an import the runtime lacks).
    Load(LoadError),
    /// `canister_start`, `canister_init`, `canister_pre_upgrade` or
    /// `canister_post_upgrade` trapped or exceeded a limit.
    Trapped(CallResult),
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
    /// message when the message failed).
    pub result: CallResult,
    /// Whether the message ran to completion (its changes were kept, if it persists).
    pub ok: bool,
    /// The replica's error code when it did not (trap or exceeded limit).
    pub error: Option<ErrorCode>,
    /// Its context at the end: response and outgoing calls (valid when `ok`).
    pub msg: MessageContext,
}

/// A canister with its live instance, heap and stable memory.
pub struct Canister {
    engine: Engine,
    linker: Linker<HostState>,
    live: Live,
    limits: Limits,
}

impl Canister {
    /// Installs `wasm`: instruments it, instantiates it, runs its start function
    /// and `canister_init` with `init_arg` (one install message, ic-metering.md §5:
    /// 300 billion instructions). `caller` is the installing principal; it
    /// becomes the controller when `env.controllers` is empty.
    pub fn install(
        wasm: &[u8],
        init_arg: &[u8],
        caller: &[u8],
        env: Env,
    ) -> Result<(Canister, CallResult), InstallError> {
        Self::install_with_limits(wasm, init_arg, caller, env, Limits::default())
    }

    /// [`Canister::install`] with instruction limits other than the IC's.
    pub fn install_with_limits(
        wasm: &[u8],
        init_arg: &[u8],
        caller: &[u8],
        env: Env,
        limits: Limits,
    ) -> Result<(Canister, CallResult), InstallError> {
        let engine = shared_engine()?;
        let mut linker = Linker::new(&engine);
        system_api::register(&mut linker)
            .map_err(|e| InstallError::Load(LoadError::Wasm(e.to_string())))?;
        let loaded = Loaded::cached(&engine, &linker, wasm)?;
        let mut state = HostState {
            env,
            ..HostState::default()
        };
        // The installer controls the canister unless controllers were given.
        if state.env.controllers.is_empty() {
            state.env.controllers.push(caller.to_vec());
        }
        state.env.canister_version += 1;
        let live = Live::new(&engine, &linker, loaded, state).map_err(|failed| failed.0)?;
        let mut canister = Canister {
            engine,
            linker,
            live,
            limits,
        };
        let exports = canister.install_exports("canister_init");
        let (result, _, _) = canister.run(
            MessageKind::Init,
            "canister_init",
            &exports,
            init_arg,
            caller,
        );
        match result.reply {
            Ok(_) => Ok((canister, result)),
            Err(_) => Err(InstallError::Trapped(result)),
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
    pub fn update(&mut self, method: &str, arg: &[u8], caller: &[u8]) -> CallResult {
        let export = format!("canister_update {method}");
        if !self.live.loaded.exports_function(&export) {
            return CallResult::reject(
                RejectCode::CanisterError,
                format!("Canister has no update method '{method}'."),
            );
        }
        if let Some(rejected) = self.inspect(method, arg, caller) {
            return rejected;
        }
        self.run(MessageKind::Update, method, &[export], arg, caller)
            .0
    }

    /// Runs `canister_inspect_message` if exported; returns the reject if the
    /// message is not accepted. Its changes are always discarded.
    pub(crate) fn inspect(
        &mut self,
        method: &str,
        arg: &[u8],
        caller: &[u8],
    ) -> Option<CallResult> {
        self.inspect_classified(method, arg, caller)
            .map(|(result, _)| result)
    }

    /// [`Canister::inspect`] with the replica's error code of the refusal
    /// (the trap's, or IC0406 when the message was not accepted).
    pub(crate) fn inspect_classified(
        &mut self,
        method: &str,
        arg: &[u8],
        caller: &[u8],
    ) -> Option<(CallResult, ErrorCode)> {
        let export = "canister_inspect_message".to_string();
        if !self.live.loaded.exports_function(&export) {
            return None;
        }
        let (result, accepted, error) =
            self.run(MessageKind::InspectMessage, method, &[export], arg, caller);
        match (result.reply, error) {
            (Err(reject), Some(code)) => Some((
                CallResult {
                    reply: Err(reject),
                    ..result
                },
                code,
            )),
            (_, _) if accepted => None,
            (_, _) => Some((
                CallResult {
                    reply: Err(Reject {
                        code: RejectCode::CanisterReject,
                        message: "Canister rejected the message".into(),
                    }),
                    ..result
                },
                ErrorCode::CanisterRejectedMessage,
            )),
        }
    }

    /// Calls the query method `method` (export `canister_query <method>` or
    /// `canister_composite_query <method>`). Its changes are always discarded.
    pub fn query(&mut self, method: &str, arg: &[u8], caller: &[u8]) -> CallResult {
        self.query_classified(method, arg, caller).0
    }

    /// [`Canister::query`] with the replica's error code when it failed.
    pub(crate) fn query_classified(
        &mut self,
        method: &str,
        arg: &[u8],
        caller: &[u8],
    ) -> (CallResult, Option<ErrorCode>) {
        let export = [
            format!("canister_query {method}"),
            format!("canister_composite_query {method}"),
        ]
        .into_iter()
        .find(|name| self.live.loaded.exports_function(name));
        match export {
            Some(export) => {
                let (result, _, error) =
                    self.run(MessageKind::Query, method, &[export], arg, caller);
                (result, error)
            }
            None => (
                CallResult::reject(
                    RejectCode::CanisterError,
                    format!("Canister has no query method '{method}'."),
                ),
                Some(ErrorCode::CanisterMethodNotFound),
            ),
        }
    }

    /// Upgrades to `wasm`: `canister_pre_upgrade` on the current instance, then a
    /// fresh instance (new heap) of the new module keeping stable memory, its
    /// start function and `canister_post_upgrade` with `arg`. One install message
    /// (ic-metering.md §5: 300 billion instructions). On failure nothing changes.
    pub fn upgrade(
        &mut self,
        wasm: &[u8],
        arg: &[u8],
        caller: &[u8],
    ) -> Result<CallResult, InstallError> {
        let loaded = Loaded::cached(&self.engine, &self.linker, wasm)?;
        let kind = MessageKind::PreUpgrade;
        let begun = self.begin(kind, "canister_pre_upgrade", arg, caller);
        let pre = self.install_exports_of("canister_pre_upgrade");
        if let Err(failure) = self.call_all(&pre) {
            return Err(InstallError::Trapped(self.fail(begun, failure)));
        }
        let remaining = self.live.counter();
        let state = self.live.store.data_mut();
        let mut env = state.env.clone();
        env.canister_version += 1;
        let next_state = HostState {
            env,
            stable: std::mem::take(&mut state.stable),
            msg: MessageContext {
                kind: MessageKind::PostUpgrade,
                ..state.msg.clone()
            },
            counter: None,
            memory: None,
            unmetered: false,
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
        let old = next;
        self.live.set_counter(remaining);
        let fresh = self.live.begin();
        let post = self.install_exports("canister_post_upgrade");
        let outcome = self.call_all(&post);
        let (result, error, _) = self.conclude(kind, outcome, &fresh);
        if error.is_none() {
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
        Err(InstallError::Trapped(result))
    }

    fn install_exports_of(&self, name: &str) -> Vec<String> {
        if self.live.loaded.exports_function(name) {
            vec![name.to_string()]
        } else {
            Vec::new()
        }
    }

    /// Runs one message: `exports` in order under one instruction budget.
    /// Returns the result, whether `accept_message` was called and the
    /// replica's error code if the message failed.
    fn run(
        &mut self,
        kind: MessageKind,
        method: &str,
        exports: &[String],
        arg: &[u8],
        caller: &[u8],
    ) -> (CallResult, bool, Option<ErrorCode>) {
        let begun = self.begin(kind, method, arg, caller);
        let outcome = self.call_all(exports);
        let (result, error, msg) = self.conclude(kind, outcome, &begun.snapshot);
        self.keep_or_undo(kind, error.is_none(), &begun.snapshot);
        (result, msg.accepted, error)
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
        let (result, error, msg) = self.conclude(kind, outcome, &snapshot);
        let ok = error.is_none();
        self.keep_or_undo(kind, ok, &snapshot);
        Executed {
            result,
            ok,
            error,
            msg,
        }
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
    /// memory's change set and sets the counter to the message's limit.
    fn begin_with(&mut self, context: MessageContext) -> Snapshot {
        let snapshot = self.live.begin();
        let limit = context.limit;
        let state = self.live.store.data_mut();
        state.stable.begin();
        state.msg = context;
        self.live.set_counter(limit as i64);
        snapshot
    }

    fn call_all(&mut self, exports: &[String]) -> Result<(), Failure> {
        for export in exports {
            self.live.call(export)?;
        }
        Ok(())
    }

    /// Turns the outcome of a message into its result, adding the heap
    /// dirty-page charge. Returns the result, the replica's error code unless
    /// the message ran to completion (its changes may then be kept) and its
    /// final context (without the debug output, moved into the result).
    fn conclude(
        &mut self,
        kind: MessageKind,
        outcome: Result<(), Failure>,
        before: &Snapshot,
    ) -> (CallResult, Option<ErrorCode>, MessageContext) {
        let limit = self.live.store.data().msg.limit;
        let counter = self.live.counter();
        let mut instructions = (limit as i64).saturating_sub(counter).max(0) as u64;
        let mut outcome = outcome;
        if outcome.is_ok() && counter < 0 {
            outcome = Err(Failure::OutOfInstructions);
        }
        if outcome.is_ok() && kind.persists() {
            let factor = if self.live.loaded.info.memory64 {
                HEAP_DIRTY_PAGE_WASM64_FACTOR
            } else {
                1
            };
            let dirty = self.live.dirty_pages(before);
            instructions = instructions.saturating_add(HEAP_DIRTY_PAGE * factor * dirty);
            if instructions > limit {
                outcome = Err(Failure::OutOfInstructions);
            }
        }
        self.live.finish(before);
        let mut msg = std::mem::take(&mut self.live.store.data_mut().msg);
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
            instructions,
            debug_output: std::mem::take(&mut msg.debug_output),
        };
        (result, error, msg)
    }

    /// Undoes a failed message of `begun` and builds its result.
    fn fail(&mut self, begun: Begun, failure: Failure) -> CallResult {
        let (result, _, _) = self.conclude(begun.kind, Err(failure), &begun.snapshot);
        self.live.store.data_mut().stable.rollback();
        self.rollback_heap(&begun.snapshot);
        result
    }

    /// Restores the heap and globals; if the memory grew, onto a fresh instance.
    fn rollback_heap(&mut self, snapshot: &Snapshot) {
        if self.live.restore(snapshot).is_ok() {
            return;
        }
        let heap = self.live.heap_prefix(snapshot.heap_len());
        let mut state = self.live.take_state();
        let handles = (state.counter.take(), state.memory.take());
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
                (state.counter, state.memory) = handles;
                *self.live.store.data_mut() = state;
            }
        }
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
