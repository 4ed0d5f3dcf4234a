//! The edge component end to end: the real `wasmtime serve` running
//! `target/edge/userstore-edge.wasm` (built by `scripts/build_edge.sh`), called over HTTP on
//! loopback, for both engines; and a kill test: a writer loop whose host is killed (SIGKILL)
//! at random moments and restarted, after which the table must equal the model of the
//! acknowledged writes, the write in flight either fully present or absent.
//!
//! The wasmtime binary is `WASMTIME_BIN` or `wasmtime` on `PATH`. A missing binary or Wasm
//! fails the tests with what to do, unless `USERSTORE_SKIP_EDGE=1`. `EDGE_KILLS` sets the
//! number of kills (10 by default), `EDGE_SEED` replays a run.

use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{Read, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const TOKEN: &str = "edge-e2e-token";
/// How long a host may take to start (the first start compiles the component).
const START_TIMEOUT: Duration = Duration::from_secs(180);
/// Socket timeouts of one request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// The wasmtime binary and the component, or `None` when the tests are skipped on purpose.
fn prerequisites() -> Option<(PathBuf, PathBuf)> {
    if std::env::var("USERSTORE_SKIP_EDGE").as_deref() == Ok("1") {
        eprintln!("USERSTORE_SKIP_EDGE=1: the edge end-to-end tests are skipped");
        return None;
    }
    let wasmtime = std::env::var_os("WASMTIME_BIN")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::split_paths(&std::env::var_os("PATH")?)
                .map(|dir| dir.join("wasmtime"))
                .find(|path| path.is_file())
        });
    let Some(wasmtime) = wasmtime.filter(|path| path.is_file()) else {
        panic!(
            "no wasmtime binary: set WASMTIME_BIN or put wasmtime on PATH \
             (cargo install wasmtime-cli --version 48.0.8), or set USERSTORE_SKIP_EDGE=1"
        );
    };
    let wasm = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/edge/userstore-edge.wasm");
    assert!(
        wasm.is_file(),
        "no {}: build it with scripts/build_edge.sh, or set USERSTORE_SKIP_EDGE=1",
        wasm.display()
    );
    Some((wasmtime, wasm))
}

/// A running `wasmtime serve`, killed when dropped.
struct Host {
    child: Arc<Mutex<Child>>,
    port: u16,
}

impl Host {
    /// Starts a host of `engine` on the data directory `data`, and waits until it answers.
    fn start(wasmtime: &Path, wasm: &Path, data: &Path, engine: &str) -> Host {
        let port = free_port();
        let epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|time| time.as_nanos())
            .unwrap_or_default();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(data.join("wasmtime.log"))
            .expect("the host's log file");
        let child = Command::new(wasmtime)
            .arg("serve")
            .args(["-S", "cli"])
            .arg("--dir")
            .arg(format!("{}::/data", data.display()))
            .args(["--env", &format!("USERSTORE_WRITE_TOKEN={TOKEN}")])
            .args(["--env", &format!("USERSTORE_HOST_EPOCH={epoch}")])
            .args(["--env", &format!("USERSTORE_ENGINE={engine}")])
            .args(["--addr", &format!("127.0.0.1:{port}")])
            .arg(wasm)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("wasmtime starts");
        let host = Host {
            child: Arc::new(Mutex::new(child)),
            port,
        };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            // Any reply will do: a host of another engine refuses the data, but it answers.
            if host.try_send("GET", "/config", None, false).is_ok() {
                return host;
            }
            let exited = host.child.lock().map(|mut child| child.try_wait()).ok();
            if let Some(Ok(Some(status))) = exited {
                panic!(
                    "wasmtime exited with {status}; see {}",
                    data.join("wasmtime.log").display()
                );
            }
            assert!(
                Instant::now() < deadline,
                "the host did not answer within {START_TIMEOUT:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends a request; `Err` when the connection fails (the host is gone).
    fn try_send(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        auth: bool,
    ) -> std::io::Result<Reply> {
        let body = body.map(Value::to_string).unwrap_or_default();
        let authorization = if auth {
            format!("Authorization: Bearer {TOKEN}\r\n")
        } else {
            String::new()
        };
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: close\r\n{authorization}\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.port,
            body.len()
        );
        send_raw(self.port, request.as_bytes())
    }

