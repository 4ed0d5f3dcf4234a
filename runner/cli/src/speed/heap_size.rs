//! Per-message cost against heap size: a small update on a canister whose
//! heap holds `heap_bytes` of written pages must cost the same whatever the
//! size, since icrun snapshots and rolls back only what a message touches.

use super::clock::Stopwatch;
use candid::Principal;
use icrun::{Canister, Env, Limits, Options};
use std::time::Duration;

/// Wasm pages are 64 KiB.
const WASM_PAGE: usize = 64 * 1024;
/// The heap pages icrun tracks writes to (docs/metering.md §6: 4 KiB).
const HEAP_PAGE_SIZE: usize = 4 * 1024;

/// A canister whose init grows the heap to `pages` Wasm pages and writes
/// every 4 KiB page, and whose update `touch` writes 8 bytes and replies.
fn canister(pages: usize) -> Result<Vec<u8>, String> {
    let text = format!(
        r#"(module
  (import "ic0" "msg_reply" (func $reply))
  (memory (export "memory") 1)
  (func (export "canister_init") (local $at i32)
    (drop (memory.grow (i32.const {grow})))
    (loop $fill
      (i32.store8 (local.get $at) (i32.const 1))
      (local.set $at (i32.add (local.get $at) (i32.const {step})))
      (br_if $fill (i32.lt_u (local.get $at) (i32.const {end})))))
  (func (export "canister_update touch")
    (i64.store (i32.const 64) (i64.add (i64.load (i32.const 64)) (i64.const 1)))
    call $reply))"#,
        grow = pages.saturating_sub(1),
        step = HEAP_PAGE_SIZE,
        end = pages * WASM_PAGE,
    );
    wat::parse_str(&text).map_err(|e| e.to_string())
}

/// Median CPU time of `messages` `touch` updates with a heap of `heap_bytes`
/// (rounded up to whole 64 KiB pages), after a few warm-up messages.
pub fn touch_time(heap_bytes: usize, messages: usize) -> Result<Duration, String> {
    let wasm = canister(heap_bytes.div_ceil(WASM_PAGE).max(1))?;
    let options = Options {
        limits: Limits::unlimited(),
        ..Options::default()
    };
    let anonymous = Principal::anonymous();
    let (mut canister, _) = Canister::install_with(&wasm, &[], anonymous, Env::default(), options)
        .map_err(|e| format!("install failed: {e}"))?;
    let mut times = Vec::with_capacity(messages);
    for round in 0..messages + 5 {
        let started = Stopwatch::start();
        let result = canister.update("touch", &[], anonymous);
        let elapsed = started.elapsed();
        if let Err(reject) = result.reply {
            return Err(format!("touch was rejected: {reject}"));
        }
        if round >= 5 {
            times.push(elapsed);
        }
    }
    times.sort();
    Ok(times.get(times.len() / 2).copied().unwrap_or_default())
}
