#!/usr/bin/env python3
"""CPU tests of the tools that read results/<experiment>/CURRENT (harness/tools/current.py,
results_md.py, check_paths.py) and of merge_runs.py's refusal of parts from two GPU models, on the
fixture tree harness/tests/fixtures/gpus/: gemv has a run on an H100 and one on an H200 of one
build (its CURRENT names both), envelope one on the H200 (its CURRENT a run folder alone).

    python3 harness/tests/test_current.py
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "harness", "tools")
FIXTURES = os.path.join(ROOT, "harness", "tests", "fixtures", "gpus")
H100_RUN = "20260201T000000Z_NVIDIA_H100_80GB_HBM3_abc1234"
H200_RUN = "20260202T000000Z_NVIDIA_H200_abc1234"
sys.path.insert(0, TOOLS)

import current  # noqa: E402


def tool(script, *args):
    return subprocess.run([sys.executable, os.path.join(TOOLS, script), *args],
                          capture_output=True, text=True)


class Scratch(unittest.TestCase):
    """A copy of the fixture tree in a temporary folder, to break."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.results = os.path.join(self.dir, "results")
        shutil.copytree(FIXTURES, self.results)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write_current(self, exp, text):
        with open(os.path.join(self.results, exp, "CURRENT"), "w") as f:
            f.write(text)

    def refused(self, exp, words):
        with self.assertRaises(current.CurrentError) as e:
            current.read_current(os.path.join(self.results, exp), "results/%s/CURRENT" % exp)
        self.assertIn(words, str(e.exception))


class ReadCurrent(Scratch):
    def test_one_run_per_gpu(self):
        runs = current.read_current(os.path.join(FIXTURES, "gemv"))
        self.assertEqual([(g, d, r, n) for g, d, r, _, n in runs],
                         [("NVIDIA_H100_80GB_HBM3", "NVIDIA H100 80GB HBM3", H100_RUN, 2),
                          ("NVIDIA_H200", "NVIDIA H200", H200_RUN, 3)])

    def test_a_run_folder_alone_takes_its_gpu_from_run_json(self):
        runs = current.read_current(os.path.join(FIXTURES, "envelope"))
        self.assertEqual([(g, d) for g, d, _, _, _ in runs], [("NVIDIA_H200", "NVIDIA H200")])

    def test_a_missing_run_is_refused_with_file_and_line(self):
        self.write_current("gemv", "NVIDIA_H100_80GB_HBM3 %s\nNVIDIA_H200 20260309T000000Z_gone\n"
                           % H100_RUN)
        self.refused("gemv", "results/gemv/CURRENT:2: names '20260309T000000Z_gone', which is not in")

    def test_two_runs_of_one_gpu_are_refused(self):
        os.rename(os.path.join(self.results, "gemv", H200_RUN),
                  os.path.join(self.results, "gemv", "second"))
        shutil.copytree(os.path.join(self.results, "gemv", H100_RUN),
                        os.path.join(self.results, "gemv", H200_RUN))
        self.write_current("gemv", "%s\n\n%s\n" % (H100_RUN, H200_RUN))
        self.refused("gemv", "results/gemv/CURRENT:3: a second run of GPU NVIDIA_H100_80GB_HBM3 "
                             "(line 1 names one)")

    def test_malformed_lines_are_refused(self):
        self.write_current("gemv", "NVIDIA H200 %s\n" % H200_RUN)
        self.refused("gemv", "results/gemv/CURRENT:1: 'NVIDIA H200 %s' has 3 words" % H200_RUN)
        self.write_current("gemv", "NVIDIA_H200 gemv/%s\n" % H200_RUN)
        self.refused("gemv", "CURRENT:1: 'gemv/%s' is not the name of a run folder" % H200_RUN)
        self.write_current("gemv", "NVIDIA:H200 %s\n" % H200_RUN)
        self.refused("gemv", "CURRENT:1: GPU 'NVIDIA:H200' is not written as run folders write it")
        self.write_current("gemv", "# nothing yet\n\n")
        self.refused("gemv", "results/gemv/CURRENT names no run")

    def test_a_line_naming_another_gpu_than_its_run_is_refused(self):
        self.write_current("gemv", "NVIDIA_H200 %s\n" % H100_RUN)
        self.refused("gemv", "CURRENT:1: names GPU NVIDIA_H200, but run %s was timed on "
                             "'NVIDIA H100 80GB HBM3'" % H100_RUN)


class ResultsMd(Scratch):
    def render(self, *args):
        out = os.path.join(self.dir, "results.md")
        r = tool("results_md.py", "--results", self.results, "--out", out, *args)
        text = open(out).read() if r.returncode == 0 else ""
        return r, text

    def test_one_section_per_gpu(self):
        r, text = self.render()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("GPUs: NVIDIA H100 80GB HBM3 (1 experiments); NVIDIA H200 (2 experiments)",
                      text)
        h100, h200 = text.index("\n## NVIDIA H100 80GB HBM3\n"), text.index("\n## NVIDIA H200\n")
        self.assertLess(h100, h200)
        self.assertIn("results/gemv/%s` on NVIDIA H100 80GB HBM3" % H100_RUN, text[h100:h200])
        self.assertNotIn(H200_RUN, text[h100:h200])
        self.assertIn("### envelope (NVIDIA H200)", text[h200:])
        self.assertIn("### gemv (NVIDIA H200)", text[h200:])
        self.assertIn("results/gemv/%s` on NVIDIA H200" % H200_RUN, text[h200:])

    def test_one_gpu(self):
        r, text = self.render("--gpu", "NVIDIA H200")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("H100", text)
        self.assertIn("### gemv (NVIDIA H200)", text)
        r, _ = self.render("--gpu", "NVIDIA B200")
        self.assertEqual(r.returncode, 2)
        self.assertIn("names a run on GPU 'NVIDIA B200'", r.stderr)

    def test_a_current_naming_a_missing_run_is_refused(self):
        self.write_current("envelope", "NVIDIA_H200 20260309T000000Z_gone\n")
        r, _ = self.render()
        self.assertEqual(r.returncode, 2)
        self.assertIn("results/envelope/CURRENT:1: names '20260309T000000Z_gone'", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "results.md")))


class CheckPaths(Scratch):
    def test_every_current_run_is_present(self):
        os.makedirs(os.path.join(self.dir, "docs"))
        r = tool("check_paths.py", self.dir)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("3 CURRENT runs, all present", r.stdout)
        shutil.rmtree(os.path.join(self.results, "gemv", H200_RUN))
        r = tool("check_paths.py", self.dir)
        self.assertEqual(r.returncode, 1)
        self.assertIn("results/gemv/CURRENT:3: names '%s', which is not in" % H200_RUN, r.stdout)


class MergeTwoGpus(Scratch):
    def test_parts_from_two_gpu_models_are_refused_naming_both(self):
        a, b = (os.path.join(self.results, "gemv", r) for r in (H100_RUN, H200_RUN))
        r = tool("merge_runs.py", a, b)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("different GPU models (%s: NVIDIA H100 80GB HBM3; %s: NVIDIA H200)"
                      % (H100_RUN, H200_RUN), r.stderr)
        self.assertEqual(sorted(os.listdir(os.path.dirname(a))), sorted(["CURRENT", H100_RUN, H200_RUN]))
        self.assertEqual(sorted(os.listdir(a)), ["results.csv", "run.json"])


if __name__ == "__main__":
    unittest.main()
