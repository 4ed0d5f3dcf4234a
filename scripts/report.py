#!/usr/bin/env python3
"""Writes docs/RESULTS.md (and its SVG charts) from canbench_results.yml.

Every figure in the report is computed here from the results file and the storage sizes the
snapshot tool measured; nothing is typed in by hand except the published figures of the forum
post we compare against (../shared/anchors.md, section A), which are quoted as published.

Usage: report.py RESULTS_YML STORAGE_TSV PER_CALL_YML OUT_MD CHART_DIR FLAMEGRAPH_LINK [README_IN [README_OUT]]
Prints the headline tables to standard output. The per-call sections come from PER_CALL_YML
(bench-calls, see report_calls.py); FLAMEGRAPH_LINK is where the flame graphs are, relative
to OUT_MD (`flamegraphs` for docs/flamegraphs/).
"""
import math
import re
import sys
from pathlib import Path

import yaml

import registry
import report_calls
import report_edge
import report_sizes
import report_upgrades

# The engine configurations of the canbench suites: the registry's (canisters/engines.toml),
# whose configuration keys are the suites' engine prefixes. This crate's engines are measured by
# canbench_results.yml's suite; a peer by its own bench canister's, whose results file is
# `canisters/<canister>/canbench_results.yml` ([`peer_results`]).
ENGINES = registry.configuration_labels()
ENGINE_LABEL = dict(ENGINES)
SQLITE_ENGINES = [key for key, _ in ENGINES if key != "btree"]
COLORS = ["#1b1b1b", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
          "#e377c2", "#17becf"]

WORKLOADS = [
    ("insert_middle", "Insert n new middle ids, one batch (one transaction)"),
    ("insert_append", "Insert n ids above every existing id, one batch"),
    ("insert_middle_autocommit", "Insert n middle ids, one transaction each"),
    ("get", "Get n random existing ids"),
    ("get_missing", "Look up n absent ids"),
    ("page", "One page of n consecutive users from the middle"),
    ("update", "Rename n random existing users, one batch (one transaction)"),
    ("delete", "Delete n random existing users, one batch (one transaction)"),
    ("count", "Count the rows"),
]
NAME = re.compile(
    r"^(?P<engine>btree|page_tree|ic_sqlite_vfs|sqlite_[a-z]+|stable_sqlite_[a-z]+)_(?:rows_(?P<rows>10k|100k)_)?"
    r"(?P<workload>insert_middle_autocommit|insert_middle|insert_append|get_missing|get|page|update|delete|count)"
    r"(?:_(?P<n>\d+))?$"
)

# docs/metering.md §8: an update costs 5,000,000 cycles plus 1 cycle per instruction (wasm32,
# 13-node subnet); 1 trillion cycles = 1 XDR ~ 1.35 USD.
UPDATE_BASE_CYCLES = 5_000_000
USD_PER_TRILLION_CYCLES = 1.35

# ../shared/anchors.md A, second table: the forum post's code on a real 1,000,000-row table,
# by rows really inserted (one transaction, cold).
PUBLISHED_1M = {
    1: {"btree": 57_303, "sqlite_persist": 405_894, "sqlite_memory": 201_807, "sqlite_off": 147_692},
    10: {"btree": 627_561, "sqlite_persist": 534_083, "sqlite_memory": 329_996, "sqlite_off": 275_941},
    100: {"btree": 6_482_489, "sqlite_persist": 4_076_477, "sqlite_memory": 3_717_195, "sqlite_off": 3_633_727},
    1000: {"btree": 65_003_465, "sqlite_persist": 22_587_506, "sqlite_memory": 21_054_269, "sqlite_off": 20_714_592},
}


def parse_results(path):
    """Reads canbench's results file: benches -> name -> {total|scopes: {scope: measurement}}."""
    with open(path) as results:
        document = yaml.safe_load(results) or {}
    benches = {}
    for name, bench in (document.get("benches") or {}).items():
        benches[name] = {
            "total": dict(bench.get("total") or {}),
            "scopes": {scope: dict(m) for scope, m in (bench.get("scopes") or {}).items()},
        }
    return benches


