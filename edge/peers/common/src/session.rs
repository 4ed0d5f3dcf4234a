//! A peer as the edge host's engine: its settings. The session itself (parse, authorize,
//! lock, open, run; no commit or rollback, as a peer commits inside every write call) is the
//! library's `userstore::edge::session::serve_store`, beside the edge's own `serve_on`.

use userstore::edge::EdgeConfig;
use userstore::StoreError;

/// The host settings of a peer: `userstore::edge::config` from `lookup` (an environment),
/// except `USERSTORE_ENGINE`, which names the edge's own engines, not a peer.
pub fn peer_config(lookup: impl Fn(&str) -> Option<String>) -> Result<EdgeConfig, StoreError> {
    EdgeConfig::from_lookup(|name| match name {
        "USERSTORE_ENGINE" => None,
        other => lookup(other),
    })
}
