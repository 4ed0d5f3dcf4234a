"""The per-call sections of docs/RESULTS.md, from per_call_results.yml (written by bench-calls).

Every figure comes from the file; the fee rule, the round limit and the exchange rate are the
only constants (docs/metering.md §7.1 and §8).
"""
import yaml

import registry

# docs/metering.md §8: 1 trillion cycles = 1 XDR ~ 1.35 USD (mid-2025 rate).
USD_PER_TRILLION_CYCLES = 1.35

# docs/metering.md §7.1: instructions one canister executes per round, at most.
INSTRUCTIONS_PER_ROUND = 4_000_000_000

PROFILES = [
    (
        "current",
        "the IC's current meter",
        "the replica's deterministic memory tracker, in replica releases from "
        "release-2026-07-31 (`e3d101b2`) on and in PocketIC 16 and later: every 64 KiB page of "
        "heap or stable memory a message touches costs 80,000 instructions when first accessed "
        "and 80,000 more when first written (updates), reads and queries included",
    ),
    (
        "pocketic-13",
        "canbench's meter (PocketIC 13.0.0)",
        "the replica canbench 0.7's PocketIC 13.0.0 runs, what every published canbench figure "
        "was measured with: heap reads are free; a stable write pays 1,000 per 4 KiB page it "
        "dirties first; an update pays 1,000 per 4 KiB heap page it dirtied, after the message",
    ),
]

STATES = [
    ("aged", "aged tables (the same 1,000,000 users inserted in a random order, fixed seed)"),
    ("ascending", "ascending tables (the 1,000,000 users inserted in id order)"),
]

# (key, label, per row?)
HEADLINE_CALLS = [
    ("insert_between_1", "`insert_user`, a new id between existing ones"),
    ("insert_above_1", "`insert_user`, a new id above every id"),
    ("get_1", "`get_user`, query"),
    ("get_missing_1", "`get_user` of an absent id, query"),
    ("get_by_name_1", "`get_user_by_name`, query"),
    ("update_1", "`update_username` (the name moves in the index)"),
    ("update_same_name_1", "`update_username` to the name it has"),
    ("delete_1", "`delete_user`"),
    ("reinsert_1", "`insert_user` of the id `delete_user` removed, a new name"),
    ("insert_between_1000", "`insert_users`, 1,000 ids between 1,000 existing ones, per row"),
    ("insert_above_1000", "`insert_users`, 1,000 ids above every id, per row"),
    ("insert_scattered_1000", "`insert_users`, 1,000 ids scattered over the table, per row"),
    ("update_1000", "`update_users`, 1,000 consecutive users, per row"),
    ("delete_1000", "`delete_users`, 1,000 consecutive users, per row"),
    ("reinsert_1000", "`insert_users` of the 1,000 ids `delete_users` removed, new names, per row"),
    ("page_100", "`list_users`, 100 users, query"),
    ("page_10", "`list_users`, 10 users, query"),
    ("count", "`count_users`, query"),
]

ALL_CALLS = HEADLINE_CALLS + [
    ("get_1_replicated", "`get_user` called as an update"),
    ("insert_between_100", "`insert_users`, 100 ids between 100 existing ones, per row"),
    ("insert_above_100", "`insert_users`, 100 ids above every id, per row"),
    ("update_100", "`update_users`, 100 consecutive users, per row"),
    ("update_scattered_1000", "`update_users`, 1,000 users scattered over the table, per row"),
    ("delete_100", "`delete_users`, 100 consecutive users, per row"),
    ("reinsert_100", "`insert_users` of the 100 ids `delete_users` removed, new names, per row"),
]

TRACED_CALLS = [
    ("insert_between_1", "insert one user"),
    ("get_1", "get one user (query)"),
    ("get_by_name_1", "get one user by name (query)"),
    ("update_1", "rename one user"),
    ("delete_1", "delete one user"),
]

TOP = 6


def load(path):
    """The per-call results, or None if the file does not exist."""
    try:
        with open(path) as results:
            return yaml.safe_load(results)
    except FileNotFoundError:
        return None


