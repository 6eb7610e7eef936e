#!/usr/bin/env python3
"""Merge the parts of one sweep, run as several `kbit-harness run ... --shapes` calls of the same
config and build (a sweep longer than one GPU session), into one run folder:

    python3 harness/tools/merge_runs.py results/envelope/<part 1> results/envelope/<part 2> ...

The merged folder takes the first part's name; its results.csv holds every part's rows (the parts
must share the CSV header, the experiment, the config hash, the git SHA and the GPU, else it refuses);
its run.json is the first part's with `merged_from` (each part's argv, start and end) and the
summary counts summed. The parts' folders are removed once the merged one is written.
"""
import csv
import json
import os
import shutil
import sys


def load(part):
    with open(os.path.join(part, "run.json")) as f:
        run = json.load(f)
    with open(os.path.join(part, "results.csv"), newline="") as f:
        rows = list(csv.reader(f))
    return run, rows


def same(runs, what, get):
    values = {json.dumps(get(r), sort_keys=True) for r in runs}
    if len(values) != 1:
        sys.exit(f"merge_runs: the parts differ in {what}: {sorted(values)}")


def main(parts):
    if len(parts) < 2:
        sys.exit("merge_runs: give two or more run folders of one sweep")
    loaded = [load(p) for p in parts]
    runs = [r for r, _ in loaded]
    same(runs, "experiment", lambda r: r["experiment"])
    same(runs, "config hash", lambda r: r["config"]["hash"])
    same(runs, "git SHA / dirty", lambda r: [r["build"]["git_sha"], r["build"]["dirty"]])
    same(runs, "GPU", lambda r: r["device"]["name"])
    same([{"h": rows[0]} for _, rows in loaded], "CSV header", lambda r: r["h"])
    merged = dict(runs[0])
    merged["merged_from"] = [
        {"argv": r["argv"], "started_utc": r["started_utc"], "finished_utc": r["finished_utc"],
         "status": r["status"]} for r in runs]
    merged["finished_utc"] = max(r["finished_utc"] for r in runs)
    merged["status"] = "complete" if all(r["status"] == "complete" for r in runs) else "partial"
    merged["summary"] = {k: sum(r["summary"].get(k, 0) for r in runs) for k in runs[0]["summary"]}
    out = parts[0].rstrip("/")
    tmp = out + ".merging"
    shutil.copytree(out, tmp)
    with open(os.path.join(tmp, "results.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(loaded[0][1][0])
        for _, rows in loaded:
            w.writerows(rows[1:])
    with open(os.path.join(tmp, "run.json"), "w") as f:
        json.dump(merged, f, indent=2)
        f.write("\n")
    for p in parts:
        shutil.rmtree(p)
    os.rename(tmp, out)
    print(f"{out}: {sum(len(rows) - 1 for _, rows in loaded)} rows from {len(parts)} parts")


if __name__ == "__main__":
    main(sys.argv[1:])
