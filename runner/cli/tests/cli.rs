//! The `icrun call` command on a small hand-written canister.

use std::process::Command;

/// A canister whose query `greet` replies the Candid encoding of `("hi")`
/// (DIDL, no type table, one argument of type text (0x71), length 2, "hi")
/// and whose update `fail` traps.
const CANISTER: &str = r#"(module
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "trap" (func $trap (param i32 i32)))
  (memory 1)
  (data (i32.const 0) "DIDL\00\01\71\02hi")
  (data (i32.const 100) "oops")
  (func (export "canister_query greet") (call $append (i32.const 0) (i32.const 10)) call $reply)
  (func (export "canister_update fail") (call $trap (i32.const 100) (i32.const 4))))"#;

fn write_canister() -> std::path::PathBuf {
    let wasm = wat::parse_str(CANISTER).expect("valid WAT");
    let path = std::env::temp_dir().join(format!("icrun-cli-{}.wasm", std::process::id()));
    std::fs::write(&path, wasm).expect("temp file writable");
    path
}

#[test]
fn call_prints_reply_and_instructions() {
    let path = write_canister();
    let greet = |metering: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_icrun"))
            .args([
                "call",
                path.to_str().expect("utf-8 path"),
                "greet",
                "()",
                "--query",
            ])
            .args(metering)
            .output()
            .expect("icrun runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{stdout}");
        assert!(stdout.contains("(\"hi\")"), "{stdout}");
        stdout
    };
    // 1 + (2 consts + call) 7 + call 5 = 13; append 500 + 50 × 10; reply 500.
    let pinned = greet(&["--metering", "pocketic-13"]);
    assert!(pinned.contains("instructions: 1513"), "{pinned}");
    // The default is `current` (docs/metering.md §6): the append reads the reply from the
    // heap's first 64 KiB Wasm page, a first access in the query: 16 × 5,000 more.
    let current = greet(&[]);
    assert!(current.contains("instructions: 81513"), "{current}");

    let output = Command::new(env!("CARGO_BIN_EXE_icrun"))
        .args(["call", path.to_str().expect("utf-8 path"), "fail"])
        .output()
        .expect("icrun runs");
    let _ = std::fs::remove_file(&path);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("reject code 5") && stdout.contains("oops"),
        "{stdout}"
    );
}

#[test]
fn usage_errors_exit_2() {
    let output = Command::new(env!("CARGO_BIN_EXE_icrun"))
        .args(["call"])
        .output()
        .expect("icrun runs");
    assert_eq!(output.status.code(), Some(2));
}
