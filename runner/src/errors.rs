//! The replica's user-facing errors: their codes and texts.
//!
//! The replica describes a failed message with a `UserError` (its
//! rs/types/error_types/src/lib.rs): an [`ErrorCode`] and a description,
//! displayed as `IC0503: <description>`. An execution error of a canister
//! (`HypervisorError::into_user_error`, rs/interfaces/src/execution_environment/errors.rs)
//! has the description `Error from Canister <id>: <error>`.
//!
//! Simplification: newer replicas append a help sentence and a documentation
//! link to some descriptions (`.\nConsider gracefully handling failures ...
//! See documentation: ...`); its wording and address change between replica
//! versions, so icrun leaves it out.
//!
//! The outcome of a message, [`CallResult`], and its [`Reject`] live here too,
//! beside the codes they carry.

use crate::ledger::Breakdown;
use std::fmt;

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
    /// The replica's error code when the message failed in execution (a trap,
    /// an exceeded limit, a missing method, a refused `inspect_message`);
    /// `None` for a reply and for the canister's own `msg_reject`.
    pub error: Option<ErrorCode>,
    /// Instructions the message used: what `performance_counter(0)` would read at
    /// its end, plus the charges the replica makes after the message (the heap
    /// dirty-page charge of update, init and upgrade messages under
    /// [`crate::Metering::PocketIc13`]).
    pub instructions: u64,
    /// Where those instructions went.
    pub breakdown: Breakdown,
    /// Text of each `debug_print` of the message, in order.
    pub debug_output: Vec<String>,
}

impl CallResult {
    /// A message that never ran, rejected with `code` and `message`.
    pub(crate) fn reject(code: RejectCode, message: String) -> CallResult {
        CallResult {
            reply: Err(Reject { code, message }),
            error: None,
            instructions: 0,
            breakdown: Breakdown::default(),
            debug_output: Vec::new(),
        }
    }

    /// A message that failed before it ran with the replica's `error` and `message` (the
    /// reject code is the error's; the message is not prefixed with the code).
    pub(crate) fn failed(error: ErrorCode, message: String) -> CallResult {
        CallResult {
            error: Some(error),
            ..CallResult::reject(error.reject_code(), message)
        }
    }
}

/// The replica's `ErrorCode`s icrun produces (rs/types/error_types/src/lib.rs:
/// the hundreds digit is the reject code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// IC0301: the canister does not exist.
    CanisterNotFound = 301,
    /// IC0406: `canister_inspect_message` did not accept the message.
    CanisterRejectedMessage = 406,
    /// IC0502: a Wasm trap (unreachable, heap out of bounds, ...).
    CanisterTrapped = 502,
    /// IC0503: `ic0.trap`.
    CanisterCalledTrap = 503,
    /// IC0504: an ic0 function used against the interface specification.
    CanisterContractViolation = 504,
    /// IC0505: the Wasm module is not valid.
    CanisterInvalidWasm = 505,
    /// IC0506: an ingress call nobody answered.
    CanisterDidNotReply = 506,
    /// IC0513: a callback whose table index does not exist.
    CanisterFunctionNotFound = 513,
    /// IC0522: the instruction limit of a message was exceeded.
    CanisterInstructionLimitExceeded = 522,
    /// IC0524: too much stable memory dirtied by one message.
    CanisterMemoryAccessLimitExceeded = 524,
    /// IC0527: a composite query called as an update.
    CompositeQueryCalledInReplicatedMode = 527,
    /// IC0536: the method is not exported.
    CanisterMethodNotFound = 536,
    /// IC0537: the canister has no Wasm module.
    CanisterWasmModuleNotFound = 537,
}

impl ErrorCode {
    /// The reject code of errors with this code (its hundreds digit, as the
    /// replica's `From<ErrorCode> for RejectCode` maps them).
    pub fn reject_code(self) -> RejectCode {
        match self as u16 / 100 {
            1 => RejectCode::SysFatal,
            2 => RejectCode::SysTransient,
            3 => RejectCode::DestinationInvalid,
            4 => RejectCode::CanisterReject,
            _ => RejectCode::CanisterError,
        }
    }

    /// The reject of a `UserError` with this code and `description`:
    /// `IC0xxx: <description>`.
    pub fn reject(self, description: &str) -> Reject {
        Reject {
            code: self.reject_code(),
            message: format!("{self}: {description}"),
        }
    }

    /// The reject of an execution error of canister `canister` (textual id):
    /// `IC0xxx: Error from Canister <id>: <error>`.
    pub fn canister_reject(self, canister: &str, error: &str) -> Reject {
        self.reject(&format!("Error from Canister {canister}: {error}"))
    }
}

impl fmt::Display for ErrorCode {
    /// `IC` and the code on four digits, e.g. `IC0503`, as the replica displays it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IC{:04}", *self as u16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_display_and_map_to_reject_codes() {
        assert_eq!(ErrorCode::CanisterCalledTrap.to_string(), "IC0503");
        assert_eq!(ErrorCode::CanisterNotFound.to_string(), "IC0301");
        assert_eq!(
            ErrorCode::CanisterNotFound.reject_code(),
            RejectCode::DestinationInvalid
        );
        assert_eq!(
            ErrorCode::CanisterRejectedMessage.reject_code(),
            RejectCode::CanisterReject
        );
        let reject = ErrorCode::CanisterMethodNotFound
            .canister_reject("x", "Canister has no update method 'm'.");
        assert_eq!(reject.code, RejectCode::CanisterError);
        assert_eq!(
            reject.message,
            "IC0536: Error from Canister x: Canister has no update method 'm'."
        );
    }
}
