//! Why a request got no `Ok`, and the one place where that becomes an HTTP status and the
//! reply's `Err`.

use crate::edge::http::MAX_BODY_BYTES;
use crate::edge::route::Route;
use crate::error::StoreError;
use candid::Principal;

/// Why a request got no `Ok`: a store error, or one the HTTP layer raises before the store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The store's (or the request's content's) error.
    Store(StoreError),
    /// A write without an `Authorization: Bearer` credential.
    MissingCredential,
    /// A write with a bearer token that is not the host's.
    WrongCredential,
    /// A write on a host that has no write token (`USERSTORE_WRITE_TOKEN` unset).
    WritesDisabled,
    /// No route has this path.
    UnknownRoute(String),
    /// The route does not answer this method.
    MethodNotAllowed {
        /// The method sent.
        method: String,
        /// The route.
        route: Route,
    },
    /// The body is longer than [`MAX_BODY_BYTES`].
    BodyTooLarge,
    /// The data file's lock could not be taken before the deadline.
    Busy(String),
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        Self::Store(error)
    }
}

/// The HTTP status of every failure: the one place errors become statuses.
pub fn status(failure: &Failure) -> u16 {
    match failure {
        Failure::Store(error) => match error {
            StoreError::NotFound { .. } => 404,
            StoreError::DuplicateId { .. } => 409,
            StoreError::UsernameNotFound { .. } => 404,
            StoreError::UsernameTaken { .. } => 409,
            StoreError::InvalidInput { .. } => 400,
            StoreError::LimitExceeded { .. } => 413,
            StoreError::Unauthorized { .. } => 403,
            StoreError::InvalidConfig { .. } => 400,
            StoreError::StorageFull { .. } => 507,
            StoreError::Storage { .. } => 500,
        },
        Failure::MissingCredential | Failure::WritesDisabled => 401,
        Failure::WrongCredential => 403,
        Failure::UnknownRoute(_) => 404,
        Failure::MethodNotAllowed { .. } => 405,
        Failure::BodyTooLarge => 413,
        Failure::Busy(_) => 503,
    }
}

/// The [`StoreError`] a failure is reported as (the `Err` of the reply), and its text.
pub fn error_of(failure: &Failure) -> (StoreError, String) {
    let unauthorized = StoreError::Unauthorized {
        caller: Principal::anonymous(),
    };
    match failure {
        Failure::Store(error) => (error.clone(), error.to_string()),
        Failure::MissingCredential => (
            unauthorized,
            "writes need an `Authorization: Bearer <token>` header".to_owned(),
        ),
        Failure::WrongCredential => (
            unauthorized,
            "the bearer token is not this host's".to_owned(),
        ),
        Failure::WritesDisabled => (
            unauthorized,
            "writes are disabled: the host has no write token (USERSTORE_WRITE_TOKEN is unset)"
                .to_owned(),
        ),
        Failure::UnknownRoute(path) => {
            let error = StoreError::invalid_input(format!("no route {path}"));
            let text = error.to_string();
            (error, text)
        }
        Failure::MethodNotAllowed { method, route } => {
            let error = StoreError::invalid_input(format!(
                "{} does not answer {method}; it answers {}",
                route.path,
                route.methods.join(", ")
            ));
            let text = error.to_string();
            (error, text)
        }
        Failure::BodyTooLarge => {
            let error =
                StoreError::invalid_input(format!("the body exceeds {MAX_BODY_BYTES} bytes"));
            let text = error.to_string();
            (error, text)
        }
        Failure::Busy(reason) => {
            let error = StoreError::storage("the data file is busy", reason);
            let text = error.to_string();
            (error, text)
        }
    }
}
