//! The edge components end to end: the real `wasmtime serve` running
//! `target/edge/userstore-edge.wasm` (built by `scripts/build_edge.sh`, engines page_tree and
//! btree), `target/edge/userstore-edge-sqlite.wasm` (the same build with stable_sqlite too)
//! and the peers' `target/edge/userstore-redb.wasm` and
//! `target/edge/userstore-sqlite-file.wasm` (built by `scripts/build_edge_peers.sh`; SQLite in
//! its default DELETE journal with synchronous FULL, and in WAL), called over HTTP on
//! loopback with the edge benchmark's client and host launcher (`edge_bench`): the API on
//! every engine; and a kill test: a writer loop whose host is killed (SIGKILL) at random
//! moments and restarted, after which the table must equal the model of the acknowledged
//! writes, the write in flight either fully present or absent.
//!
//! The wasmtime binary is `HostConfig::wasmtime_binary`'s: `WASMTIME_BIN` (scripts/test.sh
//! names the workspace's `target/debug/wasmtime-serve`), else an installed `wasmtime`. A
//! missing binary or Wasm fails the tests with what to do, unless `USERSTORE_SKIP_EDGE=1`.
//! `EDGE_KILLS` sets the number of kills per engine (5 by default; the long run is
//! `EDGE_KILLS=100`), `EDGE_SEED` replays a run.

use edge_bench::client::Client;
use edge_bench::host::{Host, HostConfig};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const TOKEN: &str = "edge-e2e-token";

/// One engine as a host runs it: a component and its environment.
#[derive(Clone, Copy, Debug)]
struct Target {
    /// The name in messages.
    name: &'static str,
    /// The component, `target/edge/<component>.wasm`.
    component: &'static str,
    /// The script that builds it.
    build: &'static str,
    /// The component's settings.
    env: &'static [(&'static str, &'static str)],
}

const PAGE_TREE: Target = Target {
    name: "page_tree",
    component: "userstore-edge",
    build: "scripts/build_edge.sh",
    env: &[("USERSTORE_ENGINE", "page_tree")],
};
const BTREE: Target = Target {
    name: "btree",
    component: "userstore-edge",
    build: "scripts/build_edge.sh",
    env: &[("USERSTORE_ENGINE", "btree")],
};
const STABLE_SQLITE: Target = Target {
    name: "stable_sqlite",
    component: "userstore-edge-sqlite",
    build: "scripts/build_edge.sh",
    env: &[("USERSTORE_ENGINE", "stable_sqlite")],
};
const REDB: Target = Target {
    name: "redb",
    component: "userstore-redb",
    build: "scripts/build_edge_peers.sh",
    env: &[],
};
/// SQLite on a file with the component's defaults: journal_mode DELETE, synchronous FULL.
const SQLITE_FILE: Target = Target {
    name: "sqlite-file",
    component: "userstore-sqlite-file",
    build: "scripts/build_edge_peers.sh",
    env: &[],
};
const SQLITE_FILE_WAL: Target = Target {
    name: "sqlite-file (WAL)",
    component: "userstore-sqlite-file",
    build: "scripts/build_edge_peers.sh",
    env: &[("USERSTORE_SQLITE_JOURNAL_MODE", "wal")],
};

/// The wasmtime binary, or `None` when the tests are skipped on purpose.
fn wasmtime() -> Option<PathBuf> {
    if std::env::var("USERSTORE_SKIP_EDGE").as_deref() == Ok("1") {
        eprintln!("USERSTORE_SKIP_EDGE=1: the edge end-to-end tests are skipped");
        return None;
    }
    match HostConfig::wasmtime_binary() {
        Ok(path) => Some(path),
        Err(message) => panic!("{message}, or set USERSTORE_SKIP_EDGE=1"),
    }
}

