//! Several canisters in one runtime, calling each other as on the IC.
//!
//! A [`World`] holds canisters created with [`World::create_canister`] (ids as
//! a subnet assigns them: the n-th is `[n as u64 big-endian, 1, 1]`) and one FIFO queue of messages over all
//! of them. [`World::update`] executes an ingress update call and then every
//! message it causes until the queue is empty, deterministically:
//!
//! - calls made with `call_new` .. `call_perform` are sent only when the
//!   calling message completes; its trap (or exceeding a limit) discards them
//!   with its other changes;
//! - a request runs the callee's `canister_update <method>` as a new message
//!   (or its `canister_query <method>`, replicated, changes discarded), in a
//!   new call context whose caller is the calling canister;
//! - the call context's answer comes back as a response message, run as
//!   `table[reply_fun](reply_env)` or `table[reject_fun](reject_env)` in the
//!   caller's call context. As on the replica, the answer is `msg_reply`, or
//!   `msg_reject` (code 4), or, once a message of the context failed while no
//!   call of the context is outstanding, the replica's error (code 5, e.g.
//!   `IC0503: Error from Canister <id>: Canister called `ic0.trap` with
//!   message: '...'`, see [`crate::errors`]), or, when the context is left with
//!   neither an answer nor outstanding calls, code 5 `No response` (its
//!   `CallContextAction::NoResponse`; for the ingress call `IC0506: Canister
//!   <id> did not reply to the call`);
//! - a callback that traps is rolled back and its `call_on_cleanup` function,
//!   if any, runs as a separate execution (kept unless it traps too). As on the
//!   replica, a callback may use 95% of the update limit, and the cleanup the
//!   callback's leftover plus the 5% reserve;
//! - as on the replica, a canister may have 500 calls to one callee whose
//!   responses are not processed yet (the queue capacity); `call_perform`
//!   returns 2 (SYS_TRANSIENT) past it and drops the call.
//!
//! Rejects of the ingress call carry the replica's `UserError` text with its
//! error code in front (`IC05xx: ...`; the replica reports the code in a
//! separate field of the ingress status, [`CallResult`] has none).
//!
//! Unlike the replica, one [`World::update`] executes at most
//! [`World::message_limit`] messages ([`DEFAULT_MESSAGE_LIMIT`]), so that a
//! canister calling itself forever, a ping-pong of callbacks or a fan-out
//! ends: past it the run stops, every queued message, callback and open call
//! context is dropped, and [`World::last_run_truncated`] tells.
//!
//! Simplifications: no cycles move (attached cycles are recorded only, balances
//! are untouched); bounded-wait calls always get their response (no timeout,
//! no SYS_UNKNOWN); no composite queries across canisters; all canisters share
//! one subnet, with no memory limits; the management canister (`aaaaa-aa`) is
//! not callable (calls to it are rejected as unknown canisters).

mod contexts;
mod ids;
mod messages;
mod queue;

pub use messages::{ExecutedKind, ExecutedMessage};

use crate::canister::{Canister, Entry, Executed, InstallError};
use crate::errors::{CallResult, ErrorCode, Reject, RejectCode};
use crate::state::{Env, MessageContext, MessageKind, Options, Response};
use candid::Principal;
use contexts::{CallContexts, Origin};
use messages::Message;
use queue::Queue;

/// The percentage of a response's instruction limit the replica keeps for the
/// cleanup callback (its RESERVED_CLEANUP_INSTRUCTIONS_IN_PERCENT).
const RESERVED_CLEANUP_PERCENT: u128 = 5;

/// The default of [`World::set_message_limit`]: how many messages one
/// [`World::update`] executes at most. icrun's own bound (the replica has
/// none: it would keep executing, round after round); high enough for any
/// terminating test, low enough to stop a runaway one within seconds.
pub const DEFAULT_MESSAGE_LIMIT: usize = 100_000;

