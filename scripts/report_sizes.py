"""The size sweep's part of docs/RESULTS.md (and its charts), from size_results.yml.

`bench-calls --sizes` (scripts/bench.sh --sizes) measures one configuration of every engine
on tables of 10,000 rows up to as many as it is given; this module turns its file into
tables (one per workload, rows by engine), charts (cost against table size, log-log, one line
per engine) and the seed's batch table beside the published figures it answers
(../shared/anchors.md A). Nothing is typed in but those published figures.
"""
from pathlib import Path

import registry
from report_calls import fmt, load

PROFILE_CURRENT = "current"
PROFILE_OLD = "pocketic-13"
# The table states of the sweep, in the order the report shows them.
STATES = ("aged", "ascending")

# The sweep's workloads, in the order the tables show them.
WORKLOADS = [
    ("get_1", "get_user (query)"),
    ("get_missing_1", "get_user of an absent id (query)"),
    ("insert_between_1", "insert_user between existing ids"),
    ("update_1", "update_username"),
    ("delete_1", "delete_user"),
    ("insert_between_1000", "insert_users of 1,000 consecutive new ids between existing ones, per row"),
    ("insert_above_1000", "insert_users of 1,000 ids above every id, per row"),
    ("insert_scattered_1000", "insert_users of 1,000 new ids scattered over the table, per row"),
    ("page_100", "list_users of 100 (query)"),
    ("count", "count_users (query)"),
    ("upgrade", "an upgrade to the same Wasm (pre_upgrade and post_upgrade, one message)"),
]

# A short reading of each workload's curves (issue 26: a reading of each curve), in words
# only: the figures are in the tables under it, and docs/scale.md reads each engine's.
READINGS = {
    "get_1": "The page tree is flat but for one step of one page, where its leaves no longer "
             "fit the state's page (about 1.06 million rows aged, docs/floor.md \"At every "
             "size\"): from there a lookup reads one index page. The B-tree climbs slowly, a "
             "node's page each time the tree gains a level. SQLite on stable memory and on "
             "the WASI polyfill climb most up to a few million rows and little after; the "
             "ic-sqlite-vfs peer peaks at 100,000 to 300,000 rows and falls back.",
    "get_missing_1": "The same curves as a get: an absent id costs the search that finds its "
                     "place, and the page tree's absent id the leaf's search to its end.",
    "insert_between_1": "The page tree steps as a get does, once, by the index pages of the id "
                        "and of the name, and is flat after. The B-tree and the stable-memory "
                        "SQLite climb with the tree's levels; SQLite (WASI) and the peer peak "
                        "between 300,000 and 3 million rows and fall back at the largest sizes "
                        "(docs/scale.md, engine by engine).",
    "update_1": "A rename looks up three keys (the id, the old name, the new one): the page "
                "tree's step is two or three index pages, the other engines climb as their "
                "inserts do.",
    "delete_1": "Two keys (the id and the name): the page tree steps by two index pages and is "
                "flat after; the others climb as their inserts do.",
    "insert_between_1000": "Per row, every engine climbs from the smallest table to about 3 "
                           "million rows: the batch's ids are consecutive, but their names, in "
                           "an order unrelated to the ids, land on more and more different "
                           "pages of the name index as the table grows, until each name has "
                           "a page of its own (docs/unique-names.md); past that the page tree "
                           "is flat and the others climb more slowly, with their trees' levels.",
    "insert_above_1000": "As the batch between ids: appending the ids is cheap in every "
                         "engine, and the names spread over the name index as the table grows.",
    "insert_scattered_1000": "The dearest batch per row and the steepest curve: scattered ids "
                             "touch a page of rows and a page of names per row once the table "
                             "has more leaves than the batch has rows.",
    "page_100": "100 consecutive users are one or two leaves in the page tree and a few nodes "
                "in the B-tree at any size: the page tree is flat but for its index step, the "
                "B-tree climbs slowly with its levels. "
                "The SQLite engines' cost moves with what their caches hold.",
    "count": "A stored count in every engine: flat in the B-tree, the page tree and the "
             "stable-memory SQLite; the two other SQLite engines read their count row "
             "through SQLite's cache, so it moves with the table without growing with it.",
    "upgrade": "Flat in every engine but SQLite on the WASI polyfill, whose close at "
               "pre_upgrade grows with its cache's heap until the cache is full (a million rows) "
               "and is flat after; the page tree's is highest where its one index page is "
               "decoded into the heap (up to about 1.06 million rows) and lower past it.",
}

