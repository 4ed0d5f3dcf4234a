#!/usr/bin/env bash
# The main job: measures what one call to each store canister costs (bench-calls: the real
# canisters of the registry on 1,000,000-row tables, aged and ascending, one message at a
# time, under both metering profiles, the IC's current meter first, with traces and page maps
# of the headline calls), builds the benchmark canisters (the engines', canbench.yml, and the
# ic-sqlite-vfs peer's, canisters/ic-sqlite-vfs/canbench.yml), makes (or reuses) their
# stable-memory images with the preloaded tables, runs both canbench suites (on icrun here; on
# PocketIC with real canbench when POCKET_IC_BIN is set), writes per_call_results.yml, both
# canbench_results.yml files, upgrade_results.yml (the trace and page map of every engine's
# upgrade, bench-calls --upgrade-trace), docs/RESULTS.md with its charts and flame graphs,
# README.md's figures, and prints the headline tables. Sets itself up on a fresh machine.
#
# Usage: scripts/bench.sh            run everything and persist the results (with
#                                    STABLE_STRUCTURES_GIT=<clone of dfinity/stable-structures>
#                                    also the node-cache peer: scripts/node_cache_peer.sh),
#                                    the edge benchmark included (below)
#        scripts/bench.sh --canisters
#                                    the same without the edge benchmark (on 2 cores about
#                                    25 minutes; the edge run adds about 120)
#        scripts/bench.sh --edge     only the edge benchmark: every [[edge]] configuration of
#                                    canisters/engines.toml on the real `wasmtime serve`, on
#                                    1,000,000-row aged tables, then each one's Wasm
#                                    instructions per request on the metering host
#                                    (benches/edge, benches/edge-meter; on 2 cores about two
#                                    hours, nothing else running: the fills 33 minutes, the
#                                    timed runs 52, the metering 32), into edge_results.yml
#                                    and docs/RESULTS.md
#        scripts/bench.sh --edge-counts
#                                    only the Wasm instructions per request of the edge
#                                    configurations, on tables filled for them
#                                    (edge-bench --instructions-only, edge_instructions.yml;
#                                    the report takes them when edge_results.yml has none)
#        scripts/bench.sh --sizes [ROWS]
#                                    only the size sweep (bench-calls --sizes): one
#                                    configuration of every engine and the peer on tables
#                                    of 10,000 rows up to ROWS (default 1,000,000; the sizes
#                                    are 10k, 30k, 100k, ..., 100M; at 1,000,000 also the
#                                    seed's batch table, with SQLite's PERSIST and OFF
#                                    journals filled for it alone), merged into
#                                    size_results.yml, then docs/RESULTS.md (docs/scale.md,
#                                    "Measuring it here", gives the time and memory each
#                                    size took here: half an hour for every engine's
#                                    tables of 300,000 to 3 million rows, 16 to 112
#                                    minutes a table at 30 million, an hour and 31 GB for
#                                    the one 100-million-row table;
#                                    the full run measures the sizes up to 100,000 again)
#        scripts/bench.sh --check    run CI's subset of the per-call suite (the page tree's
#                                    traced configuration, aged table, both profiles, with its
#                                    flame graphs: bench-calls --check) and both canbench
#                                    suites whole, and fail if any figure differs from the committed
#                                    files (canbench's beyond its noise threshold, the rest
#                                    exactly), and if docs/RESULTS.md is not what they give;
#                                    the size sweep's two smallest sizes and the upgrade
#                                    trace of the 10,000-row tables (compared exactly, the
#                                    trace's flame graphs too), and a small run of the edge benchmark (three of its
#                                    configurations, 20,000 rows; its
#                                    wall-clock figures are not compared, they only must come)
set -euo pipefail
source "$(dirname "$0")/setup.sh"
ensure_build_tools
ensure_python_yaml
cd "$ROOT"