def peer_results(root):
    """The canbench results files of the registry's peers that have a suite of their own."""
    paths = []
    for engine in registry.engines():
        path = Path(root) / "canisters" / engine["canister"] / "canbench_results.yml"
        if engine.get("peer", False) and path.exists():
            paths.append(path)
    return paths


def index(benches):
    """(engine, rows, workload, n) -> {"cold": instr, "warm": instr, "total": instr}."""
    table = {}
    for name, bench in benches.items():
        match = NAME.match(name)
        if not match:
            continue
        n = int(match["n"]) if match["n"] else 1
        rows = {"10k": 10_000, "100k": 100_000, None: 1_000_000}[match["rows"]]
        scopes = bench["scopes"]
        table[(match["engine"], rows, match["workload"], n)] = {
            "cold": scopes.get("cold", {}).get("instructions"),
            "warm": scopes.get("warm", {}).get("instructions"),
            "total": bench["total"].get("instructions"),
        }
    return table


def fmt(number):
    return "-" if number is None else f"{number:,.0f}"


def ratio(value, base):
    return None if not value or not base else value / base


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def fit_fixed_and_marginal(points):
    """Least squares of instructions = fixed + marginal * n, on relative error (weights 1/y^2)."""
    sw = swx = swxx = swy = swxy = 0.0
    for n, y in points:
        w = 1.0 / (y * y)
        sw += w
        swx += w * n
        swxx += w * n * n
        swy += w * y
        swxy += w * n * y
    det = sw * swxx - swx * swx
    if det == 0:
        return None, None
    fixed = (swxx * swy - swx * swxy) / det
    marginal = (sw * swxy - swx * swy) / det
    return fixed, marginal


def ns_of(table, workload, rows=1_000_000):
    return sorted({n for (e, r, w, n) in table if w == workload and r == rows})


def workload_section(table, workload, title, phase):
    ns = ns_of(table, workload)
    if not ns:
        return []
    lines = [f"### {workload}: {title} ({phase})", ""]
    header = "| n | " + " | ".join(label for _, label in ENGINES) + " |"
    lines += [header, "|---" * (len(ENGINES) + 1) + "|"]
    multipliers = {engine: [] for engine in SQLITE_ENGINES}
    for n in ns:
        base = table.get(("btree", 1_000_000, workload, n), {}).get(phase)
        cells = [fmt(base)]
        for engine in SQLITE_ENGINES:
            value = table.get((engine, 1_000_000, workload, n), {}).get(phase)
            multiplier = ratio(value, base)
            multipliers[engine].append(multiplier)
            cells.append(fmt(value) + (f" ({multiplier:.2f}x)" if multiplier else ""))
        lines.append(f"| {n:,} | " + " | ".join(cells) + " |")
    averages = [geomean(multipliers[engine]) for engine in SQLITE_ENGINES]
    lines.append(
        "| multiplier, geometric mean | 1.00x | "
        + " | ".join("-" if a is None else f"{a:.2f}x" for a in averages)
        + " |"
    )
    return lines + [""]


def fits(table, workload, phase):
    result = {}
    for engine, _ in ENGINES:
        points = [
            (n, table[(engine, 1_000_000, workload, n)][phase])
            for n in ns_of(table, workload)
            if table.get((engine, 1_000_000, workload, n), {}).get(phase)
        ]
        if len(points) >= 2:
            result[engine] = fit_fixed_and_marginal(points)
    return result


def crossover(btree_fit, sqlite_fit):
    """Where SQLite's fitted cost is strictly below the B-tree's, as text: "1" (always),
    "from N", "up to N", or "never"."""
    (fixed_b, marginal_b), (fixed_s, marginal_s) = btree_fit, sqlite_fit

    def cheaper(n):
        return fixed_s + marginal_s * n < fixed_b + marginal_b * n

    if marginal_s == marginal_b:
        return "always" if fixed_s < fixed_b else "never"
    meet = (fixed_s - fixed_b) / (marginal_b - marginal_s)
    if marginal_s < marginal_b:
        first = max(1, math.floor(meet) + 1)
        return "always" if first == 1 and cheaper(1) else f"from {first:,}"
    last = math.ceil(meet) - 1
    return f"up to {last:,}" if last >= 1 and cheaper(1) else "never"


