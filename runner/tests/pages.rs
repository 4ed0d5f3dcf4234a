//! The page charges of the two metering profiles (docs/metering.md §6), pinned on
//! hand-written modules. Every expected count is worked out by hand in the comments: the
//! static cost of the body (§2, §3), the system API charges (§4, §5), then the pages.
//!
//! `pocketic-13`: reads free; 1,000 per 4 KiB stable page a write dirties first; 1,000 per
//! 4 KiB heap page an update dirtied, after the message. `current`: 80,000 per 64 KiB
//! Wasm page of heap or stable memory first accessed in the message, 80,000 more per page
//! first written in an update; queries pay accesses only.

mod common;

use common::{reply_u64, ANONYMOUS, IMPORTS};
use icrun::{Canister, Env, Metering, Options};

/// 5,000 per OS page × 16 OS pages per 64 KiB Wasm page (docs/metering.md §6).
const REGION: u64 = 80_000;

/// A canister with three 64 KiB heap pages and two stable pages, and these methods.
const METHODS: &str = r#"
  (memory (export "memory") 3)
  (func (export "canister_init") (drop (call $stable64_grow (i64.const 2))))
  ;; 1 + const 1 + load 1 + drop 1 + call 5 = 9; msg_reply 500: 509.
  (func (export "canister_query read1")
    (drop (i64.load (i32.const 70000))) (call $msg_reply))
  ;; 1 + const 1 + const 1 + store 1 + call 5 = 9; + 500: 509.
  (func (export "canister_query write1_query")
    (i64.store (i32.const 70000) (i64.const 1)) (call $msg_reply))
  (func (export "canister_update write1")
    (i64.store (i32.const 70000) (i64.const 1)) (call $msg_reply))
  ;; 1 + (1 + 1 + 1) + (1 + 1 + 1) + 5 = 12; + 500: 512.
  (func (export "canister_update read_then_write1")
    (drop (i64.load (i32.const 70000)))
    (i64.store (i32.const 70008) (i64.const 2))
    (call $msg_reply))
  (func (export "canister_update read0_and_1")
    (drop (i64.load (i32.const 8)))
    (drop (i64.load (i32.const 70000)))
    (call $msg_reply))
  ;; 1 + (1 + 1 + 1) + (1 + 1 + 5 + 1) + (1 + 1 + 5) + 5 = 24 before performance_counter
  ;; returns; it charges 200. Then msg_reply_data_append of 8 bytes: 500 + 400; msg_reply 500.
  (func (export "canister_update counter_after_write1")
    (i32.store (i32.const 70008) (i32.const 1))
    (i64.store (i32.const 70000) (call $performance_counter (i32.const 0)))
    (call $msg_reply_data_append (i32.const 70000) (i32.const 8))
    (call $msg_reply))
  ;; 1 + (3 consts + call 5) + call 5 = 14; stable64_read of 8 bytes: 20 + 8; + 500: 542.
  (func (export "canister_query stable_read")
    (call $stable64_read (i64.const 0) (i64.const 70000) (i64.const 8))
    (call $msg_reply))
  (func (export "canister_update stable_write")
    (call $stable64_write (i64.const 70000) (i64.const 0) (i64.const 8))
    (call $msg_reply))
  ;; 1 + (const 1 + grow 300 + drop 1) + (const 1 + const 1 + store 1) + call 5 = 311; + 500.
  (func (export "canister_update grow_and_write")
    (drop (memory.grow (i32.const 1)))
    (i32.store (i32.const 196608) (i32.const 5))
    (call $msg_reply))
  ;; Writes region 2, then traps: nothing of it may stay.
  (func (export "canister_update write2_and_trap")
    (i32.store (i32.const 140000) (i32.const 9))
    unreachable)
  (func (export "canister_query value2")
    (i64.store (i32.const 0) (i64.extend_i32_u (i32.load (i32.const 140000))))
    (call $msg_reply_data_append (i32.const 0) (i32.const 8))
    (call $msg_reply))
"#;

fn canister(metering: Metering) -> Canister {
    let text = format!("(module {IMPORTS} {METHODS})");
    let wasm = wat::parse_str(&text).expect("valid WAT");
    let options = Options {
        metering,
        ..Options::default()
    };
    let (canister, _) =
        Canister::install_with(&wasm, &[], ANONYMOUS, Env::default(), options).expect("installs");
    canister
}

fn update(canister: &mut Canister, method: &str) -> u64 {
    let result = canister.update(method, &[], ANONYMOUS);
    assert!(result.reply.is_ok(), "{method}: {:?}", result.reply);
    result.instructions
}

fn query(canister: &mut Canister, method: &str) -> u64 {
    let result = canister.query(method, &[], ANONYMOUS);
    assert!(result.reply.is_ok(), "{method}: {:?}", result.reply);
    result.instructions
}

#[test]
fn reads_are_free_before_2026_and_cost_a_page_after() {
    let mut classic = canister(Metering::PocketIc13);
    let mut tracked = canister(Metering::Current);
    assert_eq!(query(&mut classic, "read1"), 509);
    assert_eq!(query(&mut tracked, "read1"), 509 + REGION);
    // A query's write is charged as an access only (and no dirty page before 2026).
    assert_eq!(query(&mut classic, "write1_query"), 509);
    assert_eq!(query(&mut tracked, "write1_query"), 509 + REGION);
}

