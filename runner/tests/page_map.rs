//! The page map of a traced message under the current meter (docs/metering.md §6): every
//! 64 KiB page of heap and stable memory it touched, the function that touched it first and
//! the one that wrote it first; and the heap layout that says what a heap page holds.

mod common;

use common::{ANONYMOUS, IMPORTS};
use icrun::{
    Breakdown, CallResult, Canister, Env, HeapLayout, HeapRegion, Limits, MemoryKind, Metering,
    Options, PageTouch,
};

/// 5,000 per OS page × 16 OS pages per 64 KiB Wasm page (docs/metering.md §6).
const REGION: u64 = 80_000;

/// Named functions, each touching known pages: heap page 0 written by `write_low`; page 1
/// read by `read_mid`, then written by the host in `stable64_read`; page 2 read by `reader`,
/// written by `writer`; page 3 read by the host in `stable64_write`; page 4 written by the
/// host in `msg_arg_data_copy`; page 6 grown and written by `grow_and_write`; stable page 2
/// written by `stable_put`, stable page 0 read by `stable_get`.
const METHODS: &str = r#"
  (memory (export "memory") 6)
  (func (export "canister_init") (drop (call $stable64_grow (i64.const 3))))
  (func $write_low (i32.store (i32.const 16) (i32.const 1)))
  (func $read_mid (drop (i32.load (i32.const 65536))))
  (func $reader (drop (i32.load (i32.const 131072))))
  (func $writer (i32.store (i32.const 131080) (i32.const 2)))
  (func $stable_put
    (call $stable64_write (i64.const 131072) (i64.const 196608) (i64.const 8)))
  (func $stable_get
    (call $stable64_read (i64.const 65600) (i64.const 0) (i64.const 8)))
  (func $copy_arg
    (call $msg_arg_data_copy (i32.const 262144) (i32.const 0) (call $msg_arg_data_size)))
  (func $grow_and_write
    (drop (memory.grow (i32.const 1)))
    (i32.store (i32.const 393216) (i32.const 5)))
  (func $touch_all
    (call $write_low) (call $read_mid) (call $reader) (call $writer)
    (call $stable_put) (call $stable_get) (call $copy_arg) (call $grow_and_write))
  (func $touch (export "canister_update touch") (call $touch_all) (call $msg_reply))
  (func $peek (export "canister_query peek") (call $touch_all) (call $msg_reply))
"#;

fn canister(metering: Metering, tracing: bool) -> Canister {
    let wasm = wat::parse_str(format!("(module {IMPORTS} {METHODS})")).expect("valid WAT");
    let options = Options {
        metering,
        tracing,
        ..Options::default()
    };
    let (canister, _) =
        Canister::install_with(&wasm, &[], ANONYMOUS, Env::default(), options).expect("installs");
    canister
}

/// The touches as (memory, page, accessed_by, written_by).
fn summary(touches: &[PageTouch]) -> Vec<(MemoryKind, u64, &str, Option<&str>)> {
    touches
        .iter()
        .map(|t| {
            (
                t.memory,
                t.page,
                t.accessed_by.as_str(),
                t.written_by.as_deref(),
            )
        })
        .collect()
}

/// The page charges of the current meter in `breakdown`.
fn region_charges(breakdown: &Breakdown) -> u64 {
    [
        breakdown.heap_regions_accessed,
        breakdown.heap_regions_written,
        breakdown.stable_regions_accessed,
        breakdown.stable_regions_written,
    ]
    .iter()
    .map(|pages| pages.instructions)
    .sum()
}

/// The map adds up to the message's page charges, page by page: 80,000 per page, 80,000
/// more per page written, and as many pages of each memory as the breakdown counts.
fn assert_adds_up(touches: &[PageTouch], result: &CallResult) {
    let breakdown = &result.breakdown;
    let count = |memory: MemoryKind, written: bool| {
        touches
            .iter()
            .filter(|t| t.memory == memory && (!written || t.written_by.is_some()))
            .count() as u64
    };
    assert_eq!(
        count(MemoryKind::Heap, false),
        breakdown.heap_regions_accessed.pages
    );
    assert_eq!(
        count(MemoryKind::Heap, true),
        breakdown.heap_regions_written.pages
    );
    assert_eq!(
        count(MemoryKind::Stable, false),
        breakdown.stable_regions_accessed.pages
    );
    assert_eq!(
        count(MemoryKind::Stable, true),
        breakdown.stable_regions_written.pages
    );
    for touch in touches {
        let writes = u64::from(touch.written_by.is_some());
        assert_eq!(touch.instructions, (1 + writes) * REGION, "{touch:?}");
    }
    let total: u64 = touches.iter().map(|t| t.instructions).sum();
    assert_eq!(total, region_charges(breakdown));
}