def fmt(number):
    return "-" if number is None else f"{number:,.0f}"


def usd_per_million(cycles):
    return cycles * 1_000_000 / 1e12 * USD_PER_TRILLION_CYCLES


def labels():
    """(key, label, peer) of every configuration, in the registry's order."""
    peers = {engine["canister"] for engine in registry.engines() if engine.get("peer")}
    by_key = {}
    for engine in registry.engines():
        for configuration in engine["configurations"]:
            by_key[configuration["key"]] = engine["canister"] in peers
    return [(key, label, by_key[key]) for key, label in registry.configuration_labels()]


def headline_configurations(data, extra=()):
    """The traced configuration of every engine: its default, the one a user deploys."""
    keys = []
    for engine in registry.engines():
        traced = next((c for c in engine["configurations"] if c.get("traced")),
                      engine["configurations"][0])
        keys.append(traced["key"])
    names = dict((key, label) for key, label, _ in labels())
    return [(key, names[key]) for key in keys] + list(extra)


def calls_of(data, profile, state):
    return data["calls"].get(profile, {}).get(state, {})


def cell(entry, with_p99=True):
    if entry is None:
        return "-"
    spread = entry["instructions"]
    if with_p99 and spread["messages"] > 1:
        return f"{spread['mean']:,} ({spread['p99']:,})"
    return f"{spread['mean']:,}"


