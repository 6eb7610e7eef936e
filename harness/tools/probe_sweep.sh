#!/bin/bash
# What does a stream need to reach the floor? Times the read_bulk probe under several ring
# configurations (KBIT_PROBE_BULK="CHUNK,STAGES,BLOCKS_PER_SM[,STRIPED[,BEFORE_WAIT[,PAD[,TRIGGER[,GRID[,HOLD[,A_EACH]]]]]]]",
# variants/read_probe.cu)
# on one experiment's shapes, and prints one line per (configuration, shape):
#   harness/probe_sweep.sh [CONFIG.toml] [M] -- CFG...
# e.g. harness/probe_sweep.sh experiments/gemv_goal.toml 1 -- 16384,4,3 4096/4/4/1
# ('/' may stand for ',': gpu_session.sh turns commas into spaces)
# Results go to /tmp/probe-sweep (not committed: the lines are the record, copy them to notes).
set -eu
cd "$(dirname "$0")/.."
config=${1:-experiments/gemv_goal.toml}
m=${2:-1}
shift 2 || true
[ "${1:-}" = "--" ] && shift
H=./build/harness/kbit-harness
for cfg in "$@"; do
  cfg=${cfg//\//,}
  out=/tmp/probe-sweep/${cfg//,/_}
  KBIT_PROBE_BULK=$cfg $H run "$config" --variants read_bulk --m "$m" --out-root "$out" \
    --no-plot --quiet >/dev/null
  csv=$(ls -t "$out"/*/*/results.csv | head -1)
  python3 - "$cfg" "$csv" <<'PY'
import csv, sys
cfg, path = sys.argv[1], sys.argv[2]
for r in csv.DictReader(open(path)):
    print(f"{cfg:18s} {r['shape']:22s} M={r['M']} {float(r['median_us']):8.2f} us "
          f"{100 * float(r['frac_of_floor']):5.1f}% of floor  ({r['config']})")
PY
done
