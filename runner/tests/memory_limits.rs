//! Memory limits for fault injection (`Options::stable_memory_limit`, `Options::heap_limit`
//! and their `Canister` setters): a grow past the limit returns −1 and changes nothing, as on
//! the IC when the canister's memory allocation or the subnet is full (stable memory) and as
//! Wasm specifies for a failed `memory.grow` (heap).

mod common;

use common::{install_with_options, module, reply_u64, ANONYMOUS};
use icrun::{Canister, Options};

/// Replies the i64 at heap address 0.
const REPLY: &str = "(call $msg_reply_data_append (i32.const 0) (i32.const 8)) (call $msg_reply)";

/// Stable and heap growth, one page at a time, and a marker word in each memory.
fn canister_module() -> Vec<u8> {
    module(&format!(
        r#"
  (func (export "canister_update grow_stable")
    (i64.store (i32.const 0) (call $stable64_grow (i64.const 1))) {REPLY})
  (func (export "canister_update grow_stable32")
    (i64.store (i32.const 0) (i64.extend_i32_s (call $stable_grow (i32.const 1)))) {REPLY})
  (func (export "canister_update grow_heap")
    (i64.store (i32.const 0) (i64.extend_i32_s (memory.grow (i32.const 1)))) {REPLY})
  (func (export "canister_update grow_heap_then_trap")
    (drop (memory.grow (i32.const 1))) unreachable)
  (func $last_word (result i32)
    (i32.sub (i32.mul (memory.size) (i32.const 65536)) (i32.const 8)))
  (func (export "canister_update mark")
    ;; 0x5eed at the heap's last word and at stable offset 0.
    (i64.store (call $last_word) (i64.const 0x5eed))
    (i64.store (i32.const 16) (i64.const 0x5eed))
    (call $stable64_write (i64.const 0) (i64.const 16) (i64.const 8))
    (i64.store (i32.const 0) (i64.const 0)) {REPLY})
  (func (export "canister_query heap_mark")
    (i64.store (i32.const 0) (i64.load (call $last_word))) {REPLY})
  (func (export "canister_query stable_mark")
    (call $stable64_read (i64.const 0) (i64.const 0) (i64.const 8)) {REPLY})
  (func (export "canister_query stable_size")
    (i64.store (i32.const 0) (call $stable64_size)) {REPLY})
  (func (export "canister_query heap_size")
    (i64.store (i32.const 0) (i64.extend_i32_u (memory.size))) {REPLY})
"#
    ))
}

fn install(options: Options) -> Canister {
    install_with_options(&canister_module(), options)
}

/// The i64 an update replies.
fn update(canister: &mut Canister, method: &str) -> i64 {
    reply_u64(&canister.update(method, &[], ANONYMOUS)) as i64
}

/// The i64 a query replies.
fn query(canister: &mut Canister, method: &str) -> i64 {
    reply_u64(&canister.query(method, &[], ANONYMOUS)) as i64
}

#[test]
fn no_limits_by_default() {
    let options = Options::default();
    assert_eq!(
        (options.stable_memory_limit, options.heap_limit),
        (None, None)
    );
    let mut canister = install(options);
    assert_eq!(canister.stable_memory_limit(), None);
    assert_eq!(canister.heap_limit(), None);
    for old in 0..5 {
        assert_eq!(update(&mut canister, "grow_stable"), old);
        assert_eq!(update(&mut canister, "grow_heap"), old + 1);
    }
}

#[test]
fn stable_memory_grows_up_to_its_limit_then_returns_minus_one() {
    let mut canister = install(Options {
        stable_memory_limit: Some(3),
        ..Options::default()
    });
    assert_eq!(canister.stable_memory_limit(), Some(3));
    for old in 0..3 {
        assert_eq!(update(&mut canister, "grow_stable"), old);
    }
    assert_eq!(
        update(&mut canister, "grow_stable"),
        -1,
        "a fourth page is past it"
    );
    assert_eq!(update(&mut canister, "grow_stable"), -1);
    // The 32-bit API is limited too.
    assert_eq!(update(&mut canister, "grow_stable32"), -1);
    assert_eq!(query(&mut canister, "stable_size"), 3);
    assert_eq!(canister.stable_memory().size_pages(), 3);
}