#[test]
fn an_update_maps_each_page_to_the_functions_that_touched_and_wrote_it() {
    let mut traced = canister(Metering::Current, true);
    let result = traced.update("touch", &[1, 2, 3, 4], ANONYMOUS);
    assert!(result.reply.is_ok(), "{:?}", result.reply);
    let trace = traced.last_trace().expect("traced");
    let touches = trace.page_touches();
    use MemoryKind::{Heap, Stable};
    assert_eq!(
        summary(touches),
        vec![
            (Heap, 0, "write_low", Some("write_low")),
            // Read by Wasm, then written by the host copying stable memory into it.
            (Heap, 1, "read_mid", Some("ic0::stable64_read")),
            (Heap, 2, "reader", Some("writer")),
            // The host reads the bytes `stable64_write` copies.
            (Heap, 3, "ic0::stable64_write", None),
            (
                Heap,
                4,
                "ic0::msg_arg_data_copy",
                Some("ic0::msg_arg_data_copy")
            ),
            // Grown in the message, then written.
            (Heap, 6, "grow_and_write", Some("grow_and_write")),
            // Stable pages: the Wasm function that called the stable API.
            (Stable, 0, "stable_get", None),
            (Stable, 2, "stable_put", Some("stable_put")),
        ]
    );
    // 8 pages accessed, 6 of them written.
    assert_eq!(region_charges(&result.breakdown), 14 * REGION);
    assert_adds_up(touches, &result);
    assert_eq!(touches[0].bytes(), 0..65_536);
    assert_eq!(touches[7].bytes(), 131_072..196_608);
}

#[test]
fn a_query_maps_accesses_only() {
    let mut traced = canister(Metering::Current, true);
    let result = traced.query("peek", &[1, 2, 3, 4], ANONYMOUS);
    assert!(result.reply.is_ok(), "{:?}", result.reply);
    let touches = traced.last_trace().expect("traced").page_touches();
    use MemoryKind::{Heap, Stable};
    assert_eq!(
        summary(touches),
        vec![
            (Heap, 0, "write_low", None),
            (Heap, 1, "read_mid", None),
            (Heap, 2, "reader", None),
            (Heap, 3, "ic0::stable64_write", None),
            (Heap, 4, "ic0::msg_arg_data_copy", None),
            (Heap, 6, "grow_and_write", None),
            (Stable, 0, "stable_get", None),
            (Stable, 2, "stable_put", None),
        ]
    );
    assert_eq!(region_charges(&result.breakdown), 8 * REGION);
    assert_adds_up(touches, &result);
}

#[test]
fn recording_the_map_costs_the_canister_nothing() {
    // Three canisters in the same states: no hooks, hooks without recording, recording.
    let mut plain = canister(Metering::Current, false);
    let mut hooked = canister(Metering::Current, true);
    hooked.record_traces(false);
    let mut traced = canister(Metering::Current, true);
    for round in 0..2 {
        let update = |c: &mut Canister| c.update("touch", &[1, 2, 3, 4], ANONYMOUS);
        let (a, b, c) = (update(&mut plain), update(&mut hooked), update(&mut traced));
        assert_eq!(a.instructions, b.instructions, "round {round}");
        assert_eq!(a.instructions, c.instructions, "round {round}");
        assert_eq!(a.breakdown, c.breakdown, "round {round}");
        let query = |c: &mut Canister| c.query("peek", &[1, 2, 3, 4], ANONYMOUS);
        let (a, b, c) = (query(&mut plain), query(&mut hooked), query(&mut traced));
        assert_eq!(a.instructions, b.instructions, "round {round}");
        assert_eq!(a.instructions, c.instructions, "round {round}");
        assert!(!traced
            .last_trace()
            .expect("traced")
            .page_touches()
            .is_empty());
    }
    assert!(hooked.last_trace().is_none());
}

#[test]
fn a_message_stopped_by_a_page_charge_maps_what_it_was_charged() {
    let mut traced = canister(Metering::Current, true);
    // Enough for heap page 0's access, not for its write: the write's charge traps.
    traced.set_limits(Limits {
        update: 100_000,
        ..Limits::default()
    });
    let result = traced.update("touch", &[1, 2, 3, 4], ANONYMOUS);
    assert!(result.reply.is_err());
    let touches = traced.last_trace().expect("traced").page_touches();
    assert_eq!(
        summary(touches),
        vec![(MemoryKind::Heap, 0, "write_low", Some("write_low"))]
    );
    assert_adds_up(touches, &result);
}

#[test]
fn pocketic_13_charges_no_wasm_pages_and_maps_none() {
    let mut traced = canister(Metering::PocketIc13, true);
    let result = traced.update("touch", &[1, 2, 3, 4], ANONYMOUS);
    assert!(result.reply.is_ok(), "{:?}", result.reply);
    assert_eq!(region_charges(&result.breakdown), 0);
    let trace = traced.last_trace().expect("traced");
    assert!(trace.page_touches().is_empty());
}

