//! The SQLite peer as a `wasi:http/proxy` component, for `wasmtime serve`: the edge's
//! HTTP+JSON API (`userstore::edge::api`) on a [`userstore_sqlite_file::SqliteFileStore`] in
//! the file `USERSTORE_DATA` (default `/data/userstore.db`; `USERSTORE_ENGINE` is ignored),
//! with `USERSTORE_SQLITE_JOURNAL_MODE` (default `delete`) and `USERSTORE_SQLITE_SYNCHRONOUS`
//! (default `full`). Built for `wasm32-wasip2` (`scripts/build_edge_peers.sh`, which sets up
//! the C compiler for SQLite); natively it is empty.

#[cfg(target_os = "wasi")]
mod component {
    use userstore::edge::api::{self, Failure};
    use userstore::edge::session::serve_store;
    use userstore::edge::wasi_http;
    use userstore::StoreError;
    use userstore_peer_common::session::peer_config;
    use userstore_sqlite_file::{
        JournalMode, SqliteFileConfig, SqliteFileStore, Synchronous, ENGINE_NAME,
    };
    use wasi::http::types::{IncomingRequest, ResponseOutparam};

    wasi::http::proxy::export!(Component);

    /// The component.
    struct Component;

    /// The SQLite settings from the environment.
    fn sqlite_config() -> Result<SqliteFileConfig, StoreError> {
        let mut config = SqliteFileConfig::default();
        if let Ok(mode) = std::env::var("USERSTORE_SQLITE_JOURNAL_MODE") {
            config.journal_mode = JournalMode::from_setting(&mode)?;
        }
        if let Ok(level) = std::env::var("USERSTORE_SQLITE_SYNCHRONOUS") {
            config.synchronous = Synchronous::from_setting(&level)?;
        }
        Ok(config)
    }

    impl wasi::exports::http::incoming_handler::Guest for Component {
        fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
            wasi_http::handle(request, response_out, |request| {
                let settings = peer_config(|name| std::env::var(name).ok())
                    .and_then(|config| Ok((config, sqlite_config()?)));
                match settings {
                    Ok((config, sqlite)) => serve_store(
                        &config,
                        request,
                        ENGINE_NAME,
                        |path| SqliteFileStore::open_with(path, sqlite),
                        |store: &SqliteFileStore| Some(store.io().into()),
                    ),
                    Err(error) => api::respond(Err(Failure::Store(error))),
                }
            });
        }
    }
}
