//! What the ic0 host functions read and write: the canister's environment, its
//! stable memory and the context of the message being executed.

use crate::errors::ErrorCode;
use crate::ledger::Ledger;
use crate::memory_limits::MemoryLimits;
use crate::memory_tracker::MemoryTracker;
use crate::prices::Metering;
use crate::stable::StableMemory;
use crate::trace::Recorder;
use candid::Principal;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use wasmtime::{Global, Memory};

/// The anonymous principal's bytes (one byte, 0x04), the default caller inside the runtime.
pub(crate) const ANONYMOUS: &[u8] = &[0x04];

/// The kind of message being executed; it decides the instruction limit, which
/// ic0 functions are allowed and whether changes persist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MessageKind {
    /// `canister_start` and `canister_init` during install.
    Init,
    /// `canister_pre_upgrade`.
    PreUpgrade,
    /// `canister_start` and `canister_post_upgrade` during an upgrade.
    PostUpgrade,
    /// `canister_update <name>`.
    Update,
    /// `canister_query <name>`; never persists changes.
    Query,
    /// `canister_inspect_message`; never persists changes.
    InspectMessage,
    /// A reply callback: `table[reply_fun](reply_env)` of an inter-canister call
    /// ([`crate::World`] only).
    ReplyCallback,
    /// A reject callback: `table[reject_fun](reject_env)` of an inter-canister
    /// call ([`crate::World`] only).
    RejectCallback,
    /// The `call_on_cleanup` function of a call whose callback trapped
    /// ([`crate::World`] only); it may neither reply nor call.
    Cleanup,
}

impl MessageKind {
    /// The instruction limit of this kind of message (docs/metering.md §7,
    /// application subnet).
    pub fn instruction_limit(self) -> u64 {
        match self {
            // docs/metering.md §7: install_code / upgrade: 300 billion.
            MessageKind::Init | MessageKind::PreUpgrade | MessageKind::PostUpgrade => {
                300_000_000_000
            }
            // docs/metering.md §7: update: 40 billion; callbacks are update
            // executions (the replica keeps 5% of it for the cleanup, see
            // `crate::world`).
            MessageKind::Update
            | MessageKind::ReplyCallback
            | MessageKind::RejectCallback
            | MessageKind::Cleanup => 40_000_000_000,
            // docs/metering.md §7: query: 5 billion.
            MessageKind::Query => 5_000_000_000,
            // docs/metering.md §7: canister_inspect_message: 200 million.
            MessageKind::InspectMessage => 200_000_000,
        }
    }

    /// How many bytes of stable memory one message may dirty (docs/metering.md §7:
    /// 2 GiB for updates, 8 GiB for install/upgrade, 1 GiB for queries).
    pub fn stable_dirty_limit(self) -> u64 {
        const GIB: u64 = 1024 * 1024 * 1024;
        match self {
            MessageKind::Init | MessageKind::PreUpgrade | MessageKind::PostUpgrade => 8 * GIB,
            MessageKind::Update
            | MessageKind::ReplyCallback
            | MessageKind::RejectCallback
            | MessageKind::Cleanup => 2 * GIB,
            MessageKind::Query | MessageKind::InspectMessage => GIB,
        }
    }

    /// Whether the message's changes are kept when it succeeds (and, under
    /// [`Metering::Current`], whether its writes are tracked and charged).
    pub fn persists(self) -> bool {
        !matches!(self, MessageKind::Query | MessageKind::InspectMessage)
    }

    /// Whether the message may reply or reject (`msg_reply`, `msg_reject`).
    pub fn can_reply(self) -> bool {
        matches!(
            self,
            MessageKind::Update
                | MessageKind::Query
                | MessageKind::ReplyCallback
                | MessageKind::RejectCallback
        )
    }

    /// Whether the message may make inter-canister calls (`call_new` and the
    /// other `call_*` functions; the interface spec's U, Ry and Rt).
    pub fn can_call(self) -> bool {
        matches!(
            self,
            MessageKind::Update | MessageKind::ReplyCallback | MessageKind::RejectCallback
        )
    }
}

