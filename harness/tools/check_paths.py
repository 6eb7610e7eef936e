#!/usr/bin/env python3
"""Every repository path the docs and the code comments name must exist, and every
results/<experiment>/CURRENT must parse and name runs that exist (harness/tools/current.py).

Scans the source tree given as the first argument (default: this script's tree): Markdown files and
TOML configs whole; in C++/CUDA files (.cu .cuh .cpp .hpp .h) the // and /* */ comments; in Python
files the # comments and the docstrings; in CMake and shell files the # comments. The folders the
root's .gitignore names (build trees, dependencies, logs), results/ (run data) and the test
fixtures are not scanned. Exits 1 listing each named path missing from the tree, with the file and
line that names it.

What counts as a named path (a word of path characters; URLs are left out):

* a repository path: it starts with a top-level folder of the tree (reference/ variants/ harness/
  experiments/ results/ docs/ .ci/ ...): it must exist under the root;
* a relative path: one starting with ../ must exist relative to the naming file's folder (one that
  leaves the source tree is not checked); one starting with ./ may exist there, else it is judged
  without the ./ (./build/... names the build tree, which is not checked);
* a path whose first folder is a folder of the tree (common/pdl.cuh, 04_scalar_gemv/plan.cpp):
  it must exist relative to the naming file's folder or end some path of the tree;
* a file name with a source extension (.cu .cuh .cpp .hpp .h .py .md .toml .cmake .sh): it must
  exist in the naming file's folder or be the name of some file of the tree.

A template is skipped: a path with `*`, `$`, a `<...>` placeholder, an ellipsis (`2026...`), or a
part in capitals (NAME, RUN, E: any word of capitals, digits and _ other than CURRENT and README).
RUN/{a, b} names RUN/a and RUN/b. ALLOWED lists the few names that are deliberately not in the
tree. Standard library only (a ctest runs it).

    python3 harness/tools/check_paths.py [SOURCE_DIR] [FILE...]

FILE...: scan these files instead (for trying the check on a scratch copy); the CURRENT files of
SOURCE_DIR are read either way.
"""
import fnmatch
import io
import os
import re
import sys
import tokenize

from current import CurrentError, current_files, read_current

# Names that are deliberately not in the tree: another project's file, examples of a name.
ALLOWED = {
    "scheduler.cuh",  # humming-kernels' include/humming/scheduler.cuh (docs/peers.md)
    "experiments/x.toml",  # an example of a config's name in a message
    "variants/NN_name",  # the folder of a new variant (docs/adding_a_variant.md)
    "variants/NN_name/README.md",
}
SOURCE_EXT = (".cu", ".cuh", ".cpp", ".hpp", ".h", ".py", ".md", ".toml", ".cmake", ".sh")
C_EXT = (".cu", ".cuh", ".cpp", ".hpp", ".h")
HASH_EXT = (".cmake", ".sh")
# Folders never walked: the folders .gitignore names (build trees, dependencies, logs) and these.
SKIP_DIRS = {".git", "__pycache__"}
# Folders walked for their names but not scanned: run data, test fixtures.
SKIP_PATHS = {"results", os.path.join("harness", "tests", "fixtures")}
REAL_CAPS = {"CURRENT", "README"}  # the tree's own names in capitals: not placeholders

URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
# A word of path characters not inside a longer word, with at most one {a,b} group.
WORD = re.compile(r"(?<![A-Za-z0-9_./$<>*{}-])[A-Za-z0-9_.<>*$-][A-Za-z0-9_./<>*$-]*"
                  r"(?:\{[^}\n]*\}[A-Za-z0-9_./-]*)?")
TEMPLATE = re.compile(r"[*<>$]|\.\.\.")
CAPS = re.compile(r"^[A-Z][A-Z0-9_]*$")


def ignored_dirs(root):
    """(pattern, at the root only) of each folder pattern of the root's .gitignore (/build*/)."""
    out = []
    try:
        with open(os.path.join(root, ".gitignore")) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith(("#", "!")) and line.endswith("/"):
                    out.append((line.strip("/"), line.startswith("/")))
    except OSError:
        pass
    return out