/// A created canister: empty until installed.
struct Slot {
    id: Vec<u8>,
    /// Controllers given at creation (the canister's `Env` holds them once installed).
    controllers: Vec<Vec<u8>>,
    canister: Option<Canister>,
    contexts: CallContexts,
}

/// A failed message: the replica's error code and error text.
type Failure = Option<(ErrorCode, String)>;

/// Several canisters with inter-canister calls (see the module documentation).
pub struct World {
    slots: Vec<Slot>,
    queue: Queue,
    /// How canisters are installed (limits, metering, tracing).
    options: Options,
    /// The answer of the running ingress call, once given.
    ingress_answer: Option<Result<Vec<u8>, Reject>>,
    trace: Vec<ExecutedMessage>,
    /// Most messages one `update` executes.
    message_limit: usize,
    /// Whether the last `update` stopped at the message limit.
    truncated: bool,
}

impl Default for World {
    fn default() -> Self {
        World::new()
    }
}

impl World {
    /// A world without canisters, with the IC's limits and [`crate::Metering::PocketIc13`].
    pub fn new() -> World {
        World::with_options(Options::default())
    }

    /// A world whose canisters are installed with `options`.
    pub fn with_options(options: Options) -> World {
        World {
            slots: Vec::new(),
            queue: Queue::default(),
            options,
            ingress_answer: None,
            trace: Vec::new(),
            message_limit: DEFAULT_MESSAGE_LIMIT,
            truncated: false,
        }
    }

    /// Sets how many messages one [`World::update`] executes at most (the
    /// ingress message included; it always runs). Default:
    /// [`DEFAULT_MESSAGE_LIMIT`]. A response whose callback traps runs its
    /// cleanup too, so the trace may hold one message more.
    pub fn set_message_limit(&mut self, limit: usize) {
        self.message_limit = limit;
    }

    /// The message limit of [`World::update`] (see [`World::set_message_limit`]).
    pub fn message_limit(&self) -> usize {
        self.message_limit
    }

    /// Whether the last [`World::update`] stopped at the message limit with
    /// messages still to deliver (they were dropped, with every pending
    /// callback and open call context). Its result is then the ingress
    /// answer if one was given before, else a reject saying so.
    pub fn last_run_truncated(&self) -> bool {
        self.truncated
    }

    /// Creates an empty canister and returns its id. Ids follow the IC's scheme: the n-th
    /// canister (n = 0, 1, 2, ...) is the 10 bytes [n as u64 big-endian (8 bytes), 0x01,
    /// 0x01]. `controllers` become its controllers (like PocketIC's create_canister with
    /// settings); if empty, the sender of the install becomes its controller.
    pub fn create_canister(&mut self, controllers: &[Principal]) -> Principal {
        let id = ids::canister_id(self.slots.len() as u64);
        self.slots.push(Slot {
            id: id.clone(),
            controllers: controllers.iter().map(|p| p.as_slice().to_vec()).collect(),
            canister: None,
            contexts: CallContexts::default(),
        });
        Principal::from_slice(&id)
    }

    /// Installs `wasm` on the created canister `id` (init with `arg`, as `sender`). Err if `id` is unknown
    /// or already has a module, or if controllers were given at creation and
    /// `sender` is not one of them (install_code needs a controller).
    pub fn install(
        &mut self,
        id: Principal,
        wasm: &[u8],
        arg: &[u8],
        sender: Principal,
    ) -> Result<CallResult, InstallError> {
        let (id, sender) = (id.as_slice(), sender.as_slice());
        let index = self
            .index(id)
            .ok_or_else(|| InstallError::UnknownCanister(ids::text(id)))?;
        let slot = &mut self.slots[index];
        if slot.canister.is_some() {
            return Err(InstallError::AlreadyInstalled(ids::text(id)));
        }
        if !slot.controllers.is_empty() {
            require_controller(&slot.controllers, id, sender)?;
        }
        let env = Env {
            canister_id: Principal::from_slice(id),
            controllers: slot
                .controllers
                .iter()
                .map(|c| Principal::from_slice(c))
                .collect(),
            ..Env::default()
        };
        let sender = Principal::from_slice(sender);
        let (canister, result) = Canister::install_with(wasm, arg, sender, env, self.options)?;
        slot.controllers = controller_bytes(canister.env());
        slot.canister = Some(canister);
        Ok(result)
    }

