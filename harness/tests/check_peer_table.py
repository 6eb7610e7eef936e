#!/usr/bin/env python3
"""The peers' two tables agree: what `kbit-harness list` shows (harness/peers.cpp: names, bit
widths, dtypes, MoE) and what `harness/peers/runner.py list` implements. Standard library only.

    check_peer_table.py KBIT_HARNESS RUNNER_PY
"""
import json
import subprocess
import sys


def main():
    harness, runner = sys.argv[1], sys.argv[2]
    cpp = {}
    for line in subprocess.check_output([harness, "list"], text=True).splitlines():
        f = line.split()
        if len(f) >= 6 and f[1] == "peer":
            cpp[f[0]] = (sorted(int(k) for k in f[2].split(",")), sorted(f[3].split(",")),
                         f[5] == "dense+moe")
    py = {}
    for p in json.loads(subprocess.check_output([sys.executable, runner, "list"], text=True)):
        py[p["name"]] = (sorted(p["k_bits"]), sorted(p["dtypes"]), bool(p["moe"]))
    bad = []
    for name in sorted(set(cpp) | set(py)):
        if name not in cpp:
            bad.append(f"{name}: in runner.py list, not in harness/peers.cpp")
        elif name not in py:
            bad.append(f"{name}: in harness/peers.cpp, not in runner.py list")
        elif cpp[name] != py[name]:
            bad.append(f"{name}: harness {cpp[name]} vs runner {py[name]} (k_bits, dtypes, moe)")
    if not cpp:
        bad.append("kbit-harness list shows no peers")
    for b in bad:
        print(b)
    print(f"{len(cpp)} peers compared, {len(bad)} differences")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