def not_scanned(rel):
    """Whether a folder's files are left out of the scan (run data, fixtures)."""
    return any(rel == s or rel.startswith(s + os.sep) for s in SKIP_PATHS)


class Tree:
    """The source tree: its top-level names, its folder names and the paths of its files."""

    def __init__(self, root):
        self.root = root
        self.top = set()  # the names at the root
        self.folders = set()  # every folder name outside results/ and the fixtures
        self.paths = set()  # repository-relative paths of files and folders, "/" separated
        self.names = set()  # file names
        self.scan = []  # files to scan
        ignored = ignored_dirs(root)
        for d, dirs, files in os.walk(root):
            rel = os.path.relpath(d, root)
            rel = "" if rel == "." else rel
            dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not any(
                fnmatch.fnmatch(x, p) and (not at_root or not rel) for p, at_root in ignored))
            for x in dirs + files:
                self.paths.add(os.path.join(rel, x).replace(os.sep, "/"))
                if not rel:
                    self.top.add(x)
            self.names.update(files)
            if not_scanned(rel):
                continue
            self.folders.update(x for x in dirs if not not_scanned(os.path.join(rel, x)))
            self.scan.extend(os.path.join(d, f) for f in files
                             if scanned_kind(os.path.join(d, f)))
        self.scan.sort()

    def ends_some_path(self, p):
        return any(q == p or q.endswith("/" + p) for q in self.paths)


def scanned_kind(path):
    """"md", "toml", "c", "py", "hash" (# comments) or None."""
    name = os.path.basename(path)
    if name.endswith(".md"):
        return "md"
    if name.endswith(".toml"):
        return "toml"
    if name.endswith(C_EXT):
        return "c"
    if name.endswith(".py"):
        return "py"
    if name.endswith(HASH_EXT) or name == "CMakeLists.txt":
        return "hash"
    if "." not in name:  # a script without extension (.ci/run): its #! line says
        try:
            with open(path, "rb") as f:
                first = f.readline()
        except OSError:
            return None
        if first.startswith(b"#!") and b"sh" in first:
            return "hash"
    return None


def c_comments(text):
    """(line number, text) of each line of the // and /* */ comments of C++/CUDA source."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i + 2:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k, part in enumerate(text[i + 2:j].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, j)
            i = j
        elif text[i] in "\"'":
            q, j = text[i], i + 1
            if q == "'" and i > 0 and text[i - 1].isalnum():  # 1'000: a digit separator
                i += 1
                continue
            while j < n and text[j] != q and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            if text[i] == "\n":
                line += 1
            i += 1
    return out


def hash_comments(text):
    """(line number, text after #) of each # comment outside quotes."""
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        quote = None
        for k, ch in enumerate(line):
            if quote:
                if ch == quote:
                    quote = None
            elif ch in "\"'":
                quote = ch
            elif ch == "#":
                out.append((lineno, line[k + 1:]))
                break
    return out


def py_comments(text):
    """(line number, text) of the # comments and the docstrings (statement-level strings)."""
    out = []
    prev = tokenize.NEWLINE  # the last token but comments and non-logical line ends
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string[1:]))
            elif tok.type == tokenize.STRING and prev in (tokenize.NEWLINE, tokenize.INDENT,
                                                          tokenize.DEDENT):
                for k, part in enumerate(tok.string.split("\n")):
                    out.append((tok.start[0] + k, part))
            if tok.type not in (tokenize.COMMENT, tokenize.NL):
                prev = tok.type
    except (tokenize.TokenError, SyntaxError):
        return hash_comments(text)
    return out


def named_lines(path, text):
    kind = scanned_kind(path)
    if kind == "c":
        return c_comments(text)
    if kind == "py":
        return py_comments(text)
    if kind == "hash":
        return hash_comments(text)
    return list(enumerate(text.splitlines(), 1))  # Markdown and TOML: all of it