    /// Upgrades canister `id`; refused (InstallError with a clear text) if `sender` is not a controller.
    pub fn upgrade(
        &mut self,
        id: Principal,
        wasm: &[u8],
        arg: &[u8],
        sender: Principal,
    ) -> Result<CallResult, InstallError> {
        let index = self
            .index(id.as_slice())
            .ok_or_else(|| InstallError::UnknownCanister(id.to_text()))?;
        let Some(canister) = self.slots[index].canister.as_mut() else {
            return Err(InstallError::NotInstalled(id.to_text()));
        };
        require_controller(
            &controller_bytes(canister.env()),
            id.as_slice(),
            sender.as_slice(),
        )?;
        canister.upgrade(wasm, arg, sender)
    }

    /// An ingress update call from `sender`: executes it and then every message it causes (requests to
    /// other canisters, their responses, callbacks) until nothing is left in the queue, and returns the
    /// response of the ingress call context (reply or reject), `instructions` = the ingress message's own.
    ///
    /// `canister_inspect_message` runs first, as in [`Canister::update`]. A
    /// query method is run replicated (its changes discarded). Rejects carry
    /// the replica's error texts with their code, e.g. `IC0503: Error from
    /// Canister <id>: Canister called `ic0.trap` with message: '...'`.
    ///
    /// At most [`World::message_limit`] messages run. If the limit stops the
    /// run before the ingress call is answered, the result is a reject with
    /// code 2 (SYS_TRANSIENT) saying so: the replica would never answer, and a
    /// client gives up waiting, which the IC reports as transient
    /// (IC0202 IngressMessageTimeout maps to SYS_TRANSIENT); code 5 would
    /// blame the canister for a limit that is icrun's own.
    pub fn update(
        &mut self,
        id: Principal,
        method: &str,
        arg: &[u8],
        sender: Principal,
    ) -> CallResult {
        let (id, sender) = (id.as_slice(), sender.as_slice());
        self.trace.clear();
        self.ingress_answer = None;
        self.truncated = false;
        let index = match self.target(id, true) {
            Ok(index) => index,
            Err(reject) => return CallResult::reject(reject.code, reject.message),
        };
        let text = ids::text(id);
        let Some(canister) = self.slots[index].canister.as_mut() else {
            return CallResult::reject(RejectCode::CanisterError, no_module(&text));
        };
        let (kind, export) = match update_entry(canister, &text, method) {
            Ok(entry) => entry,
            Err(reject) => return CallResult::reject(reject.code, reject.message),
        };
        if let Some(refused) = canister.inspect(method, arg, sender) {
            let code = refused.error.unwrap_or(ErrorCode::CanisterRejectedMessage);
            let error = refused.reply.as_ref().err().map(|r| r.message.clone());
            return CallResult {
                reply: Err(code.canister_reject(&text, &error.unwrap_or_default())),
                ..refused
            };
        }
        let mut msg = MessageContext::new(kind, method, arg, sender, canister.limits().of(kind));
        msg.calls_enabled = true;
        msg.replicated = true;
        let context = self.slots[index].contexts.open(Origin::Ingress, sender, 0);
        let (own, result) = self.run(
            index,
            context,
            ExecutedKind::IngressUpdate,
            method,
            msg,
            Entry::Export(export),
        );
        self.finish(index, context, failure(&own, result.error));
        self.drain();
        let reply = match self.ingress_answer.take() {
            Some(answer) => answer,
            None if self.truncated => Err(Reject {
                code: RejectCode::SysTransient,
                message: format!(
                    "icrun: the message limit of {} messages per update call was reached before canister {text} answered the call; the remaining messages were dropped (see World::set_message_limit)",
                    self.message_limit
                ),
            }),
            None => Err(did_not_reply(&text)),
        };
        CallResult { reply, ..result }
    }

