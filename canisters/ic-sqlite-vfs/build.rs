//! Links the store canister with room for its state above the stack, in the stack's top 64 KiB
//! page, as userstore's own canisters are (`canisters/canister-link` says how; `src/lib.rs`
//! asks for it with `state_beside_stack`).
//!
//! The stack keeps 60 KiB of that page: with 4 KiB every read and one-row write of this peer
//! goes deeper and touches the page below as well (docs/floor.md, "The state in the stack's
//! page", measured there). The state (the store's handle on its database, the writers and the
//! limits) fits the other 4 KiB, which the macro checks when the canister compiles.
//!
//! The bench canister (feature `canbench`) has no service and so no state to place: it is
//! linked as before, and its suite's figures stay the ones measured.

// The layout's code, compiled in rather than depended on (`canisters/canister-link` says why).
#[path = "../canister-link/src/lib.rs"]
mod canister_link;

fn main() {
    if std::env::var_os("CARGO_FEATURE_CANBENCH").is_some() {
        // No link arguments (linked as rustc links by default): only the rerun lines.
        for line in canister_link::rerun_lines() {
            println!("{line}");
        }
        return;
    }
    // The stack's bytes in its top page.
    canister_link::link_state_beside_stack(60 * 1024);
}
