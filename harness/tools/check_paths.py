#!/usr/bin/env python3
"""Every results/<experiment>/<run folder>[/<file>] path the docs name must exist, and every
results/<experiment>/CURRENT must parse and name runs that exist (harness/tools/current.py).

Scans README.md, docs/*.md (and docs/*/*.md), variants/*/README.md and experiments/*.toml of the
source tree given as the first argument (default: this script's tree) for paths of that form and
exits 1 listing each one missing from the tree, with the file and line that names it. A path with
a `*`, a `<...>` placeholder or an ellipsis (`2026...`) is a template, not a citation, and is
skipped; so is a bare results/<experiment>/ (no run folder named); RUN/{a, b} names RUN/a and
RUN/b. Standard library only (a ctest runs it).

    python3 harness/tools/check_paths.py [SOURCE_DIR] [FILE...]

FILE...: scan these files instead (for trying the check on a scratch copy); the CURRENT files of
SOURCE_DIR are read either way.
"""
import glob
import os
import re
import sys

from current import CurrentError, current_files, read_current

# "results/" not inside a longer word (../results/ and ./results/ count), then path characters and
# at most one {a,b} group. Placeholders (* < > ...) are taken in so that a template is seen whole.
PATH = re.compile(r"(?<![A-Za-z0-9_.-])results/[A-Za-z0-9_.*<>/-]+(?:\{[^}]*\}[A-Za-z0-9_./-]*)?")
TEMPLATE = re.compile(r"[*<>]|\.\.\.")  # "2026..." elides the rest: a template too


def doc_files(root):
    pats = ["README.md", "docs/*.md", "docs/*/*.md", "variants/*/README.md", "experiments/*.toml"]
    out = []
    for p in pats:
        out.extend(sorted(glob.glob(os.path.join(root, p))))
    return out


def cited_paths(text):
    """(line number, path) of each results/ path of a run folder or of a file in one."""
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in PATH.finditer(line):
            p = m.group(0)
            if TEMPLATE.search(p):
                continue
            if "{" in p:  # results/E/RUN/{results.csv, run.json}: each file
                head, rest = p.split("{", 1)
                inside, tail = rest.split("}", 1)
                paths = [head + item.strip() + tail for item in inside.split(",")]
            else:
                paths = [p]
            for q in paths:
                q = q.rstrip(".-")  # sentence punctuation after a path is not part of it
                if len([s for s in q.split("/") if s]) < 3:  # results/E/: no run folder named
                    continue
                yield lineno, q.rstrip("/")


def main(argv):
    root = os.path.abspath(argv[1]) if len(argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    files = [os.path.abspath(f) for f in argv[2:]] or doc_files(root)
    missing, checked = [], 0
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for lineno, p in cited_paths(text):
            checked += 1
            if not os.path.exists(os.path.join(root, p)):
                missing.append(f"{os.path.relpath(f, root)}:{lineno}: {p}")
    bad_current, runs = [], 0
    for exp in current_files(os.path.join(root, "results")):
        try:
            runs += len(read_current(os.path.join(root, "results", exp), f"results/{exp}/CURRENT"))
        except CurrentError as e:
            bad_current.append(str(e))
    if missing:
        print(f"{len(missing)} of {checked} results/ paths named in the docs do not exist "
              f"under {root}:")
        for m in missing:
            print("  " + m)
    if bad_current:
        print(f"{len(bad_current)} results/<experiment>/CURRENT files under {root} are refused:")
        for m in bad_current:
            print("  " + m)
    if missing or bad_current:
        return 1
    print(f"{checked} results/ paths in {len(files)} files, all present under {root}; "
          f"{runs} CURRENT runs, all present")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
