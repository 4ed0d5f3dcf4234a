//! The row type every engine stores.

use candid::CandidType;
use serde::{Deserialize, Serialize};

/// One row of the user table: a numeric id and a username.
///
/// Ids are unique within a store and at most `MAX_USER_ID` (2^63 - 1); usernames are
/// non-empty UTF-8 of at most `MAX_USERNAME_BYTES` (128) bytes. Both rules are checked by
/// every store before anything is written (see the `limits` module).
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash)]
pub struct User {
    /// The primary key.
    pub id: u64,
    /// The user's name.
    pub username: String,
}

impl User {
    /// Builds a user from an id and anything that converts into a `String`.
    pub fn new(id: u64, username: impl Into<String>) -> Self {
        Self {
            id,
            username: username.into(),
        }
    }
}
