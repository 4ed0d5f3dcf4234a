//! The edge against the canister, differentially: one seeded call sequence (inserts, batch
//! inserts that clash, gets of present and missing ids, updates, batch updates, deletes, batch
//! deletes, pages, counts) sent to the edge component on `wasmtime serve` (over HTTP+JSON)
//! and to the store canister of the same engine on icrun (over Candid), for page_tree and
//! btree. Transport aside, the answers must agree: equal `Ok` values, and `Err`s of the same
//! `StoreError` variant (the edge answers `{"Err": <StoreError as JSON>}`, the canister a
//! Candid `StoreError`). The tables must be equal at the end.
//!
//! Needs wasmtime (`HostConfig::wasmtime_binary`: `WASMTIME_BIN`, else an installed one or the
//! workspace's `target/debug/wasmtime-serve`), the edge
//! component (`scripts/build_edge.sh`) and the canisters (`scripts/build.sh page-tree
//! btree`); a missing one fails the test with how to get it (`USERSTORE_SKIP_EDGE=1` skips
//! it, as it skips the other edge tests). `EDGE_DIFF_SEED` replays another sequence.

use candid::utils::ArgumentEncoder;
use candid::CandidType;
use edge_bench::client::Client;
use edge_bench::host::{Host, HostConfig};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use userstore::{StoreError, User};
use userstore_e2e::{new_ic, owner, Deployed};

const TOKEN: &str = "edge-differential-token";
/// Calls in the sequence.
const CALLS: usize = 600;
/// Ids are drawn from a small range so that inserts clash and gets, updates and deletes
/// both hit and miss.
const ID_RANGE: u64 = 80;
/// The default seed of the sequence.
const SEED: u64 = 0xed9e_d1ff_2026;

/// What a call answered, transport aside.
type Outcome = Result<Value, StoreError>;

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound.max(1)
    }

    fn id(&mut self) -> u64 {
        self.below(ID_RANGE)
    }

    fn user(&mut self) -> User {
        User::new(self.id(), format!("user-{}", self.below(1_000_000)))
    }

    fn users(&mut self) -> Vec<User> {
        let mut users: Vec<User> = (0..1 + self.below(8)).map(|_| self.user()).collect();
        // Now and then a batch that clashes with itself.
        if self.below(4) == 0 {
            let twin = users[0].id;
            users.push(User::new(twin, "twin"));
        }
        users
    }

    fn ids(&mut self) -> Vec<u64> {
        (0..self.below(8)).map(|_| self.id()).collect()
    }
}

/// One call of the sequence.
#[derive(Clone, Debug)]
enum Call {
    Insert(User),
    InsertBatch(Vec<User>),
    Get(u64),
    Rename(u64, String),
    Delete(u64),
    UpdateBatch(Vec<User>),
    DeleteBatch(Vec<u64>),
    List(Option<u64>, u32),
    Count,
}

impl Call {
    fn draw(rng: &mut Rng) -> Call {
        match rng.below(12) {
            0..=2 => Call::Insert(rng.user()),
            3 | 4 => Call::InsertBatch(rng.users()),
            5 => Call::Get(rng.id()),
            6 => Call::Rename(rng.id(), format!("renamed-{}", rng.below(1_000))),
            7 => Call::Delete(rng.id()),
            8 => Call::UpdateBatch(rng.users()),
            9 => Call::DeleteBatch(rng.ids()),
            10 => {
                let after = if rng.below(3) == 0 {
                    None
                } else {
                    Some(rng.id())
                };
                Call::List(after, rng.below(30) as u32)
            }
            _ => Call::Count,
        }
    }

    /// The call on the edge: its answer, `{"Ok": ...}` or `{"Err": ...}`.
    fn on_edge(&self, client: &mut Client) -> Outcome {
        let user = |user: &User| json!({"id": user.id, "username": user.username});
        let batch = |users: &[User]| Value::Array(users.iter().map(user).collect());
        let response = match self {
            Call::Insert(one) => client.post("/insert_user", &user(one)),
            Call::InsertBatch(users) => client.post("/insert_users", &batch(users)),
            Call::Get(id) => client.get(&format!("/get_user?id={id}")),
            Call::Rename(id, name) => {
                client.post("/update_username", &json!({"id": id, "username": name}))
            }
            Call::Delete(id) => client.post("/delete_user", &json!({"id": id})),
            Call::UpdateBatch(users) => client.post("/update_users", &batch(users)),
            Call::DeleteBatch(ids) => client.post("/delete_users", &json!(ids)),
            Call::List(after, limit) => client.get(&match after {
                Some(after) => format!("/list_users?after={after}&limit={limit}"),
                None => format!("/list_users?limit={limit}"),
            }),
            Call::Count => client.get("/count_users"),
        }
        .unwrap_or_else(|error| panic!("{self:?} on the edge: {error}"));
        let body = response
            .json()
            .unwrap_or_else(|error| panic!("{self:?} on the edge: {error}"));
        if let Some(value) = body.get("Ok") {
            return Ok(value.clone());
        }
        let error = body
            .get("Err")
            .unwrap_or_else(|| panic!("{self:?} on the edge: neither Ok nor Err: {body}"));
        Err(
            serde_json::from_value(error.clone()).unwrap_or_else(|decode| {
                panic!("{self:?} on the edge: an Err that is no StoreError ({decode}): {body}")
            }),
        )
    }

