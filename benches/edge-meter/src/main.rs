//! `edge-meter`: a metering edge host. It serves a `wasi:http/proxy` component the way
//! `wasmtime serve` does, with the same command line (the part the benchmark and the tests
//! use), and answers every request with the Wasm instructions the component executed for it,
//! in the `x-wasm-instructions` header: the figure that does not depend on the machine's load,
//! which `wasmtime serve` does not report (its `-W fuel=N` only traps when the fuel runs out).
//!
//! The count is wasmtime's fuel: one unit per Wasm operator, none for `nop`, `drop`, `block`,
//! `loop` and `end`, whose cost is in the operators around them (wasmtime's
//! `Store::set_fuel`). A fresh instance per request (the default, as `wasmtime serve`'s)
//! counts the instantiation too: what a request pays on a host that reuses nothing. With
//! `--max-instance-reuse-count N` one instance serves up to N requests, one at a time, and
//! each request counts only its own call.
//!
//! The response is held until the component's handler has returned, so that the count is the
//! whole request's; the body is then sent in one piece. This host is for counting, not for
//! timing: latencies are measured on `wasmtime serve` itself.
//!
//! Usage: edge-meter serve [-S cli] [--dir HOST::GUEST]... [--addr IP:PORT]
//!                         [--env NAME=VALUE]... [--max-instance-reuse-count N] COMPONENT

mod options;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use options::Options;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::Mutex;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{Deterministic, FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::p2::bindings::{Proxy, ProxyPre};
use wasmtime_wasi_http::{
    RequestOptions, WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView,
};

/// The response header that carries the count.
const INSTRUCTIONS_HEADER: &str = "x-wasm-instructions";

/// The fuel a store starts with: far more than any request executes, so that the count never
/// traps (wasmtime traps a store whose fuel reaches zero).
const FUEL: u64 = 1 << 62;

/// How long after its handler returns a response may take to arrive.
const RESPONSE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The bytes the deterministic random sources repeat.
const RANDOM_BYTES: [u8; 8] = [0x9e, 0x37, 0x79, 0xb9, 0x7f, 0x4a, 0x7c, 0x15];

fn main() {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("edge-meter: {message}");
            std::process::exit(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("edge-meter: {error}");
            std::process::exit(1);
        }
    };
    if let Err(error) = runtime.block_on(serve(options)) {
        eprintln!("edge-meter: {error:#}");
        std::process::exit(1);
    }
}

/// A store's data: WASI with the preopened directories and environment, and wasi-http.
struct Host {
    table: ResourceTable,
    wasi: WasiCtx,
    http: WasiHttpCtx,
    hooks: NoOutgoingRequests,
}

impl WasiView for Host {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for Host {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

/// wasi-http's hooks: every outgoing request refused. The components make none, and a host
/// for counting must not reach the network.
struct NoOutgoingRequests;

/// What an outgoing request would answer: a response and the future that sends its body.
type Sent = wasmtime_wasi_http::Result<(
    http::Response<WasiBody>,
    Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
)>;

impl WasiHttpHooks for NoOutgoingRequests {
    fn send_request(
        &mut self,
        _request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _body: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> Box<dyn Future<Output = Sent> + Send> {
        Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) })
    }
}

/// What every request needs: the prepared component, and the instance kept between
/// requests when instances are reused.
struct Server {
    options: Options,
    pre: ProxyPre<Host>,
    reused: Mutex<Option<Reused>>,
}

/// An instance kept for the next request, with the requests it has served.
struct Reused {
    store: Store<Host>,
    proxy: Proxy,
    served: usize,
}

async fn serve(options: Options) -> wasmtime::Result<()> {
    let mut config = Config::new();
    config.consume_fuel(true);
    let engine = Engine::new(&config)?;
    let component = Component::from_file(&engine, &options.component)?;
    let mut linker = Linker::new(&engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
    let pre = ProxyPre::new(linker.instantiate_pre(&component)?)?;
    let listener = TcpListener::bind(options.addr).await?;
    // The line the benchmark's launcher waits for, as `wasmtime serve` prints it.
    eprintln!("Serving HTTP on http://{}/", listener.local_addr()?);
    let server = Arc::new(Server {
        options,
        pre,
        reused: Mutex::new(None),
    });
    loop {
        let (connection, _) = listener.accept().await?;
        let server = Arc::clone(&server);
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let server = Arc::clone(&server);
                async move { Ok::<_, Infallible>(server.answer(request).await) }
            });
            if let Err(error) = http1::Builder::new()
                .serve_connection(TokioIo::new(connection), service)
                .await
            {
                eprintln!("edge-meter: connection: {error}");
            }
        });
    }
}

