//! The edge layer natively: every route and status, bad input, auth, batches, the engine
//! header and the lock, on a stand-in memory (which counts commits) and on `FileMemory`.

use super::api::{self, Failure, MAX_BODY_BYTES};
use super::auth::constant_time_eq;
use super::config::{EdgeConfig, Engine, DEFAULT_LOCK_SPIN};
use super::http::{Request, Response};
use super::lock::{break_path, lock_path, ticket_path, Holder, Lock, LockSettings};
use super::session::{serve_on, serve_store, uncounted, Durable, Io};
use crate::btree::BTreeStore;
use crate::error::{Limit, StoreError};
use crate::limits::{MAX_BATCH_SIZE, MAX_USERNAME_BYTES};
use ic_stable_structures::Memory;
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

const TOKEN: &str = "s3cret-token";
const PAGE: usize = 65_536;

/// A memory with a committed and a working copy, counting commits.
#[derive(Clone, Default)]
struct Standin {
    committed: Rc<RefCell<Vec<u8>>>,
    working: Rc<RefCell<Vec<u8>>>,
    commits: Rc<Cell<u64>>,
}

impl Standin {
    /// A new session on the same committed data.
    fn reopen(&self) -> Self {
        Self {
            committed: self.committed.clone(),
            working: Rc::new(RefCell::new(self.committed.borrow().clone())),
            commits: self.commits.clone(),
        }
    }
}

impl Memory for Standin {
    fn size(&self) -> u64 {
        (self.working.borrow().len() / PAGE) as u64
    }
    fn grow(&self, pages: u64) -> i64 {
        let before = self.size();
        let mut working = self.working.borrow_mut();
        let len = working.len() + pages as usize * PAGE;
        working.resize(len, 0);
        before as i64
    }
    fn read(&self, offset: u64, dst: &mut [u8]) {
        let start = offset as usize;
        dst.copy_from_slice(&self.working.borrow()[start..start + dst.len()]);
    }
    fn write(&self, offset: u64, src: &[u8]) {
        let start = offset as usize;
        self.working.borrow_mut()[start..start + src.len()].copy_from_slice(src);
    }
}

impl Durable for Standin {
    fn commit(&self) -> Result<(), StoreError> {
        *self.committed.borrow_mut() = self.working.borrow().clone();
        self.commits.set(self.commits.get() + 1);
        Ok(())
    }
    fn rollback(&self) {
        *self.working.borrow_mut() = self.committed.borrow().clone();
    }
    fn io(&self) -> Io {
        Io {
            syncs: self.commits.get(),
            bytes_read: 1,
            bytes_written: 2,
        }
    }
}

/// A host on a stand-in memory, with its lock files in a temporary directory.
struct Host {
    config: EdgeConfig,
    memory: Standin,
    _dir: tempfile::TempDir,
}

impl Host {
    fn new(engine: Engine) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = config_in(dir.path(), engine);
        Self {
            config,
            memory: Standin::default(),
            _dir: dir,
        }
    }

    fn send(&self, request: Request) -> Response {
        let memory = self.memory.clone();
        serve_on(&self.config, &request, move |_, _| {
            Ok(Some(memory.reopen()))
        })
    }

    fn get(&self, path: &str) -> (u16, Value) {
        reply(self.send(Request::new("GET", path, Vec::new())))
    }

    fn write(&self, path: &str, body: Value) -> (u16, Value) {
        reply(self.send(authorized(Request::new("POST", path, body.to_string()))))
    }

    fn count(&self) -> u64 {
        let (status, body) = self.get("/count_users");
        assert_eq!(status, 200, "{body}");
        body["Ok"].as_u64().expect("a count")
    }
}

fn config_in(dir: &Path, engine: Engine) -> EdgeConfig {
    EdgeConfig {
        engine,
        data: dir.join("userstore.db"),
        write_token: Some(TOKEN.to_owned()),
        host_epoch: "epoch-1".to_owned(),
        lock_stale: Duration::from_secs(30),
        lock_wait: Duration::from_millis(50),
        lock_spin: Duration::from_millis(1),
        shared_reads: true,
    }
}

fn authorized(request: Request) -> Request {
    request.with_header("Authorization", &format!("Bearer {TOKEN}"))
}

fn reply(response: Response) -> (u16, Value) {
    let body = serde_json::from_slice(&response.body).expect("a JSON reply");
    (response.status, body)
}

/// The engines of this build: the stable-memory SQLite with feature `stable-sqlite`.
#[cfg(any(feature = "sqlite", feature = "stable-sqlite"))]
const ENGINES: [Engine; 3] = [Engine::PageTree, Engine::BTree, Engine::StableSqlite];
#[cfg(not(any(feature = "sqlite", feature = "stable-sqlite")))]
const ENGINES: [Engine; 2] = [Engine::PageTree, Engine::BTree];

