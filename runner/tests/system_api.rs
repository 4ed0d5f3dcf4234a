//! The charge of each ic0 function (docs/metering.md §4), on hand-written
//! modules. Each expected count is: function entry 1 + the §3 cost of the
//! operators (consts 1, call 5, drop 1; all in one basic block) + the §4 charge.
//! Queries are used so no heap dirty-page charge is added.

mod common;

use common::ANONYMOUS;
use common::*;
use icrun::RejectCode;

const ARG: &[u8] = b"abc";

/// (method, body, expected instructions).
const CHARGES: &[(&str, &str, u64)] = &[
    // 1 + call 5 + drop 1 = 7, + 500.
    ("arg_size", "call $msg_arg_data_size drop", 507),
    // 1 + 3 consts + call 5 = 9, + 500 + size 3.
    ("arg_copy", "(call $msg_arg_data_copy (i32.const 0) (i32.const 0) (i32.const 3))", 512),
    ("caller_size", "call $msg_caller_size drop", 507),
    // 9 + 500 + 1 (anonymous principal is one byte).
    ("caller_copy", "(call $msg_caller_copy (i32.const 0) (i32.const 0) (i32.const 1))", 510),
    ("method_name_size", "call $msg_method_name_size drop", 507),
    // 9 + 500 + 2.
    ("method_name_copy", "(call $msg_method_name_copy (i32.const 0) (i32.const 0) (i32.const 2))", 511),
    ("reject_code", "call $msg_reject_code drop", 507),
    ("self_size", "call $canister_self_size drop", 507),
    // 9 + 500 + 10 (canister id is 10 bytes).
    ("self_copy", "(call $canister_self_copy (i32.const 0) (i32.const 0) (i32.const 10))", 519),
    // 1 + const 1 + call 5 = 7, + 500.
    ("balance", "(call $canister_cycle_balance128 (i32.const 0))", 507),
    ("version", "call $canister_version drop", 507),
    ("cycles_available", "(call $msg_cycles_available128 (i32.const 0))", 507),
    // 1 + 3 consts + call 5 = 9, + 500.
    ("cycles_accept", "(call $msg_cycles_accept128 (i64.const 0) (i64.const 5) (i32.const 0))", 509),
    // 1 + 2 consts + call 5 + drop 1 = 9, + 1000 + size 1.
    ("is_controller", "(drop (call $is_controller (i32.const 0) (i32.const 1)))", 1010),
    ("time", "call $time drop", 507),
    // 1 + const + call + drop = 8, + 500.
    ("timer", "(drop (call $global_timer_set (i64.const 5)))", 508),
    ("replicated", "call $in_replicated_execution drop", 507),
    // 1 + 2 + 5 = 8, + 500 + 4.
    ("certified_data", "(call $certified_data_set (i32.const 0) (i32.const 4))", 512),
    // 8 + 100 + 2×5 + 50×5 + 5 = 8 + 365.
    ("debug_print", "(call $debug_print (i32.const 0) (i32.const 5))", 373),
    // 8 + 100 + 2×5000 + 50×4096 (only 4 KiB fit the log buffer) + 5000
    // = 8 + 100 + 10000 + 204800 + 5000.
    ("debug_print_long", "(call $debug_print (i32.const 0) (i32.const 5000))", 219_908),
    // 1 + (2 consts + call) 7 + call 5 = 13; append 500 + 50×10; reply 500.
    ("reply", "(call $msg_reply_data_append (i32.const 0) (i32.const 10)) call $msg_reply", 1513),
    // 8 + 500 + 50×3 (rejects with three NUL characters).
    ("reject", "(call $msg_reject (i32.const 0) (i32.const 3))", 658),
    // 1 + 8 consts + call 5 = 14, + 1500 + 10 + 4.
    (
        "call_new",
        "(call $call_new (i32.const 0) (i32.const 10) (i32.const 0) (i32.const 4) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0))",
        1528,
    ),
    // 8 + 500 + 50×6.
    ("call_data_append", "(call $call_data_append (i32.const 0) (i32.const 6))", 808),
    ("call_cycles_add", "(call $call_cycles_add128 (i64.const 0) (i64.const 1))", 508),
    ("call_on_cleanup", "(call $call_on_cleanup (i32.const 0) (i32.const 0))", 508),
    // 7 + 5000.
    ("call_perform", "call $call_perform drop", 5007),
    // 7 + 0: stable size costs nothing beyond the call.
    ("stable64_size", "call $stable64_size drop", 7),
    ("stable_size", "call $stable_size drop", 7),
    // 8 + 100.
    ("stable64_grow", "(drop (call $stable64_grow (i64.const 1)))", 108),
    ("stable_grow", "(drop (call $stable_grow (i32.const 1)))", 108),
    // 1 + grow (1 + 5 + 1) + write (3 + 5) = 16; grow 100; write 20 + 10 +
    // [4090, 4100) touches 4 KiB pages 0 and 1: 2 × 1000. 16 + 100 + 2030.
    (
        "stable64_write",
        "(drop (call $stable64_grow (i64.const 1))) (call $stable64_write (i64.const 4090) (i64.const 0) (i64.const 10))",
        2146,
    ),
    // 1 + 7 + 8 + 8 = 24; grow 100; first write 20 + 10 + 1000 (page 0);
    // second write in the same page: 20 + 10, no page charge. 24 + 100 + 1030 + 30.
    (
        "stable64_write_twice",
        "(drop (call $stable64_grow (i64.const 1))) (call $stable64_write (i64.const 0) (i64.const 0) (i64.const 10)) (call $stable64_write (i64.const 100) (i64.const 0) (i64.const 10))",
        1184,
    ),
    // 16 + 100 + 20 + 100.
    (
        "stable64_read",
        "(drop (call $stable64_grow (i64.const 1))) (call $stable64_read (i64.const 0) (i64.const 0) (i64.const 100))",
        236,
    ),
    // 16 + 100 + 20 (a read of 0 bytes still costs 20).
    (
        "stable64_read_zero",
        "(drop (call $stable64_grow (i64.const 1))) (call $stable64_read (i64.const 0) (i64.const 0) (i64.const 0))",
        136,
    ),
    // 16 + 100 + 20 + 5000 + [0, 5000) covers 4 KiB pages 0 and 1: 2000.
    (
        "stable_write",
        "(drop (call $stable_grow (i32.const 1))) (call $stable_write (i32.const 0) (i32.const 0) (i32.const 5000))",
        7136,
    ),
    // 16 + 100 + 20 + 7.
    (
        "stable_read",
        "(drop (call $stable_grow (i32.const 1))) (call $stable_read (i32.const 0) (i32.const 0) (i32.const 7))",
        143,
    ),
];

