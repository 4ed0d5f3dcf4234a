#!/usr/bin/env python3
"""docs/node-cache.md: the ic-stable-structures node cache (a B-tree canister built against
ic-stable-structures' main) beside this crate's engines, from bench-calls' results.

    python3 scripts/report_node_cache.py <per_call_results.yml> <pinned commit> SLOTS=<results.yml> ...

Written by scripts/node_cache_peer.sh; every figure comes from the files.
"""
import sys

import report_calls
from report_calls import HEADLINE_CALLS, PROFILES, fmt

# The size ic-stable-structures' documentation recommends (DEFAULT_NODE_CACHE_NUM_SLOTS, the
# default of BTreeMap::init at the pinned commit).
RECOMMENDED = 16

# Page charges named as the breakdown names them, in the order a reader compares them.
PAGE_FIELDS = ["heap_64k_accessed", "heap_64k_written", "stable_64k_accessed", "stable_64k_written"]


def peer_calls(results, profile, state):
    """The node-cache canister's calls, measured as the `btree` configuration."""
    return results["calls"].get(profile, {}).get(state, {}).get("btree", {})


def mean(entry):
    return None if entry is None else entry["instructions"]["mean"]


def best_per_call(peers, profile, state, call):
    """(slots, entry) of the cheapest size measured for `call`, or None."""
    found = [(mean(peer_calls(peers[n], profile, state).get(call)), n) for n in peers]
    found = [(m, n) for m, n in found if m is not None]
    if not found:
        return None
    _, slots = min(found)
    return slots, peer_calls(peers[slots], profile, state)[call]


def sizes_table(ours, peers, profile, state):
    """Mean (p99) of the node-cache canister at every size, beside our B-tree on 0.7.2."""
    sizes = sorted(peers)
    lines = ["| call | B-tree (0.7.2, ours) | " +
             " | ".join(f"node cache, {n} slots" for n in sizes) + " |",
             "|---|---|" + "---|" * len(sizes)]
    present = report_calls.calls_of(ours, profile, state).get("btree", {})
    for call, label in HEADLINE_CALLS:
        cells = [report_calls.cell(present.get(call))]
        cells += [report_calls.cell(peer_calls(peers[n], profile, state).get(call)) for n in sizes]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def our_engines(ours, profile, state):
    """(key, label) of our engines' default configurations present in the results."""
    present = report_calls.calls_of(ours, profile, state)
    peers = {key for key, _, peer in report_calls.labels() if peer}
    return [(key, label) for key, label in report_calls.headline_configurations(ours)
            if key in present and key not in peers]


def ratio_table(ours, peer_entry, profile, state, size_column=False):
    """Each of our engines' default configuration: our mean ÷ the node cache's mean, where
    `peer_entry(call)` gives the node cache's (slots, entry) for a call."""
    present = report_calls.calls_of(ours, profile, state)
    engines = our_engines(ours, profile, state)
    head = "| call | " + ("slots | " if size_column else "")
    lines = [head + " | ".join(label for _, label in engines) + " |",
             "|---|" + ("---|" if size_column else "") + "---|" * len(engines)]
    for call, label in HEADLINE_CALLS:
        found = peer_entry(call)
        peer = mean(found[1]) if found else None
        cells = [str(found[0]) if found else "-"] if size_column else []
        for key, _ in engines:
            mine = mean(present[key].get(call))
            cells.append("-" if mine is None or not peer else f"{mine / peer:.2f}×")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines


def pages(entry):
    found = entry["breakdown"].get("pages", {})
    return " / ".join(str(found.get(field, [0, 0])[0]) for field in PAGE_FIELDS)