def fit_section(table):
    lines = [
        "## Fixed cost per transaction and marginal cost per row",
        "",
        "Fitted over n = 1 ... 10,000 by least squares on relative error "
        "(instructions = fixed + marginal x n). \"SQLite cheaper for n\" is where the fitted "
        "SQLite cost is below the fitted B-tree cost. A negative fixed cost means the "
        "cost per row grows with the batch size.",
        "",
    ]
    for workload in ("insert_middle", "insert_append"):
        for phase in ("cold", "warm"):
            fitted = fits(table, workload, phase)
            if "btree" not in fitted:
                continue
            lines += [f"### {workload} ({phase})", "",
                      "| engine | fixed per transaction | marginal per row | SQLite cheaper for n |",
                      "|---|---|---|---|"]
            for engine, label in ENGINES:
                if engine not in fitted:
                    continue
                fixed, marginal = fitted[engine]
                wins = "" if engine == "btree" else crossover(fitted["btree"], fitted[engine])
                lines.append(f"| {label} | {fmt(fixed)} | {fmt(marginal)} | {wins} |")
            lines.append("")
    return lines


def published_section(table):
    lines = [
        "## Against the published forum figures (1,000,000-row table, cold, one transaction)",
        "",
        "Published: the forum post's code re-run on a real 1M-row table, by rows really inserted "
        "(`../shared/anchors.md` A). Ours: `insert_middle_<n>`, scope `cold` (first call after "
        "install, statement preparation included), the same shape: u64 ids, 100-byte usernames, "
        "new ids between existing ones.",
        "",
        "| rows inserted | engine | published | ours | ours / published |",
        "|---|---|---|---|---|",
    ]
    for n, published in PUBLISHED_1M.items():
        for engine, figure in published.items():
            ours = table.get((engine, 1_000_000, "insert_middle", n), {}).get("cold")
            r = ratio(ours, figure)
            lines.append(
                f"| {n:,} | {ENGINE_LABEL[engine]} | {fmt(figure)} | {fmt(ours)} | "
                + ("-" if r is None else f"{r:.2f}") + " |"
            )
    return lines + [""]


def cost_section(table, storage):
    lines = [
        "## Cycles and USD per 1,000 operations",
        "",
        "docs/metering.md §8: an update costs 5,000,000 cycles plus one per instruction (13-node "
        "subnet), 1 trillion cycles ~ 1.35 USD. \"Batched\" is one update of 1,000 rows "
        "(`insert_middle_1000`, warm); \"one per call\" is 1,000 updates of one row "
        "(`insert_middle_autocommit_1`, warm). Queries are free. Not included: ingress bytes and "
        "the heap dirty-page charge of updates (1,000 instructions per dirtied 4 KiB page), which "
        "`performance_counter` does not see, and (for the warm figures used here) the stable-memory "
        "dirty-page charge a separate message pays again (see the introduction).",
        "",
        "| engine | batched: cycles | batched: USD | one per call: cycles | one per call: USD |",
        "|---|---|---|---|---|",
    ]
    for engine, label in ENGINES:
        batch = table.get((engine, 1_000_000, "insert_middle", 1000), {}).get("warm")
        single = table.get((engine, 1_000_000, "insert_middle_autocommit", 1), {}).get("warm")
        if batch is None or single is None:
            continue
        batched = UPDATE_BASE_CYCLES + batch
        per_call = 1000 * (UPDATE_BASE_CYCLES + single)
        lines.append(
            f"| {label} | {fmt(batched)} | {batched / 1e12 * USD_PER_TRILLION_CYCLES:.6f} | "
            f"{fmt(per_call)} | {per_call / 1e12 * USD_PER_TRILLION_CYCLES:.6f} |"
        )
    lines.append("")
    if storage:
        lines += ["## Stable memory per row", "",
                  "Bytes of the engine's virtual memory (the B-tree's, the SQLite database file's, or the "
                  "stable-memory SQLite engine's: its 4 KiB header and the database file) "
                  "divided by its rows, measured on the preloaded tables.", "",
                  "| engine | table rows | bytes | bytes per row |", "|---|---|---|---|"]
        for engine, rows, size in storage:
            lines.append(f"| {engine} | {rows:,} | {size:,} | {size / rows:.1f} |")
        lines.append("")
    return lines


