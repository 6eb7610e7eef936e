#!/usr/bin/env python3
"""CPU tests of the peers runner (harness/peers/, docs/peers.md): no torch, no GPU.

    python3 harness/tests/test_peers.py        # or: python3 -m unittest harness/tests/test_peers.py

Covers the problems JSON (parsing, malformed input, unknown peers: exit 2), the rows appended
to a CSV with our header and escaping, peers skipped with a reason, a raising peer (a failed
row, and the run goes on), the status JSON, and the check failing an output of zeros; the AWQ
peer's quantizer against the golden words of docs/awq_format.md (its torch port too where torch
is importable), and, with KBIT_HARNESS naming the kbit-harness binary, against the words of
`format --awq --dump` with the dump's C_ref and bound.
"""

import contextlib
import csv
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

from harness.peers import awq_format as awq  # noqa: E402
from harness.peers import check as chk  # noqa: E402
from harness.peers import runner  # noqa: E402
from harness.peers import timing  # noqa: E402

RUNNER = os.path.join(ROOT, "harness", "peers", "runner.py")
PARITY = os.path.join(ROOT, "harness", "peers", "awq_parity.py")


def dense(shape="llama3_8b.gate_up", M=16, N=96, K_dim=128, k_bits=4, dtype="fp16", floor_us=10.0,
          baseline_us=40.0):  # fmt: skip
    return {"shape": shape, "M": M, "N": N, "K_dim": K_dim, "k_bits": k_bits, "dtype": dtype,
            "floor_us": floor_us, "baseline_us": baseline_us, "experts": 0, "expert_offsets": []}  # fmt: skip


def moe(M=4):
    return {"shape": "qwen3.moe_gate_up", "M": M, "N": 64, "K_dim": 128, "k_bits": 4, "dtype": "bf16",
            "floor_us": 3.0, "baseline_us": 0.0, "experts": 3, "expert_offsets": [0, 1, 1, M]}  # fmt: skip


class Workdir:
    """A run folder with a results.csv that already holds our header and one row of ours."""

    def __init__(self, test):
        self.tmp = tempfile.TemporaryDirectory()
        test.addCleanup(self.tmp.cleanup)
        self.dir = self.tmp.name
        self.csv = os.path.join(self.dir, "results.csv")
        self.status = os.path.join(self.dir, "peers_status.json")
        self.problems = os.path.join(self.dir, "problems.json")
        self.our_row = "peers,llama3_8b.gate_up,16,96,128,4,fp16,cublas_fp16," + ",".join(["0"] * (len(runner.COLUMNS) - 8))
        with open(self.csv, "w") as f:
            f.write(",".join(runner.COLUMNS) + "\n" + self.our_row + "\n")

    def spec(self, peer_names, problem_list, **extra):
        s = {
            "experiment": "peers", "run_dir": self.dir, "csv": self.csv, "status_path": self.status,
            "peers": peer_names, "test_peers": True,
            "timing": {"cold": True, "warmup": 3, "min_samples": 10, "max_samples": 400,
                       "max_rel_noise": 0.03, "timeout_s": 2.0},
            "l2_bytes": 52428800, "rotation_budget_bytes": 40000000000,
            "check": {"enabled": True, "seed": 1234, "max_rows": 16},
            "codebook": "nf", "problems": problem_list,
        }  # fmt: skip
        s.update(extra)
        return s

    def write(self, spec):
        with open(self.problems, "w") as f:
            json.dump(spec, f)
        return self.problems

    def run(self, spec):
        """runner.py run, in this process; returns (exit code, stdout, stderr)."""
        path = self.write(spec) if not isinstance(spec, str) else spec
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = runner.main(["run", path])
        return rc, out.getvalue(), err.getvalue()

    def rows(self):
        with open(self.csv, newline="") as f:
            return list(csv.reader(f))

    def peer_rows(self):
        rows = self.rows()
        col = runner.COLUMNS.index("family")
        return [dict(zip(runner.COLUMNS, r)) for r in rows[1:] if r[col] == "peer"]

    def status_json(self):
        with open(self.status) as f:
            return json.load(f)


class TestPeersList(unittest.TestCase):
    def test_list_prints_the_peers_as_json(self):
        p = subprocess.run([sys.executable, RUNNER, "list"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        peers = json.loads(p.stdout)
        names = [x["name"] for x in peers]
        for name in ("humming_u4_g128", "humming_u4_g32", "tinygemm_int4_g32", "tinygemm_int4_g128"):
            self.assertIn(name, names)
        self.assertFalse([n for n in names if n.startswith("fake_")], "test peers are not listed")
        for x in peers:
            self.assertEqual(set(x), {"name", "description", "k_bits", "dtypes", "moe", "bits_per_weight", "package"})
            self.assertIn(x["package"], ("humming-kernels", "torch"))
            self.assertTrue(set(x["dtypes"]) <= {"fp16", "bf16"})
            self.assertTrue(all(2 <= k <= 5 for k in x["k_bits"]))
        by = {x["name"]: x for x in peers}
        self.assertEqual(by["humming_u4_g128"]["bits_per_weight"], 4.125)
        self.assertEqual(by["tinygemm_int4_g128"]["dtypes"], ["bf16"])
        self.assertFalse(by["tinygemm_int4_g128"]["moe"])

    def test_list_and_a_test_run_import_no_torch(self):
        code = (
            "import sys, json, contextlib, io; sys.path.insert(0, %r)\n"
            "from harness.peers import runner\n"
            "with contextlib.redirect_stdout(io.StringIO()): runner.main(['list'])\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'humming'))))\n"
        ) % ROOT
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout), [])