# ../shared/anchors.md A, second table: the forum post's code on a real 1,000,000-row table,
# by rows really inserted in one transaction (cold, one query, the old meter), each column
# under the key of our configuration of the same engine and journal mode ("SQLite" is
# ic-rusqlite's default journal, PERSIST; "no journal" is OFF).
PUBLISHED_1M = {
    1: {"btree": 57_303, "sqlite_persist": 405_894, "sqlite_memory": 201_807,
        "sqlite_off": 147_692},
    10: {"btree": 627_561, "sqlite_persist": 534_083, "sqlite_memory": 329_996,
         "sqlite_off": 275_941},
    100: {"btree": 6_482_489, "sqlite_persist": 4_076_477, "sqlite_memory": 3_717_195,
          "sqlite_off": 3_633_727},
    1000: {"btree": 65_003_465, "sqlite_persist": 22_587_506, "sqlite_memory": 21_054_269,
           "sqlite_off": 20_714_592},
}


def labels():
    return dict(registry.configuration_labels())


def configurations(data, part="calls"):
    """The configurations measured in `part` of the file (its calls, or its `seed_batches`,
    which also holds those measured for that table alone: bench-calls'
    SEED_ONLY_CONFIGURATIONS), in the registry's order."""
    measured = set()
    for states in data.get(part, {}).values():
        for configs in states.values():
            measured.update(configs)
    return [key for key, _ in registry.configuration_labels() if key in measured]


def sizes_of(data, profile, state, config):
    return sorted(data.get("calls", {}).get(profile, {}).get(state, {}).get(config, {}))


def figure(data, profile, state, config, rows, workload):
    return (data.get("calls", {}).get(profile, {}).get(state, {}).get(config, {})
            .get(rows, {}).get(workload))


def all_sizes(data, profile, state):
    sizes = set()
    for config in configurations(data):
        sizes.update(sizes_of(data, profile, state, config))
    return sorted(sizes)


def workload_table(data, profile, state, workload, with_p99):
    label = labels()
    configs = configurations(data)
    lines = ["| rows | " + " | ".join(label[c] for c in configs) + " |",
             "|---:" + "|---:" * len(configs) + "|"]
    for rows in all_sizes(data, profile, state):
        cells = []
        for config in configs:
            spread = figure(data, profile, state, config, rows, workload)
            if spread is None:
                cells.append("not measured")
            elif with_p99:
                cells.append(f"{fmt(spread['mean'])} ({fmt(spread['p99'])})")
            else:
                cells.append(fmt(spread["mean"]))
        lines.append(f"| {rows:,} | " + " | ".join(cells) + " |")
    return lines + [""]


def growth_line(data, profile, state, workload):
    """How each engine's mean moves from the smallest to the largest size it was measured at."""
    label = labels()
    parts = []
    for config in configurations(data):
        sizes = [rows for rows in sizes_of(data, profile, state, config)
                 if figure(data, profile, state, config, rows, workload)]
        if len(sizes) < 2:
            continue
        first = figure(data, profile, state, config, sizes[0], workload)["mean"]
        last = figure(data, profile, state, config, sizes[-1], workload)["mean"]
        parts.append(f"{label[config]} {fmt(first)} → {fmt(last)} ({last / first:.2f}×, "
                     f"{sizes[0]:,} → {sizes[-1]:,} rows)")
    return "From the smallest table to the largest: " + "; ".join(parts) + "." if parts else ""