#[test]
fn each_system_call_charge() {
    let mut items = String::new();
    for (name, body, _) in CHARGES {
        items.push_str(&format!(
            "(func (export \"canister_query {name}\") {body})\n"
        ));
    }
    let mut canister = install(&items);
    for (name, _, expected) in CHARGES {
        let result = canister.query(name, ARG, ANONYMOUS);
        assert_eq!(
            result.instructions, *expected,
            "system call row {name}: {:?}",
            result.reply
        );
    }
}

#[test]
fn trap_charge_and_message() {
    let mut canister = install(
        r#"(data (i32.const 0) "boom")
        (func (export "canister_query t") (call $trap (i32.const 0) (i32.const 4)))"#,
    );
    let result = canister.query("t", &[], ANONYMOUS);
    // 1 + 2 consts + call 5 = 8; trap: 500 + 4 + 50×4 + 4 = 708.
    assert_eq!(result.instructions, 716);
    let reject = result.reply.expect_err("trap rejects");
    assert_eq!(reject.code, RejectCode::CanisterError);
    assert!(
        reject.message.contains("ic0.trap") && reject.message.contains("boom"),
        "{}",
        reject.message
    );
}

#[test]
fn reply_reject_and_debug_output() {
    let mut canister = install(
        r#"(data (i32.const 0) "hello")
        (func (export "canister_query echo")
          (call $msg_arg_data_copy (i32.const 100) (i32.const 0) (call $msg_arg_data_size))
          (call $debug_print (i32.const 0) (i32.const 5))
          (call $msg_reply_data_append (i32.const 100) (call $msg_arg_data_size))
          call $msg_reply)
        (func (export "canister_update no") (call $msg_reject (i32.const 0) (i32.const 5)))
        (func (export "canister_update silent"))"#,
    );
    let result = canister.query("echo", b"xyz", ANONYMOUS);
    assert_eq!(reply(&result), b"xyz");
    assert_eq!(result.debug_output, vec!["hello".to_string()]);

    let result = canister.update("no", &[], ANONYMOUS);
    let reject = result.reply.expect_err("msg_reject rejects");
    assert_eq!(reject.code, RejectCode::CanisterReject);
    assert_eq!(reject.message, "hello");

    let reject = canister
        .update("silent", &[], ANONYMOUS)
        .reply
        .expect_err("no reply");
    assert_eq!(reject.code, RejectCode::CanisterError);

    let reject = canister
        .update("missing", &[], ANONYMOUS)
        .reply
        .expect_err("no method");
    assert!(reject.message.contains("missing"), "{}", reject.message);
}

