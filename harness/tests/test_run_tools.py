#!/usr/bin/env python3
"""CPU tests of the run tools harness/tools/merge_runs.py and harness/tools/auto_check.py on small
synthetic runs: no GPU.

    python3 harness/tests/test_run_tools.py

merge_runs: two parts join into the first part's folder with every row, the summed counts, each
part's metadata under parts/, and the parts removed; a part stopped before its end joins too (its
rows counted from its CSV, the run "partial", no peers' counts); refused (nothing written or
removed): a folder given twice, parts of different builds, a problem in two parts. auto_check:
exit 0 when auto matches its chosen row; 1 with the problem named when it is slower than the band,
when its chosen row is missing, or when a row of ours failed. launch_cost: the line through a
row's times over k_dim (per k, per launch), a failed row left out, one k_dim not fitted, the k_dim
range and the unit honoured, a row timed at a throttled clock named (clocks.py's rule, which
harness/results.cpp's low_clock_rows shares), bad arguments refused. compare_runs: two runs' rows
matched, B/A - 1 and the peer-normalized change against numbers worked out by hand (the fastest
passing peer row used, blank without a peer in both runs), a row without a time left out and
counted, the LOW CLOCK and CHECK marks, the summary line; each refusal exits 2 naming the value,
with nothing on stdout.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MERGE = os.path.join(ROOT, "harness", "tools", "merge_runs.py")
CHECK = os.path.join(ROOT, "harness", "tools", "auto_check.py")
COST = os.path.join(ROOT, "harness", "tools", "launch_cost.py")
COMPARE = os.path.join(ROOT, "harness", "tools", "compare_runs.py")
HEADER = ["experiment", "shape", "M", "N", "K_dim", "k_bits", "dtype", "variant", "median_us",
          "check", "pdl", "sm_mhz_before", "sm_mhz_after", "config", "error"]


def row(shape, M, variant, us, check="pass", config="", mhz=1980):
    return ["t", shape, M, 64, 128, 4, "fp16", variant, us, check, 0, mhz, mhz, config, ""]


def with_codebook(r, codebook):
    """The row with a codebook column (after HEADER's): "nf", or an AWQ problem's "awq_g128"."""
    return r + [codebook]


def write_run(path, rows, sha="abc1234", shapes=("a*",), header=HEADER):
    os.makedirs(path)
    with open(os.path.join(path, "results.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    run = {"argv": ["run", "--shapes", *shapes], "experiment": "t", "config": {"hash": "h1"},
           "build": {"git_sha": sha, "dirty": False}, "device": {"name": "GPU X"},
           "started_utc": "20260101T000000Z", "finished_utc": "20260101T000100Z",
           "status": "complete", "summary": {"rows": len(rows), "check_passed": len(rows)},
           "overrides": {"shapes": list(shapes)},
           "peers_status": {"complete": True, "peers": {"p": {"ran": 1, "passed": 1, "failed": 0,
                                                               "skipped": {"k_bits not 2": 2}}}}}
    with open(os.path.join(path, "run.json"), "w") as f:
        json.dump(run, f)
    with open(os.path.join(path, "peers_status.json"), "w") as f:
        json.dump(run["peers_status"], f)


def tool(script, *args):
    return subprocess.run([sys.executable, script, *args], capture_output=True, text=True)


class MergeRuns(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.a = os.path.join(self.dir, "run_a")
        self.b = os.path.join(self.dir, "run_b")
        write_run(self.a, [row("a1", 1, "auto", 10), row("a1", 1, "cublas_fp16", 30)])
        write_run(self.b, [row("b1", 1, "auto", 11)], shapes=("b*",))

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_two_parts_join_into_the_first(self):
        r = tool(MERGE, self.a, self.b)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(self.b))
        with open(os.path.join(self.a, "results.csv"), newline="") as f:
            rows = list(csv.reader(f))
        self.assertEqual(rows[0], HEADER)
        self.assertEqual(sorted(r[1] for r in rows[1:]), ["a1", "a1", "b1"])
        with open(os.path.join(self.a, "run.json")) as f:
            run = json.load(f)
        self.assertEqual(run["summary"]["rows"], 3)
        self.assertEqual(run["overrides"]["shapes"], ["a*", "b*"])
        self.assertEqual(run["peers_status"]["peers"]["p"]["ran"], 2)
        self.assertEqual(run["peers_status"]["peers"]["p"]["skipped"], {"k_bits not 2": 4})
        self.assertEqual([p["part"] for p in run["merged_from"]], ["run_a", "run_b"])
        for part in ("run_a", "run_b"):
            self.assertTrue(os.path.exists(os.path.join(self.a, "parts", part, "run.json")))
        self.assertFalse(os.path.exists(os.path.join(self.a, "peers_status.json")))

    def test_a_stopped_part_joins_and_makes_the_run_partial(self):
        # A part whose process was stopped before its end: no end time, no summary.
        with open(os.path.join(self.b, "run.json")) as f:
            run = json.load(f)
        run["status"] = "running"
        del run["finished_utc"], run["summary"], run["peers_status"]
        with open(os.path.join(self.b, "run.json"), "w") as f:
            json.dump(run, f)
        r = tool(MERGE, self.a, self.b)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.a, "run.json")) as f:
            merged = json.load(f)
        self.assertEqual(merged["status"], "partial")
        self.assertEqual(merged["finished_utc"], "20260101T000100Z")
        self.assertEqual(merged["summary"]["rows"], 3)
        self.assertEqual(merged["summary"]["check_passed"], 3)
        self.assertEqual([p["finished_utc"] for p in merged["merged_from"]],
                         ["20260101T000100Z", None])
        self.assertNotIn("peers_status", merged)

    def assert_refused(self, r, words):
        self.assertNotEqual(r.returncode, 0)
        self.assertIn(words, r.stderr)
        self.assertTrue(os.path.exists(os.path.join(self.a, "results.csv")))
        self.assertTrue(os.path.exists(os.path.join(self.b, "results.csv")))
        self.assertEqual(sorted(os.listdir(self.dir)), ["run_a", "run_b"])

    def test_a_folder_given_twice_is_refused(self):
        self.assert_refused(tool(MERGE, self.a, self.a + "/", self.b), "given twice")

    def test_parts_of_different_builds_are_refused(self):
        shutil.rmtree(self.b)
        write_run(self.b, [row("b1", 1, "auto", 11)], sha="fff0000")
        self.assert_refused(tool(MERGE, self.a, self.b), "run_b: ['fff0000', False]")

    def test_a_problem_in_two_parts_is_refused(self):
        shutil.rmtree(self.b)
        write_run(self.b, [row("a1", 1, "auto", 12)])
        self.assert_refused(tool(MERGE, self.a, self.b), "in both run_a and run_b")

    def test_the_kbit_and_awq_problems_of_a_shape_are_two_problems(self):
        header = HEADER + ["codebook"]
        for d in (self.a, self.b):
            shutil.rmtree(d)
        write_run(self.a, [with_codebook(row("a1", 1, "cublas_fp16", 30), "nf")], header=header)
        write_run(self.b, [with_codebook(row("a1", 1, "cublas_fp16", 31), "awq_g128")],
                  header=header)
        r = tool(MERGE, self.a, self.b)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(self.a, "results.csv"), newline="") as f:
            rows = list(csv.reader(f))
        self.assertEqual(sorted(r[-1] for r in rows[1:]), ["awq_g128", "nf"])
        # The same format in both parts is one problem twice.
        write_run(self.b, [with_codebook(row("a1", 1, "cublas_fp16", 31), "nf")], header=header)
        self.assert_refused(tool(MERGE, self.a, self.b), "'codebook': 'nf'")


class AutoCheck(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.run = os.path.join(self.dir, "run")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def check(self, rows):
        write_run(self.run, rows)
        return tool(CHECK, self.run)

    def test_auto_on_its_chosen_row_passes(self):
        r = self.check([row("a1", 1, "auto", 10.1, config="auto -> scalar_gemv (exact)"),
                        row("a1", 1, "scalar_gemv", 10.0), row("a1", 1, "cublas_fp16", 30)])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("beyond 3% of its chosen variant's row: 0", r.stdout)

    def test_auto_slower_than_its_chosen_row_fails(self):
        r = self.check([row("a1", 16, "auto", 10.4, config="auto -> warp_specialized (exact)",
                            mhz=1700), row("a1", 16, "warp_specialized", 10.0)])
        self.assertEqual(r.returncode, 1)
        self.assertIn("beyond 3% of its chosen variant's row: 1\n  a1", r.stdout)
        self.assertIn("+4.0%", r.stdout)
        self.assertIn("1700 MHz", r.stdout)
        self.assertIn("beyond 5% of the best row of ours: 0", r.stdout)

    def test_auto_slower_than_our_best_fails(self):
        r = self.check([row("a1", 16, "auto", 10.0, config="auto -> warp_specialized (exact)"),
                        row("a1", 16, "warp_specialized", 10.0), row("a1", 16, "scalar_gemv", 9.0)])
        self.assertEqual(r.returncode, 1)
        self.assertIn("beyond 5% of the best row of ours: 1\n  a1", r.stdout)

    def test_a_missing_chosen_row_fails(self):
        r = self.check([row("a1", 1, "auto", 10, config="auto -> scalar_gemv (exact)")])
        self.assertEqual(r.returncode, 1)
        self.assertIn("auto chose scalar_gemv, which has no passing row", r.stdout)

    def test_rows_of_an_awq_problem_are_not_auto_s_problem(self):
        header = HEADER + ["codebook"]
        rows = [with_codebook(row("a1", 1, "auto", 10.0, config="auto -> scalar_gemv (exact)"), "nf"),
                with_codebook(row("a1", 1, "scalar_gemv", 10.0), "nf"),
                with_codebook(row("a1", 1, "scalar_gemv", 5.0), "awq_g128")]
        write_run(self.run, rows, header=header)
        r = tool(CHECK, self.run)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("1 problems with an auto row", r.stdout)
        self.assertIn("beyond 5% of the best row of ours: 0", r.stdout)

    def test_fragment_mma_is_one_of_ours(self):
        r = self.check([row("a1", 16, "auto", 10.0, config="auto -> warp_specialized (exact)"),
                        row("a1", 16, "warp_specialized", 10.0), row("a1", 16, "fragment_mma", 8.0)])
        self.assertEqual(r.returncode, 1)
        self.assertIn("beyond 5% of the best row of ours: 1\n  a1", r.stdout)
        self.assertIn("fragment_mma", r.stdout)

    def test_ours_by_the_family_column(self):
        header = HEADER + ["family"]
        rows = [row("a1", 16, "auto", 10.0, config="auto -> new_row (exact)") + ["gemm"],
                row("a1", 16, "new_row", 10.0) + ["gemm"],
                row("a1", 16, "humming_u4_g128", 5.0) + ["peer"],
                row("a1", 16, "read_bulk", 4.0) + ["probe"],
                row("a1", 16, "cublas_fp16", 3.0) + ["baseline"]]
        write_run(self.run, rows, header=header)
        r = tool(CHECK, self.run)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("beyond 5% of the best row of ours: 0", r.stdout)
        rows.append(row("a1", 16, "other_row", 9.0) + ["gemv"])
        shutil.rmtree(self.run)
        write_run(self.run, rows, header=header)
        r = tool(CHECK, self.run)
        self.assertEqual(r.returncode, 1)
        self.assertIn("other_row", r.stdout)

    def test_a_failed_row_of_ours_fails(self):
        r = self.check([row("a1", 1, "auto", 10, config="auto -> scalar_gemv (exact)"),
                        row("a1", 1, "scalar_gemv", 10, check="fail")])
        self.assertEqual(r.returncode, 1)
        self.assertIn("FAILED scalar_gemv at a1 M=1", r.stdout)


def cost_row(M, k_dim, variant, us, check="pass", pdl=0, mhz=1980):
    return ["t", "s", M, 28672, k_dim, 4, "fp16", variant, us, check, pdl, mhz, mhz, "", ""]


class LaunchCost(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.csv = os.path.join(self.dir, "run", "results.csv")
        rows = [cost_row(16, k, "ours", 3.0 + 2.0 * k / 4096) for k in (2048, 4096, 8192, 16384)]
        # A peer with a launch of 10 us and 1.5 us per 4096 k; its failed row would bend the line.
        rows += [cost_row(16, k, "peer", 10.0 + 1.5 * k / 4096) for k in (4096, 16384)]
        rows.append(cost_row(16, 8192, "peer", 999.0, check="fail"))
        rows.append(cost_row(16, 8192, "ours", 1.0, pdl=1))  # one k_dim with PDL: not fitted
        # A row timed at a throttled clock (below 90% of the run's 1980 MHz) is named.
        rows += [cost_row(8, k, "slow", 1.0 + k / 4096, mhz=1500 if k == 8192 else 1980)
                 for k in (4096, 8192, 16384)]
        write_run(os.path.join(self.dir, "run"), rows)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def line(self, out, variant):
        return next(l for l in out.splitlines() if f" {variant} " in l + " ")

    def test_the_line_of_each_row(self):
        r = tool(COST, self.csv)
        self.assertEqual(r.returncode, 0, r.stderr)
        ours = self.line(r.stdout, "ours").split()
        self.assertEqual(ours[-4:], ["2048,4096,8192,16384", "2.00", "3.00", "0.00"])
        peer = self.line(r.stdout, "peer").split()
        self.assertEqual(peer[-4:], ["4096,16384", "1.50", "10.00", "0.00"])
        self.assertIn("(one k_dim: not fitted)", self.line(r.stdout, "ours (PDL)"))
        self.assertIn("LOW CLOCK: k_dim 8192 at 1500 MHz", self.line(r.stdout, "slow"))
        self.assertNotIn("LOW CLOCK", self.line(r.stdout, "peer"))

    def test_low_clock_rule(self):
        sys.path.insert(0, os.path.join(ROOT, "harness", "tools"))
        import clocks
        rows = [{"sm_mhz_before": "1980", "sm_mhz_after": "1975"},
                {"sm_mhz_before": "1620", "sm_mhz_after": "1624"},
                {"sm_mhz_before": "0", "sm_mhz_after": "1790"},  # no reading before: the other
                {"sm_mhz_before": "", "sm_mhz_after": ""},        # no reading: not judged
                {"sm_mhz_before": "1782", "sm_mhz_after": "1990"}]
        self.assertEqual(clocks.low_clock(rows), {1, 2, 4})  # below 0.9 x 1990 = 1791
        self.assertEqual(clocks.low_clock(rows, 0.85), {1})
        self.assertEqual(clocks.low_clock([]), set())

    def test_range_and_unit(self):
        r = tool(COST, self.csv, "--k-min", "8192", "--per", "8192")
        self.assertEqual(r.returncode, 0, r.stderr)
        ours = self.line(r.stdout, "ours").split()
        self.assertEqual(ours[-4:], ["8192,16384", "4.00", "3.00", "0.00"])
        self.assertIn("not fitted", self.line(r.stdout, "peer"))
        r = tool(COST, self.csv, "--k-max", "4096")
        self.assertEqual(self.line(r.stdout, "ours").split()[-4:],
                         ["2048,4096", "2.00", "3.00", "0.00"])

    def test_refusals(self):
        r = tool(COST, self.csv, "--per", "0")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--per 0", r.stderr)
        r = tool(COST, self.csv, "--k-min", "8192", "--k-max", "4096")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--k-max 4096 is below --k-min 8192", r.stderr)
        bad = os.path.join(self.dir, "bad.csv")
        with open(bad, "w") as f:
            f.write("M,N\n1,2\n")
        r = tool(COST, bad)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("has no column(s)", r.stderr)


class CompareRuns(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.a = os.path.join(self.dir, "run_a")
        self.b = os.path.join(self.dir, "run_b")
        write_run(self.a, [
            row("s1", 1, "ours", 10.0), row("s1", 16, "ours", 20.0, check="fail"),
            row("s1", 1, "peer_x", 20.0, mhz=1700), row("s1", 1, "peer_y", 25.0),
            row("s1", 1, "peer_z", 5.0, check="fail"),  # faster, but its time does not stand
            row("s1", 16, "peer_x", 40.0),
            row("s1", 4, "ours", ""),  # a refused row: no time
            row("s3", 1, "ours", 10.0), row("s3", 1, "peer_x", 30.0)])
        write_run(self.b, [
            row("s1", 1, "ours", 11.0), row("s1", 16, "ours", 19.0, mhz=1500),
            row("s1", 1, "peer_x", 24.0), row("s1", 1, "peer_y", 18.0),
            row("s1", 16, "peer_x", 40.0), row("s1", 4, "ours", 12.0),
            row("s3", 1, "ours", 10.0)])  # no peer row at s3 in B

    def tearDown(self):
        shutil.rmtree(self.dir)

    def line(self, out, shape, M, variant):
        return next(l for l in out.splitlines()
                    if l.split()[:2] == [shape, str(M)] and l.split()[4] == variant)

    def test_changes_marks_and_summary(self):
        r = tool(COMPARE, self.a, self.b, "--peer", "peer")
        self.assertEqual(r.returncode, 0, r.stderr)
        # 11 / 10 - 1; peers: A's fastest passing 20 (peer_x), B's 18 (peer_y):
        # (11 / 18) / (10 / 20) - 1 = +22.22%.
        self.assertEqual(self.line(r.stdout, "s1", 1, "ours").split()[5:9],
                         ["10.000", "11.000", "+10.00%", "+22.22%"])
        self.assertIn("LOW CLOCK A peer 1700 MHz", self.line(r.stdout, "s1", 1, "ours"))
        # 19 / 20 - 1 = (19 / 40) / (20 / 40) - 1 = -5%; B's row at 1500 MHz, A's failed its check.
        m16 = self.line(r.stdout, "s1", 16, "ours")
        self.assertEqual(m16.split()[5:9], ["20.000", "19.000", "-5.00%", "-5.00%"])
        self.assertIn("CHECK A fail; LOW CLOCK B 1500 MHz", m16)
        s3 = self.line(r.stdout, "s3", 1, "ours")  # no peer in B: the column blank
        self.assertEqual(s3.split()[5:], ["10.000", "10.000", "+0.00%"])
        self.assertNotIn("LOW CLOCK", s3)
        # A's s1 M=4 has no time (B's is then timed in B only); peer_z and s3's peer_x: A only.
        self.assertIn("without a time (left out): A 1, B 0; timed in one run only: A 2, B 1",
                      r.stdout)
        self.assertIn("summary ours: 3 rows, B/A-1 median +0.00% range -5.00% .. +10.00%; "
                      "peer-normalized (2 rows with a peer in both) median +8.61% range "
                      "-5.00% .. +22.22%", r.stdout)

    def test_filters(self):
        r = tool(COMPARE, self.a, self.b, "--variant", "ours", "--m", "16", "--shape", "s*")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("rows compared: 1;", r.stdout)
        self.assertIn("summary ours: 1 rows, B/A-1 median -5.00%", r.stdout)
        self.assertNotIn("peer-normalized", r.stdout)
        self.assertNotIn("peer_x", r.stdout)

    def assert_refused(self, r, words):
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn(words, r.stderr)
        self.assertEqual(r.stdout, "")

    def test_refusals(self):
        self.assert_refused(tool(COMPARE, self.a, self.dir), f"{self.dir}: no results.csv")
        self.assert_refused(tool(COMPARE, self.a, self.b, "--variant", "nope"),
                            "--variant 'nope' is in neither run")
        self.assert_refused(tool(COMPARE, self.a, self.b, "--variant", "peer_z"),
                            f"--variant 'peer_z' is only in {self.a}")
        self.assert_refused(tool(COMPARE, self.a, self.b, "--peer", "marlin"),
                            "--peer 'marlin': no variant")
        self.assert_refused(tool(COMPARE, self.a, self.b, "--m", "1,x"), "--m '1,x'")
        self.assert_refused(tool(COMPARE, self.a, self.b, "--shape", "q*"),
                            "have no timed row in common among the rows chosen")
        other = os.path.join(self.dir, "other")
        write_run(other, [row("s9", 1, "ours", 10.0)])
        self.assert_refused(tool(COMPARE, self.a, other), "have no timed row in common")
        bad = os.path.join(self.dir, "bad")
        write_run(bad, [r[:8] + r[9:] for r in [row("s1", 1, "ours", 10.0)]],
                  header=HEADER[:8] + HEADER[9:])
        self.assert_refused(tool(COMPARE, self.a, bad), "results.csv has no column(s) median_us")

    def test_two_gpu_models_are_refused_unless_any_gpu(self):
        with open(os.path.join(self.b, "run.json")) as f:
            run = json.load(f)
        run["device"]["name"] = "GPU Y"
        with open(os.path.join(self.b, "run.json"), "w") as f:
            json.dump(run, f)
        self.assert_refused(tool(COMPARE, self.a, self.b), "on 'GPU X'")
        r = tool(COMPARE, self.a, self.b, "--any-gpu")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("(GPU Y, no device column)", r.stdout)


if __name__ == "__main__":
    unittest.main()
