//! The edge layer's request decoding and dispatch: any bytes as an HTTP request (method, path
//! and query, credential, body) to a page tree holding a few users. It must never panic, must
//! answer with one of the statuses the API documents and a JSON body, and a request not
//! answered 200 must leave the table as it was.
//!
//! Input: the first byte picks the method (low bits) and whether the write token is sent
//! (high bit); then the path and query, up to a zero byte; the rest is the body.

use ic_stable_structures::VectorMemory;
use userstore::edge::api::{handle, Info};
use userstore::edge::http::Request;
use userstore::{PerRequestPageTree, User, UserStore};

const TOKEN: &str = "fuzz-token";
const METHODS: [&str; 6] = ["GET", "POST", "PUT", "DELETE", "post", "HEAD"];
const STATUSES: [u16; 11] = [200, 400, 401, 403, 404, 405, 409, 413, 500, 503, 507];

/// The target.
pub fn check(bytes: &[u8]) {
    let Some((&selector, rest)) = bytes.split_first() else {
        return;
    };
    let method = METHODS[usize::from(selector & 0x7f) % METHODS.len()];
    let end_of_path = rest
        .iter()
        .position(|byte| *byte == 0)
        .unwrap_or(rest.len());
    let path = String::from_utf8_lossy(&rest[..end_of_path]);
    let body = rest.get(end_of_path + 1..).unwrap_or_default();
    let mut request = Request::new(method, &path, body);
    if selector & 0x80 != 0 {
        let credential = format!("Bearer {TOKEN}").into_bytes();
        request.headers.push(("authorization".into(), credential));
    }
    // The page tree as the edge component opens it.
    let mut store =
        PerRequestPageTree::open_per_request(VectorMemory::default()).expect("an empty page tree");
    let users = [
        User::new(1, "alice"),
        User::new(5, "bob"),
        User::new(9, "carol"),
    ];
    store.insert_batch(&users).expect("three users");
    let before = store.page(None, 100).expect("the table");
    let response = handle(&mut store, &request, Some(TOKEN), &Info::default());
    assert!(
        STATUSES.contains(&response.status),
        "status {} for {method} {path}",
        response.status
    );
    let reply: Result<serde_json::Value, _> = serde_json::from_slice(&response.body);
    assert!(
        reply.is_ok(),
        "a reply that is not JSON: {:?}",
        response.body
    );
    if response.status != 200 {
        let after = store.page(None, 100).expect("the table");
        assert_eq!(after, before, "a refused {method} {path} changed the table");
    }
}
