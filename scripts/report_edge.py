"""The edge part of docs/RESULTS.md (and the README's edge figures), from edge_results.yml
(written by benches/edge: scripts/bench.sh). Wall-clock figures: medians of the runs with
the lowest and highest run beside them, for one machine and one run; compare within the file
only. Imported by report.py."""

from pathlib import Path

import yaml

ONE_ROW = ["insert_one", "get", "get_missing", "get_by_name", "update", "delete", "list_100",
           "count"]
TITLES = {
    "insert_one": "insert one user (between ids)",
    "get": "get one user",
    "get_missing": "get an absent id (404)",
    "get_by_name": "get one user by name",
    "update": "rename one user",
    "delete": "delete one user",
    "list_100": "list 100 users",
    "count": "count users",
    "batch_between_1000": "insert 1,000 related users",
    "batch_appended_1000": "append 1,000 users",
    "batch_scattered_1000": "insert 1,000 unrelated users",
}
PEERS_FOR_RATIOS = ["redb", "sqlite_wal"]


def load(path):
    path = Path(path)
    if not path.exists():
        return None
    with open(path) as f:
        return yaml.safe_load(f)


def fmt(value, digits=0):
    if value is None:
        return "–"
    if digits == 0:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def figure(workload, name):
    return workload[name]["median"]


def spread(workload, name):
    f = workload[name]
    return f"{fmt(f['median'])} ({fmt(f['min'])}–{fmt(f['max'])})"


def by_mode(results, mode):
    """{engine key: {workload: result}} of one host mode."""
    table = {}
    for engine in results["engines"]:
        for m in engine["modes"]:
            if m["mode"] == mode:
                table[engine["engine"]] = {w["workload"]: w for w in m["workloads"]}
    return table


def labels(results):
    return {e["engine"]: e["label"] for e in results["engines"]}


def best_own(results, table, workload, metric, lower_is_better):
    own = [e["engine"] for e in results["engines"] if not e["peer"] and e["engine"] in table]
    pick = min if lower_is_better else max
    return pick(own, key=lambda key: figure(table[key][workload], metric)) if own else None


def matrix(results, table, metric, title_suffix, with_spread=False):
    names = labels(results)
    engines = [e["engine"] for e in results["engines"] if e["engine"] in table]
    lines = ["| request | " + " | ".join(names[e] for e in engines) + " |",
             "|---" * (len(engines) + 1) + "|"]
    for workload in TITLES:
        if not all(workload in table[e] for e in engines):
            continue
        cells = [spread(table[e][workload], metric) if with_spread
                 else fmt(figure(table[e][workload], metric)) for e in engines]
        lines.append(f"| {TITLES[workload]}{title_suffix} | " + " | ".join(cells) + " |")
    return lines


def counters(results, table):
    names = labels(results)
    engines = [e["engine"] for e in results["engines"] if e["engine"] in table]
    lines = ["| request | " + " | ".join(names[e] for e in engines) + " |",
             "|---" * (len(engines) + 1) + "|"]
    for workload in TITLES:
        if not all(workload in table[e] for e in engines):
            continue
        cells = []
        for e in engines:
            w = table[e][workload]
            cells.append(f"{w['syncs_per_request']:g} / {fmt(w['bytes_read_per_request'])} / "
                         f"{fmt(w['bytes_written_per_request'])}")
        lines.append(f"| {TITLES[workload]} | " + " | ".join(cells) + " |")
    return lines


def counts_path(path):
    """edge_instructions.yml beside edge_results.yml (edge-bench --instructions-only)."""
    return Path(path).with_name("edge_instructions.yml")


def instruction_counts(path):
    """The Wasm instruction counts: {"source", "rows", "requests", "batch_requests", "ping",
    "engines": [(key, label)], "by": {key: {mode: {workload: count}}}}, from the timed run's
    own workloads in edge_results.yml when they carry counts, else from edge_instructions.yml
    (`edge-bench --instructions-only`); None when neither has any."""
    results = load(path)
    by = {}
    for e in (results or {}).get("engines", []):
        for m in e["modes"]:
            for w in m["workloads"]:
                if "instructions_per_request" in w:
                    by.setdefault(e["engine"], {}).setdefault(m["mode"], {})[w["workload"]] = \
                        w["instructions_per_request"]
    if by:
        return {
            "source": "the timed run's own tables, after its timed runs (`edge_results.yml`)",
            "rows": results["rows"], "requests": results["requests"],
            "batch_requests": results["batch_requests"],
            "ping": results["floor"].get("empty_request_instructions"),
            "engines": [(e["engine"], e["label"]) for e in results["engines"]
                        if e["engine"] in by],
            "by": by,
        }
    counts = load(counts_path(path))
    if counts is None:
        return None
    return {
        "source": "a run of their own (`scripts/bench.sh --edge-counts`, "
                  "`edge_instructions.yml`) on tables filled for it",
        "rows": counts["rows"], "requests": counts["requests"],
        "batch_requests": counts["batch_requests"],
        "ping": counts["empty_request_instructions"],
        "engines": [(e["engine"], e["label"]) for e in counts["engines"]],
        "by": {e["engine"]: {m["mode"]: {w["workload"]: w["instructions_per_request"]
                                         for w in m["workloads"]}
                             for m in e["modes"]}
               for e in counts["engines"]},
    }