mode=persist
# Whether the full run measures the edge too.
with_edge=1
# The edge benchmark's arguments: the timed run with its counts, by default.
edge_args=(--out "$ROOT/edge_results.yml")
# The largest table of the size sweep: the full run measures the sizes up to it again (the
# results file keeps the larger ones measured by `--sizes ROWS`).
sizes_up_to=100000
# The tables whose upgrade is traced (bench-calls --upgrade-trace): the smallest of the sweep,
# which CI traces again, and the per-call suite's 1,000,000 rows.
upgrade_trace_small=10000
upgrade_trace_sizes="$upgrade_trace_small,1000000"
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  --canisters) with_edge=0 ;;
  --edge) mode=edge ;;
  --edge-counts) mode=edge; edge_args=(--instructions-only --requests 50 --batch-requests 3
                                       --out "$ROOT/edge_instructions.yml") ;;
  --sizes) mode=sizes; sizes_up_to=${2:-1000000} ;;
  *) echo "usage: scripts/bench.sh [--canisters | --check | --edge | --edge-counts | --sizes [ROWS]]" >&2
     exit 2 ;;
esac

# edge_bench ARGS...: builds the edge components and the benchmark, and runs it.
edge_bench() {
  if [ "$mode" = check ]; then
    # CI's small run, whose wall-clock figures are not compared: the tests' `wasmtime serve`,
    # the workspace's build of it (benches/wasmtime-serve). Measured runs use the released CLI.
    use_workspace_wasmtime
  else
    ensure_edge_host
  fi
  "$ROOT/scripts/build_edge.sh"
  "$ROOT/scripts/build_edge_peers.sh"
  build_workspace
  "$ROOT/target/debug/edge-bench" "$@"
}

if [ "$mode" = edge ]; then
  log "the edge benchmark: every [[edge]] configuration on wasmtime serve (${edge_args[*]})"
  edge_bench "${edge_args[@]}"
fi

# The tools: build_workspace (setup.sh, which says why the whole workspace), a no-op after
# scripts/test.sh (CI).
log "building icrun and the measuring tools (the tests' profile and features: one build of wasmtime)"
build_workspace
store_canisters=()
if [ "$mode" != edge ]; then
  while read -r canister _; do
    store_canisters+=("$canister")
  done < <(python3 "$ROOT/scripts/registry.py" canisters)
fi
# The canbench suites: this crate's engines' (canbench.yml), and the ic-sqlite-vfs peer's, a
# bench canister of its own (its SQLite cannot share a Wasm with rusqlite's). Each: its bench
# canister, the folder of its canbench.yml (where canbench runs), and its images' cache.
CACHE="$ROOT/.cache/bench"
suites=(main peer)
declare -A suite_wasm=([main]=benches [peer]=ic-sqlite-vfs-benches)
declare -A suite_dir=([main]="$ROOT" [peer]="$ROOT/canisters/ic-sqlite-vfs")
declare -A suite_cache=([main]="$CACHE" [peer]="$CACHE/ic-sqlite-vfs")
# The bench canisters name the preloaded tables' images, whose storage figures the report reads
# in every mode.
"$ROOT/scripts/build.sh" "${store_canisters[@]}" "${suite_wasm[@]}"

mkdir -p "$ROOT/target/bench"
# The preloaded tables' images (canbench's stable memory), cached in each suite's cache by its
# bench canister's hash. Their builds are single-threaded for minutes (icrun runs one message at
# a time), as the per-call measurements below are, so they run beside them (on a fresh machine,
# CI's, they are always built). What they measure are instruction counts, which do not depend
# on what else runs; the timed edge benchmark never runs beside them.
declare -A image_path storage_path image_job
for suite in "${suites[@]}"; do
  wasm="$ROOT/target/canisters/${suite_wasm[$suite]}.wasm"
  key=$(sha256 "$wasm" | cut -c1-16)
  image_path[$suite]="${suite_cache[$suite]}/images/$key.bin"
  storage_path[$suite]="${suite_cache[$suite]}/images/$key.storage.tsv"
  image_job[$suite]=
  if [ ! -f "${image_path[$suite]}" ] || [ ! -f "${storage_path[$suite]}" ]; then
    log "building the preloaded tables of the $suite suite in the background (bench-snapshot, log in target/bench/image-$suite.log)"
    rm -rf "${suite_cache[$suite]}/images"
    mkdir -p "${suite_cache[$suite]}/images"
    "$ROOT/target/debug/bench-snapshot" "$wasm" "${image_path[$suite]}.tmp" \
      "${storage_path[$suite]}.tmp" >"$ROOT/target/bench/image-$suite.log" 2>&1 &
    image_job[$suite]=$!
  else
    log "reusing the preloaded tables ${image_path[$suite]}"
  fi
