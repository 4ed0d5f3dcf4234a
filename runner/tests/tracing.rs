//! Instruction traces (`Options::tracing`): the hooks are free, and the folded trace of a
//! message adds up to its instructions, function by function. Expected counts are worked
//! out by hand from docs/metering.md §2-§4.

mod common;

use common::{ANONYMOUS, IMPORTS};
use icrun::{Canister, Env, Options, Window};

const METHODS: &str = r#"
  (memory (export "memory") 1)
  ;; entry 1 + const 1 = 2.
  (func $leaf (result i32) (i32.const 7))
  ;; entry 1 + local.get 1 + if 2 = 4; then: const 1 + return 1 = 2 (the else block is not
  ;; run): 6 with a true argument. Its `return` must still pass the exit hook.
  (func $early (param i32) (result i32)
    (if (result i32) (local.get 0)
      (then (return (i32.const 1)))
      (else (i32.const 2))))
  ;; One block: 1 + call 5 + drop 1 + const 1 + call 5 + drop 1 + call 5 = 19.
  (func $run (export "canister_query run")
    (drop (call $leaf))
    (drop (call $early (i32.const 1)))
    (call $msg_reply))
"#;

fn canister(tracing: bool) -> Canister {
    let wasm = wat::parse_str(format!("(module {IMPORTS} {METHODS})")).expect("valid WAT");
    let options = Options {
        tracing,
        ..Options::default()
    };
    let (canister, _) =
        Canister::install_with(&wasm, &[], ANONYMOUS, Env::default(), options).expect("installs");
    canister
}

fn stack(frames: &[&str]) -> Vec<String> {
    frames.iter().map(|frame| frame.to_string()).collect()
}

#[test]
fn hooks_are_free_and_the_trace_adds_up_by_function() {
    let untraced = canister(false).query("run", &[], ANONYMOUS);
    let mut traced_canister = canister(true);
    let traced = traced_canister.query("run", &[], ANONYMOUS);
    // 19 + 2 + 6 + msg_reply 500.
    assert_eq!(untraced.instructions, 527);
    assert_eq!(traced.instructions, untraced.instructions);
    let trace = traced_canister.last_trace().expect("traced");
    let folded = trace.fold("run", Window::Message).expect("balanced");
    assert_eq!(folded.total(), 527);
    assert_eq!(folded.stacks[&stack(&["run", "run"])], 19);
    assert_eq!(folded.stacks[&stack(&["run", "run", "leaf"])], 2);
    assert_eq!(folded.stacks[&stack(&["run", "run", "early"])], 6);
    assert_eq!(
        folded.stacks[&stack(&["run", "run", "ic0::msg_reply"])],
        500
    );
}

#[test]
fn a_canister_without_hooks_records_no_trace() {
    let mut untraced = canister(false);
    untraced.record_traces(true);
    untraced.query("run", &[], ANONYMOUS);
    assert!(untraced.last_trace().is_none());
    let mut traced = canister(true);
    traced.record_traces(false);
    traced.query("run", &[], ANONYMOUS);
    assert!(traced.last_trace().is_none());
}

const WRITERS: &str = r#"
  (memory (export "memory") 1)
  (func $first (i32.store (i32.const 0) (i32.const 1)))
  (func $second
    (i32.store (i32.const 8192) (i32.const 1))
    (i32.store (i32.const 12288) (i32.const 1)))
  (func $touch (export "canister_update touch")
    (call $first)
    (call $second)
    (call $msg_reply))
"#;

#[test]
fn heap_pages_an_update_dirties_are_charged_to_the_functions_that_wrote_them() {
    let wasm = wat::parse_str(format!("(module {IMPORTS} {WRITERS})")).expect("valid WAT");
    let options = Options {
        tracing: true,
        ..Options::default()
    };
    let (mut canister, _) =
        Canister::install_with(&wasm, &[], ANONYMOUS, Env::default(), options).expect("installs");
    let result = canister.update("touch", &[], ANONYMOUS);
    // Three 4 KiB pages at 1,000 each, after the message (docs/metering.md §6).
    assert_eq!(result.breakdown.heap_pages_dirtied.pages, 3);
    assert_eq!(result.breakdown.heap_pages_dirtied.instructions, 3_000);
    let trace = canister.last_trace().expect("traced");
    let dirtied = result.breakdown.heap_pages_dirtied;
    let folded = trace
        .fold_with_heap_charge("touch", dirtied.pages, dirtied.instructions)
        .expect("balanced");
    assert_eq!(folded.total(), result.instructions);
    let frame = icrun::HEAP_PAGES_DIRTIED_FRAME;
    assert_eq!(
        folded.stacks[&stack(&["touch", "touch", "first", frame])],
        1_000
    );
    assert_eq!(
        folded.stacks[&stack(&["touch", "touch", "second", frame])],
        2_000
    );
    assert!(!folded.stacks.contains_key(&stack(&["touch", frame])));
}
