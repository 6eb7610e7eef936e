#!/usr/bin/env python3
"""The timeline of one launch of variant 07's mma.sync kernel, from the "TL" lines a diagnostic
build prints (harness/tools/timeline_probe.patch): when the walks get their first stage and end,
by the kind of walk (its pieces, and whether its last piece owns its tile, contributes to it or is
a whole tile), each walk's rate a k-step, the stall between two pieces per consumer warp, the
store at a walk's end, and how many walks are still running near the kernel's end.

    python3 harness/tools/timeline_probe.py LOG [LOG ...]

A line: TL block pipeline warp w0 .. w15, warp 0..3 a consumer warp (w0 begin, w1 first stage,
w2 end, w3 pieces, then per piece i < 4: w[4+3i] = tile << 32 | ks0 << 16 | ks1, w[5+3i] end of
its k-steps, w[6+3i] end of its store), warp 4 the producer (w0 begin, w1 first fill, w2 last
fill done, w3 fills). Times in us from the first consumer's begin; percentiles p10 / p50 / p90.
Refused (exit 1): a log without TL lines.
"""
import collections
import sys



def pct(values, ps=(10, 50, 90)):
    v = sorted(values)
    if not v:
        return "-"
    return " ".join("p%d %.2f" % (p, v[min(len(v) - 1, int(p / 100 * (len(v) - 1) + 0.5))])
                    for p in ps)


def read(path):
    rec = {}
    with open(path, errors="replace") as f:
        for line in f:
            p = line.split()
            if len(p) == 20 and p[0] == "TL":
                rec[(int(p[1]), int(p[2]), int(p[3]))] = [int(x) for x in p[4:]]
    return rec


def pieces(words):
    out = []
    for i in range(min(words[3], 4)):
        code = words[4 + 3 * i]
        out.append((code >> 32, (code >> 16) & 0xFFFF, code & 0xFFFF, words[5 + 3 * i],
                    words[6 + 3 * i]))
    return out


def report(path):
    rec = read(path)
    cons = {k: v for k, v in rec.items() if k[2] < 4 and v[0] > 0}
    prod = {k: v for k, v in rec.items() if k[2] == 4 and v[0] > 0}
    if not cons:
        sys.exit("%s: no TL lines (a log of the diagnostic build's 8th launch)" % path)
    t0 = min(v[0] for v in cons.values())

    def us(t):
        return (t - t0) / 1000.0

    walks = collections.defaultdict(dict)
    for (b, p, q), v in cons.items():
        walks[(b, p)][q] = v
    whole = max(k1 for v in cons.values() for (_, _, k1, _, _) in pieces(v))  # a tile's k-steps
    kinds = collections.defaultdict(list)
    gaps = collections.defaultdict(list)
    stores = collections.defaultdict(list)
    for qs in walks.values():
        v = qs.get(0)
        if v is None:
            continue
        ps = pieces(v)
        last = ps[-1]
        steps = sum(k1 - k0 for (_, k0, k1, _, _) in ps)
        if all(k0 == 0 and k1 == whole for (_, k0, k1, _, _) in ps):
            end = "whole"
        else:
            end = "owner" if last[1] == 0 else "contributor"
        kind = "%d piece(s), %s end" % (len(ps), end)
        walk_end = max(w[2] for w in qs.values())
        kinds[kind].append((us(walk_end), us(v[1]), steps, (last[3] - v[1]) / 1000.0 / steps))
        stores[kind].append((last[4] - last[3]) / 1000.0)
        for i in range(len(ps) - 1):
            for q, w in qs.items():
                gaps[(kind, q)].append((w[6] - w[5]) / 1000.0)
    end = max(v[2] for v in cons.values())
    print("== %s: %d consumer warps, %d producers, span %.2f us" %
          (path, len(cons), len(prod), us(end)))
    print("  first stage  %s" % pct([us(v[1]) for v in cons.values()]))
    print("  producers    first fill %s; last fill %s" %
          (pct([us(v[1]) for v in prod.values()]), pct([us(v[2]) for v in prod.values()])))
    for kind in sorted(kinds):
        x = kinds[kind]
        print("  %-30s %4d walks: end %s, max %.2f | k-steps %d | us a k-step %s | end store %s" %
              (kind, len(x), pct([e[0] for e in x]), max(e[0] for e in x),
               sorted(e[2] for e in x)[len(x) // 2], pct([e[3] for e in x]),
               pct(stores[kind])))
    for (kind, q) in sorted(gaps):
        print("    between pieces (%s), warp %d: %s us" % (kind, q, pct(gaps[(kind, q)])))
    ends = [max(w[2] for w in qs.values()) for qs in walks.values()]
    print("  walks running 4 / 2 / 1 us before the end: %d / %d / %d of %d" %
          (sum(e > end - 4000 for e in ends), sum(e > end - 2000 for e in ends),
           sum(e > end - 1000 for e in ends), len(ends)))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        report(path)


if __name__ == "__main__":
    main()