def instructions(path):
    """The section of Wasm instructions per request, fresh and reused instances; empty when
    nothing was counted."""
    counts = instruction_counts(path)
    if counts is None:
        return []
    engines = counts["engines"]
    by = counts["by"]
    lines = [
        "### Wasm instructions per request: fresh instance / reused instance",
        "",
        "Wasm operators executed, counted by wasmtime's fuel on the metering host `edge-meter` "
        "(benches/edge-meter), which serves the same component with the same command line as "
        "`wasmtime serve`: one per operator, none for the structural ones (`block`, `loop`, "
        "`end`, ...), one for a `memory.copy` or `memory.fill` whatever its length (bytes moved "
        "are not in the count). A fresh instance's count includes its instantiation. They do "
        "not depend on the machine's load: means over "
        f"{counts['requests']} requests of a one-row call and {counts['batch_requests']} of a "
        f"batch on {counts['rows']:,}-row aged tables, from {counts['source']}. An empty "
        f"request (`GET /ping`, fresh instance): {fmt(counts['ping'])} instructions.",
        "",
        "| request | " + " | ".join(label for _, label in engines) + " |",
        "|---" * (len(engines) + 1) + "|",
    ]
    for workload in TITLES:
        if not all(workload in by[key].get("cold", {}) for key, _ in engines):
            continue
        cells = [f"{fmt(by[key]['cold'][workload])} / "
                 f"{fmt(by[key].get('warm', {}).get(workload))}" for key, _ in engines]
        lines.append(f"| {TITLES[workload]} | " + " | ".join(cells) + " |")
    return lines + ["", ""]


def ratios(results, table):
    names = labels(results)
    peers = [p for p in PEERS_FOR_RATIOS if p in table]
    if not peers:
        return []
    lines = ["| request | our best (p50) | " + " | ".join(f"÷ {names[p]} p50" for p in peers)
             + " | our best (rps, {} clients) | ".format(results["clients"])
             + " | ".join(f"÷ {names[p]} rps" for p in peers) + " |",
             "|---" * (2 * len(peers) + 3) + "|"]
    for workload in ONE_ROW:
        if not all(workload in table[e] for e in table):
            # A workload the run did not measure (an older results file).
            continue
        best = best_own(results, table, workload, "p50_us", True)
        best_rps = best_own(results, table, workload, "rps_n_clients", False)
        if best is None:
            continue
        p50 = figure(table[best][workload], "p50_us")
        rps = figure(table[best_rps][workload], "rps_n_clients")
        cells = [f"{p50 / figure(table[p][workload], 'p50_us'):.2f}×" for p in peers]
        rps_cells = [f"{rps / figure(table[p][workload], 'rps_n_clients'):.2f}×" for p in peers]
        lines.append(f"| {TITLES[workload]} | {names[best]} {fmt(p50)} µs | " + " | ".join(cells)
                     + f" | {names[best_rps]} {fmt(rps)} | " + " | ".join(rps_cells) + " |")
    return lines


# How benches/src/tables.rs orders the usernames (`USERNAME_ORDER`), as edge-bench records it.
USERNAMES_UNRELATED = "unrelated to the ids"


def usernames_caveat(results):
    """A warning when the run's usernames followed the ids (runs before edge-bench recorded
    their order): a name-ordered index then keeps a batch's names together."""
    if results.get("usernames") == USERNAMES_UNRELATED:
        return []
    return [
        "**This run's usernames followed the ids** (the ids zero-padded, before the benchmark's "
        "names were made unrelated to them): a name-ordered index (redb's, SQLite's) kept the "
        "names of a batch of neighbouring ids on a few pages, so their batch figures here are "
        "lower than with real names (on the IC, the same change made the SQLite engines' "
        "batches of 1,000 related rows 1.9 to 3.9 times dearer per row, "
        "[unique-names.md](unique-names.md#what-the-benchmarks-names-do)). The one-row calls "
        "are not affected.",
        "",
    ]