/// Instruction limits per kind of message; the default is the application
/// subnet's (docs/metering.md §7). Lower them to test limit handling; raise them
/// to measure without limits, as canbench's benchmarking subnet does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Limit of update messages.
    pub update: u64,
    /// Limit of queries.
    pub query: u64,
    /// Limit of install and upgrade messages (start, init, pre/post_upgrade).
    pub install: u64,
    /// Limit of `canister_inspect_message`.
    pub inspect_message: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            update: MessageKind::Update.instruction_limit(),
            query: MessageKind::Query.instruction_limit(),
            install: MessageKind::Init.instruction_limit(),
            inspect_message: MessageKind::InspectMessage.instruction_limit(),
        }
    }
}

impl Limits {
    /// The limit that applies to a message of `kind`.
    pub(crate) fn of(&self, kind: MessageKind) -> u64 {
        match kind {
            MessageKind::Init | MessageKind::PreUpgrade | MessageKind::PostUpgrade => self.install,
            MessageKind::Update
            | MessageKind::ReplyCallback
            | MessageKind::RejectCallback
            | MessageKind::Cleanup => self.update,
            MessageKind::Query => self.query,
            MessageKind::InspectMessage => self.inspect_message,
        }
    }

    /// Limits so high no benchmark reaches them (canbench's benchmarking subnet
    /// has none, docs/metering.md §9).
    pub fn unlimited() -> Self {
        let max = i64::MAX as u64;
        Limits {
            update: max,
            query: max,
            install: max,
            inspect_message: max,
        }
    }
}

/// The canister's environment: identity, controllers, clock and balance.
#[derive(Debug, Clone)]
pub struct Env {
    /// The canister's own principal.
    pub canister_id: Principal,
    /// Principals for which `is_controller` returns 1.
    pub controllers: Vec<Principal>,
    /// What `ic0.time` returns, in nanoseconds since the epoch (deterministic, settable).
    pub time_nanos: u64,
    /// What `canister_cycle_balance128` returns.
    pub cycle_balance: u128,
    /// What `canister_version` returns; incremented by install and upgrade.
    pub canister_version: u64,
    /// Last value given to `certified_data_set`.
    pub certified_data: Vec<u8>,
    /// Last value given to `global_timer_set` (0: no timer).
    pub global_timer: u64,
}

impl Default for Env {
    fn default() -> Self {
        Env {
            // The first canister id of a subnet: rwlgt-iiaaa-aaaaa-aaaaa-cai.
            canister_id: Principal::from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 1, 1]),
            controllers: Vec::new(),
            // 2025-01-01T00:00:00Z.
            time_nanos: 1_735_689_600_000_000_000,
            // 100 trillion cycles, what a freshly created PocketIC canister holds.
            cycle_balance: 100_000_000_000_000,
            canister_version: 0,
            certified_data: Vec::new(),
            global_timer: 0,
        }
    }
}

/// How a runtime is set up beyond the canister's environment: the instruction and memory
/// limits, the metering rules, and whether modules get trace hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Instruction limits per kind of message.
    pub limits: Limits,
    /// Which replica rules charge memory pages (docs/metering.md §6).
    pub metering: Metering,
    /// Instrument the module with entry and exit hooks so that messages can record a
    /// [`crate::Trace`] ([`crate::Canister::record_traces`]). The hooks are not metered:
    /// instruction counts are the same with and without them.
    pub tracing: bool,
    /// How large stable memory may grow, in 64 KiB pages: `stable64_grow` and `stable_grow`
    /// past it return −1, as on the IC when the canister's memory allocation or the subnet is
    /// full. `None` (the default): the IC's maximum (docs/metering.md §7: 500 GiB; 4 GiB
    /// through the 32-bit API). Change it on a live canister with
    /// [`crate::Canister::set_stable_memory_limit`].
    pub stable_memory_limit: Option<u64>,
    /// How large the heap (memory 0) may grow, in 64 KiB Wasm pages: `memory.grow` past it
    /// returns −1, as Wasm specifies for a failed grow. `None` (the default): the IC's
    /// maximum (docs/metering.md §7: 4 GiB on wasm32). Change it on a live canister with
    /// [`crate::Canister::set_heap_limit`].
    pub heap_limit: Option<u64>,
}

/// How a message answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Response {
    /// `msg_reply` with the bytes appended by `msg_reply_data_append`.
    Reply(Vec<u8>),
    /// `msg_reject` with its message.
    Reject(String),
}