class TestInterface(unittest.TestCase):
    def test_columns_are_those_of_results_cpp(self):
        # A check that cannot read the C++ columns fails: update the path or the pattern here when
        # results.cpp changes, so that the runner's columns stay compared with ours.
        path = os.path.join(ROOT, "harness", "results.cpp")
        self.assertTrue(os.path.exists(path), "harness/results.cpp moved: point this check at result_columns()")
        with open(path) as f:
            text = f.read()
        m = re.search(r"result_columns\(\)\s*\{.*?\{(.*?)\};", text, re.S)
        self.assertIsNotNone(m, "result_columns() not found in harness/results.cpp: update the pattern")
        cols = re.findall(r'"([^"]+)"', m.group(1))
        self.assertGreaterEqual(len(cols), 19, f"too few columns read from results.cpp: {cols}")
        self.assertEqual(cols[:3], ["experiment", "shape", "M"])
        self.assertEqual(cols, runner.COLUMNS)

    def test_csv_escape_is_ours(self):
        self.assertEqual(runner.csv_escape("plain"), "plain")
        self.assertEqual(runner.csv_escape("a,b"), '"a,b"')
        self.assertEqual(runner.csv_escape('say "hi"'), '"say ""hi"""')
        self.assertEqual(runner.csv_escape("l1\nl2\r"), '"l1 l2 "')

    def test_numbers_are_formatted_as_ours(self):
        self.assertEqual(runner.num(44.1), "44.1")
        self.assertEqual(runner.num(172.3456789), "172.346")
        self.assertEqual(runner.num(1e6), "1e+06")
        self.assertEqual(runner.num(0.123456, 4), "0.1235")
        self.assertEqual(runner.num(math.nan), "nan")
        self.assertEqual(runner.num(math.inf), "inf")

    def test_percentile_and_rotation_copies_mirror_the_cpp(self):
        self.assertEqual(timing.percentile([], 50), 0.0)
        self.assertEqual(timing.percentile([4, 1, 3, 2], 50), 2.5)
        self.assertAlmostEqual(timing.percentile([1, 2, 3, 4, 5], 10), 1.4)
        self.assertEqual(timing.percentile([7], 90), 7)
        # Llama3-8B gate/up at K = 4 (58.7 MB a copy, 50 MiB L2): 4 copies.
        self.assertEqual(timing.rotation_copies(58_720_256, 58_720_256, 52_428_800, 40_000_000_000), 4)
        self.assertEqual(timing.rotation_copies(1_000_000, 1_000_000, 52_428_800, 40_000_000_000), 210)
        self.assertEqual(timing.rotation_copies(1_000_000, 1_000_000, 52_428_800, 5_000_000), 5)  # budget
        self.assertEqual(timing.rotation_copies(0, 0, 52_428_800, 1), 1)

    def test_sample_rows_mirror_the_cpp(self):
        self.assertEqual(chk.sample_rows(3, 16), [0, 1, 2])
        rows = chk.sample_rows(100, 16)
        self.assertEqual((rows[0], rows[-1], len(rows)), (0, 99, 16))
        self.assertEqual(chk.sample_rows(17, 16), [i * 16 // 15 for i in range(16)])


class TestProblemsJson(unittest.TestCase):
    def test_parses_dense_and_moe_problems_with_defaults(self):
        w = Workdir(self)
        spec = runner.parse_spec({"csv": w.csv, "status_path": w.status, "peers": ["humming_u4_g128"],
                                  "problems": [dense(), moe()]})  # fmt: skip
        self.assertEqual(spec.experiment, "peers")
        self.assertFalse(spec.test_peers)
        self.assertEqual((spec.timing.warmup, spec.timing.max_samples, spec.timing.timeout_s), (3, 400, 2.0))
        self.assertTrue(spec.timing.cold)
        self.assertEqual((spec.check.enabled, spec.check.seed, spec.check.max_rows), (True, 1234, 16))
        d, m = spec.problems
        self.assertEqual((d.shape, d.M, d.N, d.K_dim, d.k_bits, d.dtype), ("llama3_8b.gate_up", 16, 96, 128, 4, "fp16"))
        self.assertFalse(d.moe)
        self.assertEqual((m.experts, m.expert_offsets, m.active_experts), (3, (0, 1, 1, 4), 2))
        self.assertEqual([m.expert_of(r) for r in range(4)], [0, 2, 2, 2])
        nbytes, flops = m.cost()
        self.assertEqual(nbytes, 2 * 64 * 128 * (4 / 8 + 1 / 32) + 4 * (128 + 64) * 2)
        self.assertEqual(flops, 2 * 4 * 64 * 128)

    def test_the_weight_format_of_a_problem(self):
        w = Workdir(self)
        awq_prob = dict(dense(N=128, K_dim=256), format="awq_g128")
        spec = runner.parse_spec({"csv": w.csv, "status_path": w.status, "peers": ["humming_awq_g128"],
                                  "problems": [dense(), awq_prob]})  # fmt: skip
        d, a = spec.problems
        self.assertEqual((d.format, d.awq_group, a.format, a.awq_group), ("kbit", 0, "awq_g128", 128))
        self.assertEqual(a.label(), "llama3_8b.gate_up M=16 awq_g128 fp16")
        self.assertEqual(d.label(), "llama3_8b.gate_up M=16 K=4 fp16")
        # harness/problem.cpp problem_cost: AWQ holds 4 + 20/G bits a weight.
        self.assertEqual(a.cost()[0], 128 * 256 * (0.5 + 2.5 / 128) + 16 * (256 + 128) * 2)
        for change, message in [
            ({"format": "awq_g48"}, "'format' = \"awq_g48\" must be one of kbit, awq_g32, awq_g64, awq_g128"),
            ({"format": "awq_g32", "k_bits": 3}, "'format' = \"awq_g32\" holds 4-bit weights; k_bits = 3"),
        ]:
            self.assert_problem_refused(w, change, message)

    def assert_problem_refused(self, w, change, message):
        """A dense problem with `change` applied: exit 2 and `message` on stderr."""
        with self.subTest(change=change):
            prob = dense()
            prob.update(change)
            rc, _, err = w.run(w.spec(["fake_ok"], [prob]))
            self.assertEqual(rc, 2)
            self.assertIn(message, err)

    def test_malformed_json_exits_2_naming_the_value(self):
        w = Workdir(self)
        cases = [
            ({"k_bits": 7}, "'k_bits' = 7 must be in 2..5"),
            ({"dtype": "fp8"}, "'dtype' = \"fp8\" must be fp16 or bf16"),
            ({"M": 0}, "'M' = 0 must be at least 1"),
            ({"M": "16"}, "'M' = \"16\" is not a int"),
            ({"experts": 2, "expert_offsets": [0, 3]}, "experts = 2 needs 3"),
            ({"experts": 2, "expert_offsets": [0, 9, 4]}, "non-decreasing from 0 to M"),
            ({"expert_offsets": [0, 1]}, "experts = 0"),
        ]
        for change, message in cases:
            self.assert_problem_refused(w, change, message)
        for spec, message in [
            ({"peers": "fake_ok"}, "'peers'"),
            ({"problems": {}}, "'problems'"),
            ({"timing": {"max_samples": 0}}, "'max_samples' = 0"),
        ]:
            with self.subTest(spec=spec):
                rc, _, err = w.run(w.spec(["fake_ok"], [dense()], **spec))
                self.assertEqual(rc, 2)
                self.assertIn(message, err)
        missing = w.spec(["fake_ok"], [dense()])
        del missing["csv"]
        rc, _, err = w.run(missing)
        self.assertEqual(rc, 2)
        self.assertIn("'csv' is missing", err)
        with open(w.problems, "w") as f:
            f.write("{not json")
        p = subprocess.run([sys.executable, RUNNER, "run", w.problems], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("is not JSON", p.stderr)
        self.assertEqual(len(w.rows()), 2, "nothing was appended")

    def test_unknown_peer_exits_2_naming_it_and_the_peers(self):
        w = Workdir(self)
        p = subprocess.run([sys.executable, RUNNER, "run", w.write(w.spec(["fake_ok", "marlin_u4"], [dense()]))],
                           capture_output=True, text=True, timeout=60)  # fmt: skip
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown peer 'marlin_u4'", p.stderr)
        self.assertIn("humming_u4_g128", p.stderr)
        self.assertIn("tinygemm_int4_g128", p.stderr)
        # The test peers exist only with "test_peers": true.
        rc, _, err = w.run(w.spec(["fake_ok"], [dense()], test_peers=False))
        self.assertEqual(rc, 2)
        self.assertIn("unknown peer 'fake_ok'", err)
        self.assertEqual(len(w.rows()), 2, "nothing was appended")


class TestRun(unittest.TestCase):
    def run_fakes(self, w, peers=("fake_raises", "fake_ok", "fake_zero"), problems=None, **extra):
        problems = problems if problems is not None else [
            dense(shape='odd,"name"', M=20, N=100, K_dim=300),
            dense(M=3, k_bits=2, dtype="bf16", baseline_us=0.0),
            moe(),
        ]  # fmt: skip
        rc, out, err = w.run(w.spec(list(peers), problems, **extra))
        self.assertEqual(rc, 0, err)
        return out, err

    def test_rows_name_the_device_the_request_names(self):
        w = Workdir(self)
        self.run_fakes(w, device="1 GPU-00000000-0000-0000-0000-000000000001")
        self.assertTrue(w.peer_rows())
        for r in w.peer_rows():
            self.assertEqual(r["device"], "1 GPU-00000000-0000-0000-0000-000000000001")

    def test_rows_are_appended_with_our_header_and_escaping(self):
        w = Workdir(self)
        out, _ = self.run_fakes(w)
        rows = w.rows()
        self.assertEqual(rows[0], runner.COLUMNS, "the header is untouched")
        self.assertEqual(",".join(rows[1]), w.our_row, "our rows are untouched")
        for r in rows:
            self.assertEqual(len(r), len(runner.COLUMNS))
        peer_rows = w.peer_rows()
        # fake_raises: 2 (MoE skipped); fake_ok: 2 (MoE skipped); fake_zero: 1 (K = 2, MoE skipped)
        self.assertEqual([(r["variant"], r["M"]) for r in peer_rows],
                         [("fake_raises", "20"), ("fake_raises", "3"), ("fake_ok", "20"), ("fake_ok", "3"),
                          ("fake_zero", "20")])  # fmt: skip
        ok = peer_rows[2]
        self.assertEqual(ok["shape"], 'odd,"name"', "a field with a comma and quotes reads back")
        self.assertEqual(ok["check"], "pass")
        self.assertEqual((ok["family"], ok["l2"], ok["pdl"], ok["experts"]), ("peer", "cold", "0", "0"))
        self.assertEqual(float(ok["median_us"]), 12.5)
        self.assertAlmostEqual(float(ok["frac_of_floor"]), 10.0 / 12.5, places=4)
        self.assertAlmostEqual(float(ok["speedup_vs_baseline"]), 40.0 / 12.5, places=4)
        nbytes = 100 * 300 * (4 / 8 + 1 / 32) + 20 * (300 + 100) * 2
        self.assertAlmostEqual(float(ok["gb_per_s"]), nbytes / 12.5e-6 / 1e9, places=2)
        self.assertAlmostEqual(float(ok["tflops"]), 2 * 20 * 100 * 300 / 12.5e-6 / 1e12, places=4)
        self.assertLess(float(ok["max_err_over_bound"]), 1.0)
        self.assertEqual(float(peer_rows[3]["speedup_vs_baseline"]), 0.0, "no baseline: 0")
        self.assertIn("rows", out)
        self.assertEqual(len(out.strip().splitlines()), 1, "one summary line on stdout")

    def test_a_raising_peer_fails_its_row_and_the_run_goes_on(self):
        w = Workdir(self)
        self.run_fakes(w)
        raised = [r for r in w.peer_rows() if r["variant"] == "fake_raises"]
        self.assertEqual(len(raised), 2)
        for r in raised:
            self.assertEqual(r["check"], "fail")
            self.assertIn("RuntimeError: fake_raises", r["error"])
            self.assertEqual(r["median_us"], "0")
        self.assertTrue([r for r in w.peer_rows() if r["variant"] == "fake_ok"], "later peers still ran")

    def test_fake_zero_fails_its_check(self):
        w = Workdir(self)
        self.run_fakes(w)
        (z,) = [r for r in w.peer_rows() if r["variant"] == "fake_zero"]
        self.assertEqual(z["check"], "fail")
        self.assertGreater(float(z["max_err_over_bound"]), 1.0)
        self.assertRegex(z["error"], r"^\d+ of 1024 elements outside the bound; first C\[0,\d+\] = 0\.000000 vs ")
        self.assertGreater(float(z["median_us"]), 0, "a failed check is still timed")

    def test_unsupported_problems_are_skipped_with_a_reason(self):
        w = Workdir(self)
        self.run_fakes(w)
        st = w.status_json()["peers"]
        self.assertEqual(st["fake_ok"]["skipped"], {"MoE not wired for this peer": 1})
        self.assertEqual(st["fake_zero"]["skipped"], {"k_bits not 4": 1, "MoE not wired for this peer": 1})

    def test_a_peer_runs_on_its_own_weight_format_only(self):
        w = Workdir(self)
        awq_fp16 = dict(dense(M=3), format="awq_g128")
        awq_bf16 = dict(dense(dtype="bf16"), format="awq_g128")
        self.run_fakes(w, peers=("fake_ok", "humming_awq_g128", "humming_awq_g32"),
                       problems=[dense(), awq_fp16, awq_bf16])  # fmt: skip
        self.assertEqual([(r["variant"], r["M"]) for r in w.peer_rows()], [("fake_ok", "16")])
        st = w.status_json()["peers"]
        self.assertEqual(st["fake_ok"]["skipped"], {"format awq_g128 not kbit": 2})
        self.assertEqual(st["humming_awq_g128"]["skipped"].get("format kbit not awq_g128"), 1)
        self.assertEqual(st["humming_awq_g128"]["skipped"].get("AWQ scales are fp16: fp16 only"), 1)
        self.assertEqual(st["humming_awq_g32"]["skipped"],
                         {"format kbit not awq_g32": 1, "format awq_g128 not awq_g32": 2})  # fmt: skip

    def test_status_json(self):
        w = Workdir(self)
        self.run_fakes(w, peers=("fake_raises", "fake_ok", "fake_zero", "tinygemm_int4_g128"))
        s = w.status_json()
        self.assertEqual(s["python"].split(".")[0], "3")
        self.assertIn("torch", s)
        self.assertTrue(s["complete"])
        self.assertIsNone(s["aborted"])
        self.assertEqual(list(s["peers"]), ["fake_raises", "fake_ok", "fake_zero", "tinygemm_int4_g128"])
        for v in s["peers"].values():
            self.assertTrue({"ran", "passed", "failed", "skipped", "version", "unavailable"} <= set(v))
        self.assertEqual({k: s["peers"]["fake_ok"][k] for k in ("ran", "passed", "failed")},
                         {"ran": 2, "passed": 2, "failed": 0})  # fmt: skip
        self.assertEqual({k: s["peers"]["fake_zero"][k] for k in ("ran", "passed", "failed")},
                         {"ran": 1, "passed": 0, "failed": 1})  # fmt: skip
        self.assertEqual({k: s["peers"]["fake_raises"][k] for k in ("ran", "passed", "failed")},
                         {"ran": 2, "passed": 0, "failed": 2})  # fmt: skip
        # tinygemm is bf16 only and K = 4 only: fp16 rows are skipped with that reason, no row.
        tg = s["peers"]["tinygemm_int4_g128"]
        self.assertEqual(tg["skipped"].get("tinygemm is bf16 only"), 1)
        self.assertEqual(tg["skipped"].get("k_bits not 4"), 1)
        self.assertEqual(tg["skipped"].get("MoE not wired for this peer"), 1)
        self.assertEqual(tg["ran"], 0)

    def test_an_unavailable_peer_is_a_status_entry_not_a_crash(self):
        try:
            import importlib.util

            have = importlib.util.find_spec("humming") is not None and importlib.util.find_spec("torch") is not None
        except Exception:
            have = False
        if have:
            self.skipTest("humming-kernels is installed here")
        w = Workdir(self)
        rc, out, _ = w.run(w.spec(["humming_u4_g128", "fake_ok"], [dense(N=128)]))
        self.assertEqual(rc, 0)
        st = w.status_json()["peers"]["humming_u4_g128"]
        self.assertTrue(st["unavailable"])
        self.assertEqual(st["ran"], 0)
        self.assertIn("unavailable: humming_u4_g128", out)
        self.assertEqual([r["variant"] for r in w.peer_rows()], ["fake_ok"])

    def test_check_disabled_rows_read_skipped(self):
        w = Workdir(self)
        self.run_fakes(w, peers=("fake_ok",), problems=[dense()],
                       check={"enabled": False, "seed": 1, "max_rows": 16})  # fmt: skip
        (r,) = w.peer_rows()
        self.assertEqual((r["check"], r["max_err_over_bound"], r["error"]), ("skipped", "0", ""))

    def test_a_missing_csv_gets_our_header_and_another_header_is_refused(self):
        w = Workdir(self)
        os.remove(w.csv)
        self.run_fakes(w, peers=("fake_ok",), problems=[dense()])
        rows = w.rows()
        self.assertEqual(rows[0], runner.COLUMNS)
        self.assertEqual(len(rows), 2)
        with open(w.csv, "w") as f:
            f.write("experiment,shape,M\n")
        rc, _, err = w.run(w.spec(["fake_ok"], [dense()]))
        self.assertEqual(rc, 2)
        self.assertIn("another header", err)


class TestPlan(unittest.TestCase):
    """`runner.py plan` (kbit-harness profile): the (peer, problem) pairs `run` would run, the
    others counted by reason; no row is written and nothing launches."""

    def test_plan_lists_the_supported_pairs_and_the_reasons(self):
        w = Workdir(self)
        problems = [dense(M=20), dense(M=3, k_bits=2), moe()]
        path = w.write(w.spec(["fake_ok", "fake_zero"], problems))
        p = subprocess.run([sys.executable, RUNNER, "plan", path], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        plan = json.loads(p.stdout)
        self.assertEqual(plan["runs"], [{"peer": "fake_ok", "problem": 0}, {"peer": "fake_ok", "problem": 1},
                                        {"peer": "fake_zero", "problem": 0}])  # fmt: skip
        self.assertEqual(plan["skipped"]["fake_ok"], {"MoE not wired for this peer": 1})
        self.assertEqual(plan["skipped"]["fake_zero"], {"k_bits not 4": 1, "MoE not wired for this peer": 1})
        self.assertEqual(len(w.rows()), 2, "plan appends no row")

    def test_profile_without_a_launch_of_its_own_fails(self):
        w = Workdir(self)
        path = w.write(w.spec(["fake_ok"], [dense()]))
        p = subprocess.run([sys.executable, RUNNER, "profile", path], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("fake_ok: has no launch of its own to profile", p.stderr)

    def test_plan_refuses_an_unknown_peer(self):
        w = Workdir(self)
        path = w.write(w.spec(["fake_ok", "marlin_u4"], [dense()]))
        p = subprocess.run([sys.executable, RUNNER, "plan", path], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown peer 'marlin_u4'", p.stderr)


class TestBound(unittest.TestCase):
    def test_ulp(self):
        self.assertEqual(chk.ulp("fp16", 1.0), 2.0**-10)
        self.assertEqual(chk.ulp("fp16", 1.5), 2.0**-10)
        self.assertEqual(chk.ulp("fp16", -3.0), 2.0**-9)
        self.assertEqual(chk.ulp("fp16", 0.0), 2.0**-24)
        self.assertEqual(chk.ulp("bf16", 1.0), 2.0**-7)
        self.assertEqual(chk.ulp("bf16", 0.0), 2.0**-133)

    def test_bound_is_that_of_format_md(self):
        b = chk.gemm_bound("fp16", 4096, 32)
        g_w = 3 * 2.0**-11 / (1 - 3 * 2.0**-11)
        n = 4096 + 32 + 64
        g_acc = n * 2.0**-23 / (1 - n * 2.0**-23)
        self.assertAlmostEqual(b.gamma, g_w + g_acc + g_w * g_acc, places=15)
        self.assertEqual((b.eta, b.u_out, b.split), (2.0**-19, 2.0**-11, 0.0))
        s = chk.gemm_bound("bf16", 4096, 32, slices=10)
        self.assertAlmostEqual(s.split, 1.01 * 100 * 2.0**-8)
        self.assertEqual(chk.element_bound(b, 0.0, 0.0, 1.0, 0.0), 2.0**-10)

    def test_the_check_fails_zeros_garbage_and_nan_and_passes_a_rounded_result(self):
        import random

        rng = random.Random(5)
        K, N = 256, 40
        a = [rng.gauss(0, 1) for _ in range(K)]
        W = [[rng.gauss(0, 1) for _ in range(K)] for _ in range(N)]
        ref = [[sum(x * y for x, y in zip(a, w)) for w in W]]
        dot = [[sum(abs(x * y) for x, y in zip(a, w)) for w in W]]
        rng_ = [[0.0] * N]
        prefix = []  # R: the range of the prefix sums at 32-element boundaries (0 included)
        for w in W:
            sums = [0.0]
            for k0 in range(0, K, 32):
                sums.append(sums[-1] + sum(x * y for x, y in zip(a[k0 : k0 + 32], w[k0 : k0 + 32])))
            prefix.append(max(sums) - min(sums))
        prefix = [prefix]
        asum = [sum(abs(x) for x in a)]
        for dtype in ("fp16", "bf16"):
            b = chk.gemm_bound(dtype, K)
            from harness.peers.fake_peer import round_to

            good = chk.check_rows_py(b, [0], ref, dot, asum, rng_, [[round_to(dtype, c) for c in ref[0]]])
            self.assertTrue(good.passed, dtype)
            zero = chk.check_rows_py(b, [0], ref, dot, asum, rng_, [[0.0] * N])
            self.assertFalse(zero.passed, dtype)
            self.assertGreater(zero.violations, N // 2)
            garbage = chk.check_rows_py(b, [0], ref, dot, asum, rng_, [[rng.gauss(0, 16) for _ in range(N)]])
            self.assertFalse(garbage.passed, dtype)
            nan = chk.check_rows_py(b, [0], ref, dot, asum, rng_, [[math.nan] + [round_to(dtype, c) for c in ref[0][1:]]])
            self.assertFalse(nan.passed)
            self.assertEqual((nan.violations, nan.nonfinite, nan.max_err_over_bound), (1, 1, math.inf))
            # Even with humming's stream-K term (10 slices in bf16) zeros fail.
            wide = chk.gemm_bound(dtype, K, slices=10)
            self.assertFalse(chk.check_rows_py(wide, [0], ref, dot, asum, prefix, [[0.0] * N]).passed, dtype)


# docs/awq_format.md, "Golden vectors" (reference/tests/test_awq.cpp): N = 8, K = 32, G = 32.
def golden_awq_w():
    cols = [
        lambda k: (k % 16 - 5) / 8,
        lambda k: (10 - k % 16) / 16,
        lambda k: (k - 5) / 8 if k <= 30 else 0.0,
        lambda k: 0.0,
        lambda k: (k - 16) / 32 if k <= 30 else 0.5,
        lambda k: float(20 + k % 16),
        lambda k: -((3 * k) % 16) / 2,
        lambda k: ((7 * k) % 16) * 2.0,
    ]
    return [[f(k) for k in range(32)] for f in cols]


GOLDEN_QWEIGHT = [
    0x0F0FF000, 0x7F0EC101, 0xEF0D9102, 0x5F0C6213, 0xCF0B3224, 0x3F0A0325, 0xAF09D326, 0x1F08A437,
    0x8F077448, 0xFF064549, 0x6F05154A, 0xDF04E65B, 0x4F03B66C, 0xBF02876D, 0x2F01576E, 0x9F00287F,
    0x0F0FF880, 0x7F0EC881, 0xEF0D9982, 0x5F0C6993, 0xCF0B3AA4, 0x3F0A0AA5, 0xAF09DBA6, 0x1F08ABB7,
    0x8F077CC8, 0xFF064CC9, 0x6F051DCA, 0xDF04EDDB, 0x4F03BEEC, 0xBF028EED, 0x2F015FEE, 0x9F002F2F,
]  # fmt: skip
GOLDEN_QZEROS = 0x0005F825
GOLDEN_SCALES = [0x3000, 0x2C00, 0x3400, 0x000B, 0x2C44, 0x3C00, 0x3800, 0x4000]


def _have_torch():
    try:
        import torch  # noqa: F401

        return True
    except Exception:  # noqa: BLE001
        return False


class TestAwqFormat(unittest.TestCase):
    """harness/peers/awq_format.py: the AWQ peer's quantizer and packing (docs/awq_format.md)."""

    def test_golden_words(self):
        qweight, qzeros, scales = awq.quantize_py(golden_awq_w(), 8, 32, 32)
        self.assertEqual([w & 0xFFFFFFFF for w in qweight], GOLDEN_QWEIGHT)
        self.assertEqual([z & 0xFFFFFFFF for z in qzeros], [GOLDEN_QZEROS])
        self.assertEqual(scales, GOLDEN_SCALES)
        self.assertLess(qweight[8], 0, "0x8F077448: a top nibble of 8 or more is a negative int32")
        deq = awq.dequantize_py(qweight, qzeros, scales, 8, 32, 32)
        self.assertEqual(deq[0], golden_awq_w()[0], "column 0 is on its grid: exact")
        self.assertEqual(deq[5], [15.0] * 32, "an all-positive group clips at q = 15 (zero 0, s = 1)")

    def test_nibble_order(self):
        self.assertEqual(awq.pack_nibbles(list(range(8))) & 0xFFFFFFFF, 0x75316420)
        for c in range(8):
            v = [0] * 8
            v[c] = 0xF
            self.assertEqual(awq.pack_nibbles(v) & 0xFFFFFFFF, 0xF << (4 * awq.REVERSE[c]))
            self.assertEqual(awq.unpack_nibbles(awq.pack_nibbles(v)), v)
        for i in range(8):
            self.assertEqual(awq.REVERSE[awq.ORDER[i]], i)
        with self.assertRaisesRegex(awq.AwqFormatError, "value 16 of column 2"):
            awq.pack_nibbles([0, 0, 16, 0, 0, 0, 0, 0])

    def test_refusals_name_the_value(self):
        w = [[0.0] * 64 for _ in range(8)]
        for args, message in [
            ((w, 8, 64, 48), "group size 48 is not one of 32, 64, 128"),
            (([[0.0] * 64] * 12, 12, 64, 32), "N_out = 12 must be a positive multiple of 8"),
            ((w, 8, 64, 128), "K_in = 64 must be a positive multiple of the group size 128"),
        ]:
            with self.subTest(message=message), self.assertRaisesRegex(awq.AwqFormatError, re.escape(message)):
                awq.quantize_py(*args)
        bad = [row[:] for row in w]
        bad[3][17] = math.inf
        with self.assertRaisesRegex(awq.AwqFormatError, re.escape("w_kbit[n = 3][k = 17] is inf")):
            awq.quantize_py(bad, 8, 64, 32)
        huge = [row[:] for row in w]
        huge[1][0] = 2.0e6  # range 2e6: s32 = 133333 > 65504
        with self.assertRaisesRegex(awq.AwqFormatError, "group 0 .k 0..31., column 1 overflows fp16"):
            awq.quantize_py(huge, 8, 64, 32)

    @unittest.skipUnless(_have_torch(), "torch is not importable here")
    def test_torch_port_is_word_for_word_the_python_one(self):
        import random

        import torch

        qw, qz, sc = awq.quantize_torch(torch.tensor(golden_awq_w(), dtype=torch.float32), 32).values()
        self.assertEqual([w & 0xFFFFFFFF for w in qw.flatten().tolist()], GOLDEN_QWEIGHT)
        self.assertEqual(qz.flatten().tolist(), [GOLDEN_QZEROS])
        self.assertEqual(sc.view(torch.int16).flatten().tolist(), GOLDEN_SCALES)
        rng = random.Random(11)
        for N, K, G, sigma in [(16, 128, 32, 1.0), (8, 256, 128, 1e-5), (24, 128, 64, 300.0)]:
            with self.subTest(N=N, K=K, G=G, sigma=sigma):
                w = [[awq.f32(rng.gauss(0, sigma)) for _ in range(K)] for _ in range(N)]
                want = awq.quantize_py(w, N, K, G)
                t = awq.quantize_torch(torch.tensor(w, dtype=torch.float32), G)
                self.assertEqual(t["qweight"].flatten().tolist(), want[0])
                self.assertEqual(t["qzeros"].flatten().tolist(), want[1])
                self.assertEqual([b & 0xFFFF for b in t["scales"].view(torch.int16).flatten().tolist()], want[2])
                deq = awq.dequantize_rows_torch(t["qweight"], t["qzeros"], t["scales"], G, 0, K).t().tolist()
                self.assertEqual(deq, awq.dequantize_py(*want, N, K, G))
        words = [0x12345678, awq.to_int32(0xF1234568), -1, 0]
        want = [awq.to_int32(int(f"{w & 0xFFFFFFFF:08x}"[::-1], 16)) for w in words]
        self.assertEqual(want[0], awq.to_int32(0x87654321))
        got = awq.reverse_nibbles_torch(torch.tensor(words, dtype=torch.int32)).tolist()
        self.assertEqual(got, want)


@unittest.skipUnless(os.environ.get("KBIT_HARNESS"), "KBIT_HARNESS (the kbit-harness binary) is not set")
class TestAwqDump(unittest.TestCase):
    """kbit-harness format --awq --dump: the files awq_parity.py reads, against the Python port."""

    N, K, G = 64, 256, 32

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = os.path.join(cls.tmp.name, "dump")
        cmd = [os.environ["KBIT_HARNESS"], "format", "--awq", "--rows", str(cls.N), "--k-dim", str(cls.K),
               "--group", str(cls.G), "--seed", "5", "--dump", cls.dir]  # fmt: skip
        cls.proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def read(self, name, code):
        import array

        a = array.array(code)
        with open(os.path.join(self.dir, name), "rb") as f:
            a.frombytes(f.read())
        return list(a)

    def test_the_dump_is_the_python_ports_and_its_reference(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        self.assertIn("dump: ", self.proc.stdout)
        with open(os.path.join(self.dir, "meta.json")) as f:
            meta = json.load(f)
        N, K, G, M = self.N, self.K, self.G, meta["M"]
        self.assertEqual((meta["N"], meta["K_in"], meta["group"], meta["dtype"], M), (N, K, G, "fp16", 16))
        w = [awq.half_value(h) for h in self.read("w.f16", "H")]
        qweight, qzeros, scales = awq.quantize_py(w, N, K, G)
        self.assertEqual(self.read("qweight.i32", "i"), qweight)
        self.assertEqual(self.read("qzeros.i32", "i"), qzeros)
        self.assertEqual(self.read("scales.f16", "H"), scales)
        # C_ref, R and the bound from the spec's dequantization, in double (the C++ sums in
        # another order: agreement to rounding, relative to sum |a w|).
        deq = awq.dequantize_py(qweight, qzeros, scales, N, K, G)
        a = [awq.half_value(h) for h in self.read("a.f16", "H")]
        c_ref, bound, rng = self.read("c_ref.f64", "d"), self.read("bound.f64", "d"), self.read("prefix_range.f64", "d")
        b = chk.gemm_bound("fp16", K, K // G)
        self.assertAlmostEqual(b.gamma, meta["bound"]["gamma"], places=15)
        for m in range(M):
            row = a[m * K : (m + 1) * K]
            asum = sum(abs(x) for x in row)
            for n in range(N):
                prods = [x * y for x, y in zip(row, deq[n])]
                S = sum(abs(p) for p in prods)
                sums = [0.0]
                for k0 in range(0, K, 32):
                    sums.append(sums[-1] + sum(prods[k0 : k0 + 32]))
                i = m * N + n
                self.assertLessEqual(abs(c_ref[i] - sums[-1]), 1e-13 * S, (m, n))
                self.assertLessEqual(abs(rng[i] - (max(sums) - min(sums))), 1e-13 * S, (m, n))
                want = chk.element_bound(b, S, asum, c_ref[i], 0.0)
                self.assertLessEqual(abs(bound[i] - want), 1e-12 * want, (m, n))

    def test_the_parity_script_reads_it_and_refuses_a_truncated_file(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stdout + self.proc.stderr)
        if not _have_torch():  # with torch it would run the GPU check: the gpu ctest's job
            p = subprocess.run([sys.executable, PARITY, self.dir], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 77, p.stdout + p.stderr)
            self.assertRegex(p.stdout, r"^skipped: torch is not importable")
        bad = os.path.join(self.tmp.name, "truncated")
        shutil.copytree(self.dir, bad)
        with open(os.path.join(bad, "scales.f16"), "r+b") as f:
            f.truncate(100)
        p = subprocess.run([sys.executable, PARITY, bad], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("scales.f16' holds 100 bytes; fp16 [8, 64] needs 1024", p.stderr)
        p = subprocess.run([sys.executable, PARITY, os.path.join(self.tmp.name, "none")], capture_output=True,
                           text=True, timeout=60)  # fmt: skip
        self.assertEqual(p.returncode, 2)
        self.assertIn("cannot read", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