#[test]
fn an_update_pays_a_first_write_on_top_of_the_access() {
    let mut classic = canister(Metering::PocketIc13);
    let mut tracked = canister(Metering::Current);
    // pocketic-13: one 4 KiB heap page dirtied, 1,000 after the message.
    assert_eq!(update(&mut classic, "write1"), 509 + 1_000);
    // current: access and write of region 1 (a write as first access pays both).
    let result = tracked.update("write1", &[], ANONYMOUS);
    assert_eq!(result.instructions, 509 + 2 * REGION);
    assert_eq!(result.breakdown.heap_regions_accessed.pages, 1);
    assert_eq!(result.breakdown.heap_regions_written.pages, 1);
    assert_eq!(result.breakdown.heap_pages_dirtied.pages, 0);
    assert_eq!(result.breakdown.operators(), 9);
    // Read first, then written: the same two charges.
    assert_eq!(update(&mut tracked, "read_then_write1"), 512 + 2 * REGION);
    // Two pages read: two accesses, no write.
    assert_eq!(update(&mut tracked, "read0_and_1"), 512 + 2 * REGION);
}

#[test]
fn every_message_pays_its_pages_again() {
    let mut tracked = canister(Metering::Current);
    for _ in 0..3 {
        assert_eq!(update(&mut tracked, "write1"), 509 + 2 * REGION);
        assert_eq!(query(&mut tracked, "read1"), 509 + REGION);
    }
    let mut classic = canister(Metering::PocketIc13);
    for _ in 0..3 {
        assert_eq!(update(&mut classic, "write1"), 1_509);
    }
}

#[test]
fn page_charges_are_visible_to_the_performance_counter_after_2026() {
    let mut classic = canister(Metering::PocketIc13);
    let mut tracked = canister(Metering::Current);
    // pocketic-13: 24 + 200 read; 70000 and 70008 share one 4 KiB page, charged after.
    let result = classic.update("counter_after_write1", &[], ANONYMOUS);
    assert_eq!(reply_u64(&result), 224);
    assert_eq!(result.instructions, 224 + 900 + 500 + 1_000);
    // current: the first store's access and write are charged in-band, before the
    // counter is read.
    let result = tracked.update("counter_after_write1", &[], ANONYMOUS);
    assert_eq!(reply_u64(&result), 224 + 2 * REGION);
    assert_eq!(result.instructions, 224 + 2 * REGION + 900 + 500);
}

#[test]
fn stable_pages_and_the_heap_side_of_stable_calls() {
    let mut classic = canister(Metering::PocketIc13);
    let mut tracked = canister(Metering::Current);
    // A stable read is 20 + size before 2026.
    assert_eq!(query(&mut classic, "stable_read"), 542);
    // After: the stable page (region 1 of stable memory) and the heap page it is copied into
    // (region 0; a query: access only).
    let result = tracked.query("stable_read", &[], ANONYMOUS);
    assert_eq!(result.instructions, 542 + 2 * REGION);
    assert_eq!(result.breakdown.stable_regions_accessed.pages, 1);
    assert_eq!(result.breakdown.heap_regions_accessed.pages, 1);
    assert_eq!(result.breakdown.stable_bytes_read, 8);
    // A stable write: 1,000 for its newly dirtied 4 KiB stable page before 2026 ...
    let result = classic.update("stable_write", &[], ANONYMOUS);
    assert_eq!(result.instructions, 542 + 1_000);
    assert_eq!(result.breakdown.stable_pages_dirtied.pages, 1);
    // ... after: access and write of the stable page, access of the heap page read from.
    let result = tracked.update("stable_write", &[], ANONYMOUS);
    assert_eq!(result.instructions, 542 + 3 * REGION);
    assert_eq!(result.breakdown.stable_regions_written.pages, 1);
    assert_eq!(result.breakdown.stable_pages_dirtied.pages, 0);
}

#[test]
fn grown_pages_are_charged_when_touched() {
    let mut tracked = canister(Metering::Current);
    // The grown page 3 is written: access and write.
    assert_eq!(update(&mut tracked, "grow_and_write"), 811 + 2 * REGION);
    let mut classic = canister(Metering::PocketIc13);
    // Before 2026: one 4 KiB heap page dirtied.
    assert_eq!(update(&mut classic, "grow_and_write"), 811 + 1_000);
}

#[test]
fn a_trap_undoes_the_writes_of_a_tracked_message() {
    let mut tracked = canister(Metering::Current);
    let result = tracked.update("write2_and_trap", &[], ANONYMOUS);
    assert!(result.reply.is_err());
    let value = tracked.query("value2", &[], ANONYMOUS);
    assert_eq!(reply_u64(&value), 0);
    // The same write kept by a query-less update would show; the trap discarded it, and the
    // next message pays its pages again.
    assert_eq!(query(&mut tracked, "read1"), 509 + REGION);
}