/// A callback of an inter-canister call: the function at index `fun` of the
/// module's table, called with `env` (`(env : i32) -> ()` on wasm32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Closure {
    /// Index into table 0.
    pub fun: u32,
    /// The argument it is called with.
    pub env: u64,
}

/// An inter-canister call under construction (`call_new` .. `call_perform`) or performed.
///
/// Cycles attached with `call_cycles_add128` are recorded but never moved:
/// balances stay untouched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutgoingCall {
    /// The callee's principal bytes.
    pub callee: Vec<u8>,
    /// The method to call.
    pub method: String,
    /// The argument, from `call_data_append`.
    pub arg: Vec<u8>,
    /// Called with the reply.
    pub on_reply: Closure,
    /// Called with the reject.
    pub on_reject: Closure,
    /// Called when the reply or reject callback traps (`call_on_cleanup`).
    pub on_cleanup: Option<Closure>,
    /// Cycles attached (recorded only).
    pub cycles: u128,
    /// `call_with_best_effort_response` timeout, in seconds.
    pub timeout_seconds: Option<u32>,
}

/// Per-message context, reset before each message.
#[derive(Debug, Clone)]
pub(crate) struct MessageContext {
    /// Kind of the message.
    pub kind: MessageKind,
    /// The argument (`msg_arg_data_*`).
    pub arg: Vec<u8>,
    /// The caller's principal bytes (`msg_caller_*`).
    pub caller: Vec<u8>,
    /// Method name (`msg_method_name_*`).
    pub method_name: String,
    /// The counter value the message started with (its instruction limit).
    pub limit: u64,
    /// Bytes appended with `msg_reply_data_append` and not yet replied.
    pub reply_buffer: Vec<u8>,
    /// The response, once `msg_reply` or `msg_reject` was called.
    pub response: Option<Response>,
    /// Whether `accept_message` was called (inspect message).
    pub accepted: bool,
    /// Text of each `debug_print` (and of `ic0.trap`), in order.
    pub debug_output: Vec<String>,
    /// What `in_replicated_execution` returns (queries called by canisters
    /// run replicated).
    pub replicated: bool,
    /// Whether `call_perform` may enqueue calls (only inside a [`crate::World`];
    /// a standalone canister's `call_perform` returns 2).
    pub calls_enabled: bool,
    /// Whether the call context was answered by an earlier message (callbacks).
    pub replied_before: bool,
    /// `msg_reject_code` in callbacks and cleanups: 0 for a reply.
    pub reject_code: u32,
    /// `msg_reject_msg_*` in reject callbacks.
    pub reject_message: String,
    /// The call under construction.
    pub pending_call: Option<OutgoingCall>,
    /// Calls performed by this message; sent only if it completes.
    pub outgoing: Vec<OutgoingCall>,
    /// Per callee (principal bytes), the calls of this canister performed by
    /// earlier messages whose response has not been processed yet (set by
    /// [`crate::World`]); `call_perform` refuses calls past the replica's
    /// queue capacity.
    pub outstanding_calls: BTreeMap<Vec<u8>, usize>,
    /// Instructions of earlier messages of the call context
    /// (`performance_counter(1)` adds them).
    pub call_context_instructions: u64,
    /// What `msg_deadline` returns (0: no deadline).
    pub deadline: u64,
}

impl MessageContext {
    /// A fresh context for a message of `kind` with instruction limit `limit`.
    pub fn new(
        kind: MessageKind,
        method_name: &str,
        arg: &[u8],
        caller: &[u8],
        limit: u64,
    ) -> Self {
        MessageContext {
            kind,
            arg: arg.to_vec(),
            caller: caller.to_vec(),
            method_name: method_name.to_string(),
            limit,
            reply_buffer: Vec::new(),
            response: None,
            accepted: false,
            debug_output: Vec::new(),
            replicated: kind.persists(),
            calls_enabled: false,
            replied_before: false,
            reject_code: 0,
            reject_message: String::new(),
            pending_call: None,
            outgoing: Vec::new(),
            outstanding_calls: BTreeMap::new(),
            call_context_instructions: 0,
            deadline: 0,
        }
    }
}