def section(path):
    results = load(path)
    if results is None:
        return []
    machine = results["machine"]
    floor = results["floor"]
    cold = by_mode(results, "cold")
    warm = by_mode(results, "warm")
    lines = [
        "## On an edge host: wasmtime serve, every engine on a file",
        "",
        f"The edge component (`wasi:http/proxy`, HTTP + JSON, src/edge) on the real "
        f"`{machine['wasmtime']}` (`wasmtime serve -S cli --dir data::/data`), one table of "
        f"{results['rows']:,} users per engine filled in a random order (aged) through "
        f"`insert_users`, every write durable before its answer. Wall-clock figures of one run "
        f"on one machine ({machine['cpu']}, {machine['cpus']} CPUs, Linux {machine['kernel']}): "
        f"medians of {results['runs']} runs with the lowest and highest run in brackets, "
        f"{results['requests']} requests per run of a one-row call and "
        f"{results['batch_requests']} of a batch; compare them within this section only. "
        "Beside them, the figures that do not depend on the machine's load: syncs and bytes "
        "per request. Written by `scripts/bench.sh` (benches/edge) into `edge_results.yml`.",
        "",
        f"The host's floor: an empty request (`GET /ping`: a fresh instance and HTTP, no storage) "
        f"p50 {spread({'f': floor['empty_request_us']}, 'f')} µs; one 4 KiB write and "
        f"`fdatasync` in the data directory, natively, p50 "
        f"{spread({'f': floor['bare_sync_us']}, 'f')} µs.",
        "",
    ] + usernames_caveat(results) + [
        "### Latency, a fresh instance per request (wasmtime serve's default): p50 µs",
        "",
    ] + matrix(results, cold, "p50_us", "", with_spread=True) + [
        "",
        "### Latency, p99 µs (fresh instances)",
        "",
    ] + matrix(results, cold, "p99_us", "") + [
        "",
        f"### Requests per second with {results['clients']} concurrent clients (fresh instances)",
        "",
        "Requests are serialized by the data file's lock (WASI has no file locks; src/edge/lock.rs): "
        "concurrency overlaps the instances' start and the HTTP work, not the storage.",
        "",
    ] + matrix(results, cold, "rps_n_clients", "") + [
        "",
        "### Requests per second with 1 client (fresh instances)",
        "",
    ] + matrix(results, cold, "rps_1_client", "") + [
        "",
        "### Latency with instances reused (`--max-instance-reuse-count`): p50 µs",
        "",
    ] + matrix(results, warm, "p50_us", "", with_spread=True) + [
        "",
        "### Syncs / bytes read / bytes written per request",
        "",
        "As the component counts them (`x-userstore-*` headers; the peers count through a "
        "wrapper of their file layer where they have one, – where they do not).",
        "",
    ] + counters(results, cold) + [
        "",
    ] + instructions(path) + [
        "### Our best engine against redb and SQLite WAL (fresh instances)",
        "",
        "Below 1× for latency and above 1× for requests per second: ours is ahead.",
        "",
    ] + ratios(results, cold) + [
        "",
        "| engine | fill (s) | bytes on disk per row |",
        "|---|---|---|",
    ] + [f"| {e['label']} | {fmt(e['fill_seconds'], 1)} | {fmt(e['bytes_on_disk_per_row'], 1)} |"
         for e in results["engines"]] + [""]
    return lines


README_START = "<!-- edge figures: written by scripts/bench.sh from edge_results.yml -->"
README_END = "<!-- /edge figures -->"
README_ROWS = ["insert_one", "get", "get_by_name", "update", "delete", "list_100",
               "batch_between_1000", "batch_appended_1000"]
# The README's columns: our three engines and the peers an edge developer would pick (SQLite's
# other journal modes are in docs/RESULTS.md).
README_ENGINES = ["page_tree", "btree", "stable_sqlite", "redb", "sqlite_delete", "sqlite_wal"]


def readme_table(path):
    """The README's edge table: p50 latency with a fresh instance per request, and the syncs
    of a one-row insert; empty when there are no edge results."""
    results = load(path)
    if results is None:
        return []
    cold = by_mode(results, "cold")
    names = labels(results)
    engines = [e["engine"] for e in results["engines"]
               if e["engine"] in cold and e["engine"] in README_ENGINES]
    lines = ["| p50 µs, " + f"{results['rows']:,} rows | "
             + " | ".join(names[e] for e in engines) + " |",
             "|---" * (len(engines) + 1) + "|"]
    for workload in README_ROWS:
        if all(workload in cold[e] for e in engines):
            lines.append(f"| {TITLES[workload]} | "
                         + " | ".join(fmt(figure(cold[e][workload], "p50_us")) for e in engines)
                         + " |")
    lines.append("| syncs per one-row insert | "
                 + " | ".join(f"{cold[e]['insert_one']['syncs_per_request']:g}" for e in engines)
                 + " |")
    counts = instruction_counts(path)
    if counts is not None:
        get = {key: counts["by"][key].get("cold", {}).get("get") for key in counts["by"]}
        lines.append("| Wasm instructions per get (fresh instance) | "
                     + " | ".join(fmt(get.get(e)) for e in engines) + " |")
    return lines


def write_readme(path, text):
    """`text` with its edge table replaced (unchanged when it has no edge markers)."""
    if README_START not in text:
        return text
    start = text.index(README_START) + len(README_START)
    end = text.index(README_END)
    return text[:start] + "\n" + "\n".join(readme_table(path)) + "\n" + text[end:]