def table(data, profile, state, configurations, calls, with_p99=True):
    present = calls_of(data, profile, state)
    columns = [(key, label) for key, label in configurations if key in present]
    lines = ["| call | " + " | ".join(label for _, label in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for call, label in calls:
        cells = [cell(present[key].get(call), with_p99) for key, _ in columns]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def peer_ratios(data, profile, state):
    """Each of this crate's engines against each peer: ours ÷ the peer's mean, per call."""
    present = calls_of(data, profile, state)
    peers = [(key, label) for key, label, peer in labels() if peer and key in present]
    ours = [(key, label) for key, label in headline_configurations(data)
            if key in present and key not in dict(peers)]
    lines = []
    for peer, peer_label in peers:
        lines += [f"Against **{peer_label}**: our mean ÷ its mean (below 1: ours is cheaper).", "",
                  "| call | " + " | ".join(label for _, label in ours) + " |",
                  "|---|" + "---|" * len(ours)]
        for call, label in HEADLINE_CALLS:
            theirs = present[peer].get(call)
            cells = []
            for key, _ in ours:
                mine = present[key].get(call)
                if mine is None or theirs is None or theirs["instructions"]["mean"] == 0:
                    cells.append("-")
                else:
                    ratio = mine["instructions"]["mean"] / theirs["instructions"]["mean"]
                    cells.append(f"{ratio:.2f}×")
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def throughput_table(data, profile, state):
    present = calls_of(data, profile, state)
    columns = [(key, label) for key, label in headline_configurations(data) if key in present]
    lines = ["| call | " + " | ".join(label for _, label in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for call, label in HEADLINE_CALLS:
        cells = []
        for key, _ in columns:
            entry = present[key].get(call)
            if entry is None:
                cells.append("-")
            elif entry["mode"] == "query":
                cells.append("query")
            else:
                rows = entry["rows"]
                per_round = entry["calls_per_round"]
                cells.append(f"{per_round:,}" if rows == 1 else f"{per_round * rows:,} rows")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def cost_table(data, profile, state):
    present = calls_of(data, profile, state)
    columns = [(key, label) for key, label in headline_configurations(data) if key in present]
    lines = ["| call | " + " | ".join(label for _, label in columns) + " |",
             "|---|" + "---|" * len(columns)]
    for call, label in HEADLINE_CALLS:
        cells = []
        for key, _ in columns:
            entry = present[key].get(call)
            if entry is None:
                cells.append("-")
            elif entry["mode"] == "query":
                cells.append("free")
            else:
                cells.append(f"{entry['cycles'] / 1e6:,.2f}M (${usd_per_million(entry['cycles']):,.2f})")
        lines.append(f"| {label.replace(', per row', ', per message')} | " + " | ".join(cells) + " |")
    return lines


def storage_table(data):
    names = dict((key, label) for key, label, _ in labels())
    lines = ["| engine | aged: whole | aged: engine | ascending: whole | ascending: engine |",
             "|---|---|---|---|---|"]
    storage = data.get("storage", {})
    for key, label in names.items():
        aged = storage.get("aged", {}).get(key)
        ascending = storage.get("ascending", {}).get(key)
        if aged is None and ascending is None:
            continue
        def pair(entry):
            if entry is None:
                return ["-", "-"]
            return [f"{entry['stable_bytes_per_row']:.1f}", f"{entry['engine_bytes_per_row']:.1f}"]
        lines.append(f"| {label} | " + " | ".join(pair(aged) + pair(ascending)) + " |")
    return lines


def headline(data):
    """The report's opening: what one call costs on today's IC, on aged tables."""
    lines = [
        "## What a call costs on today's IC",
        "",
        "Each figure is what the real store canister (`target/canisters/*.wasm`: Candid decoding "
        "and encoding, authorization and the budget check included) costs per ingress message on "
        "a table of 1,000,000 users, measured by `bench-calls` on icrun under "
        f"**{PROFILES[0][1]}**: {PROFILES[0][2]} (docs/metering.md §6). Every configuration "
        "starts from its own table as its own `insert_users` built it (100 messages of 10,000 "
        "users, each with a unique 100-byte username in an order unrelated to the ids, as real "
        "names are: `benches/src/tables.rs`), its caches as those messages left them. Single-row "
        "calls go to ids drawn "
        "uniformly over the whole table (fixed seed), 200 separate messages each after 3 "
        "warm-ups; batches carry 1,000 consecutive rows from a start drawn the same way (or, "
        "scattered, 1,000 rows drawn each over the whole table), 5 messages, reported per row. "
        "Each cell: the **mean**, and in brackets the **p99**. Every message's breakdown, the "
        "other percentiles, the ascending tables and canbench's meter are in "
        "`per_call_results.yml` and further down.",
        "",
    ]
    extra = [(key, label) for key, label, peer in labels() if peer]
    configurations = headline_configurations(data)
    configurations += [c for c in extra if c not in configurations]
    lines += table(data, "current", "aged", configurations, HEADLINE_CALLS) + [""]
    lines += ["### Against the best peers, side by side", ""]
    lines += peer_ratios(data, "current", "aged")
    lines += [
        "### Calls per second, per canister",
        "",
        f"How many of each call one canister executes per round: {INSTRUCTIONS_PER_ROUND:,} "
        "instructions (the round limit of one execution thread, `MAX_INSTRUCTIONS_PER_ROUND`; "
        "docs/metering.md §7.1) divided by the mean. Application subnets make about one round "
        "per second, so this is also calls per second, an upper bound for one canister. Queries "
        "run outside rounds.",
        "",
    ]
    lines += throughput_table(data, "current", "aged") + [""]
    lines += [
        "### Cycles per call, and USD per million calls",
        "",
        "docs/metering.md §8, 13-node application subnet: 5,000,000 cycles per update plus 1 "
        "per instruction, 1,200,000 per ingress message plus 2,000 per byte of method name and "
        "argument (the signed envelope adds bytes not counted here); queries are free; "
        f"1 trillion cycles ~ {USD_PER_TRILLION_CYCLES} USD. Means of the IC's current meter, "
        "aged tables.",
        "",
    ]
    lines += cost_table(data, "current", "aged") + [""]
    lines += ["### Stable memory per row", "",
              "Bytes of stable memory per row of each filled table: the canister's whole stable "
              "memory, and the engine's own share (its virtual memories and region, without the "
              "memory manager's header, the settings and the unused rest of its buckets).", ""]
    lines += storage_table(data) + [""]
    return lines


README_CALLS = [
    ("insert_between_1", "insert one user"),
    ("get_1", "get one user (query)"),
    ("get_by_name_1", "get one user by name (query)"),
    ("update_1", "rename one user"),
    ("delete_1", "delete one user"),
    ("insert_between_1000", "insert 1,000 related users, per row"),
    ("insert_above_1000", "append 1,000 users, per row"),
    ("insert_scattered_1000", "insert 1,000 unrelated users, per row"),
]


def readme_table(data):
    """The README's table: means of the headline calls, the IC's current meter, aged tables,
    every engine's default configuration and the peers."""
    extra = [(key, label) for key, label, peer in labels() if peer]
    configurations = headline_configurations(data)
    configurations += [c for c in extra if c not in configurations]
    return table(data, "current", "aged", configurations, README_CALLS, with_p99=False)


def every_configuration(data):
    """Every configuration, both states, both profiles."""
    lines = ["## Every configuration", ""]
    configurations = [(key, label) for key, label, _ in labels()]
    for profile, name, _ in PROFILES:
        for state, description in STATES:
            if not calls_of(data, profile, state):
                continue
            lines += [f"### {name[0].upper() + name[1:]}, {description}", "",
                      "Mean (p99) instructions per message; per row for batches.", ""]
            lines += table(data, profile, state, configurations, ALL_CALLS) + [""]
    return lines


def charges_line(call):
    breakdown = call["breakdown"]
    api = sum(instructions for _, instructions in breakdown["system_api"].values())
    pages = ", ".join(f"{kind.replace('_', ' ')} {count:,} ({instructions:,})"
                      for kind, (count, instructions) in breakdown["pages"].items()) or "none"
    return (f"Wasm operators {breakdown['operators']:,}; system API {api:,}; "
            f"pages: {pages}.")


def where_section(data, flamegraph_dir):
    """For each traced engine's headline calls: the page map, the charges, the top functions."""
    lines = [
        "## Where the instructions go: page maps and traces",
        "",
        "From icrun's traces of the median message of each engine's headline calls, aged "
        "table, the IC's current meter: free hooks at every function entry and exit, so each "
        "trace adds up to the message's instructions exactly. The **page map** lists every "
        "64 KiB page the message touched: what it holds (a heap region: the stack, static data "
        "or the allocator's heap; or the stable-memory structure at that offset) and the "
        "function that first touched it, and first wrote it. `docs/floor.md` works out the "
        "fewest pages any engine must touch. *Self* counts a function's own instructions, "
        "*inclusive* adds its callees'. Flame graphs are linked.",
        "",
    ]
    names = dict((key, label) for key, label, _ in labels())
    traced = dict(TRACED_CALLS)
    for name, trace in sorted(data.get("traces", {}).items()):
        found = None
        for key in names:
            prefix = f"aged_{key}_"
            if name.startswith(prefix) and name[len(prefix):] in traced:
                found = (key, name[len(prefix):])
        if found is None:
            continue
        key, call = found
        entry = data["calls"][trace["profile"]]["aged"][key][call]
        lines += [
            f"### {names[key]}: {traced[call]}, {trace['instructions']:,} instructions",
            "",
            charges_line(entry) + f" [Flame graph]({flamegraph_dir}/{trace['flamegraph']}).",
            "",
            "| memory | page | holds | first touched by | first written by | instructions |",
            "|---|---|---|---|---|---|",
        ]
        for row in trace.get("page_map", []):
            written = f"`{row['written_by']}`" if row.get("written_by") else "-"
            lines.append(f"| {row['memory']} | {row['page']} | {row['holds']} | "
                         f"`{row['accessed_by']}` | {written} | {row['instructions']:,} |")
        lines += ["", "| top inclusive | instructions | top self | instructions |",
                  "|---|---|---|---|"]
        for inclusive, own in zip(trace["top_inclusive"][:TOP], trace["top_self"][:TOP]):
            lines.append(f"| `{inclusive['name']}` | {inclusive['inclusive_instructions']:,} | "
                         f"`{own['name']}` | {own['self_instructions']:,} |")
        lines.append("")
    return lines


def summary(data):
    """What the bench command prints: the headline table."""
    extra = [(key, label) for key, label, peer in labels() if peer]
    configurations = headline_configurations(data)
    configurations += [c for c in extra if c not in configurations]
    return table(data, "current", "aged", configurations, HEADLINE_CALLS)
