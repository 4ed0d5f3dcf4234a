//! The canister's state above the stack, in the stack's own 64 KiB page.
//!
//! Every message writes the page holding the top of the stack, and every call reads the
//! canister's state; under the IC's current meter each 64 KiB page a message touches costs
//! 80,000 instructions, and 80,000 more if written (docs/metering.md §6). A state in a page of
//! its own makes that two pages a call; in the stack's top page, one (docs/floor.md, "What
//! every message touches").
//!
//! Rust's Wasm targets link with `--stack-first`: the stack occupies the start of linear
//! memory and grows down from `__stack_high`, and the module's data starts at
//! `__global_base`. Linked with `-z stack-size=S` and `--global-base=B`, `B > S`, the bytes
//! `[S, B)` belong to nothing: no data segment covers them, the stack stays below `S`, and the
//! heap begins past the data. A canister that wants its state there links with an `S` a few
//! KiB past a 64 KiB boundary (the room its calls' frames need) and `B` at the next boundary,
//! so the state and the frames of a call share one page; the store canisters' `build.rs` do
//! (through `canisters/canister-link`), and
//! `export_user_table_api!(Engine, state_beside_stack)` keeps the state there through
//! [`beside_stack`]. A call deeper than the room touches the page below as well, as any deeper
//! call did before: it costs a page, never corrupts the state, which is above the stack and
//! out of its way.
//!
//! How the page is shared is the canister's choice, made in its `build.rs`: the room its
//! calls' frames need against the room its state needs (the page tree's state is its index,
//! 60 KiB, and its reads, renames and deletes fit 4 KiB of stack; the other engines' states
//! are small and their calls deeper: docs/floor.md, "The state in the stack's page"). The
//! `build.rs` also sets `USERSTORE_STATE_ROOM`, the bytes it left the state, so that the macro
//! checks when the canister compiles that the state fits the room linked ([`room`]); the
//! install checks the gap the linker made.

use std::mem::{size_of, MaybeUninit};

/// The bytes [`beside_stack`] takes for a `T`: what must fit the room the canister's
/// `build.rs` links (`export_user_table_api!` checks it when the canister compiles).
pub const fn slot_bytes<T>() -> usize {
    size_of::<Beside<T>>()
}

/// The state's room in bytes, from the decimal digits a canister's `build.rs` sets in
/// `USERSTORE_STATE_ROOM`; evaluated when the canister compiles, where anything else than
/// digits stops the build.
pub const fn room(decimal: &str) -> usize {
    let digits = decimal.as_bytes();
    assert!(
        !digits.is_empty(),
        "USERSTORE_STATE_ROOM is empty: the bytes build.rs leaves the state"
    );
    let mut bytes: usize = 0;
    let mut i = 0;
    while i < digits.len() {
        let digit = digits[i];
        assert!(
            digit.is_ascii_digit(),
            "USERSTORE_STATE_ROOM is not a decimal number of bytes"
        );
        let Some(shifted) = bytes.checked_mul(10) else {
            panic!("USERSTORE_STATE_ROOM is too large");
        };
        let Some(sum) = shifted.checked_add((digit - b'0') as usize) else {
            panic!("USERSTORE_STATE_ROOM is too large");
        };
        bytes = sum;
        i += 1;
    }
    bytes
}

/// The state and whether it was made: linear memory starts as zeros, so `made` is 0 until
/// [`beside_stack`] first writes the value.
#[repr(C)]
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))] // natively only its size is asked
struct Beside<T> {
    made: u32,
    value: MaybeUninit<T>,
}

/// Where a `size`-byte value aligned to `align` starts in the gap `[start, end)`, if it fits.
#[cfg_attr(not(target_family = "wasm"), allow(dead_code))] // natively only its tests call it
fn place(start: usize, end: usize, size: usize, align: usize) -> Option<usize> {
    let at = start.checked_next_multiple_of(align)?;
    (at.checked_add(size)? <= end).then_some(at)
}

// Defined by wasm-ld for every module it links (the stack's top, where the data begins).
#[cfg(target_family = "wasm")]
extern "C" {
    static __stack_high: u8;
    static __global_base: u8;
}

