//! Writes need the host's bearer token (`Authorization: Bearer <token>`); reads are public.

use crate::edge::failure::Failure;
use crate::edge::http::Request;

/// Checks a write's credential against `token`, the host's write token (`None`: the host
/// takes no writes). Runs before the data file is opened, so a refused write changes nothing.
pub fn authorize(token: Option<&str>, request: &Request) -> Result<(), Failure> {
    let Some(token) = token else {
        return Err(Failure::WritesDisabled);
    };
    let Some(presented) = request.header("authorization").and_then(bearer) else {
        return Err(Failure::MissingCredential);
    };
    if constant_time_eq(presented, token.as_bytes()) {
        Ok(())
    } else {
        Err(Failure::WrongCredential)
    }
}

/// The token of a `Bearer <token>` header value (the scheme in any case).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let scheme = value.get(..7)?;
    if !scheme.eq_ignore_ascii_case(b"bearer ") {
        return None;
    }
    let token = value.get(7..)?.trim_ascii();
    (!token.is_empty()).then_some(token)
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths only, not on where
/// they differ: a caller cannot find the token byte by byte by timing refusals.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut difference = u8::from(a.len() != b.len());
    for index in 0..a.len().max(b.len()) {
        let x = a.get(index).copied().unwrap_or(0);
        let y = b.get(index).copied().unwrap_or(0);
        difference |= std::hint::black_box(x ^ y);
    }
    difference == 0
}
