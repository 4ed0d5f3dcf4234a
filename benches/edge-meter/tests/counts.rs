//! The metering host against the edge component (target/edge/userstore-edge.wasm, built by
//! scripts/build_edge.sh): it answers as the component answers, and its counts are whole,
//! repeatable and tell a fresh instance from a reused one.

use edge_bench::client::{Client, Response};
use edge_bench::host::{component_path, Host, HostConfig};
use std::path::Path;

const TOKEN: &str = "meter-test-token";
const COUNT: &str = "x-wasm-instructions";

/// The metering host serving the page tree on `data`, with `serve_args`.
fn start(data: &Path, serve_args: &[&str]) -> Option<Host> {
    if std::env::var("USERSTORE_SKIP_EDGE").as_deref() == Ok("1") {
        eprintln!("USERSTORE_SKIP_EDGE=1: the metering host's tests are skipped");
        return None;
    }
    let component = component_path("userstore-edge");
    assert!(
        component.is_file(),
        "no {}: build it with scripts/build_edge.sh, or set USERSTORE_SKIP_EDGE=1",
        component.display()
    );
    let config = HostConfig {
        program: env!("CARGO_BIN_EXE_edge-meter").into(),
        component,
        data_dir: data.to_owned(),
        env: vec![
            ("USERSTORE_ENGINE".into(), "page_tree".into()),
            ("USERSTORE_WRITE_TOKEN".into(), TOKEN.into()),
        ],
        serve_args: serve_args.iter().map(|arg| arg.to_string()).collect(),
    };
    Some(Host::start(&config).expect("the metering host starts"))
}

fn count(response: &Response) -> u64 {
    response
        .header(COUNT)
        .unwrap_or_else(|| panic!("no {COUNT} on {response:?}"))
        .parse()
        .expect("a count")
}

fn insert(client: &mut Client, id: u64, name: &str) -> Response {
    let body = format!(r#"{{"id":{id},"username":"{name}"}}"#);
    client
        .send("POST", "/insert_user", &[], Some(body.as_bytes()))
        .expect("insert_user")
}

#[test]
fn a_fresh_instance_per_request_counts_the_same_request_the_same() {
    let data = tempfile::tempdir().expect("a data directory");
    let Some(host) = start(data.path(), &[]) else {
        return;
    };
    let mut client = Client::new(host.address(), Some(TOKEN));
    let pings: Vec<u64> = (0..3)
        .map(|_| count(&client.get("/ping").expect("ping")))
        .collect();
    assert!(
        pings[0] > 0,
        "a fresh instance executes its start: {pings:?}"
    );
    assert!(pings.iter().all(|c| *c == pings[0]), "{pings:?}");

    // The component's own answers come through whole, status, body and headers.
    let inserted = insert(&mut client, 7, "ann");
    assert_eq!(
        (inserted.status, inserted.body.as_slice()),
        (200, &br#"{"Ok":null}"#[..])
    );
    assert!(inserted.header("x-userstore-syncs").is_some());
    let taken = insert(&mut client, 8, "ann");
    assert_eq!(taken.status, 409, "{taken:?}");
    let by_name = client
        .get("/get_user_by_name?username=ann")
        .expect("get_user_by_name");
    assert_eq!(
        by_name.json().expect("JSON"),
        serde_json::json!({"Ok": {"id": 7, "username": "ann"}})
    );

    // A read of the table does more than a ping, and the same read counts the same.
    let gets: Vec<u64> = (0..2)
        .map(|_| count(&client.get("/get_user?id=7").expect("get_user")))
        .collect();
    assert!(gets[0] > pings[0], "get {gets:?} against ping {pings:?}");
    assert_eq!(gets[0], gets[1]);
    assert!(count(&inserted) > pings[0], "insert {inserted:?}");
}

#[test]
fn a_reused_instance_counts_its_own_call_only() {
    let data = tempfile::tempdir().expect("a data directory");
    let Some(host) = start(data.path(), &["--max-instance-reuse-count", "3"]) else {
        return;
    };
    let mut client = Client::new(host.address(), None);
    // Requests 1 and 4 start an instance; 2, 3 and 5 reuse one.
    let pings: Vec<u64> = (0..5)
        .map(|_| count(&client.get("/ping").expect("ping")))
        .collect();
    assert!(
        pings[1] < pings[0],
        "reuse skips the instantiation: {pings:?}"
    );
    assert_eq!(pings[0], pings[3], "{pings:?}");
    assert_eq!(pings[1], pings[4], "{pings:?}");
}