    /// The call on the canister, its reply as the edge's JSON would carry it.
    fn on_canister(&self, store: &Deployed) -> Outcome {
        match self {
            Call::Insert(user) => update::<(), _>(store, "insert_user", (user.clone(),)),
            Call::InsertBatch(users) => update::<u64, _>(store, "insert_users", (users.clone(),)),
            Call::Get(id) => query::<User, _>(store, "get_user", (*id,)),
            Call::Rename(id, name) => {
                update::<User, _>(store, "update_username", (*id, name.clone()))
            }
            Call::Delete(id) => update::<User, _>(store, "delete_user", (*id,)),
            Call::UpdateBatch(users) => update::<u64, _>(store, "update_users", (users.clone(),)),
            Call::DeleteBatch(ids) => update::<u64, _>(store, "delete_users", (ids.clone(),)),
            Call::List(after, limit) => {
                query::<Vec<User>, _>(store, "list_users", (*after, *limit))
            }
            Call::Count => query::<u64, _>(store, "count_users", ()),
        }
    }
}

/// An update call by the owner, which must reply `Result<R, StoreError>`.
fn update<R, A>(store: &Deployed, method: &str, args: A) -> Outcome
where
    R: CandidType + DeserializeOwned + Serialize,
    A: ArgumentEncoder,
{
    let (reply,): (Result<R, StoreError>,) = store
        .update(owner(), method, args)
        .unwrap_or_else(|reject| panic!("{method} on the canister rejected: {reject}"));
    reply.map(|value| serde_json::to_value(value).expect("a JSON value"))
}

/// A query, which must reply `Result<R, StoreError>`.
fn query<R, A>(store: &Deployed, method: &str, args: A) -> Outcome
where
    R: CandidType + DeserializeOwned + Serialize,
    A: ArgumentEncoder,
{
    let (reply,): (Result<R, StoreError>,) = store
        .query(method, args)
        .unwrap_or_else(|reject| panic!("{method} on the canister rejected: {reject}"));
    reply.map(|value| serde_json::to_value(value).expect("a JSON value"))
}

/// Whether two answers agree: equal `Ok` values, or `Err`s of one variant.
fn agree(edge: &Outcome, canister: &Outcome) -> bool {
    match (edge, canister) {
        (Ok(edge), Ok(canister)) => edge == canister,
        (Err(edge), Err(canister)) => {
            std::mem::discriminant(edge) == std::mem::discriminant(canister)
        }
        _ => false,
    }
}

/// The wasmtime binary and the edge component; `None` when the edge tests are skipped on
/// purpose. Fails with how to get a missing prerequisite.
fn prerequisites() -> Option<(PathBuf, PathBuf)> {
    if std::env::var("USERSTORE_SKIP_EDGE").as_deref() == Ok("1") {
        eprintln!("USERSTORE_SKIP_EDGE=1: the edge differential test is skipped");
        return None;
    }
    let wasmtime = HostConfig::wasmtime_binary().unwrap_or_else(|message| panic!("{message}"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let component = root.join("target/edge/userstore-edge.wasm");
    assert!(
        component.is_file(),
        "no {}: build it with scripts/build_edge.sh",
        component.display()
    );
    for canister in ["page-tree", "btree"] {
        let wasm = root.join(format!("target/canisters/{canister}.wasm"));
        assert!(
            wasm.is_file(),
            "no {}: build it with `bash scripts/build.sh page-tree btree`",
            wasm.display()
        );
    }
    Some((wasmtime, component))
}

#[test]
fn the_edge_answers_as_the_canister_does() {
    let Some((wasmtime, component)) = prerequisites() else {
        return;
    };
    let seed = std::env::var("EDGE_DIFF_SEED")
        .ok()
        .and_then(|seed| seed.parse().ok())
        .unwrap_or(SEED);
    let ic = new_ic();
    for (engine, canister) in [("page_tree", "page-tree"), ("btree", "btree")] {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let host = Host::start(&HostConfig {
            program: wasmtime.clone(),
            component: component.clone(),
            data_dir: dir.path().to_owned(),
            env: vec![
                ("USERSTORE_WRITE_TOKEN".to_owned(), TOKEN.to_owned()),
                ("USERSTORE_ENGINE".to_owned(), engine.to_owned()),
            ],
            serve_args: Vec::new(),
        })
        .unwrap_or_else(|error| panic!("{engine}: the host does not start: {error}"));
        let mut client = Client::new(host.address(), Some(TOKEN));
        let store = Deployed::install_store(&ic, canister, "(null)");
        let mut rng = Rng(seed);
        let (mut oks, mut errs) = (0, 0);
        for step in 0..CALLS {
            let call = Call::draw(&mut rng);
            let edge = call.on_edge(&mut client);
            let on_canister = call.on_canister(&store);
            assert!(
                agree(&edge, &on_canister),
                "{engine}, call {step} {call:?} (EDGE_DIFF_SEED={seed}): the edge answered \
                 {edge:?}, the canister {on_canister:?}"
            );
            if edge.is_ok() {
                oks += 1;
            } else {
                errs += 1;
            }
        }
        // The whole tables, through both.
        let everything = Call::List(None, 10_000);
        let (edge, on_canister) = (
            everything.on_edge(&mut client),
            everything.on_canister(&store),
        );
        assert_eq!(edge, on_canister, "{engine}: the tables differ at the end");
        eprintln!(
            "{engine}: {CALLS} calls agree ({oks} Ok, {errs} Err), {} rows at the end",
            edge.map(|rows| rows.as_array().map_or(0, Vec::len))
                .unwrap_or_default()
        );
        assert!(
            oks > 0 && errs > 0,
            "{engine}: the sequence should both succeed and fail"
        );
    }
}