done
# A step that fails before the images are waited for stops their builds too.
trap 'for job in "${image_job[@]}"; do [ -n "$job" ] && kill "$job" 2>/dev/null; done' EXIT
# Both suites' storage figures, for the report.
storage="$ROOT/target/bench/storage.tsv"

# wait_for_images: waits for the images' builds, if any run, and fails with the log of one
# that failed; then links each image where its canbench.yml reads it.
wait_for_images() {
  local suite job status
  for suite in "${suites[@]}"; do
    job=${image_job[$suite]}
    if [ -n "$job" ]; then
      status=0
      wait "$job" || status=$?
      image_job[$suite]=
      cat "$ROOT/target/bench/image-$suite.log" >&2
      if [ "$status" != 0 ]; then
        echo "bench-snapshot failed (exit $status): the $suite suite's preloaded tables were not built" >&2
        exit 1
      fi
      mv "${image_path[$suite]}.tmp" "${image_path[$suite]}"
      mv "${storage_path[$suite]}.tmp" "${storage_path[$suite]}"
      log "the preloaded tables of the $suite suite are built: ${image_path[$suite]}"
    fi
    ln -sfn "images/$(basename "${image_path[$suite]}")" "${suite_cache[$suite]}/stable_memory.bin"
  done
  cat "${storage_path[main]}" "${storage_path[peer]}" >"$storage"
}

# run_suites ARGS...: runs each canbench suite in its folder with the runner and ARGS.
run_suites() {
  local suite
  for suite in "${suites[@]}"; do
    log "the $suite suite (${suite_dir[$suite]#"$ROOT/"}/canbench.yml)"
    (cd "${suite_dir[$suite]}" && "${runner[@]}" "$@")
  done
}

# The size sweep's large tables take much memory (docs/scale.md): it does not run beside the
# images' builds.
if [ "$mode" = sizes ]; then
  wait_for_images
fi

