//! Links the canister with room for its state above the stack, in the stack's top 64 KiB page
//! (`canisters/canister-link` says how; `src/lib.rs` asks for it with `state_beside_stack`).
//!
//! The stack keeps 60 KiB of that page: SQLite's calls go deeper than the page tree's, and
//! with 4 KiB its upgrade touches the page below as well (docs/floor.md, "The state in the
//! stack's page", measured there). The state (the store's handles to its SQL table and
//! its file, the writers and the limits) fits the other 4 KiB, which the macro checks when the
//! canister compiles.

/// The stack's bytes in its top page.
const STACK_ROOM: u32 = 60 * 1024;

// The layout's code, compiled into this script rather than depended on: a build-dependency
// would enter the hash cargo gives this crate's symbols, which moves the Wasm's functions (and
// the instructions its upgrade takes), where the link arguments alone leave it byte-identical.
#[path = "../canister-link/src/lib.rs"]
mod canister_link;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../canister-link/src/lib.rs");
    canister_link::link_state_beside_stack(STACK_ROOM);
}