def which_engine_section(table):
    lines = ["## Which engine when (derived from the warm figures above)", ""]
    for workload, title in WORKLOADS:
        ns = ns_of(table, workload)
        verdicts = []
        for n in ns:
            btree = table.get(("btree", 1_000_000, workload, n), {}).get("warm")
            sqlite = {e: table.get((e, 1_000_000, workload, n), {}).get("warm") for e in SQLITE_ENGINES}
            sqlite = {e: v for e, v in sqlite.items() if v is not None}
            if btree is None or not sqlite:
                continue
            best = min(sqlite.values())
            if btree <= best:
                winner = "B-tree"
            else:
                winner = " / ".join(ENGINE_LABEL[e] for e, v in sqlite.items() if v == best)
            factor = max(btree, best) / min(btree, best)
            size = "" if workload == "count" else f"n = {n:,}: "
            verdicts.append(f"{size}{winner} ({factor:.1f}x cheaper)")
        if verdicts:
            lines.append(f"- **{workload}** ({title.lower()}): " + "; ".join(verdicts) + ".")
    return lines + [""]


def svg_chart(path, title, series, x_label, y_label):
    """A log-log line chart of {label: [(x, y)]} as a standalone SVG."""
    width, height, left, right, top, bottom = 760, 460, 90, 190, 40, 60
    points = [p for values in series.values() for p in values]
    if not points:
        return False
    xs = [math.log10(x) for x, _ in points]
    ys = [math.log10(y) for _, y in points]
    x0, x1 = math.floor(min(xs)), math.ceil(max(xs)) or 1
    y0, y1 = math.floor(min(ys)), math.ceil(max(ys))
    x1, y1 = max(x1, x0 + 1), max(y1, y0 + 1)

    def px(x):
        return left + (math.log10(x) - x0) / (x1 - x0) * (width - left - right)

    def py(y):
        return height - bottom - (math.log10(y) - y0) / (y1 - y0) * (height - top - bottom)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>']
    for e in range(x0, x1 + 1):
        x = left + (e - x0) / (x1 - x0) * (width - left - right)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{height - bottom}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{height - bottom + 18}" text-anchor="middle">{10 ** e:,}</text>')
    for e in range(y0, y1 + 1):
        y = height - bottom - (e - y0) / (y1 - y0) * (height - top - bottom)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">1e{e}</text>')
    out.append(f'<text x="{(left + width - right) / 2}" y="{height - 15}" text-anchor="middle">{x_label}</text>')
    out.append(f'<text x="18" y="{(top + height - bottom) / 2}" text-anchor="middle" '
               f'transform="rotate(-90 18 {(top + height - bottom) / 2})">{y_label}</text>')
    for i, (label, values) in enumerate(series.items()):
        color = COLORS[i % len(COLORS)]
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in sorted(values))
        out.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"/>')
        for x, y in values:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>')
        ly = top + 10 + i * 18
        out.append(f'<line x1="{width - right + 15}" y1="{ly}" x2="{width - right + 35}" y2="{ly}" stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{width - right + 40}" y="{ly + 4}">{label}</text>')
    out.append("</svg>")
    Path(path).write_text("\n".join(out) + "\n")
    return True


def non_empty(series):
    """The series that have points (an engine a suite does not measure has none)."""
    return {label: points for label, points in series.items() if points}