    /// A query call (non-replicated; no inter-canister calls needed).
    /// Rejects carry the replica's error texts, as for [`World::update`].
    pub fn query(
        &mut self,
        id: Principal,
        method: &str,
        arg: &[u8],
        sender: Principal,
    ) -> CallResult {
        let (id, sender) = (id.as_slice(), sender.as_slice());
        let index = match self.target(id, true) {
            Ok(index) => index,
            Err(reject) => return CallResult::reject(reject.code, reject.message),
        };
        let text = ids::text(id);
        let Some(canister) = self.slots[index].canister.as_mut() else {
            return CallResult::reject(RejectCode::CanisterError, no_module(&text));
        };
        let mut result = canister.query_from(method, arg, sender, false);
        if let Err(reject) = &mut result.reply {
            *reject = match result.error {
                Some(code) => code.canister_reject(&text, &reject.message),
                None if reject.code == RejectCode::CanisterError => did_not_reply(&text),
                None => reject.clone(),
            };
        }
        result
    }

    /// The canister `id`, if it exists and has a module.
    pub fn canister(&self, id: Principal) -> Option<&Canister> {
        self.slots[self.index(id.as_slice())?].canister.as_ref()
    }

    /// Mutable access to the canister `id`, if it exists and has a module.
    /// (Its own [`Canister::update`] runs standalone: calls cannot be sent.)
    pub fn canister_mut(&mut self, id: Principal) -> Option<&mut Canister> {
        let index = self.index(id.as_slice())?;
        self.slots[index].canister.as_mut()
    }

    /// Every message executed by the last `update` call, in execution order (for tests of ordering
    /// and metering): which canister, what kind (ingress update, request, reply callback, reject
    /// callback, cleanup), method or callback, instructions, and whether it trapped.
    pub fn last_trace(&self) -> &[ExecutedMessage] {
        &self.trace
    }

    /// The slot of canister `id`.
    fn index(&self, id: &[u8]) -> Option<usize> {
        let n = usize::try_from(ids::canister_number(id)?).ok()?;
        (n < self.slots.len()).then_some(n)
    }

    /// The slot of canister `id` if it can execute messages, else the reject
    /// the replica gives: to an ingress call (`ingress`) its `UserError`s, to
    /// a canister's call to an unknown canister its StateError text
    /// `Canister <id> not found` (code 3).
    fn target(&self, id: &[u8], ingress: bool) -> Result<usize, Reject> {
        let text = ids::text(id);
        match self.index(id) {
            None => {
                let description = format!("Canister {text} not found");
                Err(if ingress {
                    ErrorCode::CanisterNotFound.reject(&description)
                } else {
                    Reject {
                        code: RejectCode::DestinationInvalid,
                        message: description,
                    }
                })
            }
            Some(index) if self.slots[index].canister.is_none() => Err(Reject {
                code: RejectCode::CanisterError,
                message: no_module(&text),
            }),
            Some(index) => Ok(index),
        }
    }

    /// Processes the queue until it is empty, or until the message limit
    /// stops the run.
    fn drain(&mut self) {
        while !self.queue.is_empty() {
            if self.trace.len() >= self.message_limit {
                self.truncate();
                return;
            }
            let Some(message) = self.queue.pop() else {
                return;
            };
            match message {
                Message::Request {
                    from,
                    to,
                    method,
                    arg,
                    callback,
                    deadline,
                } => self.deliver_request(&from, &to, &method, &arg, callback, deadline),
                Message::Response { callback, payload } => self.deliver_response(callback, payload),
            }
        }
    }

    /// Stops the run at the message limit: drops every queued message,
    /// pending callback and open call context, so nothing carries over into
    /// the next update.
    fn truncate(&mut self) {
        self.queue.clear();
        for slot in &mut self.slots {
            slot.contexts.clear();
        }
        self.truncated = true;
    }

