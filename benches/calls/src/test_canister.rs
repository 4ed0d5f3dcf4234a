//! The canister the tests of the sweep's checks run on: the page tree's store canister as
//! scripts/build.sh writes it, the configuration CI measures again.

use crate::check::CHECKED_CANISTER;
use crate::reply::owner;
use crate::tables::{fill, TableState};
use icrun::{Canister, Env, Options};
use std::path::Path;

/// The checked canister filled with `rows` aged rows, and its Wasm (to upgrade it to).
pub(crate) fn filled_page_tree(rows: u64) -> (Canister, Vec<u8>) {
    let engine = engine_registry::engines()
        .iter()
        .find(|engine| engine.canister == CHECKED_CANISTER)
        .expect("the registry has the checked canister");
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/canisters")
        .join(format!("{}.wasm", engine.canister));
    let wasm = std::fs::read(&path).unwrap_or_else(|error| {
        panic!(
            "{}: {error} (scripts/build.sh {CHECKED_CANISTER} builds it)",
            path.display()
        )
    });
    let init = engine.init_arg(engine.traced()).expect("init argument");
    let (mut canister, _) =
        Canister::install_with(&wasm, &init, owner(), Env::default(), Options::default())
            .expect("installs");
    fill(&mut canister, TableState::Aged, rows).expect("fills");
    (canister, wasm)
}