def charts(table, chart_dir):
    chart_dir = Path(chart_dir)
    chart_dir.mkdir(parents=True, exist_ok=True)
    made = []
    for workload in ("insert_middle", "insert_append"):
        for phase in ("cold", "warm"):
            series = non_empty({
                label: [(n, table[(e, 1_000_000, workload, n)][phase])
                        for n in ns_of(table, workload)
                        if table.get((e, 1_000_000, workload, n), {}).get(phase)]
                for e, label in ENGINES
            })
            name = f"{workload}_{phase}.svg"
            if svg_chart(chart_dir / name, f"{workload}, {phase}: instructions by batch size",
                         series, "rows in the batch (n)", "instructions"):
                made.append((f"{workload} ({phase})", name))
    for workload, n in (("insert_middle", 1), ("get", 1), ("page", 100)):
        series = non_empty({
            label: [(rows, table[(e, rows, workload, n)]["warm"])
                    for rows in (10_000, 100_000, 1_000_000)
                    if table.get((e, rows, workload, n), {}).get("warm")]
            for e, label in ENGINES
        })
        name = f"table_size_{workload}_{n}.svg"
        if svg_chart(chart_dir / name, f"{workload} n={n}, warm: instructions by table size",
                     series, "rows in the table", "instructions"):
            made.append((f"{workload} n={n} by table size (warm)", name))
    return made


def table_size_section(table):
    lines = ["## Instructions by table size (warm)", "",
             "| workload | engine | 10,000 rows | 100,000 rows | 1,000,000 rows |", "|---|---|---|---|---|"]
    for workload, n in (("insert_middle", 1), ("get", 1), ("page", 100)):
        for engine, label in ENGINES:
            cells = [fmt(table.get((engine, rows, workload, n), {}).get("warm"))
                     for rows in (10_000, 100_000, 1_000_000)]
            lines.append(f"| {workload} n={n} | {label} | " + " | ".join(cells) + " |")
    return lines + [""]


