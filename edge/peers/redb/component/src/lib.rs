//! The redb peer as a `wasi:http/proxy` component, for `wasmtime serve`: the edge's
//! HTTP+JSON API (`userstore::edge::api`) on a [`userstore_redb::RedbStore`] in the file
//! `USERSTORE_DATA` (default `/data/userstore.db`; `USERSTORE_ENGINE` is ignored). Built for
//! `wasm32-wasip2` (`scripts/build_edge_peers.sh`); natively it is empty.

#[cfg(target_os = "wasi")]
mod component {
    use userstore::edge::api::{self, Failure};
    use userstore::edge::session::serve_store;
    use userstore::edge::wasi_http;
    use userstore_peer_common::session::peer_config;
    use userstore_redb::{RedbStore, ENGINE_NAME};
    use wasi::http::types::{IncomingRequest, ResponseOutparam};

    wasi::http::proxy::export!(Component);

    /// The component.
    struct Component;

    impl wasi::exports::http::incoming_handler::Guest for Component {
        fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
            wasi_http::handle(request, response_out, |request| {
                match peer_config(|name| std::env::var(name).ok()) {
                    Ok(config) => serve_store(
                        &config,
                        request,
                        ENGINE_NAME,
                        RedbStore::open,
                        |store: &RedbStore| Some(store.io().into()),
                    ),
                    Err(error) => api::respond(Err(Failure::Store(error))),
                }
            });
        }
    }
}
