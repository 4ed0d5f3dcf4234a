"""Tests of report.py's parsing and arithmetic (run by scripts/test.sh)."""
import contextlib
import io
import tempfile
import unittest
from pathlib import Path

import yaml

import report
import report_calls
import report_edge
import report_node_cache
import report_sizes
import report_upgrades

RESULTS = """benches:
  btree_insert_middle_10:
    total:
      calls: 1
      instructions: 3000
      heap_increase: 0
      stable_memory_increase: 0
    scopes:
      cold:
        calls: 1
        instructions: 1200
        heap_increase: 0
        stable_memory_increase: 0
      warm:
        calls: 1
        instructions: 900
        heap_increase: 0
        stable_memory_increase: 0
  sqlite_wal_rows_10k_get_1:
    total:
      calls: 1
      instructions: 77
      heap_increase: 0
      stable_memory_increase: 0
    scopes: {}
version: 0.7.0
"""


class ParseTest(unittest.TestCase):
    def test_parses_totals_and_scopes_by_name(self):
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "results.yml"
            path.write_text(RESULTS)
            table = report.index(report.parse_results(path))
        self.assertEqual(table[("btree", 1_000_000, "insert_middle", 10)],
                         {"cold": 1200, "warm": 900, "total": 3000})
        self.assertEqual(table[("sqlite_wal", 10_000, "get", 1)]["total"], 77)
        self.assertIsNone(table[("sqlite_wal", 10_000, "get", 1)]["cold"])


class StorageTest(unittest.TestCase):
    def test_reads_every_line_of_the_storage_figures(self):
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "storage.tsv"
            path.write_text("btree\t10000\t3342336\npage-tree\t1000000\t284819456\n")
            self.assertEqual(report.read_storage(path),
                             [("btree", 10_000, 3_342_336), ("page-tree", 1_000_000, 284_819_456)])

    def test_a_missing_file_stops_the_report(self):
        with tempfile.TemporaryDirectory() as directory:
            missing = Path(directory) / "storage.tsv"
            with self.assertRaises(SystemExit) as stopped:
                report.read_storage(missing)
        self.assertIn("storage.tsv: no storage figures", str(stopped.exception))


class FitTest(unittest.TestCase):
    def test_recovers_an_exact_line(self):
        points = [(n, 150_000 + 20_000 * n) for n in (1, 10, 100, 1000, 10000)]
        fixed, marginal = report.fit_fixed_and_marginal(points)
        self.assertAlmostEqual(fixed, 150_000, delta=1e-3)
        self.assertAlmostEqual(marginal, 20_000, delta=1e-6)

    def test_crossover_is_where_the_lines_meet(self):
        btree = (0.0, 57_000.0)
        # 150,000 / 37,000 = 4.05...: SQLite is cheaper from 5 on.
        self.assertEqual(report.crossover(btree, (150_000.0, 20_000.0)), "from 5")
        # Meeting exactly at 3 is a tie, not a win: from 4.
        self.assertEqual(report.crossover((0.0, 10.0), (30.0, 0.0)), "from 4")
        self.assertEqual(report.crossover(btree, (150_000.0, 60_000.0)), "never")
        self.assertEqual(report.crossover((10.0, 5.0), (1.0, 1.0)), "always")
        # Cheaper fixed cost, dearer rows: SQLite wins for small batches only (meet at 9).
        self.assertEqual(report.crossover((100.0, 1.0), (10.0, 11.0)), "up to 8")


def spread(mean, p99, messages=200):
    return {"messages": messages, "mean": mean, "p50": mean, "p90": mean, "p99": p99, "max": p99}


