//! Installs the project's real canister Wasm and calls it over Candid, on icrun or, with
//! `POCKET_IC_BIN` set, on the PocketIC server: both implement the [`Ic`] trait.
//!
//! The Wasm comes from `target/canisters/` (built by `scripts/build.sh`, which the README's
//! test command runs first).

mod ic;
mod icrun_backend;
#[cfg(feature = "pocket-ic")]
mod pocket_ic_backend;

pub use ic::{Ic, Rejected};

use candid::utils::{ArgumentDecoder, ArgumentEncoder};
use candid::{CandidType, Principal};
use serde::de::DeserializeOwned;
use std::io::Write;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Once;
use userstore::{InitArgs, StoreError, User};

/// The principal that installs the canisters (a writer by default).
pub fn owner() -> Principal {
    Principal::from_slice(&[0x11; 29])
}

/// A principal that is neither writer nor controller.
pub fn stranger() -> Principal {
    Principal::from_slice(&[0x22; 29])
}

/// A controller of every installed canister (not the installer).
pub fn controller() -> Principal {
    Principal::from_slice(&[0x33; 29])
}

/// The release Wasm of `canister` ("btree", "sqlite" or "client").
pub fn canister_wasm(canister: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/canisters")
        .join(format!("{canister}.wasm"));
    std::fs::read(&path).unwrap_or_else(|error| {
        panic!(
            "{}: {error}; build the canisters first with scripts/build.sh",
            path.display()
        )
    })
}

static ANNOUNCE: Once = Once::new();

/// A fresh IC for one test: the PocketIC server when `POCKET_IC_BIN` is set, otherwise icrun
/// metered as the IC is today (docs/metering.md §6).
/// The first call says which, on the terminal (past the test harness's output capture).
pub fn new_ic() -> Rc<dyn Ic> {
    let on_pocket_ic = std::env::var_os("POCKET_IC_BIN").is_some();
    ANNOUNCE.call_once(|| {
        let line = if on_pocket_ic {
            "end-to-end tests: running on PocketIC (POCKET_IC_BIN is set)\n"
        } else {
            "end-to-end tests: running on icrun; PocketIC was NOT used (POCKET_IC_BIN is not set)\n"
        };
        let _ = std::io::stderr().write_all(line.as_bytes());
    });
    if on_pocket_ic {
        pocket_ic_server()
    } else {
        Rc::new(icrun_backend::IcrunIc::default())
    }
}

/// A fresh PocketIC server (`POCKET_IC_BIN`).
#[cfg(feature = "pocket-ic")]
fn pocket_ic_server() -> Rc<dyn Ic> {
    Rc::new(pocket_ic::PocketIc::new())
}

/// Never reached: build.rs fails a build with `POCKET_IC_BIN` set and without the feature.
#[cfg(not(feature = "pocket-ic"))]
fn pocket_ic_server() -> Rc<dyn Ic> {
    panic!("POCKET_IC_BIN is set, but these tests were built without the feature pocket-ic")
}

/// A fresh IC for one test whose figures depend on the metering: icrun metered by
/// `metering`, or the PocketIC server when `POCKET_IC_BIN` is set (metered as its version
/// is).
pub fn new_ic_metered(metering: icrun::Metering) -> Rc<dyn Ic> {
    if std::env::var_os("POCKET_IC_BIN").is_some() {
        return new_ic();
    }
    Rc::new(icrun_backend::IcrunIc::with_metering(metering))
}

/// Candid-encodes `args`.
pub fn encode<A: ArgumentEncoder>(args: A) -> Vec<u8> {
    candid::encode_args(args).expect("encode arguments")
}

fn decode<R: for<'de> ArgumentDecoder<'de>>(bytes: Vec<u8>) -> R {
    candid::decode_args(&bytes).expect("decode reply")
}

/// A canister on an [`Ic`], called over Candid.
#[derive(Clone)]
pub struct Deployed {
    /// The IC it runs on.
    pub ic: Rc<dyn Ic>,
    /// Its id.
    pub id: Principal,
    /// Its canister's name (`target/canisters/<canister>.wasm`).
    pub canister: String,
    wasm: Vec<u8>,
}

impl Deployed {
    /// Creates a canister controlled by [`controller`] and installs the Wasm of
    /// `canister` with the Candid `init_arg`, as [`owner`].
    pub fn install(ic: &Rc<dyn Ic>, canister: &str, init_arg: Vec<u8>) -> Result<Self, Rejected> {
        let id = ic.create_canister(vec![controller(), owner()]);
        Self::install_on(ic, id, canister, init_arg)
    }

    /// Installs the Wasm of `canister` on the created canister `id`, as [`owner`].
    pub fn install_on(
        ic: &Rc<dyn Ic>,
        id: Principal,
        canister: &str,
        init_arg: Vec<u8>,
    ) -> Result<Self, Rejected> {
        let wasm = canister_wasm(canister);
        ic.install_canister(id, wasm.clone(), init_arg, owner())?;
        Ok(Self {
            ic: Rc::clone(ic),
            id,
            canister: canister.to_string(),
            wasm,
        })
    }

    /// Upgrades to the same Wasm with the Candid `arg`, as [`controller`] (what
    /// `dfx deploy --upgrade-unchanged` does).
    pub fn upgrade_with(&self, arg: Vec<u8>) -> Result<(), Rejected> {
        self.ic
            .upgrade_canister(self.id, self.wasm.clone(), arg, controller())
    }

