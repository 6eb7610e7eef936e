#!/usr/bin/env python3
"""CPU tests of the docs checks harness/tools/check_paths.py and harness/tools/check_anchors.py on
small scratch trees: no GPU, no build.

    python3 harness/tests/test_doc_checks.py

check_paths: exit 0 when every path named in the Markdown, TOML and code comments exists; 1, with
the file, line and path, when a comment (C++/CUDA, Python comment or docstring, CMake) or a doc
names a missing file; templates, another project's paths, the build tree and code outside comments
are not judged. check_anchors: GitHub's anchor of a heading; exit 1 with the link named when a link
names a missing heading or file, 0 when every link lands.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOLS = os.path.join(ROOT, "harness", "tools")
PATHS = os.path.join(TOOLS, "check_paths.py")
ANCHORS = os.path.join(TOOLS, "check_anchors.py")
sys.path.insert(0, TOOLS)
import check_anchors  # noqa: E402

# A small tree: one variant with a kernel and a header, a doc, a config, a results run.
BASE = {
    ".gitignore": "/build*/\n/.deps/\n__pycache__/\n",
    "README.md": "# Demo\n\nSee [the variant](variants/01_x/README.md) and `docs/guide.md`.\n",
    "CMakeLists.txt": "# builds variants/01_x/x.cu\nproject(demo)\n",
    "docs/guide.md": "# Guide\n\n## Step one: `run` it\n\nThe kernel is `variants/01_x/x.cu`; "
                     "its run is results/exp/20260101T000000Z_GPU_abc1234.\n\n## Step one: `run` it\n",
    "variants/01_x/README.md": "# Variant 01\n\nCode: `x.cu`, `x.hpp`; "
                               "[guide](../../docs/guide.md#step-one-run-it).\n",
    "variants/01_x/x.cu": "// Variant 01 (x.hpp): the kernel; common/util.cuh has the helpers.\n"
                          "#include \"variants/01_x/x.hpp\"\n"
                          "const char* s = \"variants/not_a_comment.cu\";\n",
    "variants/01_x/x.hpp": "/* Host entry of variants/01_x/x.cu. */\n#pragma once\n",
    "variants/common/util.cuh": "// helpers\n",
    "experiments/exp.toml": "# see docs/guide.md\n[shapes]\ninclude = \"shapes/s.toml\"\n",
    "experiments/shapes/s.toml": "# a shape\n",
    "harness/tool.py": '"""Reads results/<experiment>/CURRENT and results/E/RUN/results.csv."""\n'
                       "# writes harness/tool.py's output\n"
                       "x = 'harness/not_a_docstring.py'\n",
    "results/exp/20260101T000000Z_GPU_abc1234/results.csv": "a\n",
    "results/exp/20260101T000000Z_GPU_abc1234/run.json": '{"device": {"name": "GPU"}}\n',
    "results/exp/CURRENT": "GPU 20260101T000000Z_GPU_abc1234\n",
}


TREES = []


def make_tree(base, extra=None):
    d = tempfile.mkdtemp()
    TREES.append(d)
    for rel, text in {**base, **(extra or {})}.items():
        path = os.path.join(d, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return d


def run(script, root, *files):
    return subprocess.run([sys.executable, script, root, *files], capture_output=True, text=True)


class CheckPaths(unittest.TestCase):
    def check(self, extra=None):
        return run(PATHS, make_tree(BASE, extra))

    def assertMissing(self, extra, where, path):
        r = self.check(extra)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"{where}: {path}", r.stdout)

    def test_a_tree_that_names_only_its_files_passes(self):
        r = self.check()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("every path they name is present", r.stdout)

    def test_a_cuda_comment_naming_a_missing_file_fails(self):
        self.assertMissing({"variants/01_x/y.cu": "#include <x>\n// the stream (variants/gemv_stream.cuh)\n"},
                           "variants/01_x/y.cu:2", "variants/gemv_stream.cuh")

    def test_a_block_comment_naming_a_missing_file_fails(self):
        self.assertMissing({"variants/01_x/y.hpp": "/* One.\n * Two: variants/01_x/gone.hpp.\n */\n"},
                           "variants/01_x/y.hpp:2", "variants/01_x/gone.hpp")

    def test_a_bare_file_name_must_exist_beside_the_file_or_in_the_tree(self):
        self.assertMissing({"variants/01_x/y.cu": "// see stream.cuh for the ring\n"},
                           "variants/01_x/y.cu:1", "stream.cuh")
        # a bare name of a file elsewhere in the tree (the helpers' header) passes
        r = self.check({"variants/01_x/y.cu": "// see util.cuh and x.hpp\n"})
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_a_folder_relative_path_must_end_a_path_of_the_tree(self):
        self.assertMissing({"docs/more.md": "The plan is in `01_x/plan.cpp`.\n"},
                           "docs/more.md:1", "01_x/plan.cpp")
        r = self.check({"docs/more.md": "The helpers are in `common/util.cuh`.\n"})
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_a_python_comment_or_docstring_naming_a_missing_file_fails(self):
        self.assertMissing({"harness/t.py": "x = 1  # reads docs/gone.md\n"}, "harness/t.py:1",
                           "docs/gone.md")
        self.assertMissing({"harness/t.py": 'def f():\n    """Writes harness/gone/"""\n'},
                           "harness/t.py:2", "harness/gone")

    def test_a_cmake_comment_and_a_markdown_link_naming_a_missing_file_fail(self):
        self.assertMissing({"variants/CMakeLists.txt": "# every variants/*/ and variants/gone.cu\n"},
                           "variants/CMakeLists.txt:1", "variants/gone.cu")
        self.assertMissing({"variants/01_x/NOTES.md": "[x](../common/gone.cuh)\n"},
                           "variants/01_x/NOTES.md:1", "../common/gone.cuh")

    def test_a_missing_run_folder_or_file_of_a_run_fails(self):
        self.assertMissing({"docs/r.md": "Run results/exp/20260102T000000Z_GPU_def5678.\n"},
                           "docs/r.md:1", "results/exp/20260102T000000Z_GPU_def5678")
        self.assertMissing(
            {"docs/r.md": "results/exp/20260101T000000Z_GPU_abc1234/{results.csv, peers.json}\n"},
            "docs/r.md:1", "results/exp/20260101T000000Z_GPU_abc1234/peers.json")

    def test_templates_other_projects_and_code_are_not_judged(self):
        extra = {
            "docs/t.md": "results/<experiment>/<run>, results/NAME/RUN/results.csv, NAME.cu,\n"
                         "results/exp/2026..., variants/*/README.md, ./build/harness/kbit-harness,\n"
                         "aten/src/ATen/native/cuda/int4mm.cu, gate/up, fp16/bf16,\n"
                         "https://github.com/o/r/blob/main/variants/none.cu, "
                         "results/exp/20260101T000000Z_GPU_abc1234/{results.csv, run.json}.\n",
            # code outside comments: a string naming a missing file
            "variants/01_x/z.cu": "const char* p = \"variants/none.cu\";  // fine\n",
        }
        r = self.check(extra)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_files_given_are_the_only_ones_scanned(self):
        d = make_tree(BASE, {"docs/bad.md": "variants/gone.cu\n"})
        r = run(PATHS, d, os.path.join(d, "README.md"))
        self.assertEqual(r.returncode, 0, r.stdout)
        r = run(PATHS, d, os.path.join(d, "docs", "bad.md"))
        self.assertEqual(r.returncode, 1, r.stdout)

    def test_ignored_folders_and_run_data_are_not_scanned(self):
        r = self.check({"build/x.cu": "// variants/gone.cu\n",
                        ".deps/usr/include/y.hpp": "// variants/gone.cu\n",
                        "results/exp/20260101T000000Z_GPU_abc1234/notes.md": "variants/gone.cu\n"})
        self.assertEqual(r.returncode, 0, r.stdout)
        # a folder .gitignore does not name is scanned
        self.assertMissing({"extra/x.cu": "// variants/gone.cu\n"}, "extra/x.cu:1", "variants/gone.cu")


class CheckAnchors(unittest.TestCase):
    def test_slug_follows_githubs_rule(self):
        cases = {
            "F-034: Why does scalar_gemv lose the floor at K = 5 and K = 2, 3, and does a table "
            "per K win it back?": "f-034-why-does-scalar_gemv-lose-the-floor-at-k--5-and-k--2-3-"
                                  "and-does-a-table-per-k-win-it-back",
            "F-035: Does `auto` run as fast as the variant it picks?":
                "f-035-does-auto-run-as-fast-as-the-variant-it-picks",
            "F-010: Why a producer warp with a 2-stage cp.async.bulk mbarrier ring?":
                "f-010-why-a-producer-warp-with-a-2-stage-cpasyncbulk-mbarrier-ring",
            "Step **one**: [the guide](x.md)": "step-one-the-guide",
            "inline_dequant's _time_": "inline_dequants-time",
        }
        for heading, anchor in cases.items():
            self.assertEqual(check_anchors.slug(heading), anchor)

    def check(self, extra=None):
        return run(ANCHORS, make_tree(BASE, extra))

    def test_links_to_existing_headings_pass_and_repeats_count(self):
        r = self.check({"docs/more.md": "[a](guide.md#step-one-run-it) [b](guide.md#step-one-run-it-1)"
                                        " [c](#more) [d](#more-1)\n\n# More\n\n## More\n"})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_a_link_to_a_missing_heading_fails(self):
        r = self.check({"docs/more.md": "# More\n\nsee [a](guide.md#step-two)\n"})
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("docs/more.md:3: guide.md#step-two (no such heading)", r.stdout)
        r = self.check({"docs/more.md": "# More\n\n[a](#less)\n"})
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("docs/more.md:3: #less (no such heading)", r.stdout)

    def test_a_link_into_a_missing_file_and_a_comment_link_fail(self):
        r = self.check({"docs/more.md": "[a](gone.md#x)\n"})
        self.assertIn("docs/more.md:1: gone.md#x (no such file)", r.stdout)
        r = self.check({"variants/01_x/y.cu": "// why: docs/guide.md#step-three\n"})
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("variants/01_x/y.cu:1: docs/guide.md#step-three (no such heading)", r.stdout)
        r = self.check({"variants/01_x/y.cu": "// why: docs/guide.md#step-one-run-it\n"})
        self.assertEqual(r.returncode, 0, r.stdout)

    def test_headings_in_code_fences_do_not_count(self):
        r = self.check({"docs/more.md": "[a](#fenced)\n\n```\n# fenced\n```\n"})
        self.assertEqual(r.returncode, 1, r.stdout)


if __name__ == "__main__":
    try:
        unittest.main()
    finally:
        for d in TREES:
            shutil.rmtree(d, ignore_errors=True)
