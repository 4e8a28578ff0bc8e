"""Unit tests of tests/slices.py, the rotation's arithmetic: run by
tests/run's host layer (host:slices), or `python3 -m unittest
tests/test_slices.py` by hand. No guest, well under a second."""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import slices  # noqa: E402


def cells(*secs, name="t"):
    return [(f"{name}{i}", s, None) for i, s in enumerate(secs)]


class EstimatorTest(unittest.TestCase):
    def setUp(self):
        self.est = slices.Estimator(slices.load_estimates(
            "# comment\nverify[6.1,sroce:sroce] 15\nverify[debug,sroce:sroce] 68\n"
            "kverbs[debug] 30\nboot[6.1,sroce:sroce] 50\nboot[debug] 182\n"
            "boot[6.1,sroce:rxe:uc] 21\n"
            "boot[6.12@trixie:device-lifecycle] 16\n"))

    def test_measured_cell_is_taken_as_is(self):
        self.assertEqual(self.est.cell("verify", "6.1", "sroce:sroce", 900), (15, "measured"))

    def test_other_cell_of_the_script_is_scaled_by_kernel(self):
        secs, how = self.est.cell("kverbs", "6.1", "none", 300)
        self.assertEqual(secs, 30 / slices.DEBUG_FACTOR)
        self.assertIn("kverbs[debug]", how)
        # the slowest measurement, per 6.1-second, wins: 68/4 > 15
        self.assertEqual(self.est.cell("verify", "6.12", "rxe:sroce", 900)[0], 17)

    def test_unmeasured_script_is_half_its_timeout(self):
        self.assertEqual(self.est.cell("rc-loss", "debug", "sroce:sroce", 2400),
                         (1200, "half its timeout"))

    def test_boots(self):
        self.assertEqual(self.est.boot("6.1", "sroce:sroce"), 50)
        self.assertEqual(self.est.boot("6.1", "sroce:rxe"), 21)  # pair and own-boot test told apart
        self.assertEqual(self.est.boot("6.1", "rxe:rxe"), 50)  # slowest on 6.1
        self.assertEqual(self.est.boot("6.12@trixie", "none"), 16)  # own-boot label counts
        # none on 7.2: the slowest anywhere per 6.1-second, max(50, 182/4)
        self.assertEqual(self.est.boot("7.2", "none"), 50)

    def test_bad_lines_are_refused(self):
        with self.assertRaises(ValueError):
            slices.load_estimates("verify[6.1] 1 2\n")
        with self.assertRaises(ValueError):
            slices.Estimator({"no-brackets": 1})


class CutTest(unittest.TestCase):
    def test_small_group_is_one_chunk(self):
        self.assertEqual(len(slices.split_group(20, cells(100, 200), 900)), 1)

    def test_big_group_splits_within_the_limit(self):
        chunks = slices.split_group(100, cells(*[90] * 20), 900)
        self.assertEqual(sorted(c[0] for ch in chunks for c in ch), sorted(c[0] for c in cells(*[90] * 20)))
        self.assertTrue(all(100 + sum(c[1] for c in ch) <= 900 for ch in chunks))
        self.assertEqual(len(chunks), 3)  # 1800 s of tests, 800 s of room each

    def test_cut_keeps_every_slice_within_the_limit_and_every_cell_once(self):
        groups = [(("6.1", "a"), 50, cells(*range(10, 400, 37), name="a")),
                  (("debug", "b"), 180, cells(*range(40, 700, 61), name="b")),
                  (("6.12", "c"), 20, cells(5, 5, 5, name="c"))]
        sl, outsized = slices.cut(groups, 900)
        self.assertEqual(outsized, [])
        self.assertTrue(all(slices.slice_seconds(s) <= 900 for s in sl))
        names = [c[0] for s in sl for ch in s for c in ch[2]]
        self.assertEqual(sorted(names), sorted(c[0] for *_, cs in groups for c in cs))
        total = sum(map(slices.slice_seconds, sl))
        self.assertGreaterEqual(len(sl) * 900, total)

    def test_cell_over_the_limit_is_outsized_not_sliced(self):
        sl, outsized = slices.cut([(("6.1", "a"), 50, cells(10, 2000))], 900)
        self.assertEqual([o[2][0] for o in outsized], ["t1"])
        self.assertEqual([c[0] for s in sl for ch in s for c in ch[2]], ["t0"])

    def test_cut_is_deterministic_whatever_the_input_order(self):
        groups = [(("k", str(i)), 30, cells(*range(50, 300, 50), name=f"g{i}")) for i in range(6)]
        first = slices.cut(groups, 900)
        self.assertEqual(first, slices.cut(list(reversed(groups)), 900))

    def test_pack_into_more_slices_than_chunks_leaves_some_empty(self):
        chunks, _ = slices.chunk_all([(("k", "a"), 10, cells(5))], 900)
        self.assertEqual([len(s) for s in slices.pack(chunks, 3)], [1, 0, 0])


class CounterTest(unittest.TestCase):
    def test_counter_selects_slices_round_robin(self):
        self.assertEqual([slices.slice_of(c, 3) for c in range(5)], [1, 2, 3, 1, 2])

    def test_counter_file_is_one_number(self):
        self.assertEqual(slices.read_counter("41\n"), 41)
        for bad in ("", "1 2\n", "-1\n", "x\n"):
            with self.assertRaises(ValueError):
                slices.read_counter(bad)


if __name__ == "__main__":
    unittest.main()
