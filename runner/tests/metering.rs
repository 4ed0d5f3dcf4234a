//! The replica's metering rules (docs/metering.md §1-3) pinned on hand-written
//! modules. Every expected count is computed by hand from the rules; the
//! arithmetic is in the comments. Queries are used so that no heap dirty-page
//! charge (§4, updates only) is added; a query that does not reply is rejected
//! but still reports its instructions.

mod common;

use common::ANONYMOUS;
use common::*;

/// Instructions of the query `method` (reply or not).
fn cost(canister: &mut icrun::Canister, method: &str) -> u64 {
    canister.query(method, &[], ANONYMOUS).instructions
}

/// Shared definitions the operator rows use.
const DEFS: &str = r#"
  (type $v (func))
  (global $g (mut i32) (i32.const 0))
  (table 1 funcref)
  (elem (i32.const 0) $empty)
  (data $d "abcd")
  (func $empty)
"#;

/// (method, body, expected). Every body is one basic block, so the expected
/// count is 1 (function entry, §2) + the §3 cost of each operator.
const OPERATORS: &[(&str, &str, u64)] = &[
    // entry 1, end 0.
    ("empty", "", 1),
    // 1 + const 1 + const 1 + add 1 + drop 1.
    ("i32_add", "i32.const 1 i32.const 2 i32.add drop", 5),
    ("i64_mul", "i64.const 3 i64.const 4 i64.mul drop", 5),
    ("i64_rotl", "i64.const 3 i64.const 4 i64.rotl drop", 5),
    // 1 + 1 + 1 + div 10 + drop 1.
    ("i32_div_u", "i32.const 7 i32.const 2 i32.div_u drop", 14),
    ("i64_rem_s", "i64.const 7 i64.const 2 i64.rem_s drop", 14),
    // 1 + 1 + eqz 1 + drop 1.
    ("i32_eqz", "i32.const 0 i32.eqz drop", 4),
    ("i32_popcnt", "i32.const 5 i32.popcnt drop", 4),
    ("i64_lt_u", "i64.const 5 i64.const 6 i64.lt_u drop", 5),
    // 1 + 1 + 1 + float add 2 + drop 1.
    ("f32_add", "f32.const 1 f32.const 2 f32.add drop", 6),
    ("f64_floor", "f64.const 1.5 f64.floor drop", 5),
    // 1 + 1 + 1 + f64.div 5 + 1.
    ("f64_div", "f64.const 1 f64.const 2 f64.div drop", 9),
    // 1 + 1 + 1 + f32.div 3 + 1.
    ("f32_div", "f32.const 1 f32.const 2 f32.div drop", 7),
    // 1 + 1 + f32.sqrt 5 + 1.
    ("f32_sqrt", "f32.const 4 f32.sqrt drop", 8),
    // 1 + 1 + f64.sqrt 8 + 1.
    ("f64_sqrt", "f64.const 4 f64.sqrt drop", 11),
    // 1 + 1 + 1 + min 18 + 1.
    ("f64_min", "f64.const 1 f64.const 2 f64.min drop", 22),
    ("f32_max", "f32.const 1 f32.const 2 f32.max drop", 22),
    // 1 + 1 + 1 + float comparison 3 + 1.
    ("f32_lt", "f32.const 1 f32.const 2 f32.lt drop", 7),
    ("f64_eq", "f64.const 1 f64.const 2 f64.eq drop", 7),
    // 1 + 1 + 1 + f64.copysign 3 + 1.
    (
        "f64_copysign",
        "f64.const 1 f64.const 2 f64.copysign drop",
        7,
    ),
    // 1 + 1 + 1 + f32.copysign 2 + 1.
    (
        "f32_copysign",
        "f32.const 1 f32.const 2 f32.copysign drop",
        6,
    ),
    // 1 + 1 + abs 1 + 1.
    ("f32_abs", "f32.const 1 f32.abs drop", 4),
    ("f64_neg", "f64.const 1 f64.neg drop", 4),
    // 1 + 1 + trunc 20 + 1.
    ("i32_trunc_f32_s", "f32.const 1.5 i32.trunc_f32_s drop", 23),
    (
        "i64_trunc_sat_f64_u",
        "f64.const 1.5 i64.trunc_sat_f64_u drop",
        23,
    ),
    // 1 + 1 + unsigned int->float 16 + 1.
    (
        "f64_convert_i64_u",
        "i64.const 1 f64.convert_i64_u drop",
        19,
    ),
    // 1 + 1 + signed int->float 3 + 1.
    ("f32_convert_i32_s", "i32.const 1 f32.convert_i32_s drop", 6),
    // 1 + 1 + promote 1 + 1.
    ("f64_promote", "f32.const 1 f64.promote_f32 drop", 4),
    ("i64_extend", "i32.const 1 i64.extend_i32_u drop", 4),
    ("i32_wrap", "i64.const 1 i32.wrap_i64 drop", 4),
    // 1 + 1 + load 1 (wasm32) + 1.
    ("i32_load", "i32.const 0 i32.load drop", 4),
    // 1 + 1 + 1 + store 1 (wasm32).
    ("i64_store", "i32.const 0 i64.const 1 i64.store", 4),
    // 1 + global.get 2 + global.set 2.
    ("global", "global.get $g global.set $g", 5),
    // 1 + const 1 + set 1 + get 1 + tee 1 + drop 1.
    (
        "locals",
        "(local i32) i32.const 1 local.set 0 local.get 0 local.tee 0 drop",
        6,
    ),
    // 1 + 3 consts + select 1 + drop 1.
    (
        "select",
        "i32.const 1 i32.const 2 i32.const 0 select drop",
        6,
    ),
    // 1 + nop 1.
    ("nop", "nop", 2),
    // 1 + memory.size 20 + 1.
    ("memory_size", "memory.size drop", 22),
    // 1 + 1 + memory.grow 300 + 1.
    ("memory_grow", "i32.const 0 memory.grow drop", 303),
    // 1 + call 5; the callee $empty costs 1 more.
    ("call", "call $empty", 7),
    // 1 + 1 + call_indirect 10; the callee costs 1 more.
    ("call_indirect", "i32.const 0 call_indirect (type $v)", 13),
    // 1 + ref.func 130 + 1.
    ("ref_func", "ref.func $empty drop", 132),
    // 1 + table.size 100 + 1.
    ("table_size", "table.size 0 drop", 102),
    // 1 + ref.null 1 + ref.is_null 5 + 1.
    ("ref_is_null", "ref.null func ref.is_null drop", 8),
    // 1 + 1 + table.get 5 + 1.
    ("table_get", "i32.const 0 table.get 0 drop", 8),
    // 1 + data.drop 300.
    ("data_drop", "data.drop $d", 301),
    // `block` does not split (§2): entry 1 + block 0 + nop 1 + end 0 = 2 ends
    // at the block's `end`; then nop 1 + end 0 = 1. Total 3.
    ("block", "block nop end nop", 3),
];

