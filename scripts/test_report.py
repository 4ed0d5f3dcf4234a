"""Tests of report.py's parsing and arithmetic (run by scripts/test.sh)."""
import tempfile
import unittest
from pathlib import Path

import report

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


if __name__ == "__main__":
    unittest.main()
