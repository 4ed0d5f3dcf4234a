"""The per-call sections of docs/RESULTS.md, from per_call_results.yml (written by bench-calls).

Every figure comes from the file; the fee rule and the exchange rate are the only constants
(docs/metering.md §8).
"""
import yaml

# docs/metering.md §8: 1 trillion cycles = 1 XDR ~ 1.35 USD (mid-2025 rate).
USD_PER_TRILLION_CYCLES = 1.35

PROFILES = [
    (
        "pocketic-13",
        "the replica canbench's PocketIC 13.0.0 runs (what every published canbench figure was "
        "measured with): heap reads are free; a stable write pays 1,000 per 4 KiB page it dirties "
        "first; an update pays 1,000 per 4 KiB heap page it dirtied, after the message",
    ),
    (
        "master-2026",
        "dfinity/ic master after PR #10789 (merged 2026-07-16; mainnet rollout not confirmed): "
        "every 64 KiB page of heap or stable memory a message touches costs 80,000 when first "
        "accessed and 80,000 more when first written (updates), reads included",
    ),
]

HEADLINE_CALLS = [
    ("insert_user_1", "`insert_user`, one new user"),
    ("insert_middle_1", "`insert_users`, 1 new user"),
    ("insert_middle_10", "`insert_users`, 10 new users"),
    ("insert_middle_100", "`insert_users`, 100 new users"),
    ("insert_middle_1000", "`insert_users`, 1,000 new users"),
    ("insert_append_1000", "`insert_users`, 1,000 users above every id"),
    ("update_1000", "`update_users`, 1,000 users"),
    ("delete_user_1", "`delete_user`, one user"),
    ("delete_1000", "`delete_users`, 1,000 users"),
    ("get_user_1_query", "`get_user` as a query"),
    ("get_user_1_replicated", "`get_user` as an update call"),
    ("get_missing_1_query", "`get_user` of an absent id, query"),
    ("page_100_query", "`list_users`, 100 users, query"),
    ("count_query", "`count_users`, query"),
]

TRACED_CALLS = [
    ("insert_user_1", "insert one user"),
    ("get_user_1_query", "get one user (query)"),
    ("delete_user_1", "delete one user"),
    ("count_query", "count the users (query)"),
]

TOP = 8


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


def engines_in(data, profile, engine_labels):
    present = data["calls"].get(profile, {})
    return [(key, label) for key, label in engine_labels if key in present]


def instructions_table(data, profile, engine_labels):
    engines = engines_in(data, profile, engine_labels)
    lines = ["| call | " + " | ".join(label for _, label in engines) + " |",
             "|---|" + "---|" * len(engines)]
    for call, label in HEADLINE_CALLS:
        cells = [fmt(data["calls"][profile][key].get(call, {}).get("instructions"))
                 for key, _ in engines]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def cost_table(data, profile, engine_labels):
    engines = engines_in(data, profile, engine_labels)
    lines = ["| call | " + " | ".join(label for _, label in engines) + " |",
             "|---|" + "---|" * len(engines)]
    for call, label in HEADLINE_CALLS:
        cells = []
        for key, _ in engines:
            entry = data["calls"][profile][key].get(call)
            if entry is None:
                cells.append("-")
            elif entry["mode"] == "query":
                cells.append("free")
            else:
                cells.append(f"{entry['cycles'] / 1e6:,.2f}M (${usd_per_million(entry['cycles']):,.2f})")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def headline(data, engine_labels):
    """The report's opening: what one call costs, under both metering profiles."""
    lines = [
        "## What your canister pays per call",
        "",
        "Each figure is one ingress message to the real store canister (`target/canisters/*.wasm`, "
        "Candid decoding and encoding, authorization and the budget check included) on a table of "
        "1,000,000 users, measured by `bench-calls` on icrun: 3 warm-up messages, then the median "
        "of 5 measured ones, each a separate message, so every message pays its own page charges "
        "again. Instructions include every charge the IC makes for the message, the ones after it "
        "too. Written to `per_call_results.yml` with each message's breakdown; the canbench "
        "figures further down measure the engines alone, inside one query.",
        "",
    ]
    for profile, description in PROFILES:
        if profile not in data["calls"]:
            continue
        lines += [f"### Instructions per call, metering `{profile}`", "",
                  f"Rules: {description} (docs/metering.md §6).", ""]
        lines += instructions_table(data, profile, engine_labels) + [""]
    for profile, _ in PROFILES:
        if profile not in data["calls"]:
            continue
        lines += [
            f"### Cycles per call, and USD per million calls, metering `{profile}`",
            "",
            "docs/metering.md §8, 13-node application subnet: 5,000,000 cycles per update plus 1 "
            "per instruction, 1,200,000 per ingress message plus 2,000 per byte of method name and "
            "argument (the signed envelope adds bytes not counted here); queries are free; "
            f"1 trillion cycles ~ {USD_PER_TRILLION_CYCLES} USD.",
            "",
        ]
        lines += cost_table(data, profile, engine_labels) + [""]
    return lines


def charges_line(call):
    breakdown = call["breakdown"]
    api = sum(instructions for _, instructions in breakdown["system_api"].values())
    pages = ", ".join(f"{kind.replace('_', ' ')} {count:,} ({instructions:,})"
                      for kind, (count, instructions) in breakdown["pages"].items()) or "none"
    return (f"Wasm operators {breakdown['operators']:,}; system API {api:,}; "
            f"pages: {pages}.")


def where_section(data, engine_labels, flamegraph_dir):
    """For each traced engine's headline calls: the charges and the top functions."""
    lines = [
        "## Where the instructions go",
        "",
        "From icrun's traces of the median message (metering `pocketic-13`): free hooks at every "
        "function entry and exit, so each trace adds up to the message's instructions exactly. "
        "*Self* counts a function's own instructions, *inclusive* adds its callees'. System API "
        "calls appear as `ic0::<name>` frames; the heap dirty-page charge after an update as "
        "its own frame. Flame graphs are linked.",
        "",
    ]
    labels = dict(engine_labels)
    for name, trace in sorted(data.get("traces", {}).items()):
        engine, call = next(((key, name[len(key) + 1:]) for key, _ in engine_labels
                             if name.startswith(key + "_") and name[len(key) + 1:] in dict(TRACED_CALLS)),
                            (None, None))
        if engine is None:
            continue
        entry = data["calls"][trace["profile"]][engine][call]
        lines += [
            f"### {labels[engine]}: {dict(TRACED_CALLS)[call]}, {trace['instructions']:,} instructions",
            "",
            charges_line(entry) + f" [Flame graph]({flamegraph_dir}/{trace['flamegraph']}).",
            "",
            "| top inclusive | instructions | top self | instructions |",
            "|---|---|---|---|",
        ]
        for inclusive, own in zip(trace["top_inclusive"][:TOP], trace["top_self"][:TOP]):
            lines.append(f"| `{inclusive['name']}` | {inclusive['inclusive_instructions']:,} | "
                         f"`{own['name']}` | {own['self_instructions']:,} |")
        lines.append("")
    return lines