PER_CALL = {
    "calls": {
        "current": {
            "aged": {
                "btree": {
                    "insert_between_1": {
                        "mode": "update", "method": "insert_user", "rows": 1,
                        "instructions": spread(300_000, 420_000), "argument_bytes": 150,
                        "cycles": 6_800_000, "calls_per_round": 13_333,
                        "breakdown": {"instructions": 300_000, "operators": 280_000,
                                      "system_api": {"msg_reply": [1, 500], "stable64_read": [3, 900]},
                                      "stable_bytes_read": 0, "stable_bytes_written": 0,
                                      "pages": {"heap_64k_accessed": [2, 160_000]}},
                    },
                    "count": {
                        "mode": "query", "method": "count_users", "rows": 1,
                        "instructions": spread(4_000, 4_000, 50), "argument_bytes": 6, "cycles": 0,
                        "calls_per_round": 0,
                        "breakdown": {"instructions": 4_000, "operators": 3_500,
                                      "system_api": {"msg_reply": [1, 500]},
                                      "stable_bytes_read": 0, "stable_bytes_written": 0, "pages": {}},
                    },
                },
                "ic_sqlite_vfs": {
                    "insert_between_1": {
                        "mode": "update", "method": "insert_user", "rows": 1,
                        "instructions": spread(600_000, 700_000), "argument_bytes": 150,
                        "cycles": 7_100_000, "calls_per_round": 6_666,
                        "breakdown": {"instructions": 600_000, "operators": 1, "system_api": {},
                                      "stable_bytes_read": 0, "stable_bytes_written": 0, "pages": {}},
                    },
                },
            }
        }
    },
    "storage": {"aged": {"btree": {"rows": 1_000_000, "stable_bytes": 150_000_000,
                                   "engine_bytes": 140_000_000, "stable_bytes_per_row": 150.0,
                                   "engine_bytes_per_row": 140.0}}},
    "traces": {
        "aged_btree_insert_between_1": {
            "profile": "current", "instructions": 300_000,
            "flamegraph": "aged_btree_insert_between_1.svg",
            "top_inclusive": [{"name": "insert", "self_instructions": 10, "inclusive_instructions": 57_000}],
            "top_self": [{"name": "cmp", "self_instructions": 60_000, "inclusive_instructions": 60_000}],
            "page_map": [{"memory": "heap", "page": 15, "holds": "stack",
                          "accessed_by": "ic0::msg_arg_data_copy", "written_by": None,
                          "instructions": 80_000}],
        }
    },
}


class PerCallTest(unittest.TestCase):
    def test_headline_shows_means_p99_cycles_throughput_and_peer_ratios(self):
        text = "\n".join(report_calls.headline(PER_CALL))
        self.assertIn("| `insert_user`, a new id between existing ones | 300,000 (420,000) |", text)
        self.assertIn("| `count_users`, query | 4,000 (4,000) |", text)
        # 6.8M cycles per call is 6.8 trillion per million calls: 6.8 × 1.35 USD.
        self.assertIn("6.80M ($9.18)", text)
        self.assertIn("| `count_users`, query | free |", text)
        self.assertIn("13,333", text)
        # The B-tree's insert is half the peer's.
        self.assertIn("| `insert_user`, a new id between existing ones | 0.50× |", text)
        self.assertIn("| B-tree | 150.0 | 140.0 | - | - |", text)
        self.assertNotIn("master-2026", text)

    def test_where_section_lists_page_maps_charges_and_functions(self):
        text = "\n".join(report_calls.where_section(PER_CALL, "flamegraphs"))
        self.assertIn("B-tree: insert one user, 300,000 instructions", text)
        self.assertIn("Wasm operators 280,000; system API 1,400; pages: heap 64k accessed 2 (160,000)", text)
        self.assertIn("[Flame graph](flamegraphs/aged_btree_insert_between_1.svg)", text)
        self.assertIn("| heap | 15 | stack | `ic0::msg_arg_data_copy` | - | 80,000 |", text)
        self.assertIn("| `insert` | 57,000 | `cmp` | 60,000 |", text)


def call(mean, operators=0, pages=None):
    """One single-row update of the given mean, operators and 64 KiB page counts."""
    return {"mode": "update", "method": "insert_user", "rows": 1,
            "instructions": spread(mean, mean), "argument_bytes": 150, "cycles": 0,
            "calls_per_round": 0,
            "breakdown": {"instructions": mean, "operators": operators, "system_api": {},
                          "stable_bytes_read": 0, "stable_bytes_written": 0,
                          "pages": {name: [count, count * 80_000]
                                    for name, count in (pages or {}).items()}}}


