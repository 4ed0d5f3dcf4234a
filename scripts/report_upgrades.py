"""The upgrade traces' part of docs/RESULTS.md, from upgrade_results.yml.

`bench-calls --upgrade-trace` upgrades every engine's aged table of a few sizes to the same
Wasm with the trace on, and records where the instructions went and which 64 KiB pages the
upgrade touched: the heap of the old instance (`pre_upgrade`), the heap of the fresh one
(`post_upgrade`) and stable memory. This module turns that file into one table a size and a
line per engine; the reading of it is docs/scale.md's.
"""
from collections import Counter

import registry
from report_calls import fmt, load

# The instances whose heap pages an upgrade touches, in the order they run.
INSTANCES = ("pre_upgrade", "post_upgrade")


def pages(upgrade, memory, instance=None):
    """(pages touched, of them written, their charge) in `memory` (and `instance`'s heap)."""
    groups = [group for group in upgrade.get("pages_by_holder", [])
              if group["memory"] == memory and group.get("instance") == instance]
    return (sum(group["pages"] for group in groups),
            sum(group["written"] for group in groups),
            sum(group["instructions"] for group in groups))


def first_toucher(upgrade, instance):
    """The function that touched first most of `instance`'s heap pages, and how many."""
    touchers = Counter(row["accessed_by"] for row in upgrade.get("page_map", [])
                       if row["memory"] == "heap" and row.get("instance") == instance)
    if not touchers:
        return None
    name, count = touchers.most_common(1)[0]
    return name, count


def pages_cell(counted):
    touched, written, charge = counted
    return f"{fmt(touched)} ({fmt(written)} written): {fmt(charge)}"


def toucher_cell(upgrade, instance):
    toucher = first_toucher(upgrade, instance)
    return "-" if toucher is None else f"`{toucher[0]}` ({toucher[1]})"


def size_table(upgrades, rows, label, flamegraph_dir):
    lines = ["| engine | upgrade | heap pages of `pre_upgrade` | heap pages of `post_upgrade` "
             "| stable pages | first toucher of most `pre_upgrade` heap pages | flame graph |",
             "|---|---:|---:|---:|---:|---|---|"]
    for config, label_text in label:
        upgrade = upgrades.get(config, {}).get(rows)
        if upgrade is None:
            continue
        cells = [label_text, fmt(upgrade["instructions"])]
        cells += [pages_cell(pages(upgrade, "heap", instance)) for instance in INSTANCES]
        cells.append(pages_cell(pages(upgrade, "stable")))
        cells.append(toucher_cell(upgrade, "pre_upgrade"))
        cells.append(f"[svg]({flamegraph_dir}/{upgrade['flamegraph']})")
        lines.append("| " + " | ".join(cells) + " |")
    return lines + [""]


def section(path, flamegraph_dir):
    """The upgrade traces' lines of docs/RESULTS.md; no lines when the file is absent."""
    data = load(path)
    if not data:
        return []
    upgrades = data.get("upgrades", {})
    label = [(key, text) for key, text in registry.configuration_labels() if key in upgrades]
    sizes = sorted({rows for by_rows in upgrades.values() for rows in by_rows})
    lines = [
        "## What an upgrade touches",
        "",
        f"From `upgrade_results.yml` (`bench-calls --upgrade-trace`): an upgrade to the same "
        f"Wasm of the {data.get('state', 'aged')} table of each size, `pre_upgrade` on the old "
        "instance and `post_upgrade` on a fresh one in one message, traced under the IC's "
        "current meter (docs/metering.md §6, §7). Each pages cell: the 64 KiB pages touched, "
        "how many of them were written, and what they cost; the first toucher is the function "
        "running when the page was first read or written. The table is read back through the "
        "API after each upgrade. [docs/scale.md](scale.md) reads these figures.",
        "",
    ]
    for rows in sizes:
        lines += [f"### {rows:,} rows", ""] + size_table(upgrades, rows, label, flamegraph_dir)
    return lines
