//! The error values every store and canister method returns.

use candid::{CandidType, Principal};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Which published limit a request exceeded (see the `limits` module).
#[derive(CandidType, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    /// Bytes of one username (`MAX_USERNAME_BYTES`).
    UsernameBytes,
    /// Users in one batch insert (`MAX_BATCH_SIZE`).
    BatchSize,
    /// Users in one page (`MAX_PAGE_SIZE`).
    PageSize,
    /// The largest id a store accepts (`MAX_USER_ID`).
    UserId,
    /// Rows of one batch that fit the canister's instruction budget for one message
    /// (see the `budget` module); `max` is how many fit.
    InstructionBudget,
}

/// Everything that can go wrong, as a value a caller can act on.
///
/// Every variant except `Storage` is raised before the store changes, so a
/// request that fails with it leaves the table exactly as it was.
#[derive(CandidType, Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// A user with this id already exists (or appears twice in one batch).
    DuplicateId {
        /// The id that clashed.
        id: u64,
    },
    /// No user has this id.
    NotFound {
        /// The id that was looked up.
        id: u64,
    },
    /// Another user has this username (usernames are unique, compared as exact UTF-8 bytes),
    /// or a batch gives it to two users.
    UsernameTaken {
        /// The username that clashed.
        username: String,
    },
    /// No user has this username.
    UsernameNotFound {
        /// The username that was looked up.
        username: String,
    },
    /// The request is malformed; `reason` says how.
    InvalidInput {
        /// A human-readable explanation.
        reason: String,
    },
    /// The request exceeds one of the published limits.
    LimitExceeded {
        /// Which limit.
        limit: Limit,
        /// The largest value allowed.
        max: u64,
        /// The value the request had.
        actual: u64,
    },
    /// The caller may not write to this store.
    Unauthorized {
        /// The principal that made the call.
        caller: Principal,
    },
    /// A store configuration that cannot be applied (for example a SQLite journal mode the
    /// storage does not support, or a page size that differs from an existing database's).
    InvalidConfig {
        /// A human-readable explanation.
        reason: String,
    },
    /// The canister's stable memory is within [`crate::limits::HEADROOM_PAGES`] of the limit
    /// its settings give (`InitArgs.stable_memory_limit_pages`): inserts are refused, while
    /// updates and deletes keep working in the room left for them.
    StorageFull {
        /// Stable memory in use, in 64 KiB pages.
        used_pages: u64,
        /// The limit, in 64 KiB pages.
        limit_pages: u64,
    },
    /// The storage engine failed; `message` is the engine's own text.
    Storage {
        /// The engine's error message, with context.
        message: String,
    },
}

impl StoreError {
    /// Shorthand for [`StoreError::InvalidInput`].
    pub fn invalid_input(reason: impl Into<String>) -> Self {
        Self::InvalidInput {
            reason: reason.into(),
        }
    }

    /// Shorthand for [`StoreError::InvalidConfig`].
    pub fn invalid_config(reason: impl Into<String>) -> Self {
        Self::InvalidConfig {
            reason: reason.into(),
        }
    }

    /// Shorthand for [`StoreError::Storage`], prefixing the engine's message with context.
    pub fn storage(context: &str, engine_message: impl fmt::Display) -> Self {
        Self::Storage {
            message: format!("{context}: {engine_message}"),
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DuplicateId { id } => write!(f, "a user with id {id} already exists"),
            Self::NotFound { id } => write!(f, "no user with id {id}"),
            Self::UsernameTaken { username } => {
                write!(f, "another user already has the username {username:?}")
            }
            Self::UsernameNotFound { username } => write!(f, "no user named {username:?}"),
            Self::InvalidInput { reason } => write!(f, "invalid input: {reason}"),
            Self::LimitExceeded {
                limit: Limit::InstructionBudget,
                max,
                actual,
            } => write!(
                f,
                "a batch of {actual} rows might exceed the instruction limit of one message; \
                 at most {max} rows fit, send the rest in further calls"
            ),
            Self::LimitExceeded { limit, max, actual } => {
                write!(f, "{limit:?} limit exceeded: {actual} > {max}")
            }
            Self::Unauthorized { caller } => write!(f, "{caller} may not write to this store"),
            Self::InvalidConfig { reason } => write!(f, "invalid configuration: {reason}"),
            Self::StorageFull {
                used_pages,
                limit_pages,
            } => write!(
                f,
                "stable memory is full: {used_pages} of {limit_pages} pages in use; inserts are \
                 refused, deletes and updates still work"
            ),
            Self::Storage { message } => write!(f, "storage failure: {message}"),
        }
    }
}

impl std::error::Error for StoreError {}
