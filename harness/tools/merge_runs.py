#!/usr/bin/env python3
"""Join the parts of one sweep, run as several `kbit-harness run ... --shapes` calls of the same
config and build, into one run folder:

    python3 harness/tools/merge_runs.py results/envelope/<part 1> results/envelope/<part 2> ...

`kbit-harness run --devices` joins the parts its devices wrote with it (docs/gpu_machines.md,
"Sweeps over several GPUs"). The parts must be different folders of the same experiment, config
hash, git SHA and GPU model (run.json's device.name: a mix is refused, naming each part's GPU) with
the same CSV header, and no problem row (shape, M, K, dtype, weight format (the codebook column),
variant, PDL) may appear in two of them; else it refuses before writing anything. The joined folder
takes the first part's name: results.csv holds every part's rows; run.json is the first part's with
`merged_from` (each part's argv, start, end, status and device), the summary counts (a stopped
part's counted from its CSV; the joined status then "partial") and the peers' counts summed (none
where a part has none), and `overrides.shapes` the union; each part's own run.json and peer files
are kept under parts/<part name>/. The parts' folders are removed only once the joined one is in
place. """
import csv
import json
import os
import shutil
import sys

KEY = ("shape", "M", "k_bits", "dtype", "variant", "pdl")


def load(part):
    with open(os.path.join(part, "run.json")) as f:
        run = json.load(f)
    with open(os.path.join(part, "results.csv"), newline="") as f:
        rows = list(csv.reader(f))
    return run, rows


def counted(header, rows):
    """The summary of a part that wrote none, from its CSV: rows, checks passed and failed, and
    rows with an error."""
    body = rows[1:]
    check = header.index("check") if "check" in header else None
    error = header.index("error") if "error" in header else None
    return {"rows": len(body),
            "check_passed": sum(1 for r in body if check is not None and r[check] == "pass"),
            "check_failed": sum(1 for r in body if check is not None and r[check] == "fail"),
            "errors": sum(1 for r in body if error is not None and r[error] != "")}


def same(parts, values, what):
    if len({json.dumps(v, sort_keys=True) for v in values}) != 1:
        listed = "; ".join(f"{os.path.basename(p)}: {v}" for p, v in zip(parts, values))
        sys.exit(f"merge_runs: the parts differ in {what} ({listed})")


def sum_peers(statuses):
    """The peers' counts (ran, passed, failed, skipped reasons) summed over the parts."""
    merged = json.loads(json.dumps(statuses[0]))
    for name, peer in merged.get("peers", {}).items():
        for st in statuses[1:]:
            other = st.get("peers", {}).get(name, {})
            for k in ("ran", "passed", "failed"):
                peer[k] = peer.get(k, 0) + other.get(k, 0)
            skipped = dict(peer.get("skipped") or {})
            for reason, n in (other.get("skipped") or {}).items():
                skipped[reason] = skipped.get(reason, 0) + n
            peer["skipped"] = skipped
    merged["complete"] = all(st.get("complete", False) for st in statuses)
    return merged


def main(parts):
    parts = [p.rstrip("/") for p in parts]
    if len(parts) < 2:
        sys.exit("merge_runs: give two or more run folders of one sweep")
    real = [os.path.realpath(p) for p in parts]
    if len(set(real)) != len(real):
        sys.exit(f"merge_runs: a folder is given twice ({' '.join(parts)})")
    loaded = [load(p) for p in parts]
    runs = [r for r, _ in loaded]
    same(parts, [r["experiment"] for r in runs], "experiment")
    same(parts, [r["config"]["hash"] for r in runs], "config hash")
    same(parts, [[r["build"]["git_sha"], r["build"]["dirty"]] for r in runs], "git SHA / dirty")
    gpus = [r["device"]["name"] for r in runs]
    if len(set(gpus)) != 1:
        listed = "; ".join(f"{os.path.basename(p)}: {g}" for p, g in zip(parts, gpus))
        sys.exit(f"merge_runs: the parts were timed on different GPU models ({listed}); a run holds "
                 f"the rows of one GPU model")
    same(parts, [rows[0] for _, rows in loaded], "CSV header")
    header = loaded[0][1][0]
    # The codebook column tells a kbit problem from an AWQ one of the same shape, M, K and dtype.
    key_names = KEY + (("codebook",) if "codebook" in header else ())
    idx = [header.index(k) for k in key_names]
    seen = {}
    for part, (_, rows) in zip(parts, loaded):
        for row in rows[1:]:
            key = tuple(row[i] for i in idx)
            if key in seen:
                sys.exit(f"merge_runs: {dict(zip(key_names, key))} is in both {seen[key]} and "
                         f"{os.path.basename(part)}")
            seen[key] = os.path.basename(part)
    merged = json.loads(json.dumps(runs[0]))
    # A part whose process was stopped (a sweep that ran out of time) has no end time and no
    # summary: its rows count from its CSV, and the joined run is "partial".
    merged["merged_from"] = [
        {"part": os.path.basename(p), "argv": r["argv"], "started_utc": r["started_utc"],
         "finished_utc": r.get("finished_utc"), "status": r["status"], "device": r["device"]}
        for p, r in zip(parts, runs)]
    ends = [r["finished_utc"] for r in runs if r.get("finished_utc")]
    merged["finished_utc"] = max(ends) if ends else None
    merged["status"] = "complete" if all(r["status"] == "complete" for r in runs) else "partial"
    summaries = [r.get("summary") or counted(header, rows) for r, (_, rows) in zip(runs, loaded)]
    names = []
    for summary in summaries:
        names += [k for k in summary if k not in names]
    merged["summary"] = {k: sum(summary.get(k, 0) for summary in summaries) for k in names}
    if all("peers_status" in r for r in runs):
        merged["peers_status"] = sum_peers([r["peers_status"] for r in runs])
    else:  # a part without its peers' counts: the first part's would read as the whole run's
        merged.pop("peers_status", None)
    shapes = []  # in the parts' order, each once (parts may share their globs)
    for r in runs:
        shapes += [s for s in r.get("overrides", {}).get("shapes", []) if s not in shapes]
    if "overrides" in merged:
        merged["overrides"]["shapes"] = shapes
    out = parts[0]
    tmp = out + ".merging"
    if os.path.exists(tmp):
        sys.exit(f"merge_runs: {tmp} exists (an earlier merge stopped): remove it first")
    shutil.copytree(out, tmp)
    for name in ("peers_request.json", "peers_status.json"):
        if os.path.exists(os.path.join(tmp, name)):
            os.remove(os.path.join(tmp, name))
    for part in parts:  # each part's own metadata, as it was written
        keep = os.path.join(tmp, "parts", os.path.basename(part))
        os.makedirs(keep)
        for name in ("run.json", "peers_request.json", "peers_status.json"):
            if os.path.exists(os.path.join(part, name)):
                shutil.copy2(os.path.join(part, name), keep)
    with open(os.path.join(tmp, "results.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for _, rows in loaded:
            w.writerows(rows[1:])
    with open(os.path.join(tmp, "run.json"), "w") as f:
        json.dump(merged, f, indent=2)
        f.write("\n")
    old = out + ".replaced"
    os.rename(out, old)  # the joined folder takes the first part's name before anything is removed
    os.rename(tmp, out)
    shutil.rmtree(old)
    for p in parts[1:]:
        shutil.rmtree(p)
    print(f"{out}: {len(seen)} rows from {len(parts)} parts")


if __name__ == "__main__":
    main(sys.argv[1:])