impl Target {
    /// The host settings of this engine on the data directory `data`; fails with how to build
    /// a missing component.
    fn host_config(&self, wasmtime: &Path, data: &Path) -> HostConfig {
        let component = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../target/edge")
            .join(format!("{}.wasm", self.component));
        assert!(
            component.is_file(),
            "no {}: build it with {}, or set USERSTORE_SKIP_EDGE=1",
            component.display(),
            self.build
        );
        let mut env = vec![("USERSTORE_WRITE_TOKEN".to_owned(), TOKEN.to_owned())];
        env.extend(
            self.env
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string())),
        );
        HostConfig {
            program: wasmtime.to_owned(),
            component,
            data_dir: data.to_owned(),
            env,
            serve_args: Vec::new(),
        }
    }

    /// Whether it is one of the edge's own engines (a `FileMemory` with the engine header and
    /// the `x-userstore-*` counts), not a peer.
    fn is_own(&self) -> bool {
        self.component.starts_with("userstore-edge")
    }

    /// The engine's name as the data file's header records it (`StorageEngine::NAME`).
    fn recorded_name(&self) -> &'static str {
        match self.name {
            "page_tree" => "PageTree",
            "btree" => "StableBTreeMap",
            "stable_sqlite" => "StableSqlite",
            other => panic!("{other} records no engine name"),
        }
    }
}

/// A running host of one engine and two clients of it: a writer with the token, and a reader
/// without.
struct Edge {
    host: Host,
    writer: RefCell<Client>,
    reader: RefCell<Client>,
}

impl Edge {
    /// Starts a host of `target` on the data directory `data`.
    fn start(wasmtime: &Path, target: &Target, data: &Path) -> Edge {
        let host = Host::start(&target.host_config(wasmtime, data))
            .unwrap_or_else(|error| panic!("{}: the host does not start: {error}", target.name));
        let address = host.address();
        Edge {
            host,
            writer: RefCell::new(Client::new(address, Some(TOKEN))),
            reader: RefCell::new(Client::new(address, None)),
        }
    }

    fn address(&self) -> SocketAddr {
        self.host.address()
    }

    /// Sends a request; `Err` when the connection fails (the host is gone).
    fn try_send(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
        auth: bool,
    ) -> std::io::Result<Reply> {
        let client = if auth { &self.writer } else { &self.reader };
        let body = body.map(|body| body.to_string().into_bytes());
        let headers = [("content-type", "application/json")];
        let response = client
            .borrow_mut()
            .send(method, path, &headers, body.as_deref())?;
        Reply::of(response)
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
        table_of(|path| self.get(path))
    }

    /// The whole table, or why it could not be read (a request unanswered, or not 200).
    fn try_table(&self) -> Result<BTreeMap<u64, String>, String> {
        let mut table = BTreeMap::new();
        let mut after = None;
        loop {
            let path = match after {
                Some(id) => format!("/list_users?after={id}&limit=1000"),
                None => "/list_users?limit=1000".to_owned(),
            };
            let reply = self
                .try_send("GET", &path, None, false)
                .map_err(|error| format!("GET {path}: {error}"))?;
            if reply.status != 200 {
                return Err(format!("GET {path}: {} {}", reply.status, reply.body));
            }
            let users = reply.body["Ok"].as_array().cloned().unwrap_or_default();
            for user in &users {
                let id = user["id"].as_u64().ok_or("a user without an id")?;
                table.insert(id, user["username"].as_str().unwrap_or_default().to_owned());
                after = Some(id);
            }
            if users.len() < 1000 {
                return Ok(table);
            }
        }
    }
}

