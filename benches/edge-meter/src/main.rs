//! `edge-meter`: a metering edge host. It serves a `wasi:http/proxy` component the way
//! `wasmtime serve` does, with the same command line (the part the benchmark and the tests
//! use), and answers every request with the Wasm instructions the component executed for it,
//! in the `x-wasm-instructions` header: the figure that does not depend on the machine's load,
//! which `wasmtime serve` does not report (its `-W fuel=N` only traps when the fuel runs out).
//!
//! The count is wasmtime's fuel with a cost table that makes it an operator count
//! ([`instruction_costs`]): one per Wasm operator executed, none for the structural ones
//! (`nop`, `drop`, `block`, `loop`, `else`, `end`, `return`, `unreachable`: wasmtime's own
//! flat costs), and one for a bulk-memory or table operation whatever its length (wasmtime's
//! default fuel adds one per byte that `memory.copy` or `memory.fill` moves, which would make
//! the count mostly bytes). A fresh instance per request (the default, as `wasmtime serve`'s)
//! counts the instantiation too: what a request pays on a host that reuses nothing. With
//! `--max-instance-reuse-count N` one instance serves up to N requests, one at a time, and
//! each request counts only its own call.
//!
//! The response is held until the component's handler has returned, so that the count is the
//! whole request's; the body is then sent in one piece. A handler that runs past
//! [`CALL_DEADLINE`] is interrupted and answered with a 500, and its instance dropped. This
//! host is for counting, not for timing: latencies are measured on `wasmtime serve` itself.
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
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::Mutex;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, OperatorCost, Store, VariableOperatorCost};
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
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a handler may run before it is interrupted (the largest batch takes well under a
/// second on this host).
const CALL_DEADLINE: Duration = Duration::from_secs(120);

/// The period of the engine's epoch, the clock of [`CALL_DEADLINE`].
const EPOCH_TICK: Duration = Duration::from_millis(100);

/// [`CALL_DEADLINE`] in epoch ticks.
const CALL_DEADLINE_TICKS: u64 = (CALL_DEADLINE.as_millis() / EPOCH_TICK.as_millis()) as u64;

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

/// Fuel costs that count Wasm operators: wasmtime's flat costs, and no charge by length for
/// the operators that move memory or table elements.
fn instruction_costs() -> OperatorCost {
    let mut costs = OperatorCost::new();
    costs.variable = VariableOperatorCost {
        memory_copy_per_byte: 0,
        memory_fill_per_byte: 0,
        memory_init_per_byte: 0,
        memory_grow_per_page: 0,
        table_copy_per_element: 0,
        table_fill_per_element: 0,
        table_init_per_element: 0,
        table_grow_per_element: 0,
        array_copy_per_element: 0,
        array_fill_per_element: 0,
        array_new_data_per_element: 0,
        array_init_data_per_element: 0,
        array_new_elem_per_element: 0,
        array_init_elem_per_element: 0,
        array_new_default_per_element: 0,
        array_new_per_element: 0,
    };
    costs
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
    config.operator_cost(instruction_costs());
    config.epoch_interruption(true);
    let engine = Engine::new(&config)?;
    // The deadline's clock: the engine's epoch, advanced by a thread of its own.
    let ticking = engine.clone();
    std::thread::spawn(move || loop {
        std::thread::sleep(EPOCH_TICK);
        ticking.increment_epoch();
    });
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
        // Each call gets its own deadline.
        store.set_epoch_deadline(CALL_DEADLINE_TICKS);
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
            // The handler and the reading of its body run together (a body larger than the
            // host's buffer waits for its reader); once the handler has returned, its response
            // has a short while to arrive, and a handler that set none leaves nothing to wait
            // for.
            tokio::pin!(call);
            tokio::pin!(response);
            let mut early = None;
            let called = loop {
                tokio::select! {
                    called = &mut call => break called,
                    done = &mut response, if early.is_none() => early = Some(done),
                }
            };
            called?;
            match early {
                Some(done) => done?,
                None => tokio::time::timeout(RESPONSE_TIMEOUT, response)
                    .await
                    .map_err(|_| {
                        wasmtime::format_err!(
                            "no response within {RESPONSE_TIMEOUT:?} of the handler's return"
                        )
                    })??,
            }
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
        // As `wasmtime serve` without a timeout: WASI's blocking calls (file reads, syncs) run
        // on this thread instead of a hand-off to tokio's blocking pool per call, which made a
        // full scan of a large file take minutes. Counts do not depend on it.
        builder.allow_blocking_current_thread(true);
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
        // The instantiation's deadline; each call sets its own.
        store.epoch_deadline_trap();
        store.set_epoch_deadline(CALL_DEADLINE_TICKS);
        Ok(store)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_encoder::{
        CodeSection, ExportKind, ExportSection, Function, FunctionSection, Instruction,
        MemorySection, MemoryType, Module, TypeSection, ValType,
    };

    /// A module whose export `fill(n)` fills `n` bytes of its memory with one `memory.fill`.
    fn filler() -> Vec<u8> {
        let mut module = Module::new();
        let mut types = TypeSection::new();
        types.ty().function([ValType::I32], []);
        module.section(&types);
        let mut functions = FunctionSection::new();
        functions.function(0);
        module.section(&functions);
        let mut memories = MemorySection::new();
        memories.memory(MemoryType {
            minimum: 1,
            maximum: None,
            memory64: false,
            shared: false,
            page_size_log2: None,
        });
        module.section(&memories);
        let mut exports = ExportSection::new();
        exports.export("fill", ExportKind::Func, 0);
        module.section(&exports);
        let mut code = CodeSection::new();
        let mut body = Function::new([]);
        body.instruction(&Instruction::I32Const(0))
            .instruction(&Instruction::I32Const(0))
            .instruction(&Instruction::LocalGet(0))
            .instruction(&Instruction::MemoryFill(0))
            .instruction(&Instruction::End);
        code.function(&body);
        module.section(&code);
        module.finish()
    }

    /// The fuel `fill(bytes)` consumes under `costs`.
    fn fuel_of_fill(costs: OperatorCost, bytes: i32) -> u64 {
        let mut config = Config::new();
        config.consume_fuel(true);
        config.operator_cost(costs);
        let engine = Engine::new(&config).expect("an engine");
        let module = wasmtime::Module::new(&engine, filler()).expect("the module compiles");
        let mut store = Store::new(&engine, ());
        store.set_fuel(FUEL).expect("fuel");
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).expect("it instantiates");
        let fill = instance
            .get_typed_func::<i32, ()>(&mut store, "fill")
            .expect("fill");
        let before = store.get_fuel().expect("fuel");
        fill.call(&mut store, bytes).expect("fill runs");
        before - store.get_fuel().expect("fuel")
    }

    #[test]
    fn the_count_is_of_operators_not_of_the_bytes_they_move() {
        let short = fuel_of_fill(instruction_costs(), 16);
        let long = fuel_of_fill(instruction_costs(), 60_000);
        assert_eq!(short, long);
        // A handful of operators, not sixteen bytes.
        assert!(short < 16, "{short}");
        // wasmtime's default table charges the bytes too: what this cost table removes.
        let default_long = fuel_of_fill(OperatorCost::new(), 60_000);
        assert!(default_long >= 60_000, "{default_long}");
    }
}