    /// Runs a request on its callee, or answers it with a reject if it cannot run.
    fn deliver_request(
        &mut self,
        from: &[u8],
        to: &[u8],
        method: &str,
        arg: &[u8],
        callback: u64,
        deadline: u64,
    ) {
        let index = match self.target(to, false) {
            Ok(index) => index,
            Err(reject) => return self.respond(callback, Err(reject)),
        };
        let text = ids::text(to);
        let Some(canister) = self.slots[index].canister.as_ref() else {
            return;
        };
        let (kind, export) = match update_entry(canister, &text, method) {
            Ok(entry) => entry,
            Err(reject) => return self.respond(callback, Err(reject)),
        };
        let mut msg = MessageContext::new(kind, method, arg, from, canister.limits().of(kind));
        msg.calls_enabled = true;
        msg.replicated = true;
        msg.deadline = deadline;
        let context = self.slots[index]
            .contexts
            .open(Origin::Request { callback }, from, deadline);
        let (ran, result) = self.run(
            index,
            context,
            ExecutedKind::Request,
            method,
            msg,
            Entry::Export(export),
        );
        self.finish(index, context, failure(&ran, result.error));
    }

    /// Runs the reply or reject callback of a response, and the cleanup if the
    /// callback traps.
    fn deliver_response(&mut self, callback: u64, payload: Result<Vec<u8>, Reject>) {
        let Some(cb) = self.queue.take_callback(callback) else {
            return;
        };
        let Some(index) = self.index(&cb.canister) else {
            return;
        };
        let slot = &mut self.slots[index];
        let Some(context) = slot.contexts.get_mut(cb.context) else {
            return;
        };
        context.outstanding = context.outstanding.saturating_sub(1);
        let caller = context.caller.clone();
        let deadline = context.deadline;
        let Some(canister) = slot.canister.as_ref() else {
            let error = no_module_error();
            return self.finish(index, cb.context, Some(error));
        };
        // The replica gives the callback the update limit minus 5%, kept for the cleanup.
        let limit = canister.limits().update;
        let reserve = (u128::from(limit) * RESERVED_CLEANUP_PERCENT / 100) as u64;
        let callback_limit = limit - reserve;
        let (kind, executed_kind, closure, arg, code, reject_message) = match payload {
            Ok(bytes) => (
                MessageKind::ReplyCallback,
                ExecutedKind::ReplyCallback,
                cb.on_reply,
                bytes,
                0,
                String::new(),
            ),
            Err(reject) => (
                MessageKind::RejectCallback,
                ExecutedKind::RejectCallback,
                cb.on_reject,
                Vec::new(),
                reject.code as u32,
                reject.message,
            ),
        };
        let mut msg = self.callback_context(index, cb.context, kind, &arg, &caller, callback_limit);
        msg.calls_enabled = true;
        msg.reject_code = code;
        msg.reject_message = reject_message;
        msg.deadline = deadline;
        let (ran, result) = self.run(
            index,
            cb.context,
            executed_kind,
            &cb.method,
            msg,
            Entry::Closure(closure),
        );
        let mut failed = failure(&ran, result.error);
        if let (Some((error_code, callback_error)), Some(cleanup)) = (failed.clone(), cb.on_cleanup)
        {
            let leftover = callback_limit.saturating_sub(ran.instructions);
            let kind = MessageKind::Cleanup;
            let mut msg =
                self.callback_context(index, cb.context, kind, &[], &caller, reserve + leftover);
            msg.reject_code = code;
            msg.deadline = deadline;
            let (cleaned, _) = self.run(
                index,
                cb.context,
                ExecutedKind::Cleanup,
                &cb.method,
                msg,
                Entry::Closure(cleanup),
            );
            if let Some(cleanup_error) = cleaned.trap {
                // The replica's HypervisorError::Cleanup: the callback's code,
                // both texts.
                failed = Some((
                    error_code,
                    format!("{callback_error}\n\ncall_on_cleanup also failed:\n\n{cleanup_error}"),
                ));
            }
        }
        self.finish(index, cb.context, failed);
    }