/// pre_upgrade writes heap page 0 and stable page 1; post_upgrade, on the new instance's
/// heap, reads heap page 0 and stable page 1.
const UPGRADED: &str = r#"
  (memory (export "memory") 1)
  (func (export "canister_init") (drop (call $stable64_grow (i64.const 2))))
  (func $save (export "canister_pre_upgrade")
    (i32.store (i32.const 0) (i32.const 7))
    (call $stable64_write (i64.const 65536) (i64.const 0) (i64.const 4)))
  (func $load (export "canister_post_upgrade")
    (call $stable64_read (i64.const 8) (i64.const 65536) (i64.const 4)))
"#;

#[test]
fn an_upgrade_maps_both_heaps() {
    let wasm = wat::parse_str(format!("(module {IMPORTS} {UPGRADED})")).expect("valid WAT");
    let options = Options {
        metering: Metering::Current,
        tracing: true,
        ..Options::default()
    };
    let (mut canister, _) =
        Canister::install_with(&wasm, &[], ANONYMOUS, Env::default(), options).expect("installs");
    let result = canister.upgrade(&wasm, &[], ANONYMOUS).expect("upgrades");
    let touches = canister.last_trace().expect("traced").page_touches();
    use MemoryKind::{Heap, Stable};
    assert_eq!(
        summary(touches),
        vec![
            // The old heap's page 0 (pre_upgrade), then the new heap's (post_upgrade).
            (Heap, 0, "save", Some("save")),
            (Heap, 0, "ic0::stable64_read", Some("ic0::stable64_read")),
            (Stable, 1, "save", Some("save")),
        ]
    );
    assert_adds_up(touches, &result);
}

/// A module laid out as LLD lays out rustc's output (stack first): a 1 MiB stack whose
/// pointer is global 0 (not exported, not named), static data from 1 MiB.
const STACK_FIRST: &str = r#"(module
  (memory 17)
  (global (mut i32) (i32.const 1048576))
  (global (mut i32) (i32.const 77))
  (data (i32.const 1048576) "static")
  (data (i32.const 1048700) "more static data"))"#;

#[test]
fn a_stack_first_module_has_its_stack_below_its_data() {
    let wasm = wat::parse_str(STACK_FIRST).expect("valid WAT");
    let layout = HeapLayout::of(&wasm);
    assert_eq!(layout.stack, 0..1_048_576);
    assert_eq!(layout.static_data, 1_048_576..1_048_716);
    // No `__heap_base`: the end of the data rounded up to 16 bytes.
    assert_eq!(layout.heap_start, 1_048_720);
    assert_eq!(layout.regions_of_page(15), vec![HeapRegion::Stack]);
    assert_eq!(
        layout.regions_of_page(16),
        vec![HeapRegion::StaticData, HeapRegion::Heap]
    );
    assert_eq!(layout.region_of(1_048_575), HeapRegion::Stack);
    assert_eq!(layout.region_of(1_048_700), HeapRegion::StaticData);
    assert_eq!(layout.region_of(1_048_720), HeapRegion::Heap);
    assert_eq!(layout.regions_of_page(17), vec![HeapRegion::Heap]);
}

/// Stack last, as clang links by default: data from 1 KiB, the stack pointer above it, an
/// imported global before it (so the stack pointer is found by its export name) and
/// `__heap_base` exported.
const STACK_LAST: &str = r#"(module
  (import "env" "g" (global i32))
  (memory 2)
  (global $sp (mut i32) (i32.const 67584))
  (global (export "__heap_base") i32 (i32.const 67600))
  (export "__stack_pointer" (global $sp))
  (data (i32.const 1024) "0123456789"))"#;

#[test]
fn a_stack_last_module_has_its_stack_above_its_data() {
    let wasm = wat::parse_str(STACK_LAST).expect("valid WAT");
    let layout = HeapLayout::of(&wasm);
    assert_eq!(layout.stack, 1034..67_584);
    assert_eq!(layout.static_data, 1024..1034);
    assert_eq!(layout.heap_start, 67_600);
    // Below the data (LLD's global base) counts as static data.
    assert_eq!(
        layout.regions_of_page(0),
        vec![HeapRegion::StaticData, HeapRegion::Stack]
    );
    assert_eq!(
        layout.regions_of_page(1),
        vec![HeapRegion::Stack, HeapRegion::StaticData, HeapRegion::Heap]
    );
}

#[test]
fn a_canister_reports_its_heap_layout() {
    let module = format!(
        "(module {IMPORTS} (memory (export \"memory\") 17) \
         (global (mut i32) (i32.const 1048576)) \
         (data (i32.const 1048576) \"data\") \
         (func (export \"canister_update nop\") (call $msg_reply)))"
    );
    let wasm = wat::parse_str(module).expect("valid WAT");
    let (canister, _) =
        Canister::install_with(&wasm, &[], ANONYMOUS, Env::default(), Options::default())
            .expect("installs");
    assert_eq!(canister.heap_layout(), HeapLayout::of(&wasm));
    assert_eq!(canister.heap_layout().stack, 0..1_048_576);
    assert_eq!(canister.heap_layout().heap_start, 1_048_592);
}