def headline(table):
    lines = ["| per operation, 1M rows, warm | " + " | ".join(l for _, l in ENGINES) + " |",
             "|---" * (len(ENGINES) + 1) + "|"]
    for workload, n, label in (("insert_middle", 1, "insert 1 row (one transaction)"),
                               ("insert_middle", 10000, "insert, per row of a 10,000-row batch"),
                               ("insert_append", 10000, "append, per row of a 10,000-row batch"),
                               ("get", 1000, "get, per row"),
                               ("page", 10000, "page, per row of 10,000")):
        cells = []
        for engine, _ in ENGINES:
            value = table.get((engine, 1_000_000, workload, n), {}).get("warm")
            cells.append("-" if value is None else f"{value / n:,.0f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def read_storage(path):
    """The storage figures scripts/bench.sh writes from the canbench suites' preloaded tables
    (engine, rows, bytes; a line each, tab-separated). A missing file stops the report: it
    would otherwise leave out its "Stable memory per row" section without a word."""
    if not Path(path).is_file():
        sys.exit(f"{path}: no storage figures (scripts/bench.sh writes them); the report needs them")
    rows = []
    for line in Path(path).read_text().splitlines():
        engine, table_rows, size = line.split("\t")
        rows.append((engine, int(table_rows), int(size)))
    return rows


README_START = "<!-- figures: written by scripts/bench.sh from per_call_results.yml -->"
README_END = "<!-- /figures -->"


def write_readme_figures(per_call, readme_in, readme_out, edge_results=None):
    """Puts the README's tables of figures between their markers."""
    text = Path(readme_in).read_text()
    start, end = text.index(README_START) + len(README_START), text.index(README_END)
    figures = "\n".join(report_calls.readme_table(per_call))
    text = text[:start] + "\n" + figures + "\n" + text[end:]
    if edge_results is not None:
        text = report_edge.write_readme(edge_results, text)
    Path(readme_out).write_text(text)


def main():
    results, storage_path, per_call_path, out_md, chart_dir, flamegraphs = sys.argv[1:7]
    readme = sys.argv[7:9]
    benches = parse_results(results)
    for path in peer_results(Path(results).resolve().parent):
        benches.update(parse_results(path))
    table = index(benches)
    if not table:
        sys.exit(f"{results}: no benches found")
    per_call = report_calls.load(per_call_path)
    made = charts(table, chart_dir)
    rel = Path(chart_dir).relative_to(Path(out_md).parent)
    lines = [
        "# Benchmark results",
        "",
        "Generated by `scripts/bench.sh` from `per_call_results.yml` and `canbench_results.yml`: "
        "do not edit by hand. IC instructions (docs/metering.md), lower is better.",
        "",
    ]
    if per_call:
        lines += report_calls.headline(per_call)
        lines += report_calls.where_section(per_call, flamegraphs)
        lines += report_calls.every_configuration(per_call)
    # The edge benchmark's file sits beside the per-call results (absent: no edge part).
    edge_results = Path(per_call_path).parent / "edge_results.yml"
    lines += report_edge.section(edge_results)
    # The size sweep's file sits there too (absent: no size part).
    size_results = Path(per_call_path).parent / "size_results.yml"
    lines += report_sizes.section(size_results, chart_dir, rel, svg_chart)
    # And the upgrade traces' (absent: no upgrade part).
    upgrade_results = Path(per_call_path).parent / "upgrade_results.yml"
    lines += report_upgrades.section(upgrade_results, flamegraphs)
    lines += [
        "## The engines alone: the canbench suite",
        "",
        "IC instructions as canbench reports them (metering `pocketic-13`). Every bench "
        "runs its workload three times in one query: `cold` (the first call after install: "
        "empty caches, statements not yet prepared: what canbench shows by default), a warm-up, "
        "and `warm` (the steady state of a long-lived canister). Tables of 1,000,000 rows "
        "(ids 0, 10, ..., 9,999,990, unique 100-byte usernames in an order unrelated to the ids) "
        "unless noted. SQLite runs with the "
        "canisters' default configuration (4 KiB pages, 8,192-page cache, synchronous OFF, "
        "exclusive locking) and the journal mode named. With exclusive locking a connection keeps "
        "its journal file open once it has used it, so in the rollback-journal modes the cold "
        "phase also pays for opening that file on the canister's file system. The three phases run "
        "in one query, so the warm phase does not pay again for stable-memory pages the earlier "
        "phases wrote (1,000 instructions per newly dirtied 4 KiB page and message, "
        "docs/metering.md §6); a separate update message does. The ic-sqlite-vfs peer runs the "
        "same benches in a bench canister of its own (`canisters/ic-sqlite-vfs/canbench.yml`, "
        "its results beside it), since its SQLite cannot share a Wasm with rusqlite's: on the "
        "1,000,000-row table alone (the size sweep above measures it at every size), in the "
        "same run.",
        "",
        "### Headline",
        "",
    ] + headline(table) + [""]
    lines += published_section(table)
    lines += ["## Per workload", "",
              "Each cell: instructions, and in brackets the multiplier against the B-tree "
              "(below 1: SQLite is cheaper). The last row of each table is the section average "
              "(geometric mean of the multipliers).", ""]
    for workload, title in WORKLOADS:
        for phase in ("cold", "warm"):
            lines += workload_section(table, workload, title, phase)
    lines += fit_section(table)
    lines += table_size_section(table)
    lines += cost_section(table, read_storage(storage_path))
    lines += which_engine_section(table)
    lines += ["## Charts", "", "Log-log; engines with equal figures draw over one another.", ""]
    lines += [f"- [{title}]({rel}/{name})" for title, name in made] + [""]
    Path(out_md).write_text("\n".join(lines))
    if per_call and readme:
        # README.md and where to write it (the same file, or a copy to compare).
        write_readme_figures(per_call, readme[0], readme[-1], edge_results)
    if per_call:
        print("\n".join(report_calls.summary(per_call)))
        print()
    print("\n".join(headline(table)))


if __name__ == "__main__":
    main()