    /// Sends a request that must be answered.
    fn send(&self, method: &str, path: &str, body: Option<Value>, auth: bool) -> Reply {
        self.try_send(method, path, body.as_ref(), auth)
            .unwrap_or_else(|error| panic!("{method} {path}: {error}"))
    }

    fn get(&self, path: &str) -> Reply {
        self.send("GET", path, None, false)
    }

    fn write(&self, path: &str, body: Value) -> Reply {
        self.send("POST", path, Some(body), true)
    }

    /// The whole table, page by page.
    fn table(&self) -> BTreeMap<u64, String> {
        let mut table = BTreeMap::new();
        let mut after = None;
        loop {
            let path = match after {
                Some(id) => format!("/list_users?after={id}&limit=1000"),
                None => "/list_users?limit=1000".to_owned(),
            };
            let reply = self.get(&path);
            assert_eq!(reply.status, 200, "{}", reply.body);
            let users = reply.body["Ok"].as_array().cloned().unwrap_or_default();
            for user in &users {
                let id = user["id"].as_u64().expect("an id");
                table.insert(id, user["username"].as_str().unwrap_or_default().to_owned());
                after = Some(id);
            }
            if users.len() < 1000 {
                return table;
            }
        }
    }

    fn kill(&self) {
        if let Ok(mut child) = self.child.lock() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A port nobody listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .expect("a free port")
}

/// An HTTP reply.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// One HTTP/1.1 exchange on a new connection (`Connection: close`): the reply's status,
/// headers and JSON body (chunked or not).
fn send_raw(port: u16, request: &[u8]) -> std::io::Result<Reply> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(REQUEST_TIMEOUT))?;
    stream.set_write_timeout(Some(REQUEST_TIMEOUT))?;
    stream.write_all(request)?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let invalid =
        |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .ok_or_else(|| invalid("no end of headers"))?;
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| invalid("no status"))?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let mut body = raw[split + 4..].to_vec();
    let chunked = headers.iter().any(|(name, value)| {
        name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked")
    });
    if chunked {
        body = dechunk(&body).ok_or_else(|| invalid("a torn chunked body"))?;
    }
    let body = serde_json::from_slice(&body).map_err(|_| invalid("a body that is not JSON"))?;
    Ok(Reply {
        status,
        headers,
        body,
    })
}

/// The body of a chunked transfer encoding.
fn dechunk(mut raw: &[u8]) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = raw.windows(2).position(|window| window == b"\r\n")?;
        let size_text = std::str::from_utf8(&raw[..line_end]).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        raw = &raw[line_end + 2..];
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(raw.get(..size)?);
        raw = raw.get(size + 2..)?;
    }
}

