//! Inter-canister calls in a `World`: ordering, callbacks, rejects, rollback,
//! cleanup, metering, ids, controllers.

mod common;

use candid::Principal;
use common::{reject_message, reply, IMPORTS};
use icrun::{Canister, Closure, Env, ExecutedKind, InstallError, RejectCode, World};

const ANONYMOUS: Principal = Principal::anonymous();

/// Imports the tests need beyond `common::IMPORTS`.
const MORE_IMPORTS: &str = r#"
  (import "ic0" "msg_reject_msg_size" (func $msg_reject_msg_size (result i32)))
  (import "ic0" "msg_reject_msg_copy" (func $msg_reject_msg_copy (param i32 i32 i32)))
  (import "ic0" "cost_call" (func $cost_call (param i64 i64 i32)))
"#;

/// One module for every canister of the tests.
///
/// Heap: [16] a value (`value`), [24] how often `echo`/`silent` ran
/// (`echoes`), [32] how many `$cb_count` ran, [48] written by a trapping
/// callback, [56] by the cleanup (`flags`). Table: 0 `$cb_reply` (replies
/// with the payload), 1 `$cb_reject` (replies with the reject code, 4 bytes
/// LE, then the message), 2 `$cb_trap`, 3 `$cb_cleanup`, 4 `$cb_plain`, 5
/// `$cb_caller`, 6 `$cb_pc1`, 7 `$cb_noop`, 8 `$cb_again` (calls `get` of
/// canister 0 again), 9 `$cb_stable_trap`, 10 `$cb_count` (replies once two
/// ran), 11 `$cb_chain` (calls canister 1's `get` from the callback).
const ITEMS: &str = r#"
  (table 16 funcref)
  (elem (i32.const 0) $cb_reply $cb_reject $cb_trap $cb_cleanup $cb_plain $cb_caller $cb_pc1
                      $cb_noop $cb_again $cb_stable_trap $cb_count $cb_chain)
  ;; ids of canisters 0, 1, 2 and 99 (never created)
  (data (i32.const 256) "\00\00\00\00\00\00\00\00\01\01")
  (data (i32.const 272) "\00\00\00\00\00\00\00\01\01\01")
  (data (i32.const 288) "\00\00\00\00\00\00\00\02\01\01")
  (data (i32.const 304) "\00\00\00\00\00\00\00\63\01\01")
  (data (i32.const 320) "echo")
  (data (i32.const 328) "get")
  (data (i32.const 336) "relay")
  (data (i32.const 384) "nope")
  (data (i32.const 392) "kaput")
  (data (i32.const 400) "hi")
  (data (i32.const 408) "callback failed")
  (data (i32.const 424) "bounce")
  (data (i32.const 432) "deep")

  ;; callee (10 bytes at $callee).$method($arg), callbacks $reply/$reject with env 0
  (func $call (param $callee i32) (param $method i32) (param $method_len i32)
              (param $arg i32) (param $arg_len i32) (param $reply i32) (param $reject i32)
              (result i32)
    (call $call_new (local.get $callee) (i32.const 10) (local.get $method) (local.get $method_len)
                    (local.get $reply) (i32.const 0) (local.get $reject) (i32.const 0))
    (call $call_data_append (local.get $arg) (local.get $arg_len))
    (call $call_perform))
  (func $reply_bytes (param $src i32) (param $len i32)
    (call $msg_reply_data_append (local.get $src) (local.get $len))
    (call $msg_reply))
  (func $count (i64.store (i32.const 24) (i64.add (i64.load (i32.const 24)) (i64.const 1))))

  ;; ---- methods other canisters call
  (func (export "canister_update echo")
    call $count
    (call $msg_arg_data_copy (i32.const 1024) (i32.const 0) (call $msg_arg_data_size))
    (call $reply_bytes (i32.const 1024) (call $msg_arg_data_size)))
  (func (export "canister_update get") (call $reply_bytes (i32.const 16) (i32.const 8)))
  (func (export "canister_update refuse") (call $msg_reject (i32.const 384) (i32.const 4)))
  (func (export "canister_update boom")
    (i64.store (i32.const 16) (i64.add (i64.load (i32.const 16)) (i64.const 100)))
    (call $trap (i32.const 392) (i32.const 5)))
  (func (export "canister_update silent") call $count)
  (func (export "canister_update whoami")
    (call $msg_caller_copy (i32.const 1024) (i32.const 0) (call $msg_caller_size))
    (call $reply_bytes (i32.const 1024) (call $msg_caller_size)))
  (func (export "canister_query qset")
    (i64.store (i32.const 16) (i64.const 555))
    (call $reply_bytes (i32.const 16) (i32.const 8)))
  ;; calls canister 0's `get`; the reply callback answers with its reply
  (func (export "canister_update relay")
    (drop (call $call (i32.const 256) (i32.const 328) (i32.const 3) (i32.const 0) (i32.const 0)
                      (i32.const 0) (i32.const 1))))

  ;; ---- queries of the tests
  (func (export "canister_query value") (call $reply_bytes (i32.const 16) (i32.const 8)))
  (func (export "canister_query echoes") (call $reply_bytes (i32.const 24) (i32.const 8)))
  (func (export "canister_query flags") (call $reply_bytes (i32.const 48) (i32.const 16)))
  (func (export "canister_query self")
    (call $canister_self_copy (i32.const 1024) (i32.const 0) (call $canister_self_size))
    (call $reply_bytes (i32.const 1024) (call $canister_self_size)))

  ;; ---- callbacks
  (func $cb_reply (param i32)
    ;; a reply callback reads reject code 0
    (if (i32.ne (call $msg_reject_code) (i32.const 0)) (then unreachable))
    (call $msg_arg_data_copy (i32.const 1024) (i32.const 0) (call $msg_arg_data_size))
    (call $reply_bytes (i32.const 1024) (call $msg_arg_data_size)))
  (func $cb_reject (param i32)
    (i32.store (i32.const 1024) (call $msg_reject_code))
    (call $msg_reject_msg_copy (i32.const 1028) (i32.const 0) (call $msg_reject_msg_size))
    (call $reply_bytes (i32.const 1024) (i32.add (i32.const 4) (call $msg_reject_msg_size))))
  (func $cb_trap (param i32)
    (i64.store (i32.const 48) (i64.const 1))
    (call $trap (i32.const 408) (i32.const 15)))
  (func $cb_cleanup (param i32)
    (i64.store (i32.const 56) (i64.extend_i32_u (local.get 0))))
  (func $cb_plain (param i32) call $msg_reply)
  (func $cb_caller (param i32)
    (call $msg_caller_copy (i32.const 1024) (i32.const 0) (call $msg_caller_size))
    (call $reply_bytes (i32.const 1024) (call $msg_caller_size)))
  (func $cb_pc1 (param i32)
    (i64.store (i32.const 1024) (call $performance_counter (i32.const 1)))
    (call $reply_bytes (i32.const 1024) (i32.const 8)))
  (func $cb_noop (param i32))
  ;; calls canister 0's `get` again, answered by this callback again: never replies
  (func $cb_again (param i32)
    (drop (call $call (i32.const 256) (i32.const 328) (i32.const 3) (i32.const 0) (i32.const 0)
                      (i32.const 8) (i32.const 8))))
  ;; grows and writes stable memory, then traps
  (func $cb_stable_trap (param i32)
    (drop (call $stable64_grow (i64.const 1)))
    (call $stable64_write (i64.const 0) (i64.const 400) (i64.const 2))
    (call $trap (i32.const 408) (i32.const 15)))
  ;; counts at [32]; the second one replies with the count
  (func $cb_count (param i32)
    (i64.store (i32.const 32) (i64.add (i64.load (i32.const 32)) (i64.const 1)))
    (if (i64.eq (i64.load (i32.const 32)) (i64.const 2))
      (then (call $reply_bytes (i32.const 32) (i32.const 8)))))
  ;; a call made by a callback: canister 1's `get`, answered by $cb_reply
  (func $cb_chain (param i32)
    (drop (call $call (i32.const 272) (i32.const 328) (i32.const 3) (i32.const 0) (i32.const 0)
                      (i32.const 0) (i32.const 1))))

  ;; ---- ingress methods
  ;; arg = callee id (10 bytes) ++ method name; sends "hi"; answered by the callbacks
  (func (export "canister_update call")
    (call $msg_arg_data_copy (i32.const 2048) (i32.const 0) (call $msg_arg_data_size))
    (drop (call $call (i32.const 2048) (i32.const 2058)
                      (i32.sub (call $msg_arg_data_size) (i32.const 10))
                      (i32.const 400) (i32.const 2) (i32.const 0) (i32.const 1))))
  (func (export "canister_update set_and_relay")
    (i64.store (i32.const 16) (i64.const 7))
    (drop (call $call (i32.const 272) (i32.const 336) (i32.const 5) (i32.const 0) (i32.const 0)
                      (i32.const 0) (i32.const 1)))
    ;; written after call_perform, still before the callee runs
    (i64.store (i32.const 16) (i64.const 8)))
  (func (export "canister_update call_then_trap")
    (i64.store (i32.const 16) (i64.const 42))
    (drop (call $call (i32.const 272) (i32.const 320) (i32.const 4) (i32.const 400) (i32.const 2)
                      (i32.const 0) (i32.const 1)))
    unreachable)
  (func (export "canister_update call_trap_cb")
    (call $call_new (i32.const 272) (i32.const 10) (i32.const 320) (i32.const 4)
                    (i32.const 2) (i32.const 0) (i32.const 2) (i32.const 0))
    (call $call_on_cleanup (i32.const 3) (i32.const 9))
    (call $call_data_append (i32.const 400) (i32.const 2))
    (drop (call $call_perform)))
  (func (export "canister_update charges")
    (call $call_new (i32.const 272) (i32.const 10) (i32.const 320) (i32.const 4)
                    (i32.const 4) (i32.const 0) (i32.const 4) (i32.const 0))
    (call $call_data_append (i32.const 400) (i32.const 2))
    (drop (call $call_perform)))
  (func (export "canister_update call_caller")
    (drop (call $call (i32.const 272) (i32.const 320) (i32.const 4) (i32.const 400) (i32.const 2)
                      (i32.const 5) (i32.const 1))))
  (func (export "canister_update call_pc1")
    (drop (call $call (i32.const 272) (i32.const 320) (i32.const 4) (i32.const 400) (i32.const 2)
                      (i32.const 6) (i32.const 1))))
  (func (export "canister_update reply_then_call")
    (call $reply_bytes (i32.const 400) (i32.const 2))
    (drop (call $call (i32.const 272) (i32.const 320) (i32.const 4) (i32.const 400) (i32.const 2)
                      (i32.const 0) (i32.const 1))))
  (func (export "canister_update perform_code")
    (call $call_new (i32.const 272) (i32.const 10) (i32.const 320) (i32.const 4)
                    (i32.const 4) (i32.const 0) (i32.const 4) (i32.const 0))
    (i32.store (i32.const 1024) (call $call_perform))
    (call $reply_bytes (i32.const 1024) (i32.const 4)))
  (func (export "canister_update append_only")
    (call $call_data_append (i32.const 400) (i32.const 2)))
  (func (export "canister_update noop"))
  ;; replies, then calls itself again: a ping-pong that never ends
  (func (export "canister_update bounce")
    (call $reply_bytes (i32.const 400) (i32.const 2))
    (drop (call $call (i32.const 256) (i32.const 424) (i32.const 6) (i32.const 0) (i32.const 0)
                      (i32.const 7) (i32.const 7))))
  ;; calls its own `get`; the callback calls `get` again, forever, never replying
  (func (export "canister_update spin")
    (drop (call $call (i32.const 256) (i32.const 328) (i32.const 3) (i32.const 0) (i32.const 0)
                      (i32.const 8) (i32.const 8))))
  ;; calls itself without replying, storing call_perform's result at [16]
  (func (export "canister_update deep")
    (i64.store (i32.const 16)
      (i64.extend_i32_u
        (call $call (i32.const 256) (i32.const 432) (i32.const 4) (i32.const 0) (i32.const 0)
                    (i32.const 7) (i32.const 7)))))
  ;; 501 calls to canister 1's `silent`; replies with how many call_perform
  ;; returned 0 and how many 2 (two u32 LE)
  (func (export "canister_update fan_out")
    (local $i i32) (local $code i32)
    (i64.store (i32.const 1024) (i64.const 0))
    (loop $more
      (local.set $code
        (call $call (i32.const 272) (i32.const 320) (i32.const 4) (i32.const 0) (i32.const 0)
                    (i32.const 7) (i32.const 7)))
      (if (i32.eqz (local.get $code))
        (then (i32.store (i32.const 1024) (i32.add (i32.load (i32.const 1024)) (i32.const 1)))))
      (if (i32.eq (local.get $code) (i32.const 2))
        (then (i32.store (i32.const 1028) (i32.add (i32.load (i32.const 1028)) (i32.const 1)))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $more (i32.lt_u (local.get $i) (i32.const 501))))
    (call $reply_bytes (i32.const 1024) (i32.const 8)))
  ;; a call to canister 1's `echo` answered by $cb_stable_trap (cleanup: $cb_cleanup)
  (func (export "canister_update call_stable_trap_cb")
    (call $call_new (i32.const 272) (i32.const 10) (i32.const 320) (i32.const 4)
                    (i32.const 9) (i32.const 0) (i32.const 9) (i32.const 0))
    (call $call_on_cleanup (i32.const 3) (i32.const 5))
    (drop (call $call_perform))
    (call $reply_bytes (i32.const 400) (i32.const 2)))
  ;; two calls to canister 1's `echo`, both answered by $cb_count
  (func (export "canister_update two_calls")
    (drop (call $call (i32.const 272) (i32.const 320) (i32.const 4) (i32.const 400) (i32.const 2)
                      (i32.const 10) (i32.const 1)))
    (drop (call $call (i32.const 272) (i32.const 320) (i32.const 4) (i32.const 400) (i32.const 2)
                      (i32.const 10) (i32.const 1))))
  ;; calls canister 1's `echo`; its callback calls canister 1's `get`
  (func (export "canister_update chain")
    (drop (call $call (i32.const 272) (i32.const 320) (i32.const 4) (i32.const 400) (i32.const 2)
                      (i32.const 11) (i32.const 1))))
  ;; a one-way call as ic-cdk makes it: callbacks at table index u32::MAX
  (func (export "canister_update oneway")
    (drop (call $call (i32.const 272) (i32.const 320) (i32.const 4) (i32.const 400) (i32.const 2)
                      (i32.const -1) (i32.const -1)))
    (call $reply_bytes (i32.const 400) (i32.const 2)))
  ;; replies with the first u32 LE of the argument many bytes of the heap
  ;; (grown to 49 pages first)
  (func (export "canister_query reply_n")
    (drop (memory.grow (i32.const 48)))
    (call $msg_arg_data_copy (i32.const 0) (i32.const 0) (i32.const 4))
    (call $msg_reply_data_append (i32.const 0) (i32.load (i32.const 0)))
    (call $msg_reply))
  ;; a call to canister 1's `echo` whose argument has 10 MiB - 4 + 1 bytes
  ;; (with the method name, one byte more than the replica allows)
  (func (export "canister_update big_call")
    (call $call_new (i32.const 272) (i32.const 10) (i32.const 320) (i32.const 4)
                    (i32.const 7) (i32.const 0) (i32.const 7) (i32.const 0))
    (call $call_data_append (i32.const 0) (i32.const 10485757)))
  ;; a call whose argument has exactly the 10 MiB the replica allows with
  ;; the method name (standalone: call_perform then returns 2)
  (func (export "canister_update max_call")
    (drop (memory.grow (i32.const 160)))
    (call $call_new (i32.const 272) (i32.const 10) (i32.const 320) (i32.const 4)
                    (i32.const 7) (i32.const 0) (i32.const 7) (i32.const 0))
    (call $call_data_append (i32.const 0) (i32.const 10485756))
    (i32.store (i32.const 0) (call $call_perform))
    (call $reply_bytes (i32.const 0) (i32.const 4)))
  (func (export "canister_query stable_size")
    (i64.store (i32.const 1024) (call $stable64_size))
    (call $reply_bytes (i32.const 1024) (i32.const 8)))
  (func (export "canister_query cost_only")
    (call $cost_call (i64.const 4) (i64.const 2) (i32.const 1024)))
  (func (export "canister_query cost")
    (call $cost_call (i64.const 4) (i64.const 2) (i32.const 1024))
    (call $reply_bytes (i32.const 1024) (i32.const 16)))
"#;

fn wasm(items: &str) -> Vec<u8> {
    let text = format!("(module {IMPORTS} {MORE_IMPORTS} (memory (export \"memory\") 1) {items})");
    match wat::parse_str(&text) {
        Ok(wasm) => wasm,
        Err(e) => panic!("invalid test WAT: {e}"),
    }
}

/// Canister number `n`'s id, written out from the scheme.
fn id(n: u8) -> Principal {
    Principal::from_slice(&[0, 0, 0, 0, 0, 0, 0, n, 1, 1])
}

fn text(id: Principal) -> String {
    id.to_text()
}

/// A world with canisters 0 and 1 installed from [`ITEMS`], and 2 created empty.
fn world() -> World {
    let mut world = World::new();
    let module = wasm(ITEMS);
    for _ in 0..2 {
        let id = world.create_canister(&[]);
        world
            .install(id, &module, &[], ANONYMOUS)
            .expect("installs");
    }
    world.create_canister(&[]);
    world
}

/// Arg of the `call` method: callee id ++ method.
fn call_arg(callee: Principal, method: &str) -> Vec<u8> {
    let mut arg = callee.as_slice().to_vec();
    arg.extend_from_slice(method.as_bytes());
    arg
}

/// The ingress reply of `call` answered by `$cb_reject`: (code, message).
fn rejected(world: &mut World, callee: Principal, method: &str) -> (u32, String) {
    let result = world.update(id(0), "call", &call_arg(callee, method), ANONYMOUS);
    let bytes = reply(&result);
    let code = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
    (code, String::from_utf8(bytes[4..].to_vec()).expect("UTF-8"))
}

fn read_u64(world: &mut World, canister: Principal, query: &str) -> u64 {
    let bytes = reply(&world.query(canister, query, &[], ANONYMOUS));
    u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"))
}

fn kinds(world: &World) -> Vec<(Principal, ExecutedKind, String)> {
    world
        .last_trace()
        .iter()
        .map(|m| (m.canister, m.kind, m.method.clone()))
        .collect()
}

#[test]
fn canister_ids_follow_the_subnet_scheme() {
    let mut world = World::new();
    let ids: Vec<Principal> = (0..3).map(|_| world.create_canister(&[])).collect();
    assert_eq!(ids, vec![id(0), id(1), id(2)]);
    assert_eq!(text(ids[0]), "rwlgt-iiaaa-aaaaa-aaaaa-cai");
    assert_eq!(text(ids[1]), "rrkah-fqaaa-aaaaa-aaaaq-cai");
    // Created but empty: no canister to look at yet.
    assert!(world.canister(ids[1]).is_none());
    world
        .install(ids[1], &wasm(ITEMS), &[], ANONYMOUS)
        .expect("installs");
    let canister = world.canister(ids[1]).expect("installed");
    assert_eq!(canister.env().canister_id, id(1));
    assert_eq!(
        reply(&world.query(ids[1], "self", &[], ANONYMOUS)),
        id(1).as_slice()
    );
    // Ids past the last created canister are unknown.
    assert!(world.canister(id(3)).is_none());
    assert!(matches!(
        world.install(id(3), &wasm(ITEMS), &[], ANONYMOUS),
        Err(InstallError::UnknownCanister(_))
    ));
    assert!(matches!(
        world.install(ids[1], &wasm(ITEMS), &[], ANONYMOUS),
        Err(InstallError::AlreadyInstalled(_))
    ));
}

#[test]
fn caller_message_completes_before_the_callee_runs() {
    let mut world = world();
    // 0 sets value 7, calls 1.relay, then sets 8; relay calls 0.get, which
    // must see 8: the whole message of 0 was committed before 1 ran.
    let result = world.update(id(0), "set_and_relay", &[], ANONYMOUS);
    assert_eq!(reply(&result), 8u64.to_le_bytes().to_vec());
    assert_eq!(
        kinds(&world),
        vec![
            (id(0), ExecutedKind::IngressUpdate, "set_and_relay".into()),
            (id(1), ExecutedKind::Request, "relay".into()),
            (id(0), ExecutedKind::Request, "get".into()),
            (id(1), ExecutedKind::ReplyCallback, "get".into()),
            (id(0), ExecutedKind::ReplyCallback, "relay".into()),
        ]
    );
    assert!(world.last_trace().iter().all(|m| !m.trapped()));
    // The reply callbacks are the table entries given to call_new: 0 = $cb_reply.
    assert_eq!(
        world.last_trace()[4].closure,
        Some(Closure { fun: 0, env: 0 })
    );
}

#[test]
fn reply_reaches_the_reply_callback_which_answers_the_ingress_call() {
    let mut world = world();
    let result = world.update(id(0), "call", &call_arg(id(1), "echo"), ANONYMOUS);
    // The ingress message itself did not reply: $cb_reply answered with the payload.
    assert_eq!(reply(&result), b"hi".to_vec());
    assert_eq!(result.instructions, world.last_trace()[0].instructions);
    assert_eq!(
        kinds(&world),
        vec![
            (id(0), ExecutedKind::IngressUpdate, "call".into()),
            (id(1), ExecutedKind::Request, "echo".into()),
            (id(0), ExecutedKind::ReplyCallback, "echo".into()),
        ]
    );
    assert_eq!(read_u64(&mut world, id(1), "echoes"), 1);
}

#[test]
fn callee_reject_reaches_the_reject_callback() {
    let mut world = world();
    assert_eq!(
        rejected(&mut world, id(1), "refuse"),
        (4, "nope".to_string())
    );
    assert_eq!(world.last_trace()[2].kind, ExecutedKind::RejectCallback);
}

#[test]
fn callee_trap_is_a_canister_error_and_rolls_the_callee_back() {
    let mut world = world();
    let (code, message) = rejected(&mut world, id(1), "boom");
    assert_eq!(code, 5);
    assert_eq!(
        message,
        format!(
            "IC0503: Error from Canister {}: Canister called `ic0.trap` with message: 'kaput'",
            text(id(1))
        )
    );
    let trace = world.last_trace();
    assert_eq!(trace[1].kind, ExecutedKind::Request);
    assert!(trace[1].trapped());
    assert_eq!(trace[2].kind, ExecutedKind::RejectCallback);
    // boom's +100 was rolled back.
    assert_eq!(read_u64(&mut world, id(1), "value"), 0);
}

#[test]
fn unknown_canister_empty_canister_and_unknown_method() {
    let mut world = world();
    let unknown = Principal::from_slice(&[0, 0, 0, 0, 0, 0, 0, 0x63, 1, 1]);
    assert_eq!(
        rejected(&mut world, unknown, "echo"),
        (3, format!("Canister {} not found", text(unknown)))
    );
    // Nothing ran on a callee: ingress, then the reject callback.
    assert_eq!(world.last_trace().len(), 2);
    let empty = format!(
        "IC0537: Attempt to execute a message on canister {} which contains no Wasm module",
        text(id(2))
    );
    assert_eq!(rejected(&mut world, id(2), "echo"), (5, empty.clone()));
    let missing = |n: u8| {
        format!(
            "IC0536: Error from Canister {}: Canister has no update method 'nothing'.",
            text(id(n))
        )
    };
    assert_eq!(rejected(&mut world, id(1), "nothing"), (5, missing(1)));
    // The same texts for ingress calls, with the replica's error code.
    let result = world.update(unknown, "echo", &[], ANONYMOUS);
    let reject = result.reply.expect_err("unknown");
    assert_eq!(reject.code, RejectCode::DestinationInvalid);
    assert_eq!(
        reject.message,
        format!("IC0301: Canister {} not found", text(unknown))
    );
    let result = world.update(id(2), "echo", &[], ANONYMOUS);
    let reject = result.reply.expect_err("empty");
    assert_eq!(reject.code, RejectCode::CanisterError);
    assert_eq!(reject.message, empty);
    let result = world.update(id(0), "nothing", &[], ANONYMOUS);
    assert_eq!(reject_message(&result), missing(0));
    assert!(world.last_trace().is_empty());
    // And for queries.
    let result = world.query(id(0), "nothing", &[], ANONYMOUS);
    assert_eq!(
        reject_message(&result),
        format!(
            "IC0536: Error from Canister {}: Canister has no query method 'nothing'.",
            text(id(0))
        )
    );
}

#[test]
fn a_call_context_without_answer_is_rejected_by_origin() {
    let mut world = world();
    // A canister's call: the replica's CallContextAction::NoResponse.
    assert_eq!(
        rejected(&mut world, id(1), "silent"),
        (5, "No response".to_string())
    );
    // silent completed: its change is kept.
    assert_eq!(read_u64(&mut world, id(1), "echoes"), 1);
    // An ingress call answered by nobody.
    let result = world.update(id(0), "noop", &[], ANONYMOUS);
    let reject = result.reply.expect_err("no reply");
    assert_eq!(reject.code, RejectCode::CanisterError);
    assert_eq!(
        reject.message,
        format!("IC0506: Canister {} did not reply to the call", text(id(0)))
    );
}

#[test]
fn trap_after_call_perform_discards_the_call() {
    let mut world = world();
    let result = world.update(id(0), "call_then_trap", &[], ANONYMOUS);
    let reject = result.reply.expect_err("traps");
    assert_eq!(reject.code, RejectCode::CanisterError);
    assert_eq!(
        reject.message,
        format!(
            "IC0502: Error from Canister {}: Canister trapped: unreachable",
            text(id(0))
        )
    );
    // Only the ingress message ran; the callee never did.
    assert_eq!(world.last_trace().len(), 1);
    assert!(world.last_trace()[0].trapped());
    assert_eq!(read_u64(&mut world, id(1), "echoes"), 0);
    assert_eq!(read_u64(&mut world, id(0), "value"), 0);
}

#[test]
fn trapping_callback_is_rolled_back_and_its_cleanup_runs() {
    let mut world = world();
    let result = world.update(id(0), "call_trap_cb", &[], ANONYMOUS);
    let reject = result.reply.expect_err("the callback trapped");
    assert_eq!(reject.code, RejectCode::CanisterError);
    assert_eq!(
        reject.message,
        format!(
            "IC0503: Error from Canister {}: Canister called `ic0.trap` with message: 'callback failed'",
            text(id(0))
        )
    );
    assert_eq!(
        kinds(&world),
        vec![
            (id(0), ExecutedKind::IngressUpdate, "call_trap_cb".into()),
            (id(1), ExecutedKind::Request, "echo".into()),
            (id(0), ExecutedKind::ReplyCallback, "echo".into()),
            (id(0), ExecutedKind::Cleanup, "echo".into()),
        ]
    );
    let trace = world.last_trace();
    assert!(trace[2].trapped());
    assert!(!trace[3].trapped());
    assert_eq!(trace[3].closure, Some(Closure { fun: 3, env: 9 }));
    let flags = reply(&world.query(id(0), "flags", &[], ANONYMOUS));
    // heap[48] = 1 by the callback: rolled back; heap[56] = env 9 by the cleanup: kept.
    assert_eq!(flags[..8], 0u64.to_le_bytes());
    assert_eq!(flags[8..], 9u64.to_le_bytes());
}

#[test]
fn call_system_api_charges_are_metered() {
    let mut world = world();
    let result = world.update(id(0), "charges", &[], ANONYMOUS);
    assert_eq!(reply(&result), Vec::<u8>::new());
    // One basic block: entry 1; call_new: 8 consts + call 5 = 13; call_data_append:
    // 2 consts + call 5 = 7; call_perform: call 5 + drop 1 = 6. Total 27.
    // docs/metering.md §4: call_new 1500 + 10 (callee) + 4 ("echo");
    // call_data_append 500 + 50 × 2; call_perform 5000. No heap page written.
    let expected = 27 + (1500 + 10 + 4) + (500 + 50 * 2) + 5000;
    assert_eq!(expected, 7141);
    let trace = world.last_trace();
    assert_eq!(trace[0].instructions, expected);
    assert_eq!(result.instructions, expected);
    // $cb_plain: entry 1 + call 5, msg_reply 500; no heap page written.
    assert_eq!(trace[2].kind, ExecutedKind::ReplyCallback);
    assert_eq!(trace[2].instructions, 506);
}

#[test]
fn performance_counter_1_counts_the_whole_call_context() {
    let mut world = world();
    let bytes = reply(&world.update(id(0), "call_pc1", &[], ANONYMOUS));
    let counted = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
    // The callback's block before the read: entry 1, const, const, call 5,
    // store, const, const, call 5 = 16, + performance_counter 200; plus the
    // ingress message of the same call context.
    let ingress = world.last_trace()[0].instructions;
    assert_eq!(counted, ingress + 216);
}

#[test]
fn callers_seen_by_callee_and_callbacks() {
    let mut world = world();
    let sender = Principal::from_slice(&[7u8; 29]);
    // The callee sees the calling canister.
    let result = world.update(id(0), "call", &call_arg(id(1), "whoami"), sender);
    assert_eq!(reply(&result), id(0).as_slice());
    // A callback sees the caller of its call context.
    let result = world.update(id(0), "call_caller", &[], sender);
    assert_eq!(reply(&result), sender.as_slice());
}

#[test]
fn query_methods_called_by_canisters_run_replicated_and_keep_nothing() {
    let mut world = world();
    let result = world.update(id(0), "call", &call_arg(id(1), "qset"), ANONYMOUS);
    assert_eq!(reply(&result), 555u64.to_le_bytes().to_vec());
    assert_eq!(read_u64(&mut world, id(1), "value"), 0);
}

#[test]
fn replying_from_a_callback_of_an_answered_call_traps() {
    let mut world = world();
    let result = world.update(id(0), "reply_then_call", &[], ANONYMOUS);
    assert_eq!(reply(&result), b"hi".to_vec());
    let callback = &world.last_trace()[2];
    assert_eq!(callback.kind, ExecutedKind::ReplyCallback);
    let trap = callback.trap.as_deref().unwrap_or_default();
    assert!(trap.contains("already replied"), "{trap}");
}

#[test]
fn standalone_canister_cannot_send_calls() {
    let module = wasm(ITEMS);
    let (mut canister, _) =
        Canister::install(&module, &[], ANONYMOUS, Env::default()).expect("installs");
    // call_perform returns 2 (SYS_TRANSIENT) without a world ...
    let result = canister.update("perform_code", &[], ANONYMOUS);
    assert_eq!(reply(&result), 2u32.to_le_bytes().to_vec());
    // ... and 0 in one.
    let mut world = world();
    let result = world.update(id(0), "perform_code", &[], ANONYMOUS);
    assert_eq!(reply(&result), 0u32.to_le_bytes().to_vec());
    // Appending without call_new violates the contract.
    let result = canister.update("append_only", &[], ANONYMOUS);
    let message = reject_message(&result);
    assert!(
        message.contains("call_data_append called when no call is under construction"),
        "{message}"
    );
}

#[test]
fn inspect_message_filters_ingress_but_not_calls_from_canisters() {
    let mut world = world();
    let guarded = wasm(&format!(
        "{ITEMS} (func (export \"canister_inspect_message\"))"
    ));
    let guarded_id = world.create_canister(&[]);
    world
        .install(guarded_id, &guarded, &[], ANONYMOUS)
        .expect("installs");
    let result = world.update(guarded_id, "echo", b"x", ANONYMOUS);
    assert_eq!(
        result.reply.expect_err("not accepted").code,
        RejectCode::CanisterReject
    );
    assert!(world.last_trace().is_empty());
    let result = world.update(id(0), "call", &call_arg(guarded_id, "echo"), ANONYMOUS);
    assert_eq!(reply(&result), b"hi".to_vec());
}

#[test]
fn only_controllers_install_and_upgrade() {
    let module = wasm(ITEMS);
    let admin = Principal::from_slice(&[9u8; 29]);
    let other = Principal::from_slice(&[8u8; 29]);
    let mut world = World::new();
    let managed = world.create_canister(&[admin]);
    match world.install(managed, &module, &[], other) {
        Err(e @ InstallError::NotController { .. }) => {
            let message = e.to_string();
            assert!(
                message.contains("Only the controllers")
                    && message.contains(&text(managed))
                    && message.contains(&text(other)),
                "{message}"
            );
        }
        other => panic!("expected NotController, got {other:?}"),
    }
    world
        .install(managed, &module, &[], admin)
        .expect("the controller installs");
    assert!(matches!(
        world.upgrade(managed, &module, &[], other),
        Err(InstallError::NotController { .. })
    ));
    world
        .upgrade(managed, &module, &[], admin)
        .expect("the controller upgrades");
    // Without controllers at creation, the installer becomes the controller.
    let open = world.create_canister(&[]);
    assert!(matches!(
        world.upgrade(open, &module, &[], other),
        Err(InstallError::NotInstalled(_))
    ));
    world.install(open, &module, &[], other).expect("installs");
    assert_eq!(
        world.canister(open).expect("installed").env().controllers,
        vec![other]
    );
    assert!(matches!(
        world.upgrade(open, &module, &[], admin),
        Err(InstallError::NotController { .. })
    ));
    world
        .upgrade(open, &module, &[], other)
        .expect("the installer upgrades");
}

#[test]
fn cost_call_reports_the_application_subnet_fees() {
    let mut world = world();
    // 1 + 3 consts + call 5 = 9, + 500 (base charge assumed).
    assert_eq!(
        world.query(id(0), "cost_only", &[], ANONYMOUS).instructions,
        509
    );
    let bytes = reply(&world.query(id(0), "cost", &[], ANONYMOUS));
    let cost = u128::from_le_bytes(bytes[..16].try_into().expect("16 bytes"));
    // 260,000 per call + 1,000 per byte of method (4), argument (2) and the
    // largest response (2 MiB) + 5,000,000 + 40 billion to run the callback.
    let expected = 260_000 + 1_000 * (4 + 2 + 2 * 1024 * 1024) + 5_000_000 + 40_000_000_000u128;
    assert_eq!(cost, expected);
}

#[test]
fn inspect_message_refusal_carries_the_replica_error() {
    let mut world = world();
    let guarded = wasm(&format!(
        "{ITEMS} (func (export \"canister_inspect_message\"))"
    ));
    let guarded_id = world.create_canister(&[]);
    world
        .install(guarded_id, &guarded, &[], ANONYMOUS)
        .expect("installs");
    let result = world.update(guarded_id, "echo", b"x", ANONYMOUS);
    let reject = result.reply.expect_err("not accepted");
    assert_eq!(reject.code, RejectCode::CanisterReject);
    assert_eq!(
        reject.message,
        format!(
            "IC0406: Error from Canister {}: Canister rejected the message",
            text(guarded_id)
        )
    );
}

#[test]
fn ping_pong_stops_at_the_message_limit_after_the_answer() {
    let mut world = world();
    assert_eq!(world.message_limit(), icrun::DEFAULT_MESSAGE_LIMIT);
    world.set_message_limit(300);
    // `bounce` replies at once and calls itself again: the ingress call is
    // answered, the ping-pong would never end.
    let result = world.update(id(0), "bounce", &[], ANONYMOUS);
    assert_eq!(reply(&result), b"hi".to_vec());
    assert!(world.last_run_truncated());
    assert_eq!(world.last_trace().len(), 300);
    // Nothing carries over into the next update.
    let result = world.update(id(0), "get", &[], ANONYMOUS);
    assert_eq!(reply(&result), 0u64.to_le_bytes().to_vec());
    assert!(!world.last_run_truncated());
    assert_eq!(world.last_trace().len(), 1);
}

#[test]
fn self_calling_canister_without_answer_is_rejected_at_the_message_limit() {
    let mut world = world();
    world.set_message_limit(250);
    // `spin` calls its own `get`, whose reply callback calls `get` again:
    // calls from inside callbacks, forever; the ingress call is never answered.
    let result = world.update(id(0), "spin", &[], ANONYMOUS);
    let reject = result.reply.expect_err("never answered");
    assert_eq!(reject.code, RejectCode::SysTransient);
    assert!(
        reject.message.contains("message limit of 250 messages"),
        "{}",
        reject.message
    );
    assert!(world.last_run_truncated());
    let trace = world.last_trace();
    assert_eq!(trace.len(), 250);
    assert_eq!(trace[1].kind, ExecutedKind::Request);
    assert_eq!(trace[2].kind, ExecutedKind::ReplyCallback);
    assert_eq!(trace[2].closure, Some(Closure { fun: 8, env: 0 }));
    assert_eq!(trace[3].kind, ExecutedKind::Request);
    assert!(trace.iter().all(|m| !m.trapped()));
    // The dropped call contexts and callbacks are gone: a fresh run works.
    let result = world.update(id(0), "call", &call_arg(id(1), "echo"), ANONYMOUS);
    assert_eq!(reply(&result), b"hi".to_vec());
    assert!(!world.last_run_truncated());
    assert_eq!(world.last_trace().len(), 3);
}

#[test]
fn self_recursion_without_answer_ends_at_the_queue_capacity() {
    let mut world = world();
    // Every `deep` calls `deep` before anything answers: the 501st finds 500
    // calls of canister 0 to itself outstanding, and call_perform returns 2.
    let result = world.update(id(0), "deep", &[], ANONYMOUS);
    assert!(!world.last_run_truncated());
    let reject = result.reply.expect_err("nobody replies");
    assert_eq!(
        reject.message,
        format!("IC0506: Canister {} did not reply to the call", text(id(0)))
    );
    // Ingress, 500 requests, then 500 reject callbacks ("No response").
    let trace = world.last_trace();
    assert_eq!(trace.len(), 1001);
    assert_eq!(
        trace
            .iter()
            .filter(|m| m.kind == ExecutedKind::Request)
            .count(),
        500
    );
    assert_eq!(trace[1000].kind, ExecutedKind::RejectCallback);
    // The last `deep` stored call_perform's 2.
    assert_eq!(read_u64(&mut world, id(0), "value"), 2);
}

#[test]
fn fan_out_past_the_queue_capacity_is_refused() {
    let mut world = world();
    let bytes = reply(&world.update(id(0), "fan_out", &[], ANONYMOUS));
    let performed = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
    let refused = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    // 500 calls to canister 1 fit the queue; the 501st gets SYS_TRANSIENT.
    assert_eq!((performed, refused), (500, 1));
    assert_eq!(read_u64(&mut world, id(1), "echoes"), 500);
    assert_eq!(world.last_trace().len(), 1 + 500 + 500);
    // Once the responses are processed, the queue has room again.
    let bytes = reply(&world.update(id(0), "fan_out", &[], ANONYMOUS));
    assert_eq!(bytes[..8], [244, 1, 0, 0, 1, 0, 0, 0]);
}

#[test]
fn reply_size_limits_follow_the_replica() {
    let mut world = world();
    let n = |bytes: u32| bytes.to_le_bytes().to_vec();
    const MIB: u32 = 1024 * 1024;
    // A non-replicated query may reply 3 MiB ...
    let result = world.query(id(0), "reply_n", &n(3 * MIB), ANONYMOUS);
    assert_eq!(reply(&result).len(), 3 * MIB as usize);
    let result = world.query(id(0), "reply_n", &n(3 * MIB + 1), ANONYMOUS);
    let reject = result.reply.expect_err("too large");
    assert_eq!(reject.code, RejectCode::CanisterError);
    assert_eq!(
        reject.message,
        format!(
            "IC0504: Error from Canister {}: Canister violated contract: ic0.msg_reply_data_append: application payload size (3145729) cannot be larger than 3145728.",
            text(id(0))
        )
    );
    // ... a replicated execution 2 MiB, to the ingress call as to a canister.
    let result = world.update(id(0), "reply_n", &n(2 * MIB), ANONYMOUS);
    assert_eq!(reply(&result).len(), 2 * MIB as usize);
    let result = world.update(id(0), "reply_n", &n(2 * MIB + 1), ANONYMOUS);
    assert!(
        reject_message(&result)
            .ends_with("application payload size (2097153) cannot be larger than 2097152."),
        "{}",
        reject_message(&result)
    );
}

#[test]
fn call_arguments_are_limited_to_the_same_subnet_maximum() {
    let mut world = world();
    let result = world.update(id(0), "big_call", &[], ANONYMOUS);
    assert_eq!(
        reject_message(&result),
        format!(
            "IC0504: Error from Canister {}: Canister violated contract: Request to {}:echo has a payload size of 10485761, which exceeds the allowed limit of 10485760.",
            text(id(0)),
            text(id(1))
        )
    );
    // Exactly 10 MiB with the method name is fine (standalone: not sent).
    let (mut canister, _) =
        Canister::install(&wasm(ITEMS), &[], ANONYMOUS, Env::default()).expect("installs");
    let result = canister.update("max_call", &[], ANONYMOUS);
    assert_eq!(reply(&result), 2u32.to_le_bytes().to_vec());
}

#[test]
fn callback_at_a_missing_table_index_fails_as_on_the_replica() {
    let mut world = world();
    // ic-cdk's one-way calls register u32::MAX as their callbacks.
    let result = world.update(id(0), "oneway", &[], ANONYMOUS);
    assert_eq!(reply(&result), b"hi".to_vec());
    let trace = world.last_trace();
    assert_eq!(trace.len(), 3);
    assert_eq!(trace[2].kind, ExecutedKind::ReplyCallback);
    assert_eq!(
        trace[2].trap.as_deref(),
        Some("Canister requested to invoke a non-existent Wasm function 4294967295 from table 0")
    );
}

#[test]
fn trapping_callback_rolls_back_stable_memory() {
    let mut world = world();
    let result = world.update(id(0), "call_stable_trap_cb", &[], ANONYMOUS);
    assert_eq!(reply(&result), b"hi".to_vec());
    let trace = world.last_trace();
    assert_eq!(trace[2].kind, ExecutedKind::ReplyCallback);
    assert!(trace[2].trapped());
    assert_eq!(trace[3].kind, ExecutedKind::Cleanup);
    assert!(!trace[3].trapped());
    // The callback's stable64_grow and write were undone; the cleanup's heap
    // write (env 5 at [56]) was kept.
    assert_eq!(read_u64(&mut world, id(0), "stable_size"), 0);
    let canister = world.canister(id(0)).expect("installed");
    assert_eq!(canister.stable_memory().size_pages(), 0);
    let flags = reply(&world.query(id(0), "flags", &[], ANONYMOUS));
    assert_eq!(flags[..8], 0u64.to_le_bytes());
    assert_eq!(flags[8..], 5u64.to_le_bytes());
}

#[test]
fn callback_waits_for_the_other_outstanding_call_before_answering() {
    let mut world = world();
    // Both responses run $cb_count; the first returns without answering while
    // the second call is outstanding (no "did not reply"), the second replies.
    let result = world.update(id(0), "two_calls", &[], ANONYMOUS);
    assert_eq!(reply(&result), 2u64.to_le_bytes().to_vec());
    assert_eq!(
        kinds(&world),
        vec![
            (id(0), ExecutedKind::IngressUpdate, "two_calls".into()),
            (id(1), ExecutedKind::Request, "echo".into()),
            (id(1), ExecutedKind::Request, "echo".into()),
            (id(0), ExecutedKind::ReplyCallback, "echo".into()),
            (id(0), ExecutedKind::ReplyCallback, "echo".into()),
        ]
    );
    assert!(world.last_trace().iter().all(|m| !m.trapped()));
}

#[test]
fn calls_made_from_a_callback_are_sent_and_answered() {
    let mut world = world();
    let result = world.update(id(0), "chain", &[], ANONYMOUS);
    // $cb_chain calls canister 1's `get`; $cb_reply answers the ingress call
    // with its reply (canister 1's value, 0).
    assert_eq!(reply(&result), 0u64.to_le_bytes().to_vec());
    assert_eq!(
        kinds(&world),
        vec![
            (id(0), ExecutedKind::IngressUpdate, "chain".into()),
            (id(1), ExecutedKind::Request, "echo".into()),
            (id(0), ExecutedKind::ReplyCallback, "echo".into()),
            (id(1), ExecutedKind::Request, "get".into()),
            (id(0), ExecutedKind::ReplyCallback, "get".into()),
        ]
    );
}