/// The value above the stack, made by `make` at the first call; traps with a message naming
/// the link arguments if the module was not linked with room for it there (then the install
/// or upgrade that asked for it fails, and nothing changes).
///
/// # Safety
/// Every call in one module must be with the same `T`: the slot is one place, and a second
/// type would read the first one's bytes.
/// [`export_user_table_api!`](crate::export_user_table_api) is its one caller in a canister.
#[cfg(target_family = "wasm")]
pub unsafe fn beside_stack<T>(make: impl FnOnce() -> T) -> &'static T {
    let start = std::ptr::addr_of!(__stack_high) as usize;
    let end = std::ptr::addr_of!(__global_base) as usize;
    let Some(at) = place(
        start,
        end,
        size_of::<Beside<T>>(),
        std::mem::align_of::<Beside<T>>(),
    ) else {
        ic_cdk::trap(
            "the canister keeps its state above the stack, but was not linked with room for it \
             there (-z stack-size and --global-base: userstore::service::state_slot)",
        );
    };
    // SAFETY: `[at, at + size_of::<Beside<T>>())` lies in `[__stack_high, __global_base)`,
    // which no data segment, no stack frame and no heap allocation uses (the module's
    // documentation), and is valid linear memory (below the data). It is zero until written
    // here, so `made` says whether `value` holds a `T`; a Wasm canister runs one message at a
    // time, and the value is only ever shared (`&T`), never dropped, like a static's.
    unsafe {
        let slot = std::ptr::with_exposed_provenance_mut::<Beside<T>>(at);
        if (*slot).made == 0 {
            (*slot).value.write(make());
            (*slot).made = 1;
        }
        (*slot).value.assume_init_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page tree's state: its index, sized to the room its canister links.
    const PAGE_TREE_STATE_ROOM: usize = 60 * 1024;

    #[test]
    fn the_page_tree_canisters_link_holds_its_slot_in_the_stacks_page() {
        // canisters/page-tree/build.rs (canister-link): the stack's top 4 KiB past 0xF0000,
        // the data at 0x100000.
        let (start, end) = (0xF_0000 + 4 * 1024, 0x10_0000);
        assert_eq!(end - start, PAGE_TREE_STATE_ROOM);
        let at = place(start, end, PAGE_TREE_STATE_ROOM, 8);
        assert_eq!(
            at,
            Some(start),
            "a state of the whole room starts at the stack's top"
        );
        assert_eq!((start - 1) / 65_536, (end - 1) / 65_536, "one 64 KiB page");
    }

    #[test]
    fn a_gap_too_small_or_absent_holds_nothing() {
        // A module linked as Rust links by default: the data right above the stack.
        assert_eq!(place(0x10_0000, 0x10_0000, 8, 8), None);
        assert_eq!(
            place(0xF_1000, 0x10_0000, PAGE_TREE_STATE_ROOM + 1, 8),
            None
        );
        // Alignment can push the value past the gap's end.
        assert_eq!(place(0xF_1004, 0xF_1010, 12, 8), None);
        assert_eq!(place(0xF_1004, 0xF_1018, 12, 8), Some(0xF_1008));
        assert_eq!(place(usize::MAX - 3, usize::MAX, 2, 8), None, "no overflow");
    }

    #[test]
    fn the_room_a_build_script_sets_reads_as_its_bytes() {
        assert_eq!(room("61440"), PAGE_TREE_STATE_ROOM);
        assert_eq!(room("4096"), 4 * 1024);
        assert_eq!(room("0"), 0);
    }

    #[test]
    #[should_panic(expected = "not a decimal number")]
    fn a_room_that_is_not_digits_stops_the_build() {
        room("60 KiB");
    }

    #[test]
    #[should_panic(expected = "empty")]
    fn an_empty_room_stops_the_build() {
        room("");
    }

    #[test]
    #[should_panic(expected = "too large")]
    fn a_room_past_usize_stops_the_build() {
        room("99999999999999999999999");
    }
}