#[test]
fn the_api_over_http_on_both_engines() {
    let Some((wasmtime, wasm)) = prerequisites() else {
        return;
    };
    for engine in ["page_tree", "btree"] {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let host = Host::start(&wasmtime, &wasm, dir.path(), engine);
        let reply = host.write("/insert_user", json!({"id": 1, "username": "alice"}));
        assert_eq!(
            (reply.status, &reply.body),
            (200, &json!({"Ok": null})),
            "{engine}"
        );
        let syncs: u64 = reply
            .header("x-userstore-syncs")
            .and_then(|v| v.parse().ok())
            .expect("syncs");
        assert!(syncs > 0, "a write synced nothing");
        assert!(reply.header("x-userstore-bytes-written").is_some());
        let batch = json!([{"id": 2, "username": "bob"}, {"id": 3, "username": "carol"}]);
        assert_eq!(host.write("/insert_users", batch).body, json!({"Ok": 2}));
        assert_eq!(
            host.get("/get_user?id=2").body,
            json!({"Ok": {"id": 2, "username": "bob"}})
        );
        let read = host.get("/count_users");
        assert_eq!(read.body, json!({"Ok": 3}));
        assert_eq!(read.header("x-userstore-syncs"), Some("0"), "a read synced");
        assert_eq!(
            read.header("x-userstore-bytes-written"),
            Some("0"),
            "a read wrote"
        );
        assert_eq!(
            host.write("/update_username", json!({"id": 1, "username": "alicia"}))
                .body,
            json!({"Ok": {"id": 1, "username": "alice"}})
        );
        assert_eq!(
            host.write("/update_users", json!([{"id": 2, "username": "rob"}]))
                .body,
            json!({"Ok": 1})
        );
        assert_eq!(host.write("/delete_user", json!({"id": 3})).status, 200);
        assert_eq!(
            host.get("/list_users?limit=10").body,
            json!({"Ok": [{"id": 1, "username": "alicia"}, {"id": 2, "username": "rob"}]})
        );
        // Failures, each changing nothing.
        assert_eq!(
            host.send(
                "POST",
                "/insert_user",
                Some(json!({"id": 9, "username": "x"})),
                false
            )
            .status,
            401
        );
        let body = r#"{"id":9,"username":"x"}"#;
        let wrong = format!(
            "POST /insert_user HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\
             Authorization: Bearer nope\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        assert_eq!(
            send_raw(host.port, wrong.as_bytes())
                .expect("a reply")
                .status,
            403
        );
        assert_eq!(
            host.write("/insert_user", json!({"id": 1, "username": "again"}))
                .status,
            409
        );
        assert_eq!(
            host.write(
                "/insert_users",
                json!([{"id": 5, "username": "e"}, {"id": 1, "username": "f"}])
            )
            .status,
            409
        );
        assert_eq!(host.get("/get_user?id=42").status, 404);
        assert_eq!(host.get("/nowhere").status, 404);
        assert_eq!(host.get("/insert_user").status, 405);
        let malformed = format!(
            "POST /insert_user HTTP/1.1\r\nHost: h\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Length: 5\r\n\r\n{{\"id\""
        );
        assert_eq!(
            send_raw(host.port, malformed.as_bytes())
                .expect("a reply")
                .status,
            400
        );
        assert_eq!(host.get("/count_users").body, json!({"Ok": 2}));
        let stats = host.get("/stats");
        assert_eq!(stats.body["Ok"]["users"], 2);
        // The data remembers its engine: a host of the other engine refuses it by name.
        drop(host);
        let other = if engine == "btree" {
            "page_tree"
        } else {
            "btree"
        };
        let host = Host::start(&wasmtime, &wasm, dir.path(), other);
        let refused = host.get("/count_users");
        assert_eq!(refused.status, 400, "{}", refused.body);
        let message = refused.body["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            message.contains("PageTree") && message.contains("StableBTreeMap"),
            "{message}"
        );
        drop(host);
        let host = Host::start(&wasmtime, &wasm, dir.path(), engine);
        assert_eq!(host.get("/count_users").body, json!({"Ok": 2}), "{engine}");
    }
}

#[test]
fn concurrent_requests_are_serialized_by_the_lock() {
    let Some((wasmtime, wasm)) = prerequisites() else {
        return;
    };
    const CLIENTS: u64 = 4;
    const WRITES: u64 = 25;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let host = Arc::new(Host::start(&wasmtime, &wasm, dir.path(), "page_tree"));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let host = host.clone();
            std::thread::spawn(move || {
                for index in 0..WRITES {
                    let id = client * 1_000 + index;
                    let reply = host.write(
                        "/insert_user",
                        json!({"id": id, "username": format!("u{id}")}),
                    );
                    assert_eq!(reply.status, 200, "{}", reply.body);
                    // Reads between the writes must see whole tables.
                    let count = host.get("/count_users");
                    assert_eq!(count.status, 200, "{}", count.body);
                }
            })
        })
        .collect();
    for client in clients {
        client.join().expect("a client");
    }
    let table = host.table();
    assert_eq!(table.len() as u64, CLIENTS * WRITES);
    assert!(table.iter().all(|(id, name)| *name == format!("u{id}")));
    // An oversize body is refused without being read whole.
    let oversize = "POST /insert_users HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\
                    Content-Length: 900000000\r\n\r\n[";
    assert_eq!(
        send_raw(host.port, oversize.as_bytes())
            .expect("a reply")
            .status,
        413
    );
}

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % bound.max(1)
    }
}

/// A write of the kill test and its effect on the model.
#[derive(Clone, Debug)]
enum Op {
    Insert(u64, String),
    InsertBatch(Vec<(u64, String)>),
    Rename(u64, String),
    Delete(u64),
}

