//! `icrun bench` on a hand-written canbench canister: the report, the results
//! file byte for byte, the CSV file, the noise threshold, query isolation
//! between benches, init arguments, the stable memory image, gzipped Wasm,
//! `build_cmd` and the exit codes of `--fail-on-regression` / `--fail-on-change`.

use icrun_cli::bench::{self, style::Style, BenchOptions, BenchResult, Measurement};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

/// Marker values whose 8 little-endian bytes are found in the Candid template
/// and overwritten at run time.
const INSTRUCTIONS_MARK: u64 = 0x1111_2222_3333_4444;
const HEAP_MARK: u64 = 0x5555_6666_7777_8888;
const STABLE_MARK: u64 = 0x9999_aaaa_bbbb_cccc;

/// Candid bytes of a BenchResult with marker values, and the offsets of the
/// markers (instructions, heap_increase, stable_memory_increase of the total).
fn template(scoped: bool) -> (Vec<u8>, [usize; 3]) {
    let mut scopes = BTreeMap::new();
    if scoped {
        let inner = Measurement {
            calls: 2,
            instructions: 150,
            heap_increase: 0,
            stable_memory_increase: 0,
        };
        scopes.insert("inner".to_string(), inner);
    }
    let result = BenchResult {
        total: Measurement {
            calls: 1,
            instructions: INSTRUCTIONS_MARK,
            heap_increase: HEAP_MARK,
            stable_memory_increase: STABLE_MARK,
        },
        scopes,
    };
    let bytes = candid::encode_one(&result).expect("encodes");
    let find = |mark: u64| {
        bytes
            .windows(8)
            .position(|w| w == mark.to_le_bytes())
            .expect("marker present")
    };
    let offsets = [find(INSTRUCTIONS_MARK), find(HEAP_MARK), find(STABLE_MARK)];
    (bytes, offsets)
}

fn wat_string(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("\\{b:02x}")).collect()
}

/// The bench canister. Heap: [0] a counter every `state_*` bench increments,
/// [8] the init argument's size. Templates at 1024 (no scopes) and 2048 (one scope).
/// - `fixed_207`: 207 instructions;
/// - `state_a`, `state_b`: increment the counter, report 1000 + counter as
///   instructions, the init argument size as heap_increase and the stable
///   memory size as stable_memory_increase;
/// - `scoped`: 500 instructions and a scope `inner`.
fn canister_wasm() -> Vec<u8> {
    let (plain, [pi, ph, ps]) = template(false);
    let (scoped, [si, sh, ss]) = template(true);
    let text = format!(
        r#"(module
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "msg_arg_data_size" (func $arg_size (result i32)))
  (import "ic0" "stable64_size" (func $stable_size (result i64)))
  (import "ic0" "stable64_grow" (func $stable_grow (param i64) (result i64)))
  (memory (export "memory") 1)
  (data (i32.const 1024) "{plain_bytes}")
  (data (i32.const 2048) "{scoped_bytes}")
  (func $send (param $base i32) (param $len i32) (param $i i32) (param $h i32) (param $s i32)
        (param $ins i64) (param $heap i64) (param $stable i64)
    (i64.store (i32.add (local.get $base) (local.get $i)) (local.get $ins))
    (i64.store (i32.add (local.get $base) (local.get $h)) (local.get $heap))
    (i64.store (i32.add (local.get $base) (local.get $s)) (local.get $stable))
    (call $append (local.get $base) (local.get $len))
    (call $reply))
  (func $plain (param i64 i64 i64)
    (call $send (i32.const 1024) (i32.const {plain_len}) (i32.const {pi}) (i32.const {ph})
      (i32.const {ps}) (local.get 0) (local.get 1) (local.get 2)))
  (func $state
    (i64.store (i32.const 0) (i64.add (i64.load (i32.const 0)) (i64.const 1)))
    (call $plain (i64.add (i64.const 1000) (i64.load (i32.const 0)))
      (i64.load (i32.const 8)) (call $stable_size)))
  (func (export "canister_init")
    (i64.store (i32.const 8) (i64.extend_i32_u (call $arg_size)))
    (drop (call $stable_grow (i64.const 1))))
  (func (export "canister_query __canbench__fixed_207")
    (call $plain (i64.const 207) (i64.const 0) (i64.const 0)))
  (func (export "canister_query __canbench__state_a") call $state)
  (func (export "canister_query __canbench__state_b") call $state)
  (func (export "canister_query __canbench__scoped")
    (call $send (i32.const 2048) (i32.const {scoped_len}) (i32.const {si}) (i32.const {sh})
      (i32.const {ss}) (i64.const 500) (i64.const 0) (i64.const 0)))
  (func (export "canister_query not_a_bench") call $reply))"#,
        plain_bytes = wat_string(&plain),
        scoped_bytes = wat_string(&scoped),
        plain_len = plain.len(),
        scoped_len = scoped.len(),
    );
    wat::parse_str(&text).expect("valid WAT")
}