impl Server {
    /// The component's answer with its count, or a 500 saying why there is none.
    async fn answer(&self, request: hyper::Request<Incoming>) -> hyper::Response<Full<Bytes>> {
        match self.metered(request).await {
            Ok(response) => response,
            Err(error) => {
                eprintln!("edge-meter: {error:#}");
                let mut response =
                    hyper::Response::new(Full::new(Bytes::from(format!("edge-meter: {error:#}"))));
                *response.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
                response
            }
        }
    }

    /// One request through the component, on a fresh instance or the reused one: the
    /// component's response, whole, with the instructions counted in its header.
    async fn metered(
        &self,
        request: hyper::Request<Incoming>,
    ) -> wasmtime::Result<hyper::Response<Full<Bytes>>> {
        // One request at a time: a count is one request's only.
        let mut reused = self.reused.lock().await;
        let (mut store, proxy, served) = match reused.take() {
            Some(kept) => (kept.store, kept.proxy, kept.served),
            None => {
                // The store's fuel is set before instantiation: a fresh instance's request
                // counts its instantiation.
                let mut store = self.new_store()?;
                let proxy = self.pre.instantiate_async(&mut store).await?;
                (store, proxy, 0)
            }
        };
        let fuel_before = if served == 0 { FUEL } else { store.get_fuel()? };
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let incoming = store
            .data_mut()
            .http()
            .new_incoming_request(Scheme::Http, request)?;
        let outparam = store.data_mut().http().new_response_outparam(sender)?;
        let (parts, body) = {
            let call = proxy
                .wasi_http_incoming_handler()
                .call_handle(&mut store, incoming, outparam);
            let response = async {
                let response = receiver
                    .await
                    .map_err(|_| wasmtime::format_err!("the component set no response"))?
                    .map_err(|code| wasmtime::format_err!("the component failed: {code:?}"))?;
                let (parts, body) = response.into_parts();
                let body = body.collect().await?.to_bytes();
                wasmtime::Result::<_>::Ok((parts, body))
            };
            // The handler and the reading of its body run together: a body larger than the
            // host's buffer waits for its reader. A handler that returns without setting its
            // response leaves nothing to wait for.
            let (called, response) = tokio::join!(call, async {
                tokio::time::timeout(RESPONSE_TIMEOUT, response).await
            });
            called?;
            response.map_err(|_| {
                wasmtime::format_err!("no response within {RESPONSE_TIMEOUT:?} of the request")
            })??
        };
        let instructions = fuel_before - store.get_fuel()?;
        if served + 1 < self.options.max_instance_reuse_count {
            *reused = Some(Reused {
                store,
                proxy,
                served: served + 1,
            });
        }
        let mut response = hyper::Response::from_parts(parts, Full::new(body));
        response.headers_mut().insert(
            INSTRUCTIONS_HEADER,
            hyper::header::HeaderValue::from(instructions),
        );
        Ok(response)
    }

    /// A store for a fresh instance: the preopened directories and the environment of the
    /// command line, the component's standard error on ours, a deterministic random source
    /// (so that a count does not depend on the hash seeds it draws), and all the fuel.
    fn new_store(&self) -> wasmtime::Result<Store<Host>> {
        let mut builder = WasiCtxBuilder::new();
        builder.inherit_stderr();
        builder.secure_random(Deterministic::new(RANDOM_BYTES.to_vec()));
        builder.insecure_random(Deterministic::new(RANDOM_BYTES.to_vec()));
        builder.insecure_random_seed(0);
        for (name, value) in &self.options.env {
            builder.env(name, value);
        }
        for (host, guest) in &self.options.dirs {
            builder.preopened_dir(host, guest, FsPerms::ReadWrite)?;
        }
        let host = Host {
            table: ResourceTable::new(),
            wasi: builder.build(),
            http: WasiHttpCtx::new(),
            hooks: NoOutgoingRequests,
        };
        let mut store = Store::new(self.pre.engine(), host);
        store.set_fuel(FUEL)?;
        Ok(store)
    }
}