impl Op {
    /// A write that must succeed on `model`.
    fn draw(rng: &mut Rng, model: &BTreeMap<u64, String>, next_id: &mut u64, step: u64) -> Op {
        let existing: Vec<u64> = model.keys().copied().collect();
        let name = format!("user-{step}");
        match (rng.below(4), existing.is_empty()) {
            (0, false) => Op::Rename(existing[rng.below(existing.len() as u64) as usize], name),
            (1, false) => Op::Delete(existing[rng.below(existing.len() as u64) as usize]),
            (2, _) => {
                let batch = (0..1 + rng.below(20))
                    .map(|index| {
                        *next_id += 1;
                        (*next_id, format!("{name}-{index}"))
                    })
                    .collect();
                Op::InsertBatch(batch)
            }
            _ => {
                *next_id += 1;
                Op::Insert(*next_id, name)
            }
        }
    }

    fn request(&self) -> (&'static str, Value) {
        let user = |(id, name): &(u64, String)| json!({"id": id, "username": name});
        match self {
            Op::Insert(id, name) => ("/insert_user", json!({"id": id, "username": name})),
            Op::InsertBatch(users) => (
                "/insert_users",
                Value::Array(users.iter().map(user).collect()),
            ),
            Op::Rename(id, name) => ("/update_username", json!({"id": id, "username": name})),
            Op::Delete(id) => ("/delete_user", json!({"id": id})),
        }
    }

    fn apply(&self, model: &mut BTreeMap<u64, String>) {
        match self {
            Op::Insert(id, name) | Op::Rename(id, name) => {
                model.insert(*id, name.clone());
            }
            Op::InsertBatch(users) => model.extend(users.iter().cloned()),
            Op::Delete(id) => {
                model.remove(id);
            }
        }
    }
}

#[test]
fn killed_hosts_keep_every_acknowledged_write() {
    let Some((wasmtime, wasm)) = prerequisites() else {
        return;
    };
    let kills: usize = std::env::var("EDGE_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let seed: u64 = std::env::var("EDGE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|t| t.as_nanos() as u64)
                .unwrap_or(1)
                | 1
        });
    eprintln!("kill test: EDGE_SEED={seed} EDGE_KILLS={kills}");
    let mut rng = Rng(seed);
    for (round, engine) in ["page_tree", "btree"].into_iter().enumerate() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut model = BTreeMap::new();
        let mut next_id = 0u64;
        let mut step = 0u64;
        let (mut acknowledged, mut in_flight_kept) = (0u64, 0u64);
        let rounds = kills / 2 + if round == 0 { kills % 2 } else { 0 };
        for kill in 0..rounds {
            let host = Host::start(&wasmtime, &wasm, dir.path(), engine);
            assert_eq!(
                host.table(),
                model,
                "{engine}: after restart {kill} (seed {seed})"
            );
            // The killer waits a random moment, then kills the host mid-loop.
            let delay = Duration::from_millis(20 + rng.below(400));
            let child = host.child.clone();
            let killer = std::thread::spawn(move || {
                std::thread::sleep(delay);
                if let Ok(mut child) = child.lock() {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            });
            let mut in_flight = None;
            // Bounded: the host is killed long before.
            for _ in 0..100_000 {
                step += 1;
                let write = Op::draw(&mut rng, &model, &mut next_id, step);
                let (path, body) = write.request();
                match host.try_send("POST", path, Some(&body), true) {
                    Ok(reply) if reply.status == 200 => {
                        write.apply(&mut model);
                        acknowledged += 1;
                    }
                    Ok(reply) => panic!(
                        "{engine}: {write:?} answered {} {}",
                        reply.status, reply.body
                    ),
                    Err(_) => {
                        in_flight = Some(write);
                        break;
                    }
                }
            }
            killer.join().expect("the killer");
            drop(host);
            let host = Host::start(&wasmtime, &wasm, dir.path(), engine);
            let table = host.table();
            let mut with_in_flight = model.clone();
            if let Some(write) = &in_flight {
                write.apply(&mut with_in_flight);
            }
            assert!(
                table == model || table == with_in_flight,
                "{engine}: after kill {kill} the table is neither the acknowledged writes nor \
                 those and the write in flight {in_flight:?} (seed {seed}); {} rows, model {}",
                table.len(),
                model.len()
            );
            if table != model {
                in_flight_kept += 1;
            }
            model = table;
        }
        eprintln!(
            "{engine}: {rounds} kills, {acknowledged} acknowledged writes, the write in flight \
             kept {in_flight_kept} times, {} rows at the end",
            model.len()
        );
        assert!(
            rounds == 0 || acknowledged > 0,
            "{engine}: no write was acknowledged"
        );
    }
}