    /// The context of a callback or cleanup in call context `context`.
    fn callback_context(
        &self,
        index: usize,
        context: u64,
        kind: MessageKind,
        arg: &[u8],
        caller: &[u8],
        limit: u64,
    ) -> MessageContext {
        let mut msg = MessageContext::new(kind, "", arg, caller, limit);
        if let Some(context) = self.slots[index].contexts.get(context) {
            msg.replied_before = context.responded;
            msg.call_context_instructions = context.instructions;
        }
        msg
    }

    /// Executes one message on canister `index` in call context `context`,
    /// records it in the trace and, if it completed, sends its calls and its
    /// answer. Returns the trace entry and the message's result (with the
    /// replica's error code if it failed).
    fn run(
        &mut self,
        index: usize,
        context: u64,
        kind: ExecutedKind,
        method: &str,
        mut msg: MessageContext,
        entry: Entry,
    ) -> (ExecutedMessage, CallResult) {
        let closure = match &entry {
            Entry::Closure(closure) => Some(*closure),
            Entry::Export(_) => None,
        };
        let slot = &mut self.slots[index];
        msg.outstanding_calls = self.queue.outstanding_of(&slot.id);
        let executed = match slot.canister.as_mut() {
            Some(canister) => {
                let time = canister.env().time_nanos;
                Some((canister.execute(msg, &entry), time))
            }
            None => None,
        };
        let Some((Executed { result, ok, msg }, time)) = executed else {
            let (code, trap) = no_module_error();
            let message = ExecutedMessage {
                canister: Principal::from_slice(&slot.id),
                kind,
                method: method.to_string(),
                closure,
                instructions: 0,
                trap: Some(trap.clone()),
                debug_output: Vec::new(),
            };
            self.trace.push(message.clone());
            return (message, CallResult::failed(code, trap));
        };
        let trap = match (&result.reply, ok) {
            (_, true) => None,
            (Err(reject), false) => Some(reject.message.clone()),
            (Ok(_), false) => Some(String::from("Canister trapped")),
        };
        let mut answer = None;
        if let Some(call_context) = slot.contexts.get_mut(context) {
            call_context.instructions = call_context
                .instructions
                .saturating_add(result.instructions);
            if ok {
                for call in msg.outgoing {
                    call_context.outstanding += 1;
                    self.queue.send(&slot.id, context, call, time);
                }
                answer = msg.response.map(|response| match response {
                    Response::Reply(bytes) => Ok(bytes),
                    Response::Reject(message) => Err(Reject {
                        code: RejectCode::CanisterReject,
                        message,
                    }),
                });
            }
        }
        let message = ExecutedMessage {
            canister: Principal::from_slice(&slot.id),
            kind,
            method: method.to_string(),
            closure,
            instructions: result.instructions,
            trap,
            debug_output: result.debug_output.clone(),
        };
        self.trace.push(message.clone());
        if let Some(payload) = answer {
            self.answer(index, context, payload);
        }
        let error = result.error.or((!ok).then_some(ErrorCode::CanisterTrapped));
        (message, CallResult { error, ..result })
    }

    /// Answers call context `context` of canister `index`, unless it is answered already.
    fn answer(&mut self, index: usize, context: u64, payload: Result<Vec<u8>, Reject>) {
        let Some(call_context) = self.slots[index].contexts.get_mut(context) else {
            return;
        };
        if call_context.responded {
            return;
        }
        call_context.responded = true;
        match call_context.origin {
            Origin::Ingress => self.ingress_answer = Some(payload),
            Origin::Request { callback } => self.respond(callback, payload),
        }
    }

    /// Enqueues the response to the call whose callback is `callback`.
    fn respond(&mut self, callback: u64, payload: Result<Vec<u8>, Reject>) {
        self.queue.respond(callback, payload);
    }