def words(line):
    """Each path-like word of a line but templates, {a, b} expanded, trailing punctuation dropped."""
    line = URL.sub(lambda m: " " * len(m.group(0)), line)
    for m in WORD.finditer(line):
        w = m.group(0)
        if "{" in w:  # RUN/{results.csv, run.json}: each file
            head, rest = w.split("{", 1)
            inside, tail = rest.split("}", 1)
            items = [head + x.strip() + tail for x in inside.split(",")]
        else:
            items = [w]
        for x in items:
            if TEMPLATE.search(x):  # before the trailing dots go: 2026... is a template
                continue
            x = x.rstrip(".,:;-")
            if x:
                yield x


def is_template(p):
    if TEMPLATE.search(p) or "//" in p:
        return True
    for part in p.split("/"):
        stem = part.split(".")[0]
        if stem and CAPS.match(stem) and stem not in REAL_CAPS:
            return True
    return False


def check_word(tree, naming_dir, p):
    """None when p is not a path this check judges (or it exists); else the path as named."""
    if p in ALLOWED or p.rstrip("/") in ALLOWED or is_template(p):
        return None
    here = os.path.relpath(naming_dir, tree.root)
    here = "" if here == "." else here
    if p.startswith("./") and os.path.exists(os.path.join(naming_dir, p)):
        return None
    while p.startswith("./"):  # ./build/...: as from the root (a shell command's folder)
        p = p[2:]
    if p.startswith("../"):
        rel = os.path.normpath(os.path.join(here, p))
        first = rel.split(os.sep)[0]
        if rel.startswith("..") or first not in tree.top:
            return None  # outside the source tree (./build/...)
        return None if os.path.exists(os.path.join(tree.root, rel)) else p
    parts = [s for s in p.split("/") if s]
    if not parts or parts[0] in (".", ".."):
        return None
    if "/" in p and parts[0] in tree.top:
        return None if os.path.exists(os.path.join(tree.root, *parts)) else p
    if "/" in p:
        if parts[0] not in tree.folders:
            return None  # another project's path, or prose (gate/up, fp16/bf16)
        q = "/".join(parts)
        if os.path.exists(os.path.join(naming_dir, *parts)) or tree.ends_some_path(q):
            return None
        return p
    if not p.endswith(SOURCE_EXT) or p.startswith("."):
        return None
    if os.path.exists(os.path.join(naming_dir, p)) or p in tree.names:
        return None
    return p


def missing_paths(tree, files):
    """(file, line number, path) of each named path that does not exist, and the count checked."""
    missing, checked = [], 0
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for lineno, line in named_lines(f, text):
            for w in words(line):
                checked += 1
                bad = check_word(tree, os.path.dirname(os.path.abspath(f)), w)
                if bad:
                    missing.append((f, lineno, bad))
    return missing, checked


def main(argv):
    root = os.path.abspath(argv[1]) if len(argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    tree = Tree(root)
    files = [os.path.abspath(f) for f in argv[2:]] or tree.scan
    missing, checked = missing_paths(tree, files)
    bad_current, runs = [], 0
    for exp in current_files(os.path.join(root, "results")):
        try:
            runs += len(read_current(os.path.join(root, "results", exp), f"results/{exp}/CURRENT"))
        except CurrentError as e:
            bad_current.append(str(e))
    if missing:
        print(f"{len(missing)} paths named in the docs and comments do not exist under {root}:")
        for f, lineno, p in missing:
            print(f"  {os.path.relpath(f, root)}:{lineno}: {p}")
    if bad_current:
        print(f"{len(bad_current)} results/<experiment>/CURRENT files under {root} are refused:")
        for m in bad_current:
            print("  " + m)
    if missing or bad_current:
        return 1
    print(f"{checked} words of {len(files)} files checked; every path they name is present "
          f"under {root}; {runs} CURRENT runs, all present")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
