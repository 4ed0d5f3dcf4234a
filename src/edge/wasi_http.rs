//! The `wasi:http/proxy` glue every edge component shares (the edge component in `edge/` and
//! the peers' in `edge/peers/*/component`): read the incoming request, serve it, write the
//! response. Each component exports its `Guest` with `wasi::http::proxy::export!` and calls
//! [`handle`]. WASI only.

use crate::edge::api::{self, Failure, MAX_BODY_BYTES};
use crate::edge::http::{Request, Response};
use crate::error::StoreError;
use std::io::{Read, Write};
use wasi::http::types::{
    Fields, IncomingRequest, Method, OutgoingBody, OutgoingResponse, ResponseOutparam,
};

/// Reads `request`, answers it with `serve`, and sends the answer to `response_out`. A
/// request that cannot be read (an oversize or unreadable body) is answered without `serve`.
pub fn handle(
    request: IncomingRequest,
    response_out: ResponseOutparam,
    serve: impl FnOnce(&Request) -> Response,
) {
    let response = match read_request(&request) {
        Ok(request) => serve(&request),
        Err(failure) => api::respond(Err(failure)),
    };
    write_response(response, response_out);
}

/// The request's method name.
fn method_name(method: Method) -> String {
    match method {
        Method::Get => "GET".to_owned(),
        Method::Head => "HEAD".to_owned(),
        Method::Post => "POST".to_owned(),
        Method::Put => "PUT".to_owned(),
        Method::Delete => "DELETE".to_owned(),
        Method::Connect => "CONNECT".to_owned(),
        Method::Options => "OPTIONS".to_owned(),
        Method::Trace => "TRACE".to_owned(),
        Method::Patch => "PATCH".to_owned(),
        Method::Other(other) => other,
    }
}

/// The request's method, path, headers and body; a body is read up to one byte over
/// [`MAX_BODY_BYTES`], so an oversize one is refused without being read whole.
fn read_request(request: &IncomingRequest) -> Result<Request, Failure> {
    let headers = request.headers().entries();
    let declared = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| std::str::from_utf8(value).ok()?.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > MAX_BODY_BYTES as u64) {
        return Err(Failure::BodyTooLarge);
    }
    let mut body = Vec::new();
    if let Ok(incoming) = request.consume() {
        if let Ok(mut stream) = incoming.stream() {
            (&mut stream)
                .take(MAX_BODY_BYTES as u64 + 1)
                .read_to_end(&mut body)
                .map_err(|error| {
                    Failure::Store(StoreError::invalid_input(format!(
                        "reading the body: {error}"
                    )))
                })?;
        }
    }
    Ok(Request {
        method: method_name(request.method()),
        path_with_query: request.path_with_query().unwrap_or_else(|| "/".to_owned()),
        headers,
        body,
    })
}

/// Sends `response`. Nothing is left to tell the client if sending fails.
fn write_response(response: Response, response_out: ResponseOutparam) {
    let entries: Vec<(String, Vec<u8>)> = response
        .headers
        .iter()
        .map(|(name, value)| (name.clone(), value.as_bytes().to_vec()))
        .collect();
    let headers = Fields::from_list(&entries).unwrap_or_else(|_| Fields::new());
    let outgoing = OutgoingResponse::new(headers);
    let _ = outgoing.set_status_code(response.status);
    let Ok(body) = outgoing.body() else {
        return;
    };
    ResponseOutparam::set(response_out, Ok(outgoing));
    if let Ok(mut stream) = body.write() {
        let _ = stream.write_all(&response.body);
        let _ = stream.flush();
    }
    let _ = OutgoingBody::finish(body, None);
}
