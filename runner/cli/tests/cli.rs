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

/// A stack-first canister (its stack pointer, global 0, starts at 64 KiB: heap page 0 is
/// stack; static data from 64 KiB) whose update `put` writes the stack from `push`, copies
/// the static data to stable page 0 from `save` and replies it (Candid `()`).
const PAGES: &str = r#"(module
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "stable64_grow" (func $stable64_grow (param i64) (result i64)))
  (import "ic0" "stable64_write" (func $stable64_write (param i64 i64 i64)))
  (memory 3)
  (global (mut i32) (i32.const 65536))
  (data (i32.const 65536) "DIDL\00\00")
  (func $push (i32.store (i32.const 65000) (i32.const 1)))
  (func $save (call $stable64_write (i64.const 0) (i64.const 65536) (i64.const 6)))
  (func $init (export "canister_init") (drop (call $stable64_grow (i64.const 1))))
  (func $put (export "canister_update put") (call $push) (call $save)
    (call $append (i32.const 65536) (i32.const 6)) (call $reply)))"#;

#[test]
fn call_prints_the_page_map_at_no_cost() {
    let wasm = wat::parse_str(PAGES).expect("valid WAT");
    let path = std::env::temp_dir().join(format!("icrun-cli-pages-{}.wasm", std::process::id()));
    std::fs::write(&path, wasm).expect("temp file writable");
    let call = |extra: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_icrun"))
            .args(["call", path.to_str().expect("utf-8 path"), "put"])
            .args(extra)
            .output()
            .expect("icrun runs");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr);
        (output.status.code(), format!("{stdout}{stderr}"))
    };
    let (plain_status, plain) = call(&[]);
    let (status, mapped) = call(&["--page-map"]);
    let (refused, _) = call(&["--page-map", "--metering", "pocketic-13"]);
    let _ = std::fs::remove_file(&path);
    assert_eq!((plain_status, status), (Some(0), Some(0)), "{mapped}");
    // The map is recorded by free hooks: the same instructions (docs/metering.md §1).
    let instructions = |text: &str| {
        text.lines()
            .find(|line| line.starts_with("instructions: "))
            .map(str::to_string)
    };
    assert!(instructions(&plain).is_some(), "{plain}");
    assert_eq!(instructions(&plain), instructions(&mapped), "{mapped}");
    assert!(!plain.contains("page map"), "{plain}");
    // The map's lines with their columns' padding collapsed.
    let line = |prefix: &str| {
        mapped
            .lines()
            .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
            .find(|line| line.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix:?} in\n{mapped}"))
    };
    assert!(mapped.contains("stack 0x0..0x10000"), "{mapped}");
    assert_eq!(
        line("heap 0 "),
        "heap 0 0x00000000..0x00010000 stack 160,000 accessed by push, written by push"
    );
    // Heap page 1 is read by the host for stable64_write: static data, then heap.
    assert_eq!(
        line("heap 1 "),
        "heap 1 0x00010000..0x00020000 static data+heap 80,000 \
         accessed by ic0::stable64_write"
    );
    assert_eq!(
        line("stable 0 "),
        "stable 0 0x00000000..0x00010000 - 160,000 accessed by save, written by save"
    );
    // 5 × 80,000: the call's page charges (no line says the map is incomplete).
    assert_eq!(line("total"), "total 3 pages, 2 written 400,000");
    assert!(!mapped.contains("incomplete"), "{mapped}");
    // Only the current meter charges these pages.
    assert_eq!(refused, Some(2));
}