/// The whole table, page by page, read with `get`.
fn table_of(mut get: impl FnMut(&str) -> Reply) -> BTreeMap<u64, String> {
    let mut table = BTreeMap::new();
    let mut after = None;
    loop {
        let path = match after {
            Some(id) => format!("/list_users?after={id}&limit=1000"),
            None => "/list_users?limit=1000".to_owned(),
        };
        let reply = get(&path);
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

/// An HTTP reply with a JSON body.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Reply {
    fn of(response: edge_bench::client::Response) -> std::io::Result<Reply> {
        Ok(Reply {
            status: response.status,
            body: response.json()?,
            headers: response.headers,
        })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }
}

/// `POST path` with the raw `body`, from a client of its own with `token` as its credential.
fn send_with(address: SocketAddr, token: Option<&str>, path: &str, body: &[u8]) -> Reply {
    let response = Client::new(address, token)
        .send("POST", path, &[], Some(body))
        .unwrap_or_else(|error| panic!("POST {path}: {error}"));
    Reply::of(response).expect("a JSON reply")
}

/// The API on one engine: every route, the failures, the authorization; on the edge's own
/// engines also the `x-userstore-*` counts and the engine header.
fn the_api_over_http(wasmtime: &Path, target: Target) {
    let engine = target.name;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let host = Edge::start(wasmtime, &target, dir.path());
    let reply = host.write("/insert_user", json!({"id": 1, "username": "alice"}));
    assert_eq!(
        (reply.status, &reply.body),
        (200, &json!({"Ok": null})),
        "{engine}"
    );
    if target.is_own() {
        let syncs: u64 = reply
            .header("x-userstore-syncs")
            .and_then(|v| v.parse().ok())
            .expect("syncs");
        assert!(syncs > 0, "a write synced nothing");
        assert!(reply.header("x-userstore-bytes-written").is_some());
    }
    let batch = json!([{"id": 2, "username": "bob"}, {"id": 3, "username": "carol"}]);
    assert_eq!(
        host.write("/insert_users", batch).body,
        json!({"Ok": 2}),
        "{engine}"
    );
    assert_eq!(
        host.get("/get_user?id=2").body,
        json!({"Ok": {"id": 2, "username": "bob"}}),
        "{engine}"
    );
    let read = host.get("/count_users");
    assert_eq!(read.body, json!({"Ok": 3}), "{engine}");
    if target.is_own() {
        assert_eq!(read.header("x-userstore-syncs"), Some("0"), "a read synced");
        assert_eq!(
            read.header("x-userstore-bytes-written"),
            Some("0"),
            "a read wrote"
        );
    }
    assert_eq!(
        host.write("/update_username", json!({"id": 1, "username": "alicia"}))
            .body,
        json!({"Ok": {"id": 1, "username": "alice"}}),
        "{engine}"
    );
    assert_eq!(
        host.write("/update_users", json!([{"id": 2, "username": "rob"}]))
            .body,
        json!({"Ok": 1}),
        "{engine}"
    );
    assert_eq!(
        host.write("/delete_user", json!({"id": 3})).status,
        200,
        "{engine}"
    );
    assert_eq!(
        host.get("/list_users?limit=10").body,
        json!({"Ok": [{"id": 1, "username": "alicia"}, {"id": 2, "username": "rob"}]}),
        "{engine}"
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
        401,
        "{engine}"
    );
    let body = br#"{"id":9,"username":"x"}"#;
    assert_eq!(
        send_with(host.address(), Some("nope"), "/insert_user", body).status,
        403,
        "{engine}"
    );
    assert_eq!(
        host.write("/insert_user", json!({"id": 1, "username": "again"}))
            .status,
        409,
        "{engine}"
    );
    assert_eq!(
        host.write(
            "/insert_users",
            json!([{"id": 5, "username": "e"}, {"id": 1, "username": "f"}])
        )
        .status,
        409,
        "{engine}"
    );
    assert_eq!(host.get("/get_user?id=42").status, 404, "{engine}");
    assert_eq!(host.get("/nowhere").status, 404, "{engine}");
    assert_eq!(host.get("/insert_user").status, 405, "{engine}");
    assert_eq!(
        send_with(host.address(), Some(TOKEN), "/insert_user", br#"{"id""#).status,
        400,
        "{engine}"
    );
    assert_eq!(host.get("/count_users").body, json!({"Ok": 2}), "{engine}");
    let stats = host.get("/stats");
    assert_eq!(stats.body["Ok"]["users"], 2, "{engine}: {}", stats.body);
    assert_eq!(host.get("/ping").body, json!({"Ok": "pong"}), "{engine}");
    if !target.is_own() {
        // A restarted host finds the data as it was.
        drop(host);
        let host = Edge::start(wasmtime, &target, dir.path());
        assert_eq!(host.get("/count_users").body, json!({"Ok": 2}), "{engine}");
        return;
    }
    // The data remembers its engine: a host of the other engine refuses it by name.
    drop(host);
    let other = if engine == "btree" { PAGE_TREE } else { BTREE };
    let host = Edge::start(wasmtime, &other, dir.path());
    let refused = host.get("/count_users");
    assert_eq!(refused.status, 400, "{}", refused.body);
    let message = refused.body["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        message.contains(target.recorded_name()) && message.contains(other.recorded_name()),
        "{message}"
    );
    drop(host);
    let host = Edge::start(wasmtime, &target, dir.path());
    assert_eq!(host.get("/count_users").body, json!({"Ok": 2}), "{engine}");
}

#[test]
fn the_api_over_http_on_our_engines() {
    let Some(wasmtime) = wasmtime() else {
        return;
    };
    for target in [PAGE_TREE, BTREE, STABLE_SQLITE] {
        the_api_over_http(&wasmtime, target);
    }
}

#[test]
fn the_api_over_http_on_the_peers() {
    let Some(wasmtime) = wasmtime() else {
        return;
    };
    for target in [REDB, SQLITE_FILE, SQLITE_FILE_WAL] {
        the_api_over_http(&wasmtime, target);
    }
}

/// A commit larger than what the host lets a guest hand it in one call (`wasmtime serve`'s
/// hostcall fuel, 128 MiB by default; here 1 MiB, which a batch of 10,000 rows of 128-byte
/// names passes a few times) is written in pieces, and reads back whole after a restart.
#[test]
fn a_commit_larger_than_the_host_s_hostcall_fuel_is_written_in_pieces() {
    let Some(wasmtime) = wasmtime() else {
        return;
    };
    for target in [PAGE_TREE, STABLE_SQLITE] {
        let engine = target.name;
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut config = target.host_config(&wasmtime, dir.path());
        config.serve_args = vec!["-S".into(), format!("hostcall-fuel={}", 1 << 20)];
        let host = Host::start(&config).unwrap_or_else(|error| panic!("{engine}: {error}"));
        let mut writer = Client::new(host.address(), Some(TOKEN));
        let users: Vec<Value> = (0..10_000u64)
            .map(|id| json!({"id": id, "username": format!("{id:0>128}")}))
            .collect();
        let reply = writer
            .post("/insert_users", &Value::from(users))
            .expect("an answer");
        assert_eq!(
            (
                reply.status,
                String::from_utf8_lossy(&reply.body).into_owned()
            ),
            (200, json!({"Ok": 10_000}).to_string()),
            "{engine}"
        );
        drop(host);
        let restarted = Edge::start(&wasmtime, &target, dir.path());
        assert_eq!(
            restarted.get("/count_users").body,
            json!({"Ok": 10_000}),
            "{engine}"
        );
        assert_eq!(
            restarted.get("/get_user?id=9999").body,
            json!({"Ok": {"id": 9999, "username": format!("{:0>128}", 9999)}}),
            "{engine}"
        );
    }
}

#[test]
fn concurrent_writes_take_turns_and_reads_beside_them_see_every_acknowledged_one() {
    let Some(wasmtime) = wasmtime() else {
        return;
    };
    // CI: 4 clients, 25 writes each. The long run (docs/reliability.md): EDGE_CLIENTS=16
    // EDGE_SECONDS=60, each client writing and reading until the time is up.
    let clients_count: u64 = env_number("EDGE_CLIENTS").unwrap_or(4);
    let seconds = env_number("EDGE_SECONDS");
    let deadline = seconds.map(|s| std::time::Instant::now() + std::time::Duration::from_secs(s));
    const WRITES: u64 = 25;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let host = Edge::start(&wasmtime, &PAGE_TREE, dir.path());
    let address = host.address();
    let clients: Vec<_> = (0..clients_count)
        .map(|client| {
            std::thread::spawn(move || {
                let mut writer = Client::new(address, Some(TOKEN));
                let mut reader = Client::new(address, None);
                let mut index = 0;
                loop {
                    let more = match deadline {
                        Some(deadline) => std::time::Instant::now() < deadline,
                        None => index < WRITES,
                    };
                    if !more {
                        return index;
                    }
                    let id = client * 1_000_000 + index;
                    index += 1;
                    let body = json!({"id": id, "username": format!("u{id}")});
                    let reply = writer
                        .post("/insert_user", &body)
                        .and_then(Reply::of)
                        .expect("a reply");
                    assert_eq!(reply.status, 200, "{}", reply.body);
                    // Reads (without the lock, beside the other clients' writes) see every
                    // write acknowledged before they started, and whole tables.
                    let own = reader
                        .get(&format!("/get_user?id={id}"))
                        .and_then(Reply::of)
                        .expect("a reply");
                    assert_eq!(own.status, 200, "{}", own.body);
                    assert_eq!(own.body["Ok"], body, "the write just acknowledged");
                    let count = reader
                        .get("/count_users")
                        .and_then(Reply::of)
                        .expect("a reply");
                    assert_eq!(count.status, 200, "{}", count.body);
                    let counted = count.body["Ok"].as_u64().expect("a count");
                    assert!(
                        counted >= index,
                        "{counted} users after {index} of this client's"
                    );
                }
            })
        })
        .collect();
    let acknowledged: u64 = clients
        .into_iter()
        .map(|client| client.join().expect("a client"))
        .sum();
    let table = host.table();
    println!("{clients_count} clients: {acknowledged} acknowledged inserts, all in the table");
    assert_eq!(table.len() as u64, acknowledged);
    assert!(table.iter().all(|(id, name)| *name == format!("u{id}")));
    // An oversize body is refused without being read whole.
    let oversize = b"POST /insert_users HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\
                    Content-Length: 900000000\r\n\r\n[";
    let reply = Client::new(address, None)
        .send_raw(oversize)
        .expect("a reply");
    assert_eq!(reply.status, 413);
}

/// A number from the environment, if set.
fn env_number(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|value| {
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name}={value} is not a number"))
    })
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

/// Kills `pid` (SIGKILL): a host of this test, still unreaped, so the pid is its own.
fn kill_now(pid: u32) {
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
}

/// What a kill test holds an engine to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Claim {
    /// Every acknowledged write survives, the one in flight whole or absent: a divergence
    /// fails the test.
    Survives,
    /// A mode that does not claim to survive a kill: its divergences (a table that differs, or
    /// a file that no longer answers) are counted and reported, and the test starts again on
    /// a new file after each.
    Reports,
}