#[test]
fn every_route_answers_on_every_engine() {
    for engine in ENGINES {
        let host = Host::new(engine);
        assert_eq!(
            host.write("/insert_user", json!({"id": 1, "username": "alice"})),
            (200, json!({"Ok": null}))
        );
        assert_eq!(
            host.write(
                "/insert_users",
                json!([{"id": 2, "username": "bob"}, {"id": 3, "username": "carol"}])
            ),
            (200, json!({"Ok": 2}))
        );
        assert_eq!(
            host.get("/get_user?id=2"),
            (200, json!({"Ok": {"id": 2, "username": "bob"}}))
        );
        assert_eq!(
            reply(host.send(Request::new("POST", "/get_user", r#"{"id":3}"#))),
            (200, json!({"Ok": {"id": 3, "username": "carol"}}))
        );
        assert_eq!(
            host.get("/list_users?after=1&limit=1"),
            (200, json!({"Ok": [{"id": 2, "username": "bob"}]}))
        );
        assert_eq!(
            host.get("/list_users").1["Ok"].as_array().map(Vec::len),
            Some(3)
        );
        assert_eq!(
            host.write("/update_username", json!({"id": 1, "username": "alicia"})),
            (200, json!({"Ok": {"id": 1, "username": "alice"}}))
        );
        assert_eq!(
            host.write("/update_users", json!([{"id": 2, "username": "robert"}])),
            (200, json!({"Ok": 1}))
        );
        assert_eq!(host.get("/get_user?id=2").1["Ok"]["username"], "robert");
        assert_eq!(
            host.write("/delete_user", json!({"id": 3})),
            (200, json!({"Ok": {"id": 3, "username": "carol"}}))
        );
        assert_eq!(host.count(), 2);
        assert_eq!(
            host.write("/delete_users", json!([1, 2])),
            (200, json!({"Ok": 2}))
        );
        assert_eq!(host.count(), 0);
        let (status, config) = host.get("/config");
        assert_eq!(status, 200);
        assert_eq!(config["Ok"]["engine"], engine.name());
        assert_eq!(config["Ok"]["limits"]["max_batch_size"], MAX_BATCH_SIZE);
        let (status, stats) = host.get("/stats");
        assert_eq!(status, 200);
        assert_eq!(stats["Ok"]["users"], 0);
        assert_eq!(stats["Ok"]["engine"], engine.name());
    }
}

#[test]
fn users_are_found_by_name_and_a_taken_name_is_a_conflict() {
    for engine in ENGINES {
        let host = Host::new(engine);
        host.write("/insert_user", json!({"id": 1, "username": "al ice+ü"}));
        // Percent-encoded as encodeURIComponent does; a `+` is itself.
        assert_eq!(
            host.get("/get_user_by_name?username=al%20ice%2B%C3%BC"),
            (200, json!({"Ok": {"id": 1, "username": "al ice+ü"}}))
        );
        assert_eq!(
            reply(host.send(Request::new(
                "POST",
                "/get_user_by_name",
                r#"{"username":"al ice+ü"}"#
            ))),
            (200, json!({"Ok": {"id": 1, "username": "al ice+ü"}}))
        );
        let (status, body) = host.get("/get_user_by_name?username=bob");
        assert_eq!(
            (status, &body["Err"]),
            (404, &json!({"UsernameNotFound": {"username": "bob"}}))
        );
        let (status, body) = host.write("/insert_user", json!({"id": 2, "username": "al ice+ü"}));
        assert_eq!(
            (status, &body["Err"]),
            (409, &json!({"UsernameTaken": {"username": "al ice+ü"}}))
        );
        for malformed in [
            "/get_user_by_name?username=%ZZ",
            "/get_user_by_name?username=%FF",
            "/get_user_by_name",
        ] {
            assert_eq!(host.get(malformed).0, 400, "{malformed}");
        }
        assert_eq!(host.get("/stats").1["Ok"]["shared_usernames"], json!([]));
    }
}

#[test]
fn store_errors_have_their_statuses() {
    let host = Host::new(Engine::PageTree);
    host.write("/insert_user", json!({"id": 1, "username": "a"}));
    let (status, body) = host.get("/get_user?id=9");
    assert_eq!(
        (status, &body["Err"]),
        (404, &json!({"NotFound": {"id": 9}}))
    );
    assert!(body["message"]
        .as_str()
        .is_some_and(|text| text.contains('9')));
    let (status, body) = host.write("/insert_user", json!({"id": 1, "username": "b"}));
    assert_eq!(
        (status, &body["Err"]),
        (409, &json!({"DuplicateId": {"id": 1}}))
    );
    let (status, body) = host.write("/insert_user", json!({"id": 2, "username": ""}));
    assert_eq!(status, 400);
    assert!(body["Err"]["InvalidInput"].is_object());
    let long = "x".repeat(MAX_USERNAME_BYTES + 1);
    let (status, body) = host.write("/insert_user", json!({"id": 2, "username": long}));
    assert_eq!(status, 413);
    assert_eq!(body["Err"]["LimitExceeded"]["limit"], "UsernameBytes");
    let (status, body) = host.get("/list_users?limit=10001");
    assert_eq!(
        (status, &body["Err"]["LimitExceeded"]["limit"]),
        (413, &json!("PageSize"))
    );
    let (status, _) = host.get("/list_users?limit=0");
    assert_eq!(status, 400);
    let too_many: Vec<Value> = (0..=MAX_BATCH_SIZE as u64)
        .map(|id| json!({"id": id, "username": "u"}))
        .collect();
    let (status, body) = host.write("/insert_users", Value::Array(too_many));
    assert_eq!(
        (status, &body["Err"]["LimitExceeded"]["limit"]),
        (413, &json!("BatchSize"))
    );
    let (status, body) = host.write("/insert_user", json!({"id": u64::MAX, "username": "a"}));
    assert_eq!(
        (status, &body["Err"]["LimitExceeded"]["limit"]),
        (413, &json!("UserId"))
    );
    assert_eq!(host.count(), 1);
}

#[test]
fn the_status_function_covers_every_error() {
    let cases = [
        (StoreError::NotFound { id: 1 }, 404),
        (StoreError::DuplicateId { id: 1 }, 409),
        (StoreError::invalid_input("x"), 400),
        (
            StoreError::LimitExceeded {
                limit: Limit::BatchSize,
                max: 1,
                actual: 2,
            },
            413,
        ),
        (
            StoreError::Unauthorized {
                caller: candid::Principal::anonymous(),
            },
            403,
        ),
        (StoreError::invalid_config("x"), 400),
        (
            StoreError::StorageFull {
                used_pages: 1,
                limit_pages: 1,
            },
            507,
        ),
        (StoreError::storage("x", "y"), 500),
    ];
    for (error, expected) in cases {
        assert_eq!(api::status(&Failure::Store(error)), expected);
    }
    assert_eq!(api::status(&Failure::MissingCredential), 401);
    assert_eq!(api::status(&Failure::WritesDisabled), 401);
    assert_eq!(api::status(&Failure::WrongCredential), 403);
    assert_eq!(api::status(&Failure::BodyTooLarge), 413);
    assert_eq!(api::status(&Failure::Busy(String::new())), 503);
    // A failure to open the data file is a storage failure.
    let host = Host::new(Engine::PageTree);
    let request = Request::new("GET", "/count_users", Vec::new());
    let response = serve_on(
        &host.config,
        &request,
        |_, _| -> Result<Option<Standin>, _> { Err(StoreError::storage("opening", "no disk")) },
    );
    assert_eq!(response.status, 500);
}

#[test]
fn ping_answers_without_opening_the_data() {
    let host = Host::new(Engine::PageTree);
    let request = Request::new("GET", "/ping", Vec::new());
    let response = serve_on(
        &host.config,
        &request,
        |_, _| -> Result<Option<Standin>, _> {
            Err(StoreError::storage(
                "opening",
                "the ping must not open the data",
            ))
        },
    );
    assert_eq!(reply(response), (200, json!({"Ok": "pong"})));
    let posted = reply(host.send(Request::new("POST", "/ping", Vec::new())));
    assert_eq!(posted.0, 405);
}

#[test]
fn bad_requests_are_refused_and_change_nothing() {
    let host = Host::new(Engine::BTree);
    let post =
        |path: &str, body: Vec<u8>| reply(host.send(authorized(Request::new("POST", path, body))));
    let cases: [(&str, Vec<u8>); 7] = [
        ("/insert_user", b"{\"id\":1,".to_vec()),
        ("/insert_user", br#"{"id":"1","username":"a"}"#.to_vec()),
        ("/insert_user", br#"{"id":-1,"username":"a"}"#.to_vec()),
        (
            "/insert_user",
            br#"{"id":1,"username":"a","extra":1}"#.to_vec(),
        ),
        (
            "/insert_user",
            b"{\"id\":1,\"username\":\"\xff\xfe\"}".to_vec(),
        ),
        ("/insert_users", br#"{"id":1,"username":"a"}"#.to_vec()),
        ("/delete_users", br#"[1,"2"]"#.to_vec()),
    ];
    for (path, body) in cases {
        let (status, reply) = post(path, body);
        assert_eq!(status, 400, "{reply}");
        assert!(reply["Err"]["InvalidInput"].is_object(), "{reply}");
    }
    for path in [
        "/get_user?id=x",
        "/get_user",
        "/list_users?after=-1",
        "/count_users?x=1",
        "/get_user?id=1&id=2",
    ] {
        assert_eq!(host.get(path).0, 400, "{path}");
    }
    let (status, body) = host.get("/nowhere");
    assert_eq!(status, 404);
    assert!(body["message"]
        .as_str()
        .is_some_and(|text| text.contains("/nowhere")));
    let response = host.send(authorized(Request::new("GET", "/insert_user", Vec::new())));
    assert_eq!(response.status, 405);
    assert_eq!(response.header("allow"), Some("POST"));
    assert_eq!(
        host.send(Request::new("DELETE", "/count_users", Vec::new()))
            .status,
        405
    );
    let oversize = vec![b' '; MAX_BODY_BYTES + 1];
    assert_eq!(post("/insert_users", oversize).0, 413);
    assert_eq!(host.count(), 0);
    assert_eq!(host.memory.commits.get(), 0);
}

#[test]
fn the_body_limit_admits_the_largest_batch() {
    // Every user at its longest id and a username of control characters, escaped at 6 bytes.
    let username = "\u{1}".repeat(MAX_USERNAME_BYTES);
    let users: Vec<Value> = (0..MAX_BATCH_SIZE as u64)
        .map(|index| json!({"id": i64::MAX as u64 - index, "username": username}))
        .collect();
    let body = Value::Array(users).to_string();
    assert!(
        body.len() <= MAX_BODY_BYTES,
        "{} > {MAX_BODY_BYTES}",
        body.len()
    );
}

#[test]
fn writes_need_the_token_and_reads_do_not() {
    let host = Host::new(Engine::PageTree);
    let insert = || Request::new("POST", "/insert_user", r#"{"id":1,"username":"a"}"#);
    let (status, body) = reply(host.send(insert()));
    assert_eq!(status, 401);
    assert!(body["Err"]["Unauthorized"].is_object());
    for header in [
        "Bearer wrong",
        "Bearer s3cret-toke",
        "Bearer s3cret-token2",
        "Basic s3cret-token",
    ] {
        let status = host
            .send(insert().with_header("authorization", header))
            .status;
        assert_eq!(
            status,
            if header.starts_with("Basic") {
                401
            } else {
                403
            },
            "{header}"
        );
    }
    assert_eq!(host.count(), 0);
    assert_eq!(host.memory.commits.get(), 0);
    assert_eq!(
        host.send(insert().with_header("AUTHORIZATION", "bearer s3cret-token"))
            .status,
        200
    );
    assert_eq!(host.count(), 1);
    // Without a configured token every write is refused, with a message saying why.
    let mut closed = Host::new(Engine::PageTree);
    closed.config.write_token = None;
    let (status, body) = reply(closed.send(authorized(insert())));
    assert_eq!(status, 401);
    assert!(body["message"]
        .as_str()
        .is_some_and(|text| text.contains("USERSTORE_WRITE_TOKEN")));
    assert_eq!(closed.get("/count_users"), (200, json!({"Ok": 0})));
}

#[test]
fn constant_time_comparison_is_equality() {
    assert!(constant_time_eq(b"abc", b"abc"));
    assert!(!constant_time_eq(b"abc", b"abd"));
    assert!(!constant_time_eq(b"abc", b"ab"));
    assert!(!constant_time_eq(b"", b"a"));
    assert!(constant_time_eq(b"", b""));
}

#[test]
fn batches_are_all_or_nothing() {
    for engine in ENGINES {
        let host = Host::new(engine);
        host.write(
            "/insert_users",
            json!([{"id": 1, "username": "a"}, {"id": 2, "username": "b"}]),
        );
        let commits = host.memory.commits.get();
        let clash = json!([{"id": 3, "username": "c"}, {"id": 1, "username": "again"}]);
        assert_eq!(host.write("/insert_users", clash).0, 409);
        let unknown = json!([{"id": 1, "username": "x"}, {"id": 7, "username": "y"}]);
        assert_eq!(host.write("/update_users", unknown).0, 404);
        assert_eq!(host.write("/delete_users", json!([2, 8])).0, 404);
        assert_eq!(host.write("/delete_users", json!([2, 2])).0, 409);
        assert_eq!(
            host.memory.commits.get(),
            commits,
            "a failed write committed"
        );
        assert_eq!(
            host.get("/list_users"),
            (
                200,
                json!({"Ok": [{"id": 1, "username": "a"}, {"id": 2, "username": "b"}]})
            )
        );
    }
}

#[test]
fn reads_never_commit_and_report_io() {
    let host = Host::new(Engine::PageTree);
    for path in [
        "/count_users",
        "/get_user?id=1",
        "/list_users",
        "/config",
        "/stats",
    ] {
        host.get(path);
    }
    assert_eq!(host.memory.commits.get(), 0);
    assert!(
        host.memory.committed.borrow().is_empty(),
        "a read wrote the data"
    );
    let response = host.send(authorized(Request::new(
        "POST",
        "/insert_user",
        r#"{"id":1,"username":"a"}"#,
    )));
    assert_eq!(response.header("x-userstore-syncs"), Some("1"));
    assert_eq!(response.header("x-userstore-bytes-read"), Some("1"));
    assert_eq!(response.header("x-userstore-bytes-written"), Some("2"));
}

#[test]
fn data_of_another_engine_is_refused_by_name() {
    let host = Host::new(Engine::PageTree);
    host.write("/insert_user", json!({"id": 1, "username": "a"}));
    let before = host.memory.committed.borrow().clone();
    let commits = host.memory.commits.get();
    let mut other = Host::new(Engine::BTree);
    other.memory = host.memory.clone();
    for (status, body) in [
        other.get("/count_users"),
        other.write("/insert_user", json!({"id": 2, "username": "b"})),
    ] {
        assert_eq!(status, 400);
        let message = body["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("PageTree") && message.contains("StableBTreeMap"),
            "{message}"
        );
        assert!(body["Err"]["InvalidConfig"].is_object());
    }
    assert_eq!(*host.memory.committed.borrow(), before);
    assert_eq!(host.memory.commits.get(), commits);
    assert_eq!(host.count(), 1);
}

#[test]
fn foreign_data_is_refused() {
    let host = Host::new(Engine::PageTree);
    *host.memory.committed.borrow_mut() = vec![7u8; PAGE];
    let (status, body) = host.get("/count_users");
    assert_eq!(status, 400, "{body}");
}

#[test]
fn config_comes_from_the_environment() {
    let config = EdgeConfig::from_lookup(|_| None).expect("defaults");
    assert_eq!(config.engine, Engine::PageTree);
    assert_eq!(config.lock_spin, DEFAULT_LOCK_SPIN);
    assert_eq!(config.data, Path::new("/data/userstore.db"));
    assert_eq!(config.write_token, None);
    let config = EdgeConfig::from_lookup(|name| match name {
        "USERSTORE_ENGINE" => Some("btree".to_owned()),
        "USERSTORE_WRITE_TOKEN" => Some(String::new()),
        "USERSTORE_LOCK_STALE_MS" => Some("5".to_owned()),
        "USERSTORE_LOCK_SPIN_US" => Some("0".to_owned()),
        _ => None,
    })
    .expect("a configuration");
    assert_eq!(config.engine, Engine::BTree);
    assert_eq!(config.write_token, None, "an empty token is no token");
    assert_eq!(config.lock_stale, Duration::from_millis(5));
    assert_eq!(config.lock_spin, Duration::ZERO);
    let bad_spin = EdgeConfig::from_lookup(|name| {
        (name == "USERSTORE_LOCK_SPIN_US").then(|| "5ms".to_owned())
    });
    assert!(
        matches!(&bad_spin, Err(StoreError::InvalidConfig { reason }) if reason.contains("microseconds")),
        "{bad_spin:?}"
    );
    let bad =
        EdgeConfig::from_lookup(|name| (name == "USERSTORE_ENGINE").then(|| "sqlite".to_owned()));
    assert!(matches!(bad, Err(StoreError::InvalidConfig { .. })));
    assert_eq!(Engine::PageTree.name(), "PageTree");
    assert_eq!(Engine::BTree.name(), "StableBTreeMap");
}

/// Lock settings of epoch `epoch` for tests: no wait, quick looks (the readers' tests too).
pub(super) fn settings(epoch: &str) -> LockSettings {
    LockSettings {
        epoch: epoch.to_owned(),
        stale: Duration::from_secs(30),
        wait: Duration::ZERO,
        retry: Duration::from_millis(1),
        look: Duration::from_millis(1),
        spin: Duration::from_millis(1),
    }
}

fn write_lock(data: &Path, epoch: &str, millis: u64) {
    let holder = Holder {
        epoch: epoch.to_owned(),
        millis,
        nonce: 1,
    };
    std::fs::write(lock_path(data), holder.encode()).expect("a lock file");
}

fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|time| time.as_millis() as u64)
        .unwrap_or_default()
}

#[test]
fn the_lock_is_exclusive_and_released_on_drop() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().join("userstore.db");
    let lock = Lock::acquire(&data, &settings("e")).expect("the lock");
    assert!(lock_path(&data).exists());
    assert!(matches!(
        Lock::acquire(&data, &settings("e")),
        Err(Failure::Busy(_))
    ));
    drop(lock);
    assert!(!lock_path(&data).exists());
    let again = Lock::acquire(&data, &settings("e"));
    assert!(again.is_ok());
}

#[test]
fn a_held_lock_makes_writes_busy_and_reads_run_beside_it() {
    let mut host = Host::new(Engine::PageTree);
    write_lock(&host.config.data, "epoch-1", now_millis());
    let (status, body) = host.write("/insert_user", json!({"id": 1, "username": "alice"}));
    assert_eq!(status, 503, "{body}");
    let (status, body) = host.get("/count_users");
    assert_eq!(
        (status, body),
        (200, json!({"Ok": 0})),
        "a read waited for the lock"
    );
    // Every request takes the lock when reads are not shared.
    host.config.shared_reads = false;
    let (status, body) = host.get("/count_users");
    assert_eq!(status, 503, "{body}");
    assert!(
        lock_path(&host.config.data).exists(),
        "a live lock was broken"
    );
    std::fs::remove_file(lock_path(&host.config.data)).expect("removed");
    assert_eq!(host.get("/count_users").0, 200);
    host.config.shared_reads = true;
    assert_eq!(
        host.write("/insert_user", json!({"id": 1, "username": "alice"}))
            .0,
        200
    );
    assert!(
        !lock_path(&host.config.data).exists(),
        "the request kept its lock"
    );
    let dir = host.config.data.parent().expect("a directory");
    let litter: Vec<_> = std::fs::read_dir(dir)
        .expect("the directory")
        .map(|entry| entry.expect("an entry").file_name())
        .collect();
    assert!(litter.is_empty(), "left behind: {litter:?}");
}

#[test]
fn a_read_that_finds_a_checkpoint_marked_takes_the_lock_and_clears_a_stale_marker() {
    let host = Host::new(Engine::PageTree);
    let marker = super::readers::marker_path(&host.config.data);
    std::fs::write(&marker, "").expect("a marker left by a writer that trapped");
    write_lock(&host.config.data, "epoch-1", now_millis());
    let (status, body) = host.get("/count_users");
    assert_eq!(
        status, 503,
        "{body}: read without the lock during a checkpoint"
    );
    std::fs::remove_file(lock_path(&host.config.data)).expect("removed");
    assert_eq!(host.get("/count_users").0, 200);
    assert!(!marker.exists(), "the stale marker stayed");
}

#[test]
fn a_read_without_the_lock_opens_shared_and_a_write_exclusive() {
    let host = Host::new(Engine::PageTree);
    let opened = RefCell::new(Vec::new());
    let memory = host.memory.clone();
    let send = |request: Request| {
        serve_on(&host.config, &request, |_, access| {
            opened.borrow_mut().push(match access {
                super::session::Access::Shared => "shared",
                super::session::Access::Exclusive(_) => "exclusive",
            });
            Ok(Some(memory.reopen()))
        })
    };
    send(Request::new("GET", "/count_users", Vec::new()));
    send(authorized(Request::new(
        "POST",
        "/insert_user",
        json!({"id": 2, "username": "bob"}).to_string(),
    )));
    assert_eq!(*opened.borrow(), vec!["shared", "exclusive"]);
    // An opener that cannot read beside the writer sends the read to the lock.
    opened.borrow_mut().clear();
    let response = serve_on(
        &host.config,
        &Request::new("GET", "/count_users", Vec::new()),
        |_, access| {
            Ok(match access {
                super::session::Access::Shared => {
                    opened.borrow_mut().push("shared refused");
                    None
                }
                super::session::Access::Exclusive(_) => {
                    opened.borrow_mut().push("exclusive");
                    Some(memory.reopen())
                }
            })
        },
    );
    assert_eq!(reply(response), (200, json!({"Ok": 1})));
    assert_eq!(*opened.borrow(), vec!["shared refused", "exclusive"]);
}

#[test]
fn stale_locks_are_broken() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().join("userstore.db");
    // Another epoch: a host that was killed.
    write_lock(&data, "old-host", now_millis());
    drop(Lock::acquire(&data, &settings("e")).expect("broke another epoch's lock"));
    // This epoch, older than the stale timeout: a trapped instance.
    write_lock(&data, "e", now_millis().saturating_sub(60_000));
    drop(Lock::acquire(&data, &settings("e")).expect("broke an old lock"));
    // A torn lock file of this epoch, just written, is not broken.
    std::fs::write(lock_path(&data), "").expect("a torn lock");
    assert!(matches!(
        Lock::acquire(&data, &settings("e")),
        Err(Failure::Busy(_))
    ));
    std::fs::remove_file(lock_path(&data)).expect("removed");
    // While another breaker is at work a stale lock is left to it.
    write_lock(&data, "old-host", now_millis());
    let breaker = Holder {
        epoch: "e".to_owned(),
        millis: now_millis(),
        nonce: 2,
    };
    std::fs::write(break_path(&data), breaker.encode()).expect("a breaker's file");
    assert!(matches!(
        Lock::acquire(&data, &settings("e")),
        Err(Failure::Busy(_))
    ));
    // A breaker's file of a killed host is itself removed, and the lock then broken.
    let old_breaker = Holder {
        epoch: "old-host".to_owned(),
        ..breaker
    };
    std::fs::write(break_path(&data), old_breaker.encode()).expect("a breaker's file");
    let mut patient = settings("e");
    patient.wait = Duration::from_secs(5);
    let lock = Lock::acquire(&data, &patient).expect("broke the lock after the breaker");
    assert!(!break_path(&data).exists());
    drop(lock);
}

/// Tickets in the line of the data file in `dir`.
fn tickets_in(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .expect("the directory")
        .filter_map(Result::ok)
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.strip_prefix("userstore.db.lock.q")
                .is_some_and(|digits| digits.bytes().all(|byte| byte.is_ascii_digit()))
        })
        .count()
}

/// Waits (up to a minute) until waiter number `waiter` has its ticket in the line in `dir`.
fn wait_until_queued(dir: &Path, waiter: usize) {
    let give_up = std::time::Instant::now() + Duration::from_secs(60);
    while tickets_in(dir) < waiter + 1 {
        assert!(
            std::time::Instant::now() < give_up,
            "waiter {waiter} never queued"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn write_ticket(data: &Path, number: u64, epoch: &str) {
    let holder = Holder {
        epoch: epoch.to_owned(),
        millis: now_millis(),
        nonce: number,
    };
    std::fs::write(ticket_path(data, number), holder.encode()).expect("a ticket");
}

#[test]
fn waiters_take_the_lock_in_the_order_they_came() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().join("userstore.db");
    let held = Lock::acquire(&data, &settings("e")).expect("the lock");
    let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for waiter in 0..4 {
        let (data, order) = (data.clone(), order.clone());
        waiters.push(std::thread::spawn(move || {
            let mut patient = settings("e");
            patient.wait = Duration::from_secs(60);
            let lock = Lock::acquire(&data, &patient).expect("the lock in turn");
            order.lock().expect("the order").push(waiter);
            drop(lock);
        }));
        // The next waiter comes once this one is in line.
        wait_until_queued(dir.path(), waiter);
    }
    drop(held);
    for waiter in waiters {
        waiter.join().expect("a waiter");
    }
    assert_eq!(*order.lock().expect("the order"), vec![0, 1, 2, 3]);
    assert_eq!(tickets_in(dir.path()), 0, "a ticket was left behind");
    assert!(!lock_path(&data).exists());
}

/// `count` waiters queue behind a held lock, which is then freed; each holds the lock a moment
/// once it has it, so that the next takes it from a holder. Whether each got the lock within
/// `settings.wait`.
fn waiters_in_turn(count: usize, settings: &LockSettings) -> Vec<bool> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().join("userstore.db");
    let held = Lock::acquire(&data, &self::settings("e")).expect("the lock");
    let mut waiters = Vec::new();
    for waiter in 0..count {
        let (data, settings) = (data.clone(), settings.clone());
        waiters.push(std::thread::spawn(move || {
            Lock::acquire(&data, &settings)
                .map(|lock| {
                    std::thread::sleep(Duration::from_millis(20));
                    drop(lock);
                })
                .is_ok()
        }));
        wait_until_queued(dir.path(), waiter);
    }
    drop(held);
    let took = waiters
        .into_iter()
        .map(|waiter| waiter.join().expect("a waiter"))
        .collect();
    assert_eq!(tickets_in(dir.path()), 0, "a ticket was left behind");
    took
}

#[test]
fn the_front_of_the_line_takes_a_freed_lock_without_sleeping_between_looks() {
    // Watches and looks at the line 20 s apart, longer than a waiter waits (10 s): a waiter
    // that slept between them would give up with a 503. The first and the second in line spin
    // instead (the module's "The handoff"), so both get the lock in turn.
    let mut spinning = settings("e");
    spinning.wait = Duration::from_secs(10);
    spinning.retry = Duration::from_secs(20);
    spinning.look = Duration::from_secs(20);
    spinning.spin = Duration::from_secs(10);
    assert_eq!(
        waiters_in_turn(2, &spinning),
        vec![true, true],
        "a waiter at the front slept instead of watching"
    );
}

#[test]
fn waiters_behind_move_forward_by_watching_the_ticket_in_front() {
    // No spin, and one look at the line in 20 s, longer than a waiter waits (10 s): the third
    // in line gets its turn only by seeing the tickets in front of it go, one watch each
    // `retry`, without listing the line again.
    let mut watching = settings("e");
    watching.wait = Duration::from_secs(10);
    watching.retry = Duration::from_millis(1);
    watching.look = Duration::from_secs(20);
    watching.spin = Duration::ZERO;
    assert_eq!(
        waiters_in_turn(3, &watching),
        vec![true, true, true],
        "a waiter behind waited for a look at the line"
    );
}

#[test]
fn a_waiter_lists_the_line_once_then_watches_the_ticket_in_front() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().join("userstore.db");
    let held = Lock::acquire(&data, &settings("e")).expect("the lock");
    // A live request of this host waits in front.
    write_ticket(&data, 1, "e");
    let waiter = {
        let data = data.clone();
        std::thread::spawn(move || {
            // One look at the line in 20 s, longer than the wait: every step after the first
            // look is a watch of one file.
            let mut watching = settings("e");
            watching.wait = Duration::from_secs(10);
            watching.retry = Duration::from_millis(1);
            watching.look = Duration::from_secs(20);
            watching.spin = Duration::ZERO;
            let lock = Lock::acquire(&data, &watching);
            let listings = super::lock::LISTINGS.with(std::cell::Cell::get);
            (lock.is_ok(), listings)
        })
    };
    wait_until_queued(dir.path(), 1);
    // The request in front takes the lock and is done with it.
    std::fs::remove_file(ticket_path(&data, 1)).expect("the ticket in front served");
    drop(held);
    let (took, listings) = waiter.join().expect("the waiter");
    assert!(took, "the waiter did not get the freed lock");
    assert_eq!(listings, 1, "the waiter listed the line more than once");
    assert_eq!(tickets_in(dir.path()), 0, "a ticket was left behind");
}

#[test]
fn a_free_lock_goes_to_the_first_in_line_and_a_waiter_that_gives_up_leaves_it() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().join("userstore.db");
    // A live request of this host waits in front: a newcomer does not pass it.
    write_ticket(&data, 1, "e");
    let mut brief = settings("e");
    brief.wait = Duration::from_millis(20);
    assert!(matches!(
        Lock::acquire(&data, &brief),
        Err(Failure::Busy(_))
    ));
    assert!(!lock_path(&data).exists(), "the newcomer took the lock");
    assert_eq!(tickets_in(dir.path()), 1, "the newcomer left its ticket");
    // A ticket left by a host that is gone is removed by the one behind it.
    std::fs::remove_file(ticket_path(&data, 1)).expect("removed");
    write_ticket(&data, 1, "old-host");
    let mut patient = settings("e");
    patient.wait = Duration::from_secs(5);
    let lock = Lock::acquire(&data, &patient).expect("the lock behind a gone host's ticket");
    assert_eq!(tickets_in(dir.path()), 0);
    drop(lock);
}

#[test]
fn a_broken_lock_is_not_removed_by_its_old_holder() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let data = dir.path().join("userstore.db");
    let old = Lock::acquire(&data, &settings("old-host")).expect("the lock");
    let new = Lock::acquire(&data, &settings("e")).expect("broke the other epoch's lock");
    drop(old);
    assert!(
        lock_path(&data).exists(),
        "the old holder removed the new lock"
    );
    drop(new);
    assert!(!lock_path(&data).exists());
}