/// A temporary directory with the canister and a canbench.yml.
struct Project {
    dir: PathBuf,
}

impl Project {
    fn new(name: &str, extra_config: &str) -> Project {
        let dir = std::env::temp_dir().join(format!("icrun-bench-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("bench.wasm"), canister_wasm()).expect("write wasm");
        let config = format!("wasm_path: bench.wasm\n{extra_config}");
        std::fs::write(dir.join("canbench.yml"), config).expect("write config");
        Project { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).expect("file exists")
    }

    /// Runs `icrun bench` through the library; returns the report and outcome.
    fn run(&self, args: &[&str]) -> (String, bench::Outcome) {
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        args.push(format!("--config={}", self.path("canbench.yml").display()));
        let options = BenchOptions::parse(&args).expect("valid options");
        let mut out = Vec::new();
        let outcome = bench::run(&options, Style::plain(), &mut out).expect("bench runs");
        (String::from_utf8(out).expect("utf-8"), outcome)
    }

    /// Runs the `icrun` binary in the project directory.
    fn cli(&self, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_icrun"))
            .arg("bench")
            .args(args)
            .current_dir(&self.dir)
            .env("NO_COLOR", "1")
            .env_remove("CANBENCH_CFG_FILE")
            .output()
            .expect("icrun runs")
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn instructions(outcome: &bench::Outcome, name: &str) -> u64 {
    outcome.results[name].total.instructions
}

#[test]
fn benches_start_from_the_installed_state() {
    let project = Project::new(
        "state",
        "init_args:\n  hex: 4449444c0000\nstable_memory:\n  file: image.bin\n",
    );
    // Three 64 KiB pages, loaded after install (init grew stable memory to 1).
    std::fs::write(project.path("image.bin"), vec![7u8; 3 * 65536]).expect("write image");
    let (_, outcome) = project.run(&[]);
    let names: Vec<&String> = outcome.results.keys().collect();
    assert_eq!(names, ["fixed_207", "scoped", "state_a", "state_b"]);
    // Each bench saw the counter at its post-install value: queries roll back.
    for name in ["state_a", "state_b"] {
        let total = outcome.results[name].total;
        assert_eq!(total.instructions, 1001, "{name}");
        assert_eq!(total.heap_increase, 6, "init argument is the decoded hex");
        assert_eq!(
            total.stable_memory_increase, 3,
            "image replaces stable memory"
        );
    }
    assert_eq!(outcome.results["scoped"].scopes["inner"].calls, 2);
    assert!(outcome.failures.is_empty());
}

#[test]
fn absent_init_args_send_no_bytes() {
    let project = Project::new("noinit", "");
    let (_, outcome) = project.run(&["state_a"]);
    let total = outcome.results["state_a"].total;
    assert_eq!(total.heap_increase, 0);
    assert_eq!(total.stable_memory_increase, 1);
    assert_eq!(outcome.results.len(), 1, "the pattern selects one bench");
}

const PERSISTED: &str = "\
benches:
  fixed_207:
    total:
      calls: 1
      instructions: 207
      heap_increase: 0
      stable_memory_increase: 0
    scopes: {}
  scoped:
    total:
      calls: 1
      instructions: 500
      heap_increase: 0
      stable_memory_increase: 0
    scopes:
      inner:
        calls: 2
        instructions: 150
        heap_increase: 0
        stable_memory_increase: 0
  state_a:
    total:
      calls: 1
      instructions: 1001
      heap_increase: 0
      stable_memory_increase: 1
    scopes: {}
  state_b:
    total:
      calls: 1
      instructions: 1001
      heap_increase: 0
      stable_memory_increase: 1
    scopes: {}
version: 0.7.0
";

const NEW_REPORT_START: &str = "\
---------------------------------------------------

Benchmark: fixed_207 (new)
  total:
    instructions: 207 (new)
    heap_increase: 0 pages (new)
    stable_memory_increase: 0 pages (new)

---------------------------------------------------

Benchmark: scoped (new)
  total:
    instructions: 500 (new)
    heap_increase: 0 pages (new)
    stable_memory_increase: 0 pages (new)

  inner (scope):
    calls: 2 (new)
    instructions: 150 (new)
    heap_increase: 0 pages (new)
    stable_memory_increase: 0 pages (new)

---------------------------------------------------
";

#[test]
fn persist_writes_canbench_format_and_csv() {
    let project = Project::new("persist", "results_path: results.yml\n");
    let (report, _) = project.run(&["--persist", "--csv"]);
    assert_eq!(project.read("results.yml"), PERSISTED);
    assert!(report.starts_with(NEW_REPORT_START), "{report}");
    assert!(
        report.contains("    status:   New benchmarks added ➕\n"),
        "{report}"
    );
    assert!(report.contains(&format!(
        "Successfully persisted results to {}\n",
        project.path("results.yml").display()
    )));
    let csv = project.read("canbench_results.csv");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "status,name,scope_calls,scope_calls Δ,scope_calls Δ%,instructions,instructions Δ,\
             instructions Δ%,heap_increase,heap_increase Δ,heap_increase Δ%,\
             stable_memory_increase,stable_memory_increase Δ,stable_memory_increase Δ%"
        )
    );
    assert_eq!(lines.next(), Some("new,fixed_207,,,,207,,,0,,,0,,"));
    assert_eq!(lines.next(), Some("new,scoped,,,,500,,,0,,,0,,"));
    assert_eq!(lines.next(), Some("new,scoped::inner,2,,,150,,,0,,,0,,"));

    // A second run compares against the file: no change anywhere.
    let (report, outcome) = project.run(&["--fail-on-change"]);
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
    assert!(
        report.contains("    instructions: 207 (no change)\n"),
        "{report}"
    );
    assert!(!report.contains("Only significant changes"), "{report}");
}

const REGRESSION_REPORT: &str = "\
---------------------------------------------------

Benchmark: fixed_207
  total:
    instructions: 207 (regressed by 3.50%)
    heap_increase: 0 pages (no change)
    stable_memory_increase: 0 pages (no change)

---------------------------------------------------

Summary:
  instructions:
    status:   Regressions detected 🔴
    counts:   [total 1 | regressed 1 | improved 0 | new 0 | unchanged 0]
    change:   [max +7 | p75 +7 | median +7 | p25 +7 | min +7]
    change %: [max +3.50% | p75 +3.50% | median +3.50% | p25 +3.50% | min +3.50%]

  heap_increase:
    status:   No significant changes 👍
    counts:   [total 1 | regressed 0 | improved 0 | new 0 | unchanged 1]
    change:   [max 0 | p75 0 | median 0 | p25 0 | min 0]
    change %: [max 0.00% | p75 0.00% | median 0.00% | p25 0.00% | min 0.00%]

  stable_memory_increase:
    status:   No significant changes 👍
    counts:   [total 1 | regressed 0 | improved 0 | new 0 | unchanged 1]
    change:   [max 0 | p75 0 | median 0 | p25 0 | min 0]
    change %: [max 0.00% | p75 0.00% | median 0.00% | p25 0.00% | min 0.00%]

---------------------------------------------------

Only significant changes:
| status | name      | calls | ins |  ins Δ% | HI |  HI Δ% | SMI |  SMI Δ% |
|--------|-----------|-------|-----|---------|----|--------|-----|---------|
|   +    | fixed_207 |       | 207 |  +3.50% |  0 |  0.00% |   0 |   0.00% |

ins = instructions, HI = heap_increase, SMI = stable_memory_increase, Δ% = percent change

---------------------------------------------------
";

/// Writes a results file where `fixed_207` had `previous` instructions.
fn baseline(project: &Project, previous: u64) {
    let text = PERSISTED.replace("instructions: 207", &format!("instructions: {previous}"));
    std::fs::write(project.path("canbench_results.yml"), text).expect("write results");
}

#[test]
fn report_and_threshold() {
    let project = Project::new("threshold", "");
    baseline(&project, 200);
    let (report, outcome) = project.run(&["fixed", "--fail-on-regression"]);
    assert_eq!(report, REGRESSION_REPORT);
    assert_eq!(outcome.failures.len(), 1);
    // 3.5% is noise under a 5% threshold.
    let (report, outcome) = project.run(&["fixed", "--noise-threshold", "5", "--fail-on-change"]);
    assert!(
        report.contains("    instructions: 207 (3.50%) (change within noise threshold)\n"),
        "{report}"
    );
    assert!(outcome.failures.is_empty());
    // An improvement passes the regression gate but not the change gate.
    baseline(&project, 220);
    let (report, outcome) = project.run(&["fixed", "--fail-on-regression", "--less-verbose"]);
    assert!(
        report.contains("    instructions: 207 (improved by 5.91%)\n"),
        "{report}"
    );
    assert!(!report.contains("Summary:"), "{report}");
    assert!(outcome.failures.is_empty());
    let (_, outcome) = project.run(&["fixed", "--fail-on-change", "--hide-results"]);
    assert_eq!(
        outcome.failures,
        ["fixed_207: instructions changed from 220 to 207"]
    );
}

#[test]
fn change_gate_sees_missing_and_new_benches() {
    let project = Project::new("missing", "");
    let extra = PERSISTED.replace(
        "version: 0.7.0\n",
        "  gone:\n    total:\n      instructions: 1\nversion: 0.7.0\n",
    );
    std::fs::write(project.path("canbench_results.yml"), extra).expect("write results");
    let (_, outcome) = project.run(&["--fail-on-change"]);
    assert_eq!(outcome.failures, ["gone: missing"]);
    // Benches outside the pattern are not missing.
    let (_, outcome) = project.run(&["state", "--fail-on-change"]);
    assert!(outcome.failures.is_empty(), "{:?}", outcome.failures);
}

#[test]
fn cli_exit_codes() {
    let project = Project::new("cli", "");
    baseline(&project, 200);
    let output = project.cli(&["fixed", "--fail-on-regression"]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert_eq!(stdout, REGRESSION_REPORT);
    assert!(String::from_utf8_lossy(&output.stderr).contains("fixed_207"));
    let output = project.cli(&["fixed", "--fail-on-regression", "--noise-threshold=4"]);
    assert_eq!(output.status.code(), Some(0));
    let output = project.cli(&["--bogus"]);
    assert_eq!(output.status.code(), Some(2));
    let output = project.cli(&["--config", "missing.yml"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("configuration file not found"));
}

#[test]
fn gzipped_wasm_built_by_build_cmd() {
    let project = Project::new("gz", "");
    let wasm = std::fs::read(project.path("bench.wasm")).expect("wasm");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&wasm).expect("compress");
    std::fs::write(project.path("src.gz"), encoder.finish().expect("compress")).expect("write");
    let config = "build_cmd: cp src.gz built.wasm.gz\nwasm_path: built.wasm.gz\n";
    std::fs::write(project.path("canbench.yml"), config).expect("write config");
    let (_, outcome) = project.run(&["fixed"]);
    assert_eq!(instructions(&outcome, "fixed_207"), 207);

    std::fs::write(
        project.path("canbench.yml"),
        "build_cmd: exit 3\nwasm_path: x.wasm\n",
    )
    .expect("write config");
    let output = project.cli(&[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("build_cmd"));
}

#[test]
fn bench_reject_is_an_error() {
    let project = Project::new("reject", "");
    let wasm =
        wat::parse_str(r#"(module (func (export "canister_query __canbench__boom") unreachable))"#)
            .expect("valid WAT");
    std::fs::write(project.path("bench.wasm"), wasm).expect("write wasm");
    let output = project.cli(&[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("Error executing benchmark boom") && stderr.contains("unreachable"),
        "{stderr}"
    );
}

#[test]
fn canister_output_is_shown_on_request() {
    let project = Project::new("output", "");
    let (plain, [i, h, s]) = template(false);
    let wasm = wat::parse_str(format!(
        r#"(module
  (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
  (import "ic0" "msg_reply" (func $reply))
  (import "ic0" "debug_print" (func $print (param i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 0) "hello from the bench")
  (data (i32.const 1024) "{bytes}")
  (func (export "canister_query __canbench__talk")
    (call $print (i32.const 0) (i32.const 20))
    (i64.store (i32.const {ins}) (i64.const 1))
    (i64.store (i32.const {heap}) (i64.const 0))
    (i64.store (i32.const {stable}) (i64.const 0))
    (call $append (i32.const 1024) (i32.const {len}))
    call $reply))"#,
        bytes = wat_string(&plain),
        ins = 1024 + i,
        heap = 1024 + h,
        stable = 1024 + s,
        len = plain.len(),
    ))
    .expect("valid WAT");
    std::fs::write(project.path("bench.wasm"), wasm).expect("write wasm");
    let quiet = project.cli(&[]);
    assert!(quiet.status.success());
    assert!(!String::from_utf8_lossy(&quiet.stderr).contains("hello from the bench"));
    let shown = project.cli(&["--show-canister-output"]);
    let stderr = String::from_utf8_lossy(&shown.stderr);
    assert!(stderr.contains("hello from the bench"), "{stderr}");
    assert!(String::from_utf8_lossy(&shown.stdout).contains("instructions: 1 (new)"));
}
