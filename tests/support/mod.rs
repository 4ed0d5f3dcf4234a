//! Installs the project's real canister Wasm on icrun and calls it over Candid.
//!
//! The Wasm comes from `target/canisters/` (built by `scripts/build.sh`, which the README's
//! test command runs first). These tests run on icrun, never on PocketIC.

use candid::utils::{ArgumentDecoder, ArgumentEncoder};
use candid::{CandidType, Principal};
use icrun::{CallResult, Canister, Env, Reject};
use serde::de::DeserializeOwned;
use std::path::PathBuf;
use userstore::InitArgs;

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

/// The release Wasm of `canister` ("btree" or "sqlite").
pub fn canister_wasm(canister: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target/canisters")
        .join(format!("{canister}.wasm"));
    std::fs::read(&path).unwrap_or_else(|error| {
        panic!(
            "{}: {error}; build the canisters first with scripts/build.sh",
            path.display()
        )
    })
}

/// A store canister installed on icrun.
pub struct StoreCanister {
    canister: Canister,
    wasm: Vec<u8>,
}

impl StoreCanister {
    /// Installs `canister` as [`owner`] with `args`, [`controller`] as its controller.
    pub fn install(canister: &str, args: Option<InitArgs>) -> Result<Self, String> {
        let wasm = canister_wasm(canister);
        let env = Env {
            controllers: vec![controller().as_slice().to_vec()],
            ..Env::default()
        };
        let init_arg = candid::encode_one(args).expect("encode init argument");
        let (canister, _) = Canister::install(&wasm, &init_arg, owner().as_slice(), env)
            .map_err(|error| error.to_string())?;
        Ok(Self { canister, wasm })
    }

    /// Upgrades to the same Wasm with `args` (what `dfx deploy --upgrade-unchanged` does).
    pub fn upgrade(&mut self, args: Option<InitArgs>) -> Result<(), String> {
        let arg = candid::encode_one(args).expect("encode upgrade argument");
        self.canister
            .upgrade(&self.wasm.clone(), &arg, controller().as_slice())
            .map(|_| ())
            .map_err(|error| error.to_string())
    }

    /// Calls the update `method` as `caller`; the reply decoded, or the reject.
    pub fn update<A, R>(&mut self, caller: Principal, method: &str, args: A) -> Result<R, Reject>
    where
        A: ArgumentEncoder,
        R: for<'de> ArgumentDecoder<'de>,
    {
        let arg = candid::encode_args(args).expect("encode arguments");
        decode(self.canister.update(method, &arg, caller.as_slice()))
    }

    /// Calls the query `method` as an anonymous user.
    pub fn query<A, R>(&mut self, method: &str, args: A) -> Result<R, Reject>
    where
        A: ArgumentEncoder,
        R: for<'de> ArgumentDecoder<'de>,
    {
        let arg = candid::encode_args(args).expect("encode arguments");
        decode(
            self.canister
                .query(method, &arg, Principal::anonymous().as_slice()),
        )
    }

    /// Calls the update `method` with raw argument bytes.
    pub fn update_raw(&mut self, caller: Principal, method: &str, arg: &[u8]) -> CallResult {
        self.canister.update(method, arg, caller.as_slice())
    }

    /// Calls a query with one argument and one result, as an anonymous user.
    pub fn query_one<A: CandidType, R: DeserializeOwned + CandidType>(
        &mut self,
        method: &str,
        arg: A,
    ) -> R {
        let (reply,): (R,) = self
            .query(method, (arg,))
            .unwrap_or_else(|reject| panic!("query {method} rejected: {reject}"));
        reply
    }
}

fn decode<R: for<'de> ArgumentDecoder<'de>>(result: CallResult) -> Result<R, Reject> {
    let bytes = result.reply?;
    Ok(candid::decode_args(&bytes).expect("decode reply"))
}
