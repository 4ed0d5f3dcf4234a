//! Links the canister with room for its state above the stack, in the stack's top 64 KiB page
//! (`userstore::service::state_slot` says why and how; `src/lib.rs` asks for it with
//! `state_beside_stack`).
//!
//! The stack, first in linear memory, ends at `STACK_TOP`, 4 KiB past the 64 KiB boundary
//! `0xF0000`: the room the page tree's reads, renames and deletes need (docs/floor.md, "The
//! state in the stack's page", measured there); the module's data starts at the next boundary,
//! `DATA_START`. The state, the page tree's index, lives in the 60 KiB between them, with the
//! frames of a call in the same page. `USERSTORE_STATE_ROOM` tells the macro that room, which
//! it checks the state against when the canister compiles; a canister linked otherwise traps
//! at install, saying so.

/// Where the stack starts (it grows down): `-z stack-size`.
const STACK_TOP: u32 = 0xF_0000 + 4 * 1024;

/// Where the module's data starts: `--global-base`, the next 64 KiB boundary.
const DATA_START: u32 = 0x10_0000;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!(
        "cargo:rustc-env=USERSTORE_STATE_ROOM={}",
        DATA_START - STACK_TOP
    );
    // Only the Wasm module is linked so; the crate's native builds (its tests) are not.
    if std::env::var("CARGO_CFG_TARGET_FAMILY").is_ok_and(|family| family.contains("wasm")) {
        println!("cargo:rustc-link-arg-cdylib=-zstack-size={STACK_TOP}");
        println!("cargo:rustc-link-arg-cdylib=--global-base={DATA_START}");
    }
}
