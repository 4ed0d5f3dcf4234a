//! The HTTP request and response as the edge layer sees them, independent of WASI.

use crate::limits::{MAX_BATCH_SIZE, MAX_USERNAME_BYTES};

/// The longest JSON text of one user in a batch: `{"id":9223372036854775807,"username":""}`
/// is 41 bytes, and each of the username's at most [`MAX_USERNAME_BYTES`] bytes takes at
/// most 6 escaped (`\u0001`); 64 bytes more for spaces and a comma.
pub const MAX_USER_JSON_BYTES: usize = 41 + 6 * MAX_USERNAME_BYTES + 64;

/// The largest request body accepted: a batch of [`MAX_BATCH_SIZE`] users at their longest,
/// plus 64 KiB of slack (brackets, whitespace). A larger body is refused with 413 unread, so
/// a body the engines' limits would refuse anyway costs no memory; a batch of more users in
/// fewer bytes is refused by the engine's own batch limit.
pub const MAX_BODY_BYTES: usize = MAX_BATCH_SIZE * MAX_USER_JSON_BYTES + 64 * 1024;

/// An HTTP request: what the component read from `wasi:http`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// The method, as sent (`GET`, `POST`, ...).
    pub method: String,
    /// The path with its query, e.g. `/get_user?id=1`.
    pub path_with_query: String,
    /// The headers, names in any case, values as bytes.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body. A reader stops after [`MAX_BODY_BYTES`]` + 1` bytes, so
    /// that an oversize body is seen as one without being read whole.
    pub body: Vec<u8>,
}

impl Request {
    /// A request with no headers.
    pub fn new(method: &str, path_with_query: &str, body: impl Into<Vec<u8>>) -> Self {
        Self {
            method: method.to_owned(),
            path_with_query: path_with_query.to_owned(),
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// This request with one more header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers
            .push((name.to_owned(), value.as_bytes().to_vec()));
        self
    }

    /// The first value of the header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_slice())
    }

    /// The path, without its query.
    pub fn path(&self) -> &str {
        self.path_with_query
            .split_once('?')
            .map_or(self.path_with_query.as_str(), |(path, _)| path)
    }

    /// The query (after `?`), empty when there is none.
    pub fn query(&self) -> &str {
        self.path_with_query
            .split_once('?')
            .map_or("", |(_, query)| query)
    }
}

/// An HTTP response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The headers, in order.
    pub headers: Vec<(String, String)>,
    /// The body (JSON).
    pub body: Vec<u8>,
}

impl Response {
    /// A JSON response with `status`.
    pub fn json(status: u16, body: Vec<u8>) -> Self {
        Self {
            status,
            headers: vec![("content-type".to_owned(), "application/json".to_owned())],
            body,
        }
    }

    /// The value of the header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    /// Sets the header `name`, replacing an earlier value.
    pub fn set_header(&mut self, name: &str, value: String) {
        self.headers
            .retain(|(key, _)| !key.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value));
    }
}
