//! The edge component on a second host: `jco serve` (Node.js with
//! `@bytecodealliance/preview2-shim`) running `target/edge/userstore-edge.wasm` and
//! `userstore-edge-sqlite.wasm` (built by `scripts/build_edge.sh`), the data directory
//! preopened as `/data` and the component's environment set by `scripts/jco_hook.mjs`, called
//! over HTTP with the edge benchmark's client: the API on every engine (page_tree, btree,
//! stable_sqlite) and a restart that keeps the data.
//!
//! jco and the shim are the ones `scripts/jco.sh` installs under `target/jco` (pinned). Node,
//! jco or the Wasm missing fails the tests with what to do, unless `USERSTORE_SKIP_JCO=1`.
//!
//! Why a hook: preview2-shim's `open-at` refuses the descriptor flag `mutate-directory`, which
//! wasi-libc (under Rust's `std::fs`) sets on every open for writing; the hook drops it on
//! opens of non-directories, where it grants nothing (see `scripts/jco.sh`). Everything else
//! the component uses (positioned stream reads and writes, `set-size`, `sync`, `stat`,
//! `link-at`, `unlink-at`, a directory's `sync`) the shim implements, with real `fsync`s.

use edge_bench::client::Client;
use serde_json::{json, Value};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const TOKEN: &str = "edge-jco-token";
/// How long `jco serve` may take to transpile the component and listen.
const START_TIMEOUT: Duration = Duration::from_secs(180);

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// What a host needs: the jco launcher, the hook, the component; `None` when skipped on
/// purpose.
struct Setup {
    jco: PathBuf,
    hook: PathBuf,
    component: PathBuf,
}

/// The setup for the component `target/edge/<component>.wasm`.
fn setup(component: &str) -> Option<Setup> {
    if std::env::var("USERSTORE_SKIP_JCO").as_deref() == Ok("1") {
        eprintln!("USERSTORE_SKIP_JCO=1: the jco end-to-end tests are skipped");
        return None;
    }
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.as_ref().is_ok_and(|output| output.status.success()),
        "node is not installed (Node.js 20 or newer is needed for jco serve): {node:?}; \
         or set USERSTORE_SKIP_JCO=1"
    );
    let jco = root().join("target/jco/node_modules/.bin/jco");
    assert!(
        jco.is_file(),
        "no {}: install jco with `bash scripts/jco.sh`, or set USERSTORE_SKIP_JCO=1",
        jco.display()
    );
    let component = root().join(format!("target/edge/{component}.wasm"));
    assert!(
        component.is_file(),
        "no {}: build it with scripts/build_edge.sh, or set USERSTORE_SKIP_JCO=1",
        component.display()
    );
    Some(Setup {
        jco,
        hook: root().join("scripts/jco_hook.mjs"),
        component,
    })
}

/// A running `jco serve`, in a process group of its own (jco runs the server in a child
/// node process): the whole group is killed when dropped.
struct JcoHost {
    child: Child,
    address: SocketAddr,
}