#[test]
fn a_refused_stable_grow_costs_what_a_granted_one_does() {
    let mut canister = install(Options {
        stable_memory_limit: Some(1),
        ..Options::default()
    });
    let granted = canister.update("grow_stable", &[], ANONYMOUS);
    let refused = canister.update("grow_stable", &[], ANONYMOUS);
    assert_eq!(reply_u64(&granted), 0);
    assert_eq!(reply_u64(&refused) as i64, -1);
    // docs/metering.md §5: 100 for stable64_grow, whatever it returns.
    assert_eq!(granted.instructions, refused.instructions);
}

#[test]
fn the_heap_grows_up_to_its_limit_then_memory_grow_returns_minus_one() {
    let mut canister = install(Options {
        heap_limit: Some(3),
        ..Options::default()
    });
    assert_eq!(canister.heap_limit(), Some(3));
    // The module starts with one page.
    assert_eq!(update(&mut canister, "grow_heap"), 1);
    assert_eq!(update(&mut canister, "grow_heap"), 2);
    assert_eq!(update(&mut canister, "grow_heap"), -1);
    assert_eq!(query(&mut canister, "heap_size"), 3);
    assert_eq!(canister.heap_bytes(), 3 * 65_536);
}

#[test]
fn limits_lowered_on_a_full_canister_refuse_growth_and_keep_the_state() {
    let mut canister = install(Options::default());
    for _ in 0..4 {
        update(&mut canister, "grow_stable");
        update(&mut canister, "grow_heap");
    }
    assert_eq!(update(&mut canister, "mark"), 0);

    canister.set_stable_memory_limit(Some(2));
    canister.set_heap_limit(Some(2));
    assert_eq!(update(&mut canister, "grow_stable"), -1);
    assert_eq!(update(&mut canister, "grow_heap"), -1);
    assert_eq!(query(&mut canister, "stable_size"), 4);
    assert_eq!(query(&mut canister, "heap_size"), 5);
    assert_eq!(query(&mut canister, "stable_mark"), 0x5eed);
    assert_eq!(query(&mut canister, "heap_mark"), 0x5eed);

    // Raised again, the memories grow up to the new limits.
    canister.set_stable_memory_limit(None);
    canister.set_heap_limit(Some(6));
    assert_eq!(update(&mut canister, "grow_stable"), 4);
    assert_eq!(update(&mut canister, "grow_heap"), 5);
    assert_eq!(update(&mut canister, "grow_heap"), -1);
}

#[test]
fn the_runtime_own_growth_is_not_limited() {
    let mut canister = install(Options::default());
    update(&mut canister, "grow_stable");
    update(&mut canister, "grow_heap");
    update(&mut canister, "grow_heap");
    assert_eq!(update(&mut canister, "mark"), 0);
    let snapshot = canister.snapshot();

    // A message that grows the heap within the limit and traps is rolled back onto a fresh
    // instance, grown back to the three pages by the runtime.
    canister.set_heap_limit(Some(4));
    let trapped = canister.update("grow_heap_then_trap", &[], ANONYMOUS);
    assert!(trapped.reply.is_err());
    assert_eq!(query(&mut canister, "heap_size"), 3);
    assert_eq!(query(&mut canister, "heap_mark"), 0x5eed);

    // Restoring a snapshot larger than the limit is the runtime's growth too.
    canister.set_heap_limit(Some(1));
    assert_eq!(update(&mut canister, "grow_heap"), -1);
    let restored = canister.restore(&snapshot);
    assert!(restored.is_ok(), "{:?}", restored.err());
    assert_eq!(canister.heap_bytes(), 3 * 65_536);
    assert_eq!(query(&mut canister, "heap_mark"), 0x5eed);
    assert_eq!(
        update(&mut canister, "grow_heap"),
        -1,
        "the limit still applies"
    );
}