#[test]
fn operator_costs() {
    let mut items = String::from(DEFS);
    for (name, body, _) in OPERATORS {
        items.push_str(&format!(
            "(func (export \"canister_query {name}\") {body})\n"
        ));
    }
    let mut canister = install(&items);
    for (name, _, expected) in OPERATORS {
        assert_eq!(cost(&mut canister, name), *expected, "operator row {name}");
    }
}

#[test]
fn block_partitioning() {
    let mut canister = install(
        r#"
        (func (export "canister_query if_false")
          i32.const 0  ;; 1
          if           ;; 2   -> entry block 1 + 1 + 2 = 4
            nop nop nop ;; then block 3, `else` 0 (not executed)
          else
            nop        ;; else block: 1 + `end` 0 = 1
          end
          nop)         ;; after: 1 + end 0 = 1. Total 4 + 1 + 1 = 6
        (func (export "canister_query if_true")
          i32.const 1
          if           ;; entry 4
            nop nop nop ;; then block 3 + else 0 = 3
          else
            nop
          end
          nop)         ;; 1. Total 4 + 3 + 1 = 8
        (func (export "canister_query loop") (local i32)
          i32.const 3 local.set 0   ;; 1 + 1
          loop                      ;; 0 -> entry 1 + 2 + 0 = 3
            local.get 0 i32.const 1 i32.sub local.tee 0  ;; 4
            br_if 0                 ;; 2 -> loop body 6, runs 3 times = 18
          end                       ;; block after br_if: end 0, dropped
          nop)                      ;; 1 + end 0 = 1. Total 3 + 18 + 1 = 22
        (func (export "canister_query br")
          block        ;; 0
            i32.const 1 drop  ;; 2
            br 0       ;; 2 -> entry 1 + 0 + 2 + 2 = 5 (br's cost in the block it ends)
            nop nop    ;; skipped
          end
          nop)         ;; 1. Total 6
        (func (export "canister_query return")
          i32.const 0 drop  ;; 2
          return            ;; 1 -> entry 1 + 2 + 1 = 4
          nop nop)          ;; skipped. Total 4
        (func (export "canister_query br_table")
          block
            block
              i32.const 1       ;; 1
              br_table 0 1 0    ;; 2 -> entry 1 + 1 + 2 = 4; jumps to the outer block's end
            end
            nop nop nop         ;; skipped
          end
          nop)                  ;; 1. Total 5
        (func (export "canister_query call_no_split")
          call $empty  ;; 5, does not split -> entry 1 + 5 + 1 = 7
          nop)         ;; callee: 1. Total 8
        (func $empty)
        "#,
    );
    assert_eq!(cost(&mut canister, "if_false"), 6);
    assert_eq!(cost(&mut canister, "if_true"), 8);
    assert_eq!(cost(&mut canister, "loop"), 22);
    assert_eq!(cost(&mut canister, "br"), 6);
    assert_eq!(cost(&mut canister, "return"), 4);
    assert_eq!(cost(&mut canister, "br_table"), 5);
    assert_eq!(cost(&mut canister, "call_no_split"), 8);
}

#[test]
fn bulk_memory_dynamic_charge() {
    let mut canister = install(
        r#"
        (data $d "abcd")
        (table 2 funcref)
        ;; 1 + 3 consts + fill 100 = 104 static, + 1000 bytes (§3). Total 1104
        (func (export "canister_query fill")
          (memory.fill (i32.const 0) (i32.const 7) (i32.const 1000)))
        ;; 104 static + 0 bytes. Total 104
        (func (export "canister_query fill_zero")
          (memory.fill (i32.const 0) (i32.const 7) (i32.const 0)))
        ;; 1 + 3 + copy 100 = 104 static, + 500. Total 604
        (func (export "canister_query copy")
          (memory.copy (i32.const 100) (i32.const 0) (i32.const 500)))
        ;; 1 + 3 + init 100 = 104 static, + 4. Total 108
        (func (export "canister_query init")
          (memory.init $d (i32.const 0) (i32.const 0) (i32.const 4)))
        ;; 1 + const 1 + ref.null 1 + const 1 + table.fill 100 = 104, + 2 elements. Total 106
        (func (export "canister_query table_fill")
          (table.fill 0 (i32.const 0) (ref.null func) (i32.const 2)))
        "#,
    );
    assert_eq!(cost(&mut canister, "fill"), 1104);
    assert_eq!(cost(&mut canister, "fill_zero"), 104);
    assert_eq!(cost(&mut canister, "copy"), 604);
    assert_eq!(cost(&mut canister, "init"), 108);
    assert_eq!(cost(&mut canister, "table_fill"), 106);
}

#[test]
fn performance_counter_after_known_sequence() {
    let mut canister = install(&format!(
        r#"
        ;; One block: 1 + (const 1 + const 1 + call 5 + store 1) + 5 nops
        ;; + (const 1 + const 1 + call 5) + call 5 = 1 + 8 + 5 + 12 = 26, all
        ;; charged at entry; performance_counter adds 200 before reading: 226.
        (func (export "canister_query same_block")
          (i64.store (i32.const 0) (call $performance_counter (i32.const 0)))
          nop nop nop nop nop
          {REPLY_8_AT_0})
        ;; Entry 1 + 2 = 3; loop body 6, run twice = 12; after the loop
        ;; 8 (store of the counter) + 7 (append) + 5 (reply) = 20.
        ;; Reading: 3 + 12 + 20 + 200 = 235.
        (func (export "canister_query after_loop") (local i32)
          i32.const 2 local.set 0
          loop
            local.get 0 i32.const 1 i32.sub local.tee 0
            br_if 0
          end
          (i64.store (i32.const 0) (call $performance_counter (i32.const 0)))
          {REPLY_8_AT_0})
        "#
    ));
    let result = canister.query("same_block", &[], ANONYMOUS);
    assert_eq!(reply_u64(&result), 226);
    // Total: 226 + msg_reply_data_append (500 + 50 × 8 = 900) + msg_reply 500 = 1626.
    assert_eq!(result.instructions, 1626);

    let result = canister.query("after_loop", &[], ANONYMOUS);
    assert_eq!(reply_u64(&result), 235);
    // 235 + 900 + 500.
    assert_eq!(result.instructions, 1635);
}

#[test]
fn update_adds_heap_dirty_pages_invisible_to_performance_counter() {
    let mut canister = install(&format!(
        r#"
        ;; Static: 1 + store (1+1+1) + store (1+1+1) + counter store
        ;; (1 + 1 + 5 + 1) + append 7 + reply 5 = 1 + 3 + 3 + 8 + 7 + 5 = 27.
        ;; Reading: 27 + 200 = 227. The stores dirty heap pages 1 and 2
        ;; (addresses 4096 and 8192), and the counter store page 0: 3 pages.
        (func (export "canister_update write")
          (i32.store (i32.const 4096) (i32.const 1))
          (i32.store (i32.const 8192) (i32.const 1))
          (i64.store (i32.const 0) (call $performance_counter (i32.const 0)))
          {REPLY_8_AT_0})
        "#
    ));
    let result = canister.update("write", &[], ANONYMOUS);
    assert_eq!(reply_u64(&result), 227);
    // 227 + 900 (append) + 500 (reply) + 3 dirty pages × 1000 (§4) = 4627.
    assert_eq!(result.instructions, 4627);
}

#[test]
fn dirty_pages_are_counted_afresh_in_every_message() {
    // The memory stays protected between messages and only the pages the
    // previous message wrote are re-protected: the same writes must be
    // counted again in the next message, after a rolled-back query, and in
    // pages the memory grew by.
    let mut canister = install(&format!(
        r#"
        (func (export "canister_update write")
          (i32.store (i32.const 4096) (i32.add (i32.load (i32.const 4096)) (i32.const 1)))
          (i32.store (i32.const 8192) (i32.const 1))
          {REPLY_8_AT_0})
        (func (export "canister_query write_query")
          (i32.store (i32.const 4096) (i32.const 99))
          (i32.store (i32.const 12288) (i32.const 99))
          {REPLY_8_AT_0})
        (func (export "canister_update grow")
          (drop (memory.grow (i32.const 1)))
          (i32.store (i32.const 65536) (i32.const 5))
          {REPLY_8_AT_0})
        (func (export "canister_update write_grown")
          (i32.store (i32.const 65540) (i32.const 6))
          {REPLY_8_AT_0})
        (func (export "canister_query read")
          (i64.store (i32.const 0) (i64.extend_i32_u (i32.load (i32.const 4096))))
          {REPLY_8_AT_0})
        "#
    ));
    let first = canister.update("write", &[], ANONYMOUS).instructions;
    let second = canister.update("write", &[], ANONYMOUS).instructions;
    assert_eq!(first, second, "both messages dirty pages 1 and 2");
    let query = canister.query("write_query", &[], ANONYMOUS);
    assert!(query.reply.is_ok());
    assert_eq!(reply_u64(&canister.query("read", &[], ANONYMOUS)), 2);
    assert_eq!(canister.update("write", &[], ANONYMOUS).instructions, first);
    assert_eq!(reply_u64(&canister.query("read", &[], ANONYMOUS)), 3);

    // The grown page is dirtied by `grow` (non-zero), and again by `write_grown`.
    let grow = canister.update("grow", &[], ANONYMOUS).instructions;
    let write_grown = canister.update("write_grown", &[], ANONYMOUS).instructions;
    // grow: 1 + (const 1 + grow 300 + drop 1) + (2 consts + store 3) + reply part;
    // write_grown: 1 + (2 consts + store 3) + reply part; both dirty 1 page.
    assert_eq!(grow - write_grown, 302);
}