impl JcoHost {
    /// Starts `jco serve` on a free loopback port with `data` preopened as `/data` and the
    /// engine `engine`; a new host epoch at every start. The transpiled code goes to
    /// `work`.
    fn start(setup: &Setup, engine: &str, data: &Path, work: &Path) -> JcoHost {
        use std::os::unix::process::CommandExt;
        let port = TcpListener::bind(("127.0.0.1", 0))
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let address = SocketAddr::from(([127, 0, 0, 1], port));
        let epoch = format!(
            "jco-{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|since| since.as_nanos())
                .unwrap_or_default()
        );
        let child = Command::new(&setup.jco)
            .arg("serve")
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .arg("--jco-dir")
            .arg(work.join(format!("jco-{port}")))
            .arg("--jco-import")
            .arg(&setup.hook)
            .arg(&setup.component)
            .env("JCO_DATA_DIR", data)
            .env("USERSTORE_WRITE_TOKEN", TOKEN)
            .env("USERSTORE_HOST_EPOCH", &epoch)
            .env("USERSTORE_ENGINE", engine)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|error| panic!("starting {}: {error}", setup.jco.display()));
        let mut host = JcoHost { child, address };
        let started = Instant::now();
        loop {
            if let Some(status) = host.child.try_wait().expect("the host's status") {
                panic!("jco serve exited before listening: {status}");
            }
            if TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok() {
                return host;
            }
            assert!(
                started.elapsed() < START_TIMEOUT,
                "jco serve did not listen on {address} in {START_TIMEOUT:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for JcoHost {
    fn drop(&mut self) {
        // The group: jco and the node process it started.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An answer: the status and the JSON body.
fn send(
    address: SocketAddr,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: &[u8],
) -> (u16, Value) {
    let body = (!body.is_empty()).then_some(body);
    let response = Client::new(address, token)
        .send(method, path, &[("content-type", "application/json")], body)
        .unwrap_or_else(|error| panic!("{method} {path}: {error}"));
    let json = response
        .json()
        .unwrap_or_else(|error| panic!("{method} {path}: {error}"));
    (response.status, json)
}

fn get(address: SocketAddr, path: &str) -> (u16, Value) {
    send(address, None, "GET", path, b"")
}

fn write(address: SocketAddr, path: &str, body: Value) -> (u16, Value) {
    send(
        address,
        Some(TOKEN),
        "POST",
        path,
        body.to_string().as_bytes(),
    )
}

fn the_api_on_jco(engine: &str, component: &str) {
    let Some(setup) = setup(component) else {
        return;
    };
    let data = tempfile::tempdir().expect("a temporary directory");
    let work = tempfile::tempdir().expect("a temporary directory");
    let host = JcoHost::start(&setup, engine, data.path(), work.path());
    let at = host.address;

    let ok = json!({"Ok": null});
    assert_eq!(
        write(at, "/insert_user", json!({"id": 1, "username": "alice"})),
        (200, ok)
    );
    let batch = json!([{"id": 2, "username": "bob"}, {"id": 3, "username": "carol"}]);
    assert_eq!(write(at, "/insert_users", batch), (200, json!({"Ok": 2})));
    // A batch with one clash is refused whole: id 5 is not inserted.
    let clash = json!([{"id": 5, "username": "e"}, {"id": 1, "username": "f"}]);
    assert_eq!(write(at, "/insert_users", clash).0, 409, "{engine}");
    assert_eq!(
        get(at, "/get_user?id=5").0,
        404,
        "{engine}: a refused batch left a row"
    );
    assert_eq!(
        write(at, "/insert_user", json!({"id": 1, "username": "x"})).0,
        409
    );
    assert_eq!(
        get(at, "/get_user?id=2"),
        (200, json!({"Ok": {"id": 2, "username": "bob"}}))
    );
    assert_eq!(get(at, "/get_user?id=42").0, 404, "{engine}");
    assert_eq!(get(at, "/nowhere").0, 404, "{engine}");
    assert_eq!(
        write(
            at,
            "/update_username",
            json!({"id": 1, "username": "alicia"})
        ),
        (200, json!({"Ok": {"id": 1, "username": "alice"}}))
    );
    assert_eq!(
        write(at, "/delete_user", json!({"id": 3})).0,
        200,
        "{engine}"
    );
    assert_eq!(
        get(at, "/list_users?limit=10"),
        (
            200,
            json!({"Ok": [{"id": 1, "username": "alicia"}, {"id": 2, "username": "bob"}]})
        )
    );
    assert_eq!(get(at, "/count_users"), (200, json!({"Ok": 2})));
    // Failures, each changing nothing.
    let body = br#"{"id":9,"username":"x"}"#;
    assert_eq!(
        send(at, None, "POST", "/insert_user", body).0,
        401,
        "{engine}"
    );
    assert_eq!(send(at, Some("nope"), "POST", "/insert_user", body).0, 403);
    assert_eq!(get(at, "/insert_user").0, 405, "{engine}");
    assert_eq!(
        send(at, Some(TOKEN), "POST", "/insert_user", br#"{"id""#).0,
        400,
        "{engine}"
    );
    assert_eq!(get(at, "/count_users"), (200, json!({"Ok": 2})));
    assert_eq!(get(at, "/ping"), (200, json!({"Ok": "pong"})));

    // A restarted host (a new epoch) finds the data as it was, and writes on.
    drop(host);
    let host = JcoHost::start(&setup, engine, data.path(), work.path());
    let at = host.address;
    assert_eq!(get(at, "/count_users"), (200, json!({"Ok": 2})), "{engine}");
    assert_eq!(
        get(at, "/get_user?id=1"),
        (200, json!({"Ok": {"id": 1, "username": "alicia"}}))
    );
    assert_eq!(
        write(at, "/insert_user", json!({"id": 7, "username": "g"})).0,
        200
    );
    assert_eq!(get(at, "/count_users"), (200, json!({"Ok": 3})), "{engine}");
}

#[test]
fn the_api_on_jco_serve_page_tree() {
    the_api_on_jco("page_tree", "userstore-edge");
}

#[test]
fn the_api_on_jco_serve_btree() {
    the_api_on_jco("btree", "userstore-edge");
}

#[test]
fn the_api_on_jco_serve_stable_sqlite() {
    the_api_on_jco("stable_sqlite", "userstore-edge-sqlite");
}
