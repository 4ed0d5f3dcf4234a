//! Links the canister with room for its state above the stack, in the stack's top 64 KiB page
//! (`userstore::service::state_slot` says why and how; `src/lib.rs` asks for it with
//! `state_beside_stack`).
//!
//! The stack, first in linear memory, ends at `STACK_TOP`, `state_slot::STACK_ROOM` (4 KiB)
//! past the 64 KiB boundary `0xF0000`: the room a one-row call's frames need (docs/floor.md,
//! "The state in the stack's page", measured there); the module's data starts at the next
//! boundary, `DATA_START`. The state lives in the 60 KiB between them
//! (`state_slot::STATE_ROOM`), with the frames of a call in the same page. A canister linked
//! otherwise traps at install, saying so.

/// Where the stack starts (it grows down): `-z stack-size`.
const STACK_TOP: u32 = 0xF_0000 + 4 * 1024;

/// Where the module's data starts: `--global-base`, the next 64 KiB boundary.
const DATA_START: u32 = 0x10_0000;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // Only the Wasm module is linked so; the crate's native builds (its tests) are not.
    if std::env::var("CARGO_CFG_TARGET_FAMILY").is_ok_and(|family| family.contains("wasm")) {
        println!("cargo:rustc-link-arg-cdylib=-zstack-size={STACK_TOP}");
        println!("cargo:rustc-link-arg-cdylib=--global-base={DATA_START}");
    }
}