#[test]
fn file_memory_keeps_committed_writes_across_sessions() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for engine in ENGINES {
        let mut config = config_in(dir.path(), engine);
        config.data = dir.path().join(format!("{engine:?}.db"));
        let send = |request: Request| reply(super::serve(&config, &request));
        let insert = authorized(Request::new(
            "POST",
            "/insert_users",
            r#"[{"id":1,"username":"a"},{"id":2,"username":"b"}]"#,
        ));
        assert_eq!(send(insert).0, 200);
        let clash = authorized(Request::new(
            "POST",
            "/insert_user",
            r#"{"id":1,"username":"x"}"#,
        ));
        assert_eq!(send(clash).0, 409);
        assert_eq!(
            send(Request::new("GET", "/list_users", Vec::new())),
            (
                200,
                json!({"Ok": [{"id": 1, "username": "a"}, {"id": 2, "username": "b"}]})
            )
        );
        let mut other = config.clone();
        other.engine = if engine == Engine::BTree {
            Engine::PageTree
        } else {
            Engine::BTree
        };
        let (status, _) = reply(super::serve(
            &other,
            &Request::new("GET", "/count_users", Vec::new()),
        ));
        assert_eq!(status, 400);
        assert_eq!(
            send(Request::new("GET", "/count_users", Vec::new())),
            (200, json!({"Ok": 2}))
        );
    }
}