    /// Calls the update `method` as `caller`; the reply decoded, or the reject.
    pub fn update<A, R>(&self, caller: Principal, method: &str, args: A) -> Result<R, Rejected>
    where
        A: ArgumentEncoder,
        R: for<'de> ArgumentDecoder<'de>,
    {
        self.update_raw(caller, method, encode(args)).map(decode)
    }

    /// Calls the update `method` with raw argument bytes.
    pub fn update_raw(
        &self,
        caller: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<Vec<u8>, Rejected> {
        self.ic.update_call(self.id, caller, method, arg)
    }

    /// Calls the query `method` as an anonymous user.
    pub fn query<A, R>(&self, method: &str, args: A) -> Result<R, Rejected>
    where
        A: ArgumentEncoder,
        R: for<'de> ArgumentDecoder<'de>,
    {
        self.query_raw(method, encode(args)).map(decode)
    }

    /// Calls the query `method` with raw argument bytes, as an anonymous user.
    pub fn query_raw(&self, method: &str, arg: Vec<u8>) -> Result<Vec<u8>, Rejected> {
        self.ic
            .query_call(self.id, Principal::anonymous(), method, arg)
    }

    /// Calls a query with one argument and one result, as an anonymous user.
    pub fn query_one<A: CandidType, R: DeserializeOwned + CandidType>(
        &self,
        method: &str,
        arg: A,
    ) -> R {
        let (reply,): (R,) = self
            .query(method, (arg,))
            .unwrap_or_else(|reject| panic!("query {method} rejected: {reject}"));
        reply
    }
}

/// A store canister.
pub type StoreCanister = Deployed;

/// An init or upgrade argument that sets what every canister has (writers, budget) and
/// carries no engine configuration: its `config` is `opt empty`, always `null`.
pub type PlainArgs = InitArgs<candid::Empty>;

/// The Candid bytes of `(opt args)`.
pub fn plain_args(args: PlainArgs) -> Vec<u8> {
    candid::encode_one(Some(args)).expect("encode init argument")
}

/// Every configuration of every store canister in the registry (`canisters/engines.toml`),
/// installed on one IC: `(configuration key, canister)`.
pub fn every_store() -> Vec<(String, StoreCanister)> {
    let ic = new_ic();
    engine_registry::configurations()
        .map(|(engine, configuration)| {
            let arg = engine
                .init_arg(configuration)
                .unwrap_or_else(|error| panic!("{}: {error}", configuration.key));
            let store = Deployed::install(&ic, &engine.canister, arg)
                .unwrap_or_else(|reject| panic!("install {}: {reject}", configuration.key));
            (configuration.key.clone(), store)
        })
        .collect()
}

impl Deployed {
    /// Installs the store `canister` on `ic` with the Candid text `init` (typed by the
    /// canister's `.did`); the reject if the install fails.
    pub fn try_install_store(
        ic: &Rc<dyn Ic>,
        canister: &str,
        init: &str,
    ) -> Result<Self, Rejected> {
        let service = engine_registry::Service::of(canister).expect("the canister's .did");
        let init_arg = service.encode_init(init).expect("encode init argument");
        Self::install(ic, canister, init_arg)
    }

    /// [`Deployed::try_install_store`] for an install that must succeed.
    pub fn install_store(ic: &Rc<dyn Ic>, canister: &str, init: &str) -> Self {
        Self::try_install_store(ic, canister, init)
            .unwrap_or_else(|reject| panic!("install {canister}: {reject}"))
    }

    /// Upgrades a store canister to the same Wasm with the Candid text `args`.
    pub fn upgrade(&self, args: &str) -> Result<(), Rejected> {
        let service = engine_registry::Service::of(&self.canister).expect("the canister's .did");
        self.upgrade_with(service.encode_init(args).expect("encode upgrade argument"))
    }

    /// The `config` query's reply, as Candid text.
    pub fn config_text(&self) -> String {
        let reply = self
            .query_raw("config", encode(()))
            .unwrap_or_else(|reject| panic!("config: {reject}"));
        engine_registry::Service::of(&self.canister)
            .and_then(|service| service.decode_reply("config", &reply))
            .unwrap_or_else(|error| panic!("config: {error}"))
    }

    /// The store's `count_users`, which must succeed.
    pub fn count_users(&self) -> u64 {
        let (count,): (Result<u64, StoreError>,) =
            self.query("count_users", ()).expect("count_users replies");
        count.expect("count_users")
    }

    /// The store's `get_user`.
    pub fn get_user(&self, id: u64) -> Result<User, StoreError> {
        self.query_one("get_user", id)
    }

    /// The store's `insert_users`, called by [`owner`]; it must reply.
    pub fn insert_users(&self, batch: Vec<User>) -> Result<u64, StoreError> {
        let (inserted,): (Result<u64, StoreError>,) = self
            .update(owner(), "insert_users", (batch,))
            .expect("insert_users replies");
        inserted
    }
}

/// The parts of every store canister's `config` reply that do not depend on the engine.
#[derive(candid::CandidType, serde::Deserialize, Debug)]
pub struct CommonConfig {
    /// Who may write.
    pub writers: userstore::access::Writers,
    /// The limits requests must respect.
    pub limits: userstore::service::Limits,
}