#[test]
fn environment_values() {
    let mut canister = install(&format!(
        r#"
        (func (export "canister_query time") (i64.store (i32.const 0) (call $time)) {REPLY_8_AT_0})
        (func (export "canister_query replicated")
          (i64.store (i32.const 0) (i64.extend_i32_u (call $in_replicated_execution))) {REPLY_8_AT_0})
        (func (export "canister_update replicated_update")
          (i64.store (i32.const 0) (i64.extend_i32_u (call $in_replicated_execution))) {REPLY_8_AT_0})
        (func (export "canister_query is_controller")
          (i32.store8 (i32.const 100) (i32.const 4))
          (i64.store (i32.const 0) (i64.extend_i32_u (call $is_controller (i32.const 100) (i32.const 1))))
          {REPLY_8_AT_0})
        "#
    ));
    canister.set_time(42);
    assert_eq!(reply_u64(&canister.query("time", &[], ANONYMOUS)), 42);
    assert_eq!(reply_u64(&canister.query("replicated", &[], ANONYMOUS)), 0);
    assert_eq!(
        reply_u64(&canister.update("replicated_update", &[], ANONYMOUS)),
        1
    );
    // The installer (anonymous here) is the controller by default.
    assert_eq!(
        reply_u64(&canister.query("is_controller", &[], ANONYMOUS)),
        1
    );
    canister.env_mut().controllers.clear();
    assert_eq!(
        reply_u64(&canister.query("is_controller", &[], ANONYMOUS)),
        0
    );
}

#[test]
fn stable_memory_is_sparse_up_to_500_gib() {
    let mut canister = install(&format!(
        r#"
        (func (export "canister_update grow_max")
          ;; 500 GiB = 8,192,000 pages of 64 KiB.
          (i64.store (i32.const 0) (call $stable64_grow (i64.const 8192000)))
          {REPLY_8_AT_0})
        (func (export "canister_update grow_one_more")
          (i64.store (i32.const 0) (call $stable64_grow (i64.const 1)))
          {REPLY_8_AT_0})
        (func (export "canister_update write_last")
          (i64.store (i32.const 8) (i64.const 0x1122334455667788))
          ;; 500 GiB - 8 = 536870911992.
          (call $stable64_write (i64.const 536870911992) (i64.const 8) (i64.const 8))
          (call $stable64_read (i64.const 0) (i64.const 536870911992) (i64.const 8))
          {REPLY_8_AT_0})
        "#
    ));
    assert_eq!(reply_u64(&canister.update("grow_max", &[], ANONYMOUS)), 0);
    // Beyond 500 GiB the grow fails with -1.
    assert_eq!(
        reply_u64(&canister.update("grow_one_more", &[], ANONYMOUS)),
        u64::MAX
    );
    assert_eq!(
        reply_u64(&canister.update("write_last", &[], ANONYMOUS)),
        0x1122334455667788
    );
    assert_eq!(canister.stable_memory().size_pages(), 8_192_000);
    assert_eq!(canister.stable_memory().allocated_pages(), 1);
}

#[test]
fn stable_memory_out_of_bounds_traps() {
    let mut canister = install(
        r#"(func (export "canister_update oob")
             (call $stable64_write (i64.const 0) (i64.const 0) (i64.const 1)))"#,
    );
    let reject = canister
        .update("oob", &[], ANONYMOUS)
        .reply
        .expect_err("out of bounds");
    assert!(
        reject.message.contains("stable memory out of bounds"),
        "{}",
        reject.message
    );
}
