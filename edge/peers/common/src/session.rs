//! One request as one session on a peer's data file, as `userstore::edge::session` serves
//! one on a `FileMemory`: parse and authorize, take the data file's lock, open the store,
//! run the call. The difference: a peer commits inside every write call (its own
//! transaction), so there is no commit or rollback around the call, and no engine header
//! (the peer records its engine in its own file and refuses another's).

use std::path::Path;
use userstore::edge::api::{self, Info};
use userstore::edge::lock::Lock;
use userstore::edge::session::lock_settings;
use userstore::edge::{auth, EdgeConfig, Request, Response};
use userstore::{StoreError, UserStore};

/// The bytes of one 64 KiB page, the unit `stats` reports the data's size in.
const PAGE_BYTES: u64 = 64 * 1024;

/// The host settings of a peer: `userstore::edge::config` from `lookup` (an environment),
/// except `USERSTORE_ENGINE`, which names the edge's own engines, not a peer.
pub fn peer_config(lookup: impl Fn(&str) -> Option<String>) -> Result<EdgeConfig, StoreError> {
    EdgeConfig::from_lookup(|name| match name {
        "USERSTORE_ENGINE" => None,
        other => lookup(other),
    })
}

/// Serves one request on the data file `config.data`, with the store `open` opens there;
/// `engine` is the peer's name as `config` and `stats` report it.
pub fn serve_store<S: UserStore>(
    config: &EdgeConfig,
    request: &Request,
    engine: &'static str,
    open: impl FnOnce(&Path) -> Result<S, StoreError>,
) -> Response {
    let call = match api::parse(request) {
        Ok(call) => call,
        Err(failure) => return api::respond(Err(failure)),
    };
    if call.writes() {
        if let Err(failure) = auth::authorize(config.write_token.as_deref(), request) {
            return api::respond(Err(failure));
        }
    }
    // Declared before the store, so it is released after the store is closed.
    let _lock = match Lock::acquire(&config.data, &lock_settings(config)) {
        Ok(lock) => lock,
        Err(failure) => return api::respond(Err(failure)),
    };
    let outcome = open(&config.data).and_then(|mut store| {
        let info = Info {
            engine,
            writes_enabled: config.write_token.is_some(),
            data_pages: data_pages(&config.data),
        };
        api::execute(&mut store, &call, &info)
    });
    api::respond(outcome.map_err(Into::into))
}

/// The data file's size in 64 KiB pages, rounded up; 0 if it cannot be read.
fn data_pages(path: &Path) -> u64 {
    std::fs::metadata(path)
        .map(|metadata| metadata.len().div_ceil(PAGE_BYTES))
        .unwrap_or(0)
}