impl Default for MessageContext {
    fn default() -> Self {
        let kind = MessageKind::Update;
        MessageContext::new(kind, "", &[], ANONYMOUS, kind.instruction_limit())
    }
}

/// The data of a canister's wasmtime store.
#[derive(Default)]
pub(crate) struct HostState {
    /// Identity, clock, balance.
    pub env: Env,
    /// The metering rules of the memory pages (docs/metering.md §6).
    pub metering: Metering,
    /// The charges of the message in progress.
    pub ledger: Ledger,
    /// The heap's page tracker, whose fault handler takes page charges the host functions
    /// apply ([`crate::Metering::Current`]).
    pub tracker: Option<Arc<MemoryTracker>>,
    /// The trace of the message in progress, when one is recorded.
    pub trace: Option<Recorder>,
    /// The `performance_counter(0)` readings of the message in progress, when recorded.
    pub readings: Option<Vec<Reading>>,
    /// Stable memory (persists across messages and upgrades).
    pub stable: StableMemory,
    /// The message being executed.
    pub msg: MessageContext,
    /// The instance's instruction counter global, once instantiated.
    pub counter: Option<Global>,
    /// The instance's memory 0, once instantiated (None if it has none).
    pub memory: Option<Memory>,
    /// How far the memories may grow in the message in progress (none between messages);
    /// also the store's resource limiter, which applies the heap limit to `memory.grow`.
    pub memory_limits: MemoryLimits,
    /// Running a module that was not instrumented (`icrun speed`'s baseline):
    /// system API charges are skipped instead of requiring a counter.
    pub unmetered: bool,
}

/// A `performance_counter(0)` reading and the charges made up to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reading {
    /// The value read.
    pub at: u64,
    /// The message's charges at that point.
    pub ledger: Ledger,
}

/// Why a host function stopped the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HostTrap {
    /// The canister called `ic0.trap`.
    Explicit(String),
    /// The instruction counter went below zero.
    OutOfInstructions,
    /// A stable memory access outside its size.
    StableOutOfBounds,
    /// A heap access outside the linear memory.
    HeapOutOfBounds,
    /// A 32-bit stable API call on a stable memory larger than 4 GiB.
    Stable32Bit,
    /// The message dirtied more stable memory than allowed (docs/metering.md §7).
    StableDirtyLimit(u64),
    /// An ic0 function was used where it is not allowed, or with bad arguments.
    ContractViolation(String),
}

impl fmt::Display for HostTrap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostTrap::Explicit(msg) => {
                write!(f, "Canister called `ic0.trap` with message: '{msg}'")
            }
            HostTrap::OutOfInstructions => {
                write!(f, "Canister exceeded the instruction limit")
            }
            HostTrap::StableOutOfBounds => write!(f, "Canister trapped: stable memory out of bounds"),
            HostTrap::HeapOutOfBounds => write!(f, "Canister trapped: heap out of bounds"),
            HostTrap::Stable32Bit => write!(
                f,
                "Canister trapped: 32 bit stable memory api used on a memory larger than 4GB"
            ),
            HostTrap::StableDirtyLimit(limit) => write!(
                f,
                "Exceeded the limit for the number of modified pages in the stable memory in a single message execution: limit {} KB",
                limit / 1024
            ),
            HostTrap::ContractViolation(msg) => write!(f, "Canister violated contract: {msg}"),
        }
    }
}

impl HostTrap {
    /// The replica's error code of this trap (`HypervisorError::into_user_error`,
    /// rs/interfaces/src/execution_environment/errors.rs).
    pub fn error_code(&self) -> ErrorCode {
        match self {
            HostTrap::Explicit(_) => ErrorCode::CanisterCalledTrap,
            HostTrap::OutOfInstructions => ErrorCode::CanisterInstructionLimitExceeded,
            HostTrap::StableOutOfBounds | HostTrap::HeapOutOfBounds | HostTrap::Stable32Bit => {
                ErrorCode::CanisterTrapped
            }
            HostTrap::StableDirtyLimit(_) => ErrorCode::CanisterMemoryAccessLimitExceeded,
            HostTrap::ContractViolation(_) => ErrorCode::CanisterContractViolation,
        }
    }
}

impl std::error::Error for HostTrap {}
