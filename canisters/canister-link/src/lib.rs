//! How a store canister is linked when its state shares the stack's top 64 KiB page, for the
//! canisters' build scripts (`userstore::service::state_slot` says why and how;
//! `docs/floor.md`, "The state in the stack's page", measures it).
//!
//! The stack, first in linear memory, grows down from its top, which is linked `stack_room`
//! bytes past the 64 KiB boundary [`STACK_PAGE_START`]; the module's data starts at the next
//! boundary, [`DATA_START`]. The state lives in the room between the stack's top and the data,
//! in the same page as the frames of a call. The build script tells the canister's
//! `export_user_table_api!(.., state_beside_stack)` that room through `USERSTORE_STATE_ROOM`,
//! which the macro checks the state against when the canister compiles (a canister linked
//! otherwise traps at install, saying so).
//!
//! A build script's lines start with [`rerun_lines`]: cargo runs it again when it or this file
//! changes, and only then.
//!
//! The build scripts compile this file as a module of their own (`#[path]`), not as a
//! build-dependency: a dependency enters the hash cargo gives the canister crate's symbols,
//! which reorders the Wasm's functions and moves the instructions of its upgrade, where the
//! link arguments alone leave the Wasm byte-identical. This crate holds the file for its tests.

/// The Wasm page size, 64 KiB: the unit the IC meters memory in (`docs/metering.md` §6).
pub const PAGE_BYTES: u32 = 64 * 1024;

/// The 64 KiB boundary at the bottom of the stack's top page. The stack is first in linear
/// memory (rustc links it so), and 15 whole pages below its top page keep it about as deep as
/// rustc's default of 1 MiB.
pub const STACK_PAGE_START: u32 = 0xF_0000;

/// Where the module's data starts (`--global-base`): the next 64 KiB boundary.
pub const DATA_START: u32 = STACK_PAGE_START + PAGE_BYTES;

/// The files a canister's build script reads, relative to its crate: the script itself and
/// this file, which it compiles in.
pub const WATCHED: [&str; 2] = ["build.rs", "../canister-link/src/lib.rs"];

/// The lines that tell cargo to run the build script again when one of [`WATCHED`] changes.
pub fn rerun_lines() -> Vec<String> {
    WATCHED
        .iter()
        .map(|file| format!("cargo:rerun-if-changed={file}"))
        .collect()
}

/// Why a layout cannot be linked.
#[derive(Debug, PartialEq, Eq)]
pub enum LayoutError {
    /// The stack's room in its top page must leave some of the page to the state, and be
    /// 16-byte aligned (the stack pointer's alignment in the Wasm C ABI).
    StackRoom(u32),
}

/// The link layout of a canister whose stack has `stack_room` bytes of its top page.
#[derive(Debug, PartialEq, Eq)]
pub struct Layout {
    /// Where the stack starts (it grows down): `-z stack-size`.
    pub stack_top: u32,
    /// The bytes between the stack's top and the data: the state's room.
    pub state_room: u32,
}

impl Layout {
    /// The layout with `stack_room` bytes of the top page for the stack, the rest for the
    /// state.
    pub const fn with_stack_room(stack_room: u32) -> Result<Layout, LayoutError> {
        if stack_room == 0 || stack_room >= PAGE_BYTES || !stack_room.is_multiple_of(16) {
            return Err(LayoutError::StackRoom(stack_room));
        }
        Ok(Layout {
            stack_top: STACK_PAGE_START + stack_room,
            state_room: PAGE_BYTES - stack_room,
        })
    }

    /// The build script's lines: [`rerun_lines`] and `USERSTORE_STATE_ROOM` for every target,
    /// and the link arguments for a Wasm target only (`target_family` is Cargo's
    /// `CARGO_CFG_TARGET_FAMILY`): a canister crate's native builds, its tests, are not linked
    /// so.
    pub fn cargo_lines(&self, target_family: &str) -> Vec<String> {
        let mut lines = rerun_lines();
        lines.push(format!(
            "cargo:rustc-env=USERSTORE_STATE_ROOM={}",
            self.state_room
        ));
        if target_family.split(',').any(|family| family == "wasm") {
            lines.push(format!(
                "cargo:rustc-link-arg-cdylib=-zstack-size={}",
                self.stack_top
            ));
            lines.push(format!(
                "cargo:rustc-link-arg-cdylib=--global-base={DATA_START}"
            ));
        }
        lines
    }
}

/// What a canister's `build.rs` calls: prints [`Layout::cargo_lines`] for the target being
/// built, or fails the build if `stack_room` cannot be linked.
pub fn link_state_beside_stack(stack_room: u32) {
    let layout = match Layout::with_stack_room(stack_room) {
        Ok(layout) => layout,
        Err(error) => panic!("the stack's room in its top page cannot be linked: {error:?}"),
    };
    let family = std::env::var("CARGO_CFG_TARGET_FAMILY").unwrap_or_default();
    for line in layout.cargo_lines(&family) {
        println!("{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_gets_the_rest_of_the_stacks_top_page() {
        let layout = Layout::with_stack_room(4 * 1024).expect("4 KiB links");
        assert_eq!(layout.stack_top, 0xF_1000);
        assert_eq!(layout.state_room, 60 * 1024);
        let layout = Layout::with_stack_room(60 * 1024).expect("60 KiB links");
        assert_eq!(layout.stack_top, 0xF_F000);
        assert_eq!(layout.state_room, 4 * 1024);
    }

    #[test]
    fn a_room_that_leaves_the_state_nothing_or_misaligns_the_stack_is_refused() {
        for room in [0, PAGE_BYTES, PAGE_BYTES + 16, 4 * 1024 + 8] {
            assert_eq!(
                Layout::with_stack_room(room),
                Err(LayoutError::StackRoom(room))
            );
        }
    }

    #[test]
    fn only_a_wasm_target_is_linked_so() {
        let layout = Layout::with_stack_room(4 * 1024).expect("4 KiB links");
        assert_eq!(
            layout.cargo_lines("wasm"),
            [
                "cargo:rerun-if-changed=build.rs",
                "cargo:rerun-if-changed=../canister-link/src/lib.rs",
                "cargo:rustc-env=USERSTORE_STATE_ROOM=61440",
                "cargo:rustc-link-arg-cdylib=-zstack-size=987136",
                "cargo:rustc-link-arg-cdylib=--global-base=1048576",
            ]
        );
        assert_eq!(
            layout.cargo_lines("unix"),
            [
                "cargo:rerun-if-changed=build.rs",
                "cargo:rerun-if-changed=../canister-link/src/lib.rs",
                "cargo:rustc-env=USERSTORE_STATE_ROOM=61440",
            ]
        );
    }
}
