//! `icrun speed` machinery on small inputs (the figures themselves are a
//! benchmark, recorded in docs/calibration.md, not asserted here).

use icrun_cli::speed::heap_size::touch_time;
use icrun_cli::speed::{measure, Workload};
use std::process::Command;

/// A query that spins 1000 loop iterations, calls `performance_counter`
/// (which must work unmetered too) and replies.
const SPIN: &str = r#"(module
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "performance_counter" (func $counter (param i32) (result i64)))
  (memory (export "memory") 1)
  (func (export "canister_query spin") (local $i i32)
    (loop $again
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $again (i32.lt_u (local.get $i) (i32.const 1000))))
    (drop (call $counter (i32.const 0)))
    call $reply))"#;

#[test]
fn measures_metered_and_plain_runs() {
    let wasm = wat::parse_str(SPIN).expect("valid WAT");
    let workload = Workload::Query {
        method: "spin".into(),
        runs: 3,
    };
    let speed = measure(&wasm, &[], &workload).expect("runs");
    assert_eq!(speed.messages, 3);
    // Every run counts the same instructions: 1000 iterations of a 9-instruction loop and more.
    assert_eq!(speed.instructions % 3, 0);
    assert!(speed.instructions / 3 > 9000, "{}", speed.instructions);
}

#[test]
fn heap_probe_runs() {
    assert!(touch_time(1 << 20, 3).is_ok());
    assert!(touch_time(4 << 20, 3).is_ok());
}

#[test]
fn cli_heap_probe_and_usage() {
    let output = Command::new(env!("CARGO_BIN_EXE_icrun"))
        .args(["speed", "--heap-messages", "3", "--large-heap-mib", "2"])
        .output()
        .expect("icrun runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains("with a 2 MiB heap"), "{stdout}");
    let output = Command::new(env!("CARGO_BIN_EXE_icrun"))
        .args(["speed", "--runs", "0"])
        .output()
        .expect("icrun runs");
    assert_eq!(output.status.code(), Some(2));
}