/// The kill test on one engine: `EDGE_KILLS` kills (5 by default).
fn killed_hosts_keep_every_acknowledged_write(target: Target) {
    kill_test(target, Claim::Survives);
}

/// `EDGE_KILLS` kills of `target`'s host at random moments of a write load, each followed by
/// a restart and a comparison of the table with the acknowledged writes.
fn kill_test(target: Target, claim: Claim) {
    let Some(wasmtime) = wasmtime() else {
        return;
    };
    let engine = target.name;
    let kills = env_number("EDGE_KILLS").unwrap_or(5);
    let seed = env_number("EDGE_SEED").unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|t| t.as_nanos() as u64)
            .unwrap_or(1)
            | 1
    });
    eprintln!("kill test on {engine}: EDGE_SEED={seed} EDGE_KILLS={kills}");
    let mut rng = Rng(seed);
    let mut dir = tempfile::tempdir().expect("a temporary directory");
    let mut model = BTreeMap::new();
    let mut next_id = 0u64;
    let mut step = 0u64;
    let (mut acknowledged, mut in_flight_kept, mut divergences) = (0u64, 0u64, 0u64);
    for kill in 0..kills {
        let host = Edge::start(&wasmtime, &target, dir.path());
        assert_eq!(
            host.table(),
            model,
            "{engine}: after restart {kill} (seed {seed})"
        );
        // The killer waits a random moment, then kills the host mid-loop.
        let delay = Duration::from_millis(20 + rng.below(400));
        let pid = host.host.pid();
        let killer = std::thread::spawn(move || {
            std::thread::sleep(delay);
            kill_now(pid);
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
        let host = Edge::start(&wasmtime, &target, dir.path());
        let mut with_in_flight = model.clone();
        if let Some(write) = &in_flight {
            write.apply(&mut with_in_flight);
        }
        let table = host.try_table();
        let consistent = table
            .as_ref()
            .is_ok_and(|table| *table == model || *table == with_in_flight);
        if claim == Claim::Reports && !consistent {
            divergences += 1;
            eprintln!(
                "{engine}: after kill {kill} the file diverged: {}",
                match &table {
                    Ok(table) => format!("{} rows, acknowledged {}", table.len(), model.len()),
                    Err(error) => error.clone(),
                }
            );
            drop(host);
            dir = tempfile::tempdir().expect("a temporary directory");
            model = BTreeMap::new();
            continue;
        }
        let table = table.unwrap_or_else(|error| panic!("{engine}: after kill {kill}: {error}"));
        assert!(
            consistent,
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
        "{engine}: {kills} kills, {acknowledged} acknowledged writes, the write in flight \
         kept {in_flight_kept} times, {divergences} divergences, {} rows at the end",
        model.len()
    );
    assert!(
        kills == 0 || acknowledged > 0,
        "{engine}: no write was acknowledged"
    );
}

#[test]
fn killed_hosts_keep_every_acknowledged_write_on_page_tree() {
    killed_hosts_keep_every_acknowledged_write(PAGE_TREE);
}

#[test]
fn killed_hosts_keep_every_acknowledged_write_on_btree() {
    killed_hosts_keep_every_acknowledged_write(BTREE);
}

#[test]
fn killed_hosts_keep_every_acknowledged_write_on_stable_sqlite() {
    killed_hosts_keep_every_acknowledged_write(STABLE_SQLITE);
}

#[test]
fn killed_hosts_keep_every_acknowledged_write_on_redb() {
    killed_hosts_keep_every_acknowledged_write(REDB);
}

#[test]
fn killed_hosts_keep_every_acknowledged_write_on_sqlite_file() {
    killed_hosts_keep_every_acknowledged_write(SQLITE_FILE);
}

#[test]
fn killed_hosts_keep_every_acknowledged_write_on_sqlite_file_in_wal() {
    killed_hosts_keep_every_acknowledged_write(SQLITE_FILE_WAL);
}

const SQLITE_FILE_JOURNAL_OFF: Target = Target {
    name: "sqlite-file (journal OFF)",
    component: "userstore-sqlite-file",
    build: "scripts/build_edge_peers.sh",
    env: &[("USERSTORE_SQLITE_JOURNAL_MODE", "off")],
};
const SQLITE_FILE_JOURNAL_MEMORY: Target = Target {
    name: "sqlite-file (journal MEMORY)",
    component: "userstore-sqlite-file",
    build: "scripts/build_edge_peers.sh",
    env: &[("USERSTORE_SQLITE_JOURNAL_MODE", "memory")],
};

/// The modes that do not claim to survive a kill run too, and what they lose is reported
/// (docs/reliability.md): a report, not a check, so CI leaves it to the long run.
#[test]
#[ignore = "reports what SQLite's journal OFF and MEMORY lose to kills; run with --ignored"]
fn kills_of_the_journal_modes_that_do_not_survive_them_are_reported() {
    kill_test(SQLITE_FILE_JOURNAL_OFF, Claim::Reports);
    kill_test(SQLITE_FILE_JOURNAL_MEMORY, Claim::Reports);
}
