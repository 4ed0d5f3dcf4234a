//! Who calls the canisters, and what their replies hold.

use candid::Principal;
use icrun::CallResult;
use userstore::StoreError;

/// The principal that installs and writes (a writer by default).
pub(crate) fn owner() -> Principal {
    Principal::from_slice(&[0x11; 29])
}

/// The reply decoded as `Result<T, StoreError>`.
pub(crate) fn decoded<T: candid::CandidType + for<'de> serde::Deserialize<'de>>(
    result: &CallResult,
    what: &str,
) -> Result<Result<T, StoreError>, String> {
    let bytes = result
        .reply
        .as_ref()
        .map_err(|reject| format!("{what} rejected: {reject}"))?;
    candid::decode_one(bytes).map_err(|error| format!("{what}: {error}"))
}

/// The `Ok` value of the reply.
pub(crate) fn checked<T: candid::CandidType + for<'de> serde::Deserialize<'de>>(
    result: &CallResult,
    what: &str,
) -> Result<T, String> {
    decoded::<T>(result, what)?.map_err(|error| format!("{what}: {error}"))
}
