#!/usr/bin/env python3
"""Every link to a heading of a Markdown file of the tree must land on a heading that exists.

Scans what harness/tools/check_paths.py scans (Markdown whole, the comments of code): in Markdown
the links `[text](FILE.md#anchor)`, `[text](#anchor)` and the definitions `[label]: FILE.md#anchor`
(FILE relative to the linking file's folder), in comments the words `PATH.md#anchor` (PATH relative
to the file's folder or to the root). Links with a scheme (https://...) are not checked. Exits 1
listing each link whose file is missing or has no heading of that anchor, with the file and line
that names it.

A heading's anchor follows GitHub's rule: the heading's text without its Markdown (backticks,
emphasis, link targets, HTML tags), lowercased, every character other than a letter, a digit, _,
- or a space removed, each space turned into -; a repeated anchor gets -1, -2, ... in order.
`<a id="x">` / `<a name="x">` anchors count too. Headings inside ``` fences do not count.
Standard library only (a ctest runs it).

    python3 harness/tools/check_anchors.py [SOURCE_DIR] [FILE...]

FILE...: scan these files instead (for trying the check on a scratch copy).
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_paths  # noqa: E402  (the same tree and the same comments)

HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")
HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
INLINE_LINK = re.compile(r"\]\(\s*<?([^()\s>]*#[^()\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S*#\S*?)>?(?:\s|$)")
COMMENT_LINK = re.compile(r"(?<![A-Za-z0-9_./-])([A-Za-z0-9_./-]+\.md)#([A-Za-z0-9_-]+)")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def slug(text):
    """GitHub's anchor of a heading's text (before the -1, -2 of repeats)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [text](url) -> text
    text = re.sub(r"<[^>]+>", "", text)  # HTML tags
    text = text.replace("`", "")
    text = re.sub(r"(\*{1,3})(\S(?:.*?\S)?)\1", r"\2", text)  # emphasis; _x_ only between words
    text = re.sub(r"(?<![A-Za-z0-9])(_{1,3})(\S(?:.*?\S)?)\1(?![A-Za-z0-9])", r"\2", text)
    text = text.strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in "_- ")
    return text.replace(" ", "-")


def anchors(path):
    """The anchors of a Markdown file's headings and HTML anchors."""
    out, seen, fenced = set(), {}, False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            out.update(HTML_ANCHOR.findall(line))
            m = HEADING.match(line.rstrip("\n"))
            if not m:
                continue
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            out.add(s if n == 0 else f"{s}-{n}")
    return out


def links(path):
    """(line number, target) of each link with an anchor in a file: target = "FILE#anchor"."""
    kind = check_paths.scanned_kind(path)
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if kind == "md":
        fenced = False
        for lineno, line in enumerate(text.splitlines(), 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced:
                continue
            for m in INLINE_LINK.finditer(line):
                yield lineno, m.group(1)
            m = REF_DEF.match(line)
            if m:
                yield lineno, m.group(1)
    elif kind:
        for lineno, line in check_paths.named_lines(path, text):
            for m in COMMENT_LINK.finditer(line):
                yield lineno, f"{m.group(1)}#{m.group(2)}"


def broken_links(root, files):
    """(file, line number, target, why) of each link that does not land, and the count checked."""
    cache, broken, checked = {}, [], 0
    for f in files:
        here = os.path.dirname(os.path.abspath(f))
        for lineno, target in links(f):
            if SCHEME.match(target):
                continue
            file_part, anchor = target.split("#", 1)
            if check_paths.is_template(file_part):
                continue  # FILE.md#anchor: an example
            if file_part and not file_part.endswith(".md"):
                continue  # an anchor into a non-Markdown file is not a heading
            checked += 1
            if not file_part:
                dest = os.path.abspath(f)
            else:
                dest = os.path.normpath(os.path.join(here, file_part))
                if not os.path.exists(dest) and check_paths.scanned_kind(f) != "md":
                    dest = os.path.normpath(os.path.join(root, file_part))
            if not os.path.isfile(dest):
                broken.append((f, lineno, target, "no such file"))
                continue
            if dest not in cache:
                cache[dest] = anchors(dest)
            if anchor not in cache[dest]:
                broken.append((f, lineno, target, "no such heading"))
    return broken, checked


def main(argv):
    root = os.path.abspath(argv[1]) if len(argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    files = [os.path.abspath(f) for f in argv[2:]] or check_paths.Tree(root).scan
    broken, checked = broken_links(root, files)
    if broken:
        print(f"{len(broken)} of {checked} links to a heading do not land under {root}:")
        for f, lineno, target, why in broken:
            print(f"  {os.path.relpath(f, root)}:{lineno}: {target} ({why})")
        return 1
    print(f"{checked} links to a heading in {len(files)} files, every one lands, under {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