def ahead_table(ours, peers, profile, state):
    """Where the node cache, at its best size for the call, is cheaper than our B-tree (the
    same map on 0.7.2, without the cache) or than our cheapest engine: the median messages'
    charges side by side, which show what the cache saves and what it costs."""
    present = report_calls.calls_of(ours, profile, state)
    engines = our_engines(ours, profile, state)
    names = dict(engines)
    lines = ["| call | node cache: slots, mean, operators, pages | ours: engine, mean, operators, "
             "pages |", "|---|---|---|"]
    for call, label in HEADLINE_CALLS:
        found = best_per_call(peers, profile, state, call)
        if found is None:
            continue
        slots, peer = found
        candidates = sorted((mean(present[key][call]), key) for key, _ in engines
                            if present[key].get(call) is not None)
        compared = {key for _, key in candidates[:1]} | ({"btree"} & set(names))
        for best, key in candidates:
            if key not in compared or mean(peer) >= best:
                continue
            mine = present[key][call]
            lines.append(
                f"| {label} | {slots}, {fmt(mean(peer))}, {fmt(peer['breakdown']['operators'])}, "
                f"{pages(peer)} | {names[key]}, {fmt(best)}, {fmt(mine['breakdown']['operators'])}, "
                f"{pages(mine)} |")
    if len(lines) == 2:
        lines.append("| (none: the B-tree and our cheapest engine are cheaper on every call) | | |")
    return lines


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    ours = report_calls.load(argv[0])
    pin = argv[1]
    peers = {}
    for pair in argv[2:]:
        slots, path = pair.split("=", 1)
        peers[int(slots)] = report_calls.load(path)
    lines = [
        "# The ic-stable-structures node cache beside our engines",
        "",
        "Generated by `scripts/node_cache_peer.sh <stable-structures git dir>` "
        "(scripts/report_node_cache.py); do not edit.",
        "",
        "ic-stable-structures' `BTreeMap` caches deserialized nodes in the heap since #426 "
        "(2026-04-07), on its main branch only: 0.7.2, the release on crates.io that the "
        f"library uses, has no node cache. The B-tree canister was built against main at `{pin}` "
        "with `StableBTreeMap::init(memory).with_node_cache(slots)`, nothing else changed, and "
        "measured by bench-calls exactly as `per_call_results.yml` measures the B-tree: the same "
        "tables (aged and ascending), the same 200 messages per single-row call, both meters. "
        f"{RECOMMENDED} slots is its documented default and recommendation; 0 turns the cache "
        "off and is the control (main's B-tree without the cache).",
        "",
        "It is not part of `scripts/bench.sh` or CI: the source is on GitHub only, and CI has no "
        "network but the package registries. The library never depends on it.",
        "",
    ]
    for profile, name, _ in PROFILES:
        for state in ("aged", "ascending"):
            if not any(peer_calls(p, profile, state) for p in peers.values()):
                continue
            lines += [f"## {name}, {state} tables", "",
                      "Mean (p99) of 200 messages, batches per row.", ""]
            lines += sizes_table(ours, peers, profile, state) + [""]
            if RECOMMENDED in peers:
                recommended = peer_calls(peers[RECOMMENDED], profile, state)
                lines += [f"Our engines ÷ the node cache at {RECOMMENDED} slots (the recommended "
                          "size); below 1: ours is cheaper.", ""]
                lines += ratio_table(
                    ours,
                    lambda call: (RECOMMENDED, recommended[call]) if call in recommended else None,
                    profile, state) + [""]
            lines += ["Our engines ÷ the node cache at its best size measured for each call "
                      "(`slots`); below 1: ours is cheaper.", ""]
            lines += ratio_table(
                ours, lambda call: best_per_call(peers, profile, state, call), profile, state,
                size_column=True) + [""]
            lines += ["Where the node cache, at its best size for the call, is cheaper than our "
                      "B-tree or our cheapest engine: the median messages' operators and 64 KiB "
                      "pages (heap accessed / written, stable accessed / written).", ""]
            lines += ahead_table(ours, peers, profile, state) + [""]
    print("\n".join(lines).rstrip())


if __name__ == "__main__":
    main(sys.argv[1:])
