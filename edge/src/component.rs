//! The component's export: every request goes through the library's `wasi:http/proxy` glue
//! ([`userstore::edge::wasi_http`]) to [`userstore::edge::serve`] with the host's settings.

use userstore::edge::api::{self, Failure};
use userstore::edge::{self, wasi_http, EdgeConfig};
use wasi::http::types::{IncomingRequest, ResponseOutparam};

wasi::http::proxy::export!(Component);

/// The component.
struct Component;

impl wasi::exports::http::incoming_handler::Guest for Component {
    fn handle(request: IncomingRequest, response_out: ResponseOutparam) {
        wasi_http::handle(
            request,
            response_out,
            |request| match EdgeConfig::from_env() {
                Ok(config) => edge::serve(&config, request),
                Err(error) => api::respond(Err(Failure::Store(error))),
            },
        );
    }
}
