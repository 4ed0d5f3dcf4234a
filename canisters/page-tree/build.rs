//! Links the canister with room for its state above the stack, in the stack's top 64 KiB page
//! (`canisters/canister-link` says how; `src/lib.rs` asks for it with `state_beside_stack`).
//!
//! The stack keeps 4 KiB of that page: the room the page tree's reads, renames and deletes
//! need (docs/floor.md, "The state in the stack's page", measured there). The state, the page
//! tree's index, gets the other 60 KiB.

// The layout's code, compiled in rather than depended on (`canisters/canister-link` says why).
#[path = "../canister-link/src/lib.rs"]
mod canister_link;

fn main() {
    // The stack's bytes in its top page.
    canister_link::link_state_beside_stack(4 * 1024);
}