    /// After a message of call context `context`: once no call it made is
    /// outstanding, the context is closed, answered first with a reject if it
    /// never was: the error of its last message if that failed (the replica's
    /// `CallContextAction::Fail`), else `No response` to a canister
    /// (`CallContextAction::NoResponse`, rs/execution_environment/src/execution/common.rs)
    /// or `did not reply` to the ingress call.
    fn finish(&mut self, index: usize, context: u64, failure: Failure) {
        let slot = &self.slots[index];
        let Some(call_context) = slot.contexts.get(context) else {
            return;
        };
        if call_context.outstanding > 0 {
            return;
        }
        if !call_context.responded {
            let text = ids::text(&slot.id);
            let reject = match (failure, &call_context.origin) {
                (Some((code, error)), _) => code.canister_reject(&text, &error),
                (None, Origin::Ingress) => did_not_reply(&text),
                (None, Origin::Request { .. }) => Reject {
                    code: RejectCode::CanisterError,
                    message: "No response".to_string(),
                },
            };
            self.answer(index, context, Err(reject));
        }
        self.slots[index].contexts.close(context);
    }
}

/// The controllers of a canister, as principal bytes.
fn controller_bytes(env: &Env) -> Vec<Vec<u8>> {
    env.controllers
        .iter()
        .map(|controller| controller.as_slice().to_vec())
        .collect()
}

/// `Ok` if `sender` is one of `controllers` of canister `id`: install_code
/// (install and upgrade) is for controllers only.
fn require_controller(
    controllers: &[Vec<u8>],
    id: &[u8],
    sender: &[u8],
) -> Result<(), InstallError> {
    if controllers.iter().any(|controller| controller == sender) {
        return Ok(());
    }
    Err(InstallError::NotController {
        canister: ids::text(id),
        sender: ids::text(sender),
    })
}

/// The failure of an executed message: its error code and trap text.
fn failure(message: &ExecutedMessage, error: Option<ErrorCode>) -> Failure {
    let trap = message.trap.clone()?;
    Some((error.unwrap_or(ErrorCode::CanisterTrapped), trap))
}

/// The export an update call of `method` runs: the update method, or the
/// query method run replicated; else the replica's reject (the same for
/// ingress and canister callers).
fn update_entry(
    canister: &Canister,
    text: &str,
    method: &str,
) -> Result<(MessageKind, String), Reject> {
    let update = format!("canister_update {method}");
    if canister.exports_function(&update) {
        return Ok((MessageKind::Update, update));
    }
    let query = format!("canister_query {method}");
    if canister.exports_function(&query) {
        return Ok((MessageKind::Query, query));
    }
    if canister.exports_function(&format!("canister_composite_query {method}")) {
        // The replica's text (rs/execution_environment/src/execution/update.rs).
        let description = "Composite query cannot be called in replicated mode";
        return Err(ErrorCode::CompositeQueryCalledInReplicatedMode.reject(description));
    }
    let error = format!("Canister has no update method '{method}'.");
    Err(ErrorCode::CanisterMethodNotFound.canister_reject(text, &error))
}

/// The error of a message for a canister without module (the replica's
/// `HypervisorError::WasmModuleNotFound`).
fn no_module_error() -> (ErrorCode, String) {
    (
        ErrorCode::CanisterWasmModuleNotFound,
        "Attempted to execute a message, but the canister contains no Wasm module.".to_string(),
    )
}

/// The reject of a call to canister `text` that has no module: the replica's
/// `validate_message` error (rs/execution_environment/src/execution_environment.rs).
fn no_module(text: &str) -> String {
    let description =
        format!("Attempt to execute a message on canister {text} which contains no Wasm module");
    ErrorCode::CanisterWasmModuleNotFound
        .reject(&description)
        .message
}

/// The reject of an ingress call nobody answered (the replica's
/// CanisterDidNotReply error of an ingress call context).
fn did_not_reply(text: &str) -> Reject {
    ErrorCode::CanisterDidNotReply.reject(&format!("Canister {text} did not reply to the call"))
}
