#!/bin/bash
# Nsight Compute warp-stall samples per SASS instruction for one kernel launch: which
# instructions the warps wait at, and why (docs/findings.md):
#   harness/tools/ncu_source.sh OUT_PREFIX KERNEL_REGEX build/harness/kbit-harness run \
#       experiments/gemv_goal.toml --variants scalar_gemv --shapes llama3_8b.gate_up --m 1 ...
# Writes OUT_PREFIX.csv (the source page, SASS) and prints the
# instructions with the most samples (harness/tools/ncu_source_top.py).
set -u
out=$1 k=$2; shift 2
rep=/tmp/$(basename "$out")
rm -f "$rep.ncu-rep"
# A run whose checks fail (a diagnostic build) exits non-zero; its profile still counts.
ncu --clock-control none -k "regex:$k" -c 1 --section SourceCounters --section WarpStateStats \
  --warp-sampling-interval "${NCU_SAMPLING_INTERVAL:-0}" -f -o "$rep" "$@" >"$out.ncu.log" 2>&1 ||
  [ -f "$rep.ncu-rep" ] || { tail -20 "$out.ncu.log"; exit 1; }
ncu -i "$rep.ncu-rep" --page source --csv --print-source sass >"$out.csv" 2>"$out.err" ||
  { cat "$out.err"; exit 1; }
python3 "$(dirname "$0")/ncu_source_top.py" "$out.csv"