def node_cache(mean, operators, heap_accessed):
    return {"calls": {"current": {"aged": {"btree": {"insert_between_1": call(
        mean, operators, {"heap_64k_accessed": heap_accessed})}}}}}


class NodeCacheTest(unittest.TestCase):
    def test_ratios_use_the_recommended_and_the_best_size_and_show_where_it_is_ahead(self):
        ours = {"calls": {"current": {"aged": {"btree": {"insert_between_1": call(
            400_000, 90_000, {"heap_64k_accessed": 3})}}}}}
        peers = {0: node_cache(410_000, 95_000, 3), 16: node_cache(200_000, 20_000, 1)}
        with tempfile.TemporaryDirectory() as directory:
            paths = []
            for slots, data in [("ours", ours)] + list(peers.items()):
                path = Path(directory) / f"{slots}.yml"
                path.write_text(yaml.safe_dump(data))
                paths.append(str(path))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                report_node_cache.main([paths[0], "abc123", f"0={paths[1]}", f"16={paths[2]}"])
        text = out.getvalue()
        self.assertIn("| `insert_user`, a new id between existing ones | 400,000 (400,000) | "
                      "410,000 (410,000) | 200,000 (200,000) |", text)
        # Ours ÷ 16 slots, the recommended and here also the best size.
        self.assertIn("| `insert_user`, a new id between existing ones | 2.00× |", text)
        self.assertIn("| `insert_user`, a new id between existing ones | 16 | 2.00× |", text)
        self.assertIn("| `insert_user`, a new id between existing ones | 16, 200,000, 20,000, "
                      "1 / 0 / 0 / 0 | B-tree, 400,000, 90,000, 3 / 0 / 0 / 0 |", text)


class ReadmeTest(unittest.TestCase):
    def test_the_figures_go_between_the_markers_and_nothing_else_changes(self):
        with tempfile.TemporaryDirectory() as directory:
            readme = Path(directory) / "README.md"
            readme.write_text(f"before\n{report.README_START}\nold table\n{report.README_END}\nafter\n")
            report.write_readme_figures(PER_CALL, readme, readme)
            text = readme.read_text()
        self.assertNotIn("old table", text)
        self.assertTrue(text.startswith("before\n"))
        self.assertTrue(text.endswith(f"{report.README_END}\nafter\n"))
        self.assertIn("| insert one user | 300,000 | 600,000 |", text)


def _upgrade(instructions, heap_pre, heap_post, stable):
    """An upgrade trace whose page map has `heap_pre` and `heap_post` heap pages (the first of
    each written, by `save`; the rest read, by `dlfree` before the upgrade) and `stable` pages
    read."""
    def heap(instance, count, toucher):
        return [{"memory": "heap", "instance": instance, "page": page, "holds": "heap",
                 "accessed_by": "save" if page == 0 else toucher,
                 "written_by": "save" if page == 0 else None,
                 "instructions": 160_000 if page == 0 else 80_000} for page in range(count)]
    page_map = heap("pre_upgrade", heap_pre, "dlfree") + heap("post_upgrade", heap_post, "open")
    page_map += [{"memory": "stable", "page": page, "holds": "the engine's region",
                  "accessed_by": "open", "written_by": None, "instructions": 80_000}
                 for page in range(stable)]
    groups = []
    for row in page_map:
        key = (row["memory"], row.get("instance"), row["holds"])
        group = next((g for g in groups
                      if (g["memory"], g.get("instance"), g["holds"]) == key), None)
        if group is None:
            group = {"memory": row["memory"], "holds": row["holds"], "pages": 0, "written": 0,
                     "instructions": 0}
            if row.get("instance"):
                group["instance"] = row["instance"]
            groups.append(group)
        group["pages"] += 1
        group["written"] += row["written_by"] is not None
        group["instructions"] += row["instructions"]
    return {"pages_by_holder": groups, "profile": "current", "instructions": instructions,
            "flamegraph": f"upgrade_aged_x_{instructions}.svg", "top_inclusive": [],
            "top_self": [], "page_map": page_map}


class UpgradeSectionTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = Path(self.dir.name) / "upgrade_results.yml"

    def tearDown(self):
        self.dir.cleanup()

    def test_counts_each_instances_pages_and_names_the_commonest_first_toucher(self):
        data = {"state": "aged", "upgrades": {
            "page_tree": {10_000: _upgrade(5_000_000, 3, 3, 1)},
            "sqlite_memory": {10_000: _upgrade(19_000_000, 5, 1, 2),
                              1_000_000: _upgrade(182_000_000, 40, 1, 2)}}}
        self.path.write_text(yaml.safe_dump(data))
        text = "\n".join(report_upgrades.section(self.path, "flamegraphs"))
        self.assertIn("### 10,000 rows", text)
        self.assertIn("### 1,000,000 rows", text)
        # Page tree: 3 heap pages before (one written), 3 after, 1 stable page.
        self.assertIn("| Page tree | 5,000,000 | 3 (1 written): 320,000 | 3 (1 written): 320,000 "
                      "| 1 (0 written): 80,000 | `dlfree` (2) | "
                      "[svg](flamegraphs/upgrade_aged_x_5000000.svg) |", text)
        self.assertIn("| 182,000,000 | 40 (1 written): 3,280,000 |", text)
        self.assertIn("`dlfree` (39)", text)
        # The 1,000,000-row table lists only the engine traced at that size.
        million = text.split("### 1,000,000 rows")[1]
        self.assertNotIn("Page tree", million)

    def test_no_results_no_section(self):
        self.assertEqual(report_upgrades.section(Path(self.dir.name) / "absent.yml", "f"), [])



class SeedBatchTest(unittest.TestCase):
    @staticmethod
    def _spread(mean):
        return {"messages": 3, "mean": mean, "p50": mean, "p90": mean, "p99": mean, "max": mean}

    def test_a_configuration_measured_for_the_seed_alone_has_its_column_and_published_row(self):
        spread = self._spread
        data = {
            "calls": {"current": {"aged": {"btree": {1_000_000: {"get_1": spread(9)}}}}},
            "seed_batches": {"pocketic-13": {"ascending": {
                "btree": {1: spread(200_000), 10: spread(160_000)},
                "sqlite_persist": {1: spread(500_000), 10: spread(300_000)},
            }}},
        }
        text = "\n".join(report_sizes.seed_batches_section(data))
        # Its column, although the sweep's calls never measured it.
        self.assertIn("| n | B-tree | SQLite PERSIST |", text)
        self.assertIn("| 10 | 160,000 / 1,600,000 | 300,000 / 3,000,000 |", text)
        # Beside the seed's published PERSIST column, per message.
        self.assertIn("| 1 | SQLite PERSIST | 405,894 | 500,000 |", text)
        self.assertIn("| 10 | SQLite PERSIST | 534,083 | 3,000,000 |", text)
        # A published column with no measurement of ours says so.
        self.assertIn("| 1 | SQLite OFF | 147,692 | - |", text)

    def test_no_seed_batches_no_section(self):
        self.assertEqual(report_sizes.seed_batches_section({"calls": {}}), [])


def _over(median):
    return {"median": median, "min": median - 1, "max": median + 1}


def _workload(name, p50, rps, syncs):
    return {"workload": name, "p50_us": _over(p50), "p99_us": _over(p50 * 2),
            "mean_us": _over(p50), "rps_1_client": _over(rps), "rps_n_clients": _over(rps * 2),
            "syncs_per_request": syncs, "bytes_read_per_request": 100.0,
            "bytes_written_per_request": 200.0, "instructions_per_request": p50 * 1000}