if [ "$mode" = check ]; then
  flamegraphs="$ROOT/target/bench/calls-check/flamegraphs"
  rm -rf "$flamegraphs"
  log "measuring CI's subset of the per-call suite again and comparing it with per_call_results.yml (bench-calls --check)"
  "$ROOT/target/debug/bench-calls" --check "$ROOT/target/canisters" per_call_results.yml "$flamegraphs"
  log "tracing every engine's upgrade of its 10,000-row aged table again and comparing it with upgrade_results.yml"
  "$ROOT/target/debug/bench-calls" --upgrade-trace --check "$upgrade_trace_small" "$ROOT/target/canisters" upgrade_results.yml "$flamegraphs"
  log "comparing the subset's and the upgrades' flame graphs with the committed ones"
  for svg in "$flamegraphs"/*.svg; do
    cmp "$svg" "docs/flamegraphs/$(basename "$svg")"
  done
  log "measuring the size sweep's two smallest sizes again and comparing them with size_results.yml"
  "$ROOT/target/debug/bench-calls" --sizes --check --up-to 30000 "$ROOT/target/canisters" size_results.yml
elif [ "$mode" = persist ]; then
  flamegraphs="$ROOT/docs/flamegraphs"
  rm -rf "$flamegraphs"
  log "measuring one call at a time: the store canisters on 1,000,000-row tables (bench-calls)"
  "$ROOT/target/debug/bench-calls" "$ROOT/target/canisters" "$ROOT/per_call_results.yml" "$flamegraphs"
  log "tracing every engine's upgrade of its aged tables of $upgrade_trace_sizes rows (bench-calls --upgrade-trace)"
  "$ROOT/target/debug/bench-calls" --upgrade-trace "$upgrade_trace_sizes" "$ROOT/target/canisters" "$ROOT/upgrade_results.yml" "$flamegraphs"
fi
if [ "$mode" = persist ] || [ "$mode" = sizes ]; then
  log "the size sweep up to $sizes_up_to rows (bench-calls --sizes), merged into size_results.yml"
  "$ROOT/target/debug/bench-calls" --sizes --up-to "$sizes_up_to" "$ROOT/target/canisters" "$ROOT/size_results.yml"
fi

wait_for_images

if [ "$mode" = check ]; then
  # The reproduction check compares with icrun's own committed figures.
  log "checking the suites on icrun against the committed canbench_results.yml files"
  runner=("$ROOT/target/debug/icrun" bench)
  run_suites --less-verbose --fail-on-change
  log "checking that docs/RESULTS.md and its charts are what the committed results give"
  fresh="$ROOT/target/bench/report-check"
  rm -rf "$fresh" && mkdir -p "$fresh/charts"
  python3 "$ROOT/scripts/report.py" canbench_results.yml "$storage" per_call_results.yml \
    "$fresh/RESULTS.md" "$fresh/charts" flamegraphs README.md "$fresh/README.md" >/dev/null
  diff -u docs/RESULTS.md "$fresh/RESULTS.md"
  diff -u README.md "$fresh/README.md"
  diff -ru docs/charts "$fresh/charts"
  # Three configurations (ours, redb, SQLite WAL) run the benchmark's whole path: filling,
  # both modes, one and several clients, the metering host. tests/edge.rs serves every
  # configuration end to end.
  log "a small run of the edge benchmark (its wall-clock figures are not compared)"
  edge_bench --engines page_tree,redb,sqlite_wal --rows 20000 --requests 10 --batch-requests 2 \
    --runs 1 --out "$ROOT/target/bench/edge_check.yml"
  exit 0
fi

if [ "$mode" = persist ]; then
  if [ -n "${POCKET_IC_BIN:-}" ]; then
    log "running the suite on PocketIC ($POCKET_IC_BIN) with canbench"
    ensure_cargo_tool canbench canbench "$CANBENCH_VERSION"
    runner=(canbench)
  else
    log "running the suite on icrun (POCKET_IC_BIN is not set: PocketIC is not used)"
    runner=("$ROOT/target/debug/icrun" bench)
  fi
  run_suites --persist --less-verbose
  if [ "$with_edge" = 1 ]; then
    log "the edge benchmark: every [[edge]] configuration on wasmtime serve (edge_results.yml)"
    edge_bench --out "$ROOT/edge_results.yml"
  else
    log "the edge benchmark NOT run (--canisters): edge_results.yml is kept as it was"
  fi
fi

log "writing docs/RESULTS.md and docs/charts/"
python3 "$ROOT/scripts/report.py" canbench_results.yml "$storage" per_call_results.yml \
  docs/RESULTS.md docs/charts flamegraphs README.md

# The node-cache peer needs ic-stable-structures' main branch, which only GitHub has
# (docs/node-cache.md): measured when a clone is given, and said so when it is not.
if [ "$mode" = edge ] || [ "$mode" = sizes ]; then
  exit 0
elif [ -n "${STABLE_STRUCTURES_GIT:-}" ]; then
  log "the node-cache peer (scripts/node_cache_peer.sh $STABLE_STRUCTURES_GIT)"
  "$ROOT/scripts/node_cache_peer.sh" "$STABLE_STRUCTURES_GIT"
else
  log "the node-cache peer NOT measured: set STABLE_STRUCTURES_GIT to a clone of dfinity/stable-structures (docs/node-cache.md keeps its last figures)"
fi
