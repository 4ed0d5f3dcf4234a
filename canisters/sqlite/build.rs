//! Links the canister with room for its state above the stack, in the stack's top 64 KiB page
//! (`canisters/canister-link` says how; `src/lib.rs` asks for it with `state_beside_stack`).
//!
//! The stack keeps 60 KiB of that page, as the stable-memory SQLite's: SQLite's calls go
//! deeper than the page tree's (docs/floor.md, "The state in the stack's page"). The state
//! (the store's connection, the writers and the limits) fits the other 4 KiB, which the macro
//! checks when the canister compiles.

// The layout's code, compiled in rather than depended on (`canisters/canister-link` says why).
#[path = "../canister-link/src/lib.rs"]
mod canister_link;

fn main() {
    // The stack's bytes in its top page.
    canister_link::link_state_beside_stack(60 * 1024);
}