def _edge_results():
    def engine(key, label, peer, p50):
        workloads = [_workload(w, p50, 1000.0 / p50, 2.0 if w != "get" else 0.0)
                     for w in report_edge.ONE_ROW + ["batch_between_1000", "batch_appended_1000"]]
        return {"engine": key, "label": label, "peer": peer, "fill_seconds": 1.0,
                "bytes_on_disk_per_row": 150.0,
                "modes": [{"mode": "cold", "workloads": workloads},
                          {"mode": "warm", "workloads": workloads}]}
    return {"machine": {"cpu": "test cpu", "cpus": 2, "kernel": "6", "wasmtime": "wasmtime 48"},
            "rows": 1000, "requests": 10, "batch_requests": 1, "runs": 3, "clients": 8,
            "floor": {"empty_request_us": _over(100), "bare_sync_us": _over(50),
                      "empty_request_instructions": 12345},
            "engines": [engine("page_tree", "Page tree", False, 500.0),
                        engine("redb", "redb 4.6", True, 1000.0),
                        engine("sqlite_wal", "SQLite WAL", True, 250.0),
                        engine("sqlite_off", "SQLite OFF (unsafe)", True, 200.0)]}


class EdgeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = Path(self.dir.name) / "edge_results.yml"
        self.path.write_text(yaml.safe_dump(_edge_results()))

    def tearDown(self):
        self.dir.cleanup()

    def test_section_shows_spread_counters_and_ratios_to_the_peers(self):
        text = "\n".join(report_edge.section(self.path))
        self.assertIn("| get one user | 500 (499–501) | 1,000 (999–1,001) | 250 (249–251) | "
                      "200 (199–201) |", text)
        self.assertIn("| insert one user (between ids) | 2 / 100 / 200 |", text)
        # Instructions: fresh / reused instance, and the empty request's.
        self.assertIn("| get one user by name | 500,000 / 500,000 | 1,000,000 / 1,000,000 |", text)
        self.assertIn("12,345 instructions", text)
        # Ours is twice as fast as redb and half as fast as SQLite WAL.
        self.assertIn("| get one user | Page tree 500 µs | 0.50× | 2.00× |", text)

    def test_readme_table_is_written_between_its_markers_only(self):
        text = f"before\n{report_edge.README_START}\nold\n{report_edge.README_END}\nafter\n"
        written = report_edge.write_readme(self.path, text)
        self.assertNotIn("old", written)
        # SQLite's unsafe journal modes stay in docs/RESULTS.md.
        self.assertIn("| get one user | 500 | 1,000 | 250 |", written)
        self.assertNotIn("SQLite OFF", written)
        self.assertIn("| syncs per one-row insert | 2 | 2 | 2 |", written)
        self.assertIn("| Wasm instructions per get (fresh instance) | 500,000 | 1,000,000 | "
                      "250,000 |", written)
        self.assertTrue(written.startswith("before") and written.endswith("after\n"))

    def test_counts_of_their_own_run_serve_a_timed_run_without_counts(self):
        counts = {"wasmtime": "wasmtime 48", "rows": 1000, "requests": 5, "batch_requests": 1,
                  "empty_request_instructions": 777,
                  "engines": [{"engine": "page_tree", "label": "Page tree", "peer": False,
                               "modes": [{"mode": "cold", "workloads": [
                                   {"workload": "get", "instructions_per_request": 4321.0}]},
                                         {"mode": "warm", "workloads": [
                                   {"workload": "get", "instructions_per_request": 1234.0}]}]}]}
        (Path(self.dir.name) / "edge_instructions.yml").write_text(yaml.safe_dump(counts))
        # The timed run's own counts come first ...
        self.assertIn("500,000 / 500,000", "\n".join(report_edge.section(self.path)))
        # ... and a timed run without counts takes them from their own run.
        timed = _edge_results()
        for engine in timed["engines"]:
            for mode in engine["modes"]:
                for workload in mode["workloads"]:
                    workload.pop("instructions_per_request", None)
        self.path.write_text(yaml.safe_dump(timed))
        text = "\n".join(report_edge.section(self.path))
        self.assertIn("| get one user | 4,321 / 1,234 |", text)
        self.assertIn("777 instructions", text)
        self.assertNotIn("500,000 / 500,000", text)
        written = report_edge.write_readme(
            self.path, f"{report_edge.README_START}\n{report_edge.README_END}\n")
        self.assertIn("| Wasm instructions per get (fresh instance) | 4,321 | – | – |", written)

    def test_no_results_no_section(self):
        self.assertEqual(report_edge.section(Path(self.dir.name) / "absent.yml"), [])


if __name__ == "__main__":
    unittest.main()