def tables_section(data):
    label = labels()
    lines = ["### Stable memory and the cost of filling, per row", "",
             "`engine bytes` counts the engine's own memories (docs/RESULTS.md, \"Storage\"); "
             "`stable bytes` the whole stable memory, whose fixed part (the memory manager's "
             "buckets, the settings) dominates small tables. `fill` is the instructions of the "
             "`insert_users` messages that built the table, per row, under the current meter "
             "(100 messages of random-order rows for the aged tables below 1,000,000 rows, "
             "10,000 rows a message from there).", ""]
    for state in STATES:
        states = data.get("tables", {}).get(state, {})
        configs = [c for c in configurations(data) if c in states]
        if not configs:
            continue
        lines += [f"**{state.capitalize()} tables**: engine bytes / stable bytes / fill "
                  "instructions, per row", "",
                  "| rows | " + " | ".join(label[c] for c in configs) + " |",
                  "|---:" + "|---:" * len(configs) + "|"]
        sizes = sorted({rows for c in configs for rows in states[c]})
        for rows in sizes:
            cells = []
            for config in configs:
                table = states[config].get(rows)
                cells.append("-" if table is None else
                             f"{table['engine_bytes_per_row']:.1f} / "
                             f"{table['stable_bytes_per_row']:.1f} / "
                             f"{fmt(table['fill_instructions_per_row'])}")
            lines.append(f"| {rows:,} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def seed_batches_section(data):
    batches = data.get("seed_batches", {})
    if not batches:
        return []
    label = labels()
    messages = sorted({(n, spread["messages"])
                       for states in batches.values() for configs in states.values()
                       for by_n in configs.values() for n, spread in by_n.items()})
    counted = "; ".join(f"n = {n:,}: {m}" for n, m in messages)
    lines = ["### The seed's batch table, under today's meter", "",
             "`insert_users` of n new users between existing ids, one message, on the "
             "1,000,000-row table: each cell the mean **per row** and, after the slash, **per "
             "message** (per row × n), under the IC's current meter and canbench's "
             "(`pocketic-13`). Messages measured, after unmeasured ones (`bench-calls`' plan): "
             f"{counted}. The published figures (the forum post's code on a real "
             "1,000,000-row table, `../shared/anchors.md` A) are per message of n rows, one "
             "query, cold, in the ascending table, under the old meter; beside them, ours under "
             "that meter on the ascending table, per message (per row × n).", ""]
    for profile, title in ((PROFILE_CURRENT, "current meter"), (PROFILE_OLD, "canbench's meter")):
        for state in STATES:
            configs = [c for c in configurations(data, "seed_batches")
                       if c in batches.get(profile, {}).get(state, {})]
            if not configs:
                continue
            ns = sorted({n for c in configs for n in batches[profile][state][c]})
            lines += [f"**{state.capitalize()} table, {title}**, per row / per message", "",
                      "| n | " + " | ".join(label[c] for c in configs) + " |",
                      "|---:" + "|---:" * len(configs) + "|"]
            for n in ns:
                cells = []
                for config in configs:
                    mean = batches[profile][state][config].get(n, {}).get("mean")
                    cells.append(fmt(None) if mean is None else f"{fmt(mean)} / {fmt(mean * n)}")
                lines.append(f"| {n:,} | " + " | ".join(cells) + " |")
            lines.append("")
    old = batches.get(PROFILE_OLD, {}).get("ascending", {})
    if old:
        lines += ["**Against the published figures** (per message of n rows, old meter)", "",
                  "| n | engine | published (cold, one query) | ours (ascending table, one message) |",
                  "|---:|---|---:|---:|"]
        for n, published in PUBLISHED_1M.items():
            for config, figure_published in published.items():
                ours = old.get(config, {}).get(n, {}).get("mean")
                lines.append(f"| {n:,} | {label[config]} | {fmt(figure_published)} | "
                             f"{fmt(None if ours is None else ours * n)} |")
        lines += ["", "The published SQLite is the WASI engine with ic-rusqlite's defaults in "
                  "three journal modes (its \"SQLite\" column is ic-rusqlite's default journal, "
                  "`PERSIST`, its \"no journal\" `OFF`); ours is the same engine in our "
                  "configurations of those modes (`sqlite_persist`, `sqlite_memory`, "
                  "`sqlite_off` in canisters/engines.toml: 4 KiB pages, an 8,192-page cache). "
                  "The sweep measures `MEMORY`; the other two are filled and measured for this "
                  "table alone. Ours is a whole message (Candid argument and reply, the "
                  "canister's checks), theirs the insert loop of a bench.", "",
                  "Our rows also do more than the published loop's (what each part costs is "
                  "not measured apart): the seed's tables had no index on the names "
                  "(`StableBTreeMap<u64, String>`; `users(id INTEGER PRIMARY KEY AUTOINCREMENT, "
                  "username TEXT NOT NULL)`), ours keep usernames unique, so every row is "
                  "written to a name index as well, where names in an order unrelated to the "
                  "ids land on pages of their own (docs/unique-names.md, \"What the "
                  "benchmark's names do\", measures what that order alone does to SQLite's "
                  "batches); and the seed's SQLite had a 500,000-page cache (up to 2 GB of 4 KiB "
                  "pages, more than its whole table), ours 8,192 pages (32 MiB).", ""]
    return lines


def charts(data, chart_dir, svg_chart):
    """One chart per workload and table state: mean against rows, current meter; and the
    aged tables' bytes and fill instructions per row. Returns (state, title, file name)."""
    label = labels()
    made = []
    Path(chart_dir).mkdir(parents=True, exist_ok=True)
    for state in STATES:
        suffix = "" if state == "aged" else f"_{state}"
        for workload, title in WORKLOADS:
            series = {}
            for config in configurations(data):
                points = []
                for rows in sizes_of(data, PROFILE_CURRENT, state, config):
                    spread = figure(data, PROFILE_CURRENT, state, config, rows, workload)
                    if spread and spread["mean"] > 0:
                        points.append((rows, spread["mean"]))
                if points:
                    series[label[config]] = points
            name = f"size_{workload}{suffix}.svg"
            if svg_chart(Path(chart_dir) / name,
                         f"{workload}: instructions by table size ({state}, current meter)",
                         series, "rows in the table", "instructions (mean)"):
                made.append((state, title, name))
    tables = data.get("tables", {}).get("aged", {})
    for field, title, y_label in (
            ("fill_instructions_per_row", "the fill's instructions per row",
             "instructions per row"),
            ("engine_bytes_per_row", "the engine's stable bytes per row", "bytes per row")):
        series = {}
        for config in configurations(data):
            points = [(rows, table[field]) for rows, table in sorted(tables.get(config, {}).items())
                      if table.get(field, 0) > 0]
            if points:
                series[label[config]] = points
        name = f"size_{field}.svg"
        if svg_chart(Path(chart_dir) / name, f"{title} by table size (aged)", series,
                     "rows in the table", y_label):
            made.append(("aged", title, name))
    return made


def section(path, chart_dir, chart_link, svg_chart):
    """The size sweep's lines of docs/RESULTS.md; no lines when the file is absent."""
    data = load(path)
    if not data:
        return []
    made = charts(data, chart_dir, svg_chart)
    chart_links = []
    for state in STATES:
        names = [name for shown, _, name in made if shown == state]
        if names:
            chart_links.append(f"{state}: " + ", ".join(f"[{name[5:-4]}]({chart_link}/{name})"
                                                        for name in names))
    label = labels()
    measured = []
    for state in STATES:
        ranges = []
        for config in configurations(data):
            sizes = sizes_of(data, PROFILE_CURRENT, state, config)
            if sizes:
                ranges.append(f"{label[config]} {sizes[0]:,} to {sizes[-1]:,}")
        if ranges:
            measured.append(f"{state}: " + ", ".join(ranges))
    lines = [
        "## How cost grows with the table: the size sweep",
        "",
        "From `size_results.yml` (`scripts/bench.sh --sizes`; `bench-calls --sizes`). One "
        "configuration of every engine (the one the per-call suite traces) and the "
        "ic-sqlite-vfs peer, on tables of exactly the size given (ids 0, 10, ..., unique "
        "100-byte names in an order unrelated to the ids), aged (filled in a random order) and ascending, each workload on a fresh copy "
        "of the filled table: 200 messages of each one-row call, 50 of each read of many "
        "rows, 3 of each 1,000-row batch after 1 unmeasured. Rows measured, "
        + "; ".join(measured) + ". The sizes an engine lacks were not measured: "
        "[docs/scale.md](scale.md) says why, and where each engine stops.",
        "",
        "Each cell: the mean, and in brackets the p99, under the IC's current meter "
        "(docs/metering.md §6). Charts (log-log, current meter), "
        + "; ".join(chart_links) + ".",
        "",
    ]
    for workload, title in WORKLOADS:
        lines += [f"### {workload}: {title}", ""]
        if workload in READINGS:
            lines += [READINGS[workload], ""]
        for state in STATES:
            lines += [f"{state.capitalize()} table, current meter, mean (p99):", ""]
            lines += workload_table(data, PROFILE_CURRENT, state, workload, True)
            growth = growth_line(data, PROFILE_CURRENT, state, workload)
            if growth:
                lines += [growth, ""]
        lines += ["Aged table, canbench's meter (`pocketic-13`), mean:", ""]
        lines += workload_table(data, PROFILE_OLD, "aged", workload, False)
    lines += tables_section(data)
    lines += seed_batches_section(data)
    return lines
