//! The row type every engine stores.

use candid::CandidType;
use serde::{Deserialize, Serialize};

/// Longest username, in UTF-8 bytes: a published limit ([`crate::limits`]).
pub const MAX_USERNAME_BYTES: usize = 128;

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

/// A username held on the stack: what a store returns into, or reads from, when a call must
/// not allocate (every heap allocation touches heap pages, which the IC charges for,
/// docs/metering.md §6). Holds up to [`MAX_USERNAME_BYTES`] bytes of UTF-8.
#[derive(Clone, Copy)]
pub struct UsernameBuf {
    bytes: [u8; MAX_USERNAME_BYTES],
    len: u8,
}

impl Default for UsernameBuf {
    fn default() -> Self {
        Self {
            bytes: [0; MAX_USERNAME_BYTES],
            len: 0,
        }
    }
}

impl UsernameBuf {
    /// The username held.
    pub fn as_str(&self) -> &str {
        // Only `set` fills the buffer, from a `&str` that fits.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or_default()
    }

    /// Holds `username`; `false` (holding nothing) if it is longer than a username may be.
    pub fn set(&mut self, username: &str) -> bool {
        self.set_bytes(username.as_bytes())
    }

    /// Holds `bytes`, which must be UTF-8; `false` (holding nothing) if they are longer than a
    /// username may be or not UTF-8.
    pub fn set_bytes(&mut self, bytes: &[u8]) -> bool {
        if bytes.len() > self.bytes.len() || std::str::from_utf8(bytes).is_err() {
            self.len = 0;
            return false;
        }
        self.bytes[..bytes.len()].copy_from_slice(bytes);
        self.len = bytes.len() as u8;
        true
    }

    /// The buffer to read a username of `len` bytes into, to be checked by
    /// [`UsernameBuf::commit`]; `None` if `len` is longer than a username may be.
    pub fn space(&mut self, len: usize) -> Option<&mut [u8]> {
        self.len = 0;
        self.bytes.get_mut(..len)
    }

    /// Holds the `len` bytes written into [`UsernameBuf::space`] if they are UTF-8.
    pub fn commit(&mut self, len: usize) -> bool {
        match self.bytes.get(..len) {
            Some(bytes) if std::str::from_utf8(bytes).is_ok() => {
                self.len = len as u8;
                true
            }
            _ => false,
        }
    }
}

impl std::fmt::Debug for UsernameBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("UsernameBuf").field(&self.as_str()).finish()
    }
}
