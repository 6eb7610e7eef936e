#!/usr/bin/env python3
"""SASS of one kernel and its opcode mix (what the variants' README.md files report).

    cuobjdump -sass build/variants/CMakeFiles/kbit_gpu.dir/04_scalar_gemv.cu.o | \
        python3 harness/tools/sass_mix.py 'scalar_gemv_kernelILi4ELi1E6__half' [--loop] [--out f.sass]

Prints instruction counts by opcode (modifiers dropped) and by category. With --loop, only the
body of the largest backward-branch loop is counted (the steady-state k-tile iteration).
"""
import argparse
import signal
import collections
import re
import sys

# harness/ncu_csv.cpp opcode_classes() holds these regexes in this order (`kbit-harness profile`'s
# inst_w_* columns; a CPU test checks that the two agree).
CATEGORIES = [
    ("mma (HMMA)", r"^HMMA|^HGMMA"),
    ("shuffle (SHFL)", r"^SHFL"),
    ("fp32 fma/mul/add", r"^FFMA|^FMUL|^FADD"),
    ("shift / funnel (SHF)", r"^SHF|^SHL|^SHR"),
    ("logic (LOP3)", r"^LOP3|^LOP"),
    ("int add/mad (IADD3, IMAD, LEA)", r"^IADD|^IMAD|^LEA|^IABS|^IMNMX"),
    ("shared loads/stores (LDS, LDSM, STS)", r"^LDS|^LDSM|^STS"),
    ("global loads (LDG) / cp.async (LDGSTS)", r"^LDG|^LDGSTS"),
    ("global stores / atomics (STG, RED, ATOM)", r"^STG|^RED|^ATOM"),
    ("conversions / moves / select (F2F, I2F, MOV, SEL, PRMT)", r"^F2F|^F2I|^I2F|^MOV|^SEL|^PRMT|^HADD2|^HMUL2|^HFMA2"),
    ("barriers / sync (BAR, DEPBAR, WARPSYNC)", r"^BAR|^DEPBAR|^WARPSYNC|^BSSY|^BSYNC|^SYNCS"),
    ("branches / compare (BRA, ISETP, FSETP)", r"^BRA|^ISETP|^FSETP|^EXIT|^CALL|^RET"),
]


def kernel_lines(text, pattern):
    out, on = [], False
    for line in text.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            on = re.search(pattern, m.group(1)) is not None
            if on:
                name = m.group(1)
            continue
        if on:
            out.append(line)
    if not out:
        sys.exit(f"no kernel matches {pattern!r}")
    return name, out


def instructions(lines):
    ins = []
    for line in lines:
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m:
            ins.append((int(m.group(1), 16), m.group(2).strip()))
    return ins


def loop_body(ins, key):
    """The hot loop: the smallest range [target, branch] of a backward BRA that holds as many
    `key` instructions (HMMA for an MMA kernel, SHFL for a scalar one) as any loop does."""
    loops = []
    for addr, text in ins:
        m = re.search(r"BRA .*?0x([0-9a-f]+)", text)
        if m and int(m.group(1), 16) < addr:
            lo, hi = int(m.group(1), 16), addr
            n = sum(1 for a, t in ins if lo <= a <= hi and opcode(t) == key)
            loops.append((n, -(hi - lo), lo, hi))
    if not loops:
        return ins
    _, _, lo, hi = max(loops)
    return [(a, t) for a, t in ins if lo <= a <= hi]


def opcode(text):
    t = re.sub(r"^@!?U?P\w+\s+", "", text)
    return t.split()[0].split(".")[0]


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    ap = argparse.ArgumentParser()
    ap.add_argument("pattern")
    ap.add_argument("--loop", action="store_true", help="count only the hot loop")
    ap.add_argument("--key", default="HMMA", help="opcode the hot loop must hold most of (HMMA, SHFL)")
    ap.add_argument("--out")
    a = ap.parse_args()
    name, lines = kernel_lines(sys.stdin.read(), a.pattern)
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines))
    ins = instructions(lines)
    if a.loop:
        ins = loop_body(ins, a.key)
    ops = collections.Counter(opcode(t) for _, t in ins)
    total = sum(ops.values())
    print(f"{name}: {total} instructions" + (" in the hot loop" if a.loop else ""))
    for cat, rx in CATEGORIES:
        n = sum(c for o, c in ops.items() if re.match(rx, o))
        if n:
            print(f"  {cat:58s} {n:6d}  {100.0 * n / total:5.1f}%")
    other = total - sum(c for o, c in ops.items() if any(re.match(rx, o) for _, rx in CATEGORIES))
    if other:
        print(f"  {'other':58s} {other:6d}  {100.0 * other / total:5.1f}%")
    print("  by opcode: " + ", ".join(f"{o} {c}" for o, c in ops.most_common(24)))


if __name__ == "__main__":
    main()