#[test]
fn a_store_that_commits_its_own_writes_is_served_with_or_without_counts() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let config = config_in(dir.path(), Engine::BTree);
    // The store's data outlives each session, as a peer's file does.
    let memory = ic_stable_structures::VectorMemory::default();
    let open = |_: &Path| BTreeStore::open(memory.clone());
    let insert = authorized(Request::new(
        "POST",
        "/insert_user",
        json!({"id": 1, "username": "alice"}).to_string(),
    ));
    let counted = serve_store(&config, &insert, "peer", open, |_| {
        Some(Io {
            syncs: 1,
            bytes_read: 2,
            bytes_written: 3,
        })
    });
    assert_eq!(counted.status, 200);
    assert_eq!(counted.header("x-userstore-syncs"), Some("1"));
    assert_eq!(counted.header("x-userstore-bytes-read"), Some("2"));
    assert_eq!(counted.header("x-userstore-bytes-written"), Some("3"));
    let count = Request::new("GET", "/count_users", Vec::new());
    let uncounted_reply = serve_store(&config, &count, "peer", open, uncounted);
    assert_eq!(uncounted_reply.header("x-userstore-syncs"), None);
    assert_eq!(reply(uncounted_reply), (200, json!({"Ok": 1})));
    let (status, body) = reply(serve_store(
        &config,
        &Request::new("GET", "/config", Vec::new()),
        "peer",
        open,
        uncounted,
    ));
    assert_eq!(
        (status, &body["Ok"]["engine"]),
        (200, &json!("peer")),
        "{body}"
    );
    // The common steps: a write without the token, and a ping that opens nothing.
    let unauthorized = Request::new("POST", "/delete_user", json!({"id": 1}).to_string());
    let (status, _) = reply(serve_store(&config, &unauthorized, "peer", open, uncounted));
    assert_eq!(status, 401);
    let ping = Request::new("GET", "/ping", Vec::new());
    let response = serve_store(
        &config,
        &ping,
        "peer",
        |_| -> Result<BTreeStore<ic_stable_structures::VectorMemory>, _> {
            Err(StoreError::storage(
                "opening",
                "the ping must not open the data",
            ))
        },
        uncounted,
    );
    assert_eq!(reply(response), (200, json!({"Ok": "pong"})));
}
