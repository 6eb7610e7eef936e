#!/bin/sh
# kbit-harness on input files that are no regular file and on truncated dispatch tables: each
# call must end within its timeout with exit 2 (bad input) naming the path and why, or exit 0 for
# a truncation that still is a valid table; never a hang (exit 124), a crash or another code.
# Usage: check_special_files.sh KBIT_HARNESS WORK_DIR
set -u
exe=$1
work=$2
rm -rf "$work"
mkdir -p "$work/tables" "$work/results/exp" "$work/sym"
failed=0

# expect CODES PATTERN ARGS...: the exit code is one of CODES ("0 2"), the output matches PATTERN.
expect() {
  codes=$1
  pattern=$2
  shift 2
  out=$(timeout 20 "$exe" "$@" 2>&1)
  rc=$?
  ok=0
  for c in $codes; do [ "$rc" -eq "$c" ] && ok=1; done
  if [ "$ok" -eq 1 ] && printf '%s\n' "$out" | grep -q -e "$pattern"; then
    echo "ok (exit $rc): $*"
  else
    echo "FAILED (exit $rc, expected one of $codes matching '$pattern'): $*"
    printf '%s\n' "$out" | tail -n 5
    failed=1
  fi
}

mkfifo "$work/fifo.toml" "$work/tables/Test_GPU.toml" "$work/results/exp/CURRENT"
expect 2 "'/dev/zero' is a character device, not a regular file" run /dev/zero --no-plot
expect 2 "fifo.toml' is a FIFO, not a regular file" run "$work/fifo.toml" --no-plot
cat >"$work/urandom.toml" <<'TOML'
name = "u"
shapes = [{ include = "/dev/urandom" }]
m = 1
k_bits = 4
dtype = "fp16"
variants = "cublas_fp16"
TOML
expect 2 "urandom.toml:2: key 'include'.*'/dev/urandom' is a character device" \
  run "$work/urandom.toml" --no-plot
expect 2 "Test_GPU.toml' is a FIFO" dispatch show --gpu "Test GPU" --out "$work/tables"
ln -s /dev/zero "$work/sym/Test_GPU.toml"
expect 2 "Test_GPU.toml' is a character device" dispatch show --gpu "Test GPU" --out "$work/sym"
expect 2 "CURRENT file '.*' is a FIFO" dispatch build --results "$work/results" --out "$work/out"

# Random bytes and deep nesting as a config and as a table.
for i in 1 2 3; do
  head -c 4096 /dev/urandom >"$work/random.toml"
  expect 2 "random.toml" run "$work/random.toml" --no-plot
  mkdir -p "$work/random"
  cp "$work/random.toml" "$work/random/Test_GPU.toml"
  expect 2 "Test_GPU.toml" dispatch show --gpu "Test GPU" --out "$work/random"
done
awk 'BEGIN { printf "a"; for (i = 0; i < 100000; i++) printf ".a"; print " = 1" }' >"$work/deep.toml"
expect 2 "deep.toml:1: a key of more than 64 dotted parts" run "$work/deep.toml" --no-plot
awk 'BEGIN { printf "a = "; for (i = 0; i < 100000; i++) printf "["; print "" }' >"$work/deep.toml"
expect 2 "deep.toml:1:.*nested" run "$work/deep.toml" --no-plot

# Truncations of a valid table, every 23rd length and the whole: exit 0 or 2 (the in-process
# fuzz test, test_fuzz_inputs.cpp, takes every length).
mkdir -p "$work/cut"
cat >"$work/table.toml" <<'TOML'
gpu = "Test GPU"
fallback = "the rule in words"
runs = ["exp/run1"]
entries = [
  { k_bits = 4, dtype = "fp16", problem = "dense", shape = "a", N = 4096, K_dim = 4096, experts = 0, M = 1, variant = "scalar_gemv", median_us = 10.5, run = "exp/run1", line = 2, config = "" },
  { k_bits = 4, dtype = "fp16", problem = "dense", shape = "a", N = 4096, K_dim = 4096, experts = 0, M = 8, variant = "fetch_dequant", median_us = 12.5, run = "exp/run1", line = 3, config = "" },
]
TOML
size=$(wc -c <"$work/table.toml")
n=0
while [ "$n" -lt "$size" ]; do
  head -c "$n" "$work/table.toml" >"$work/cut/Test_GPU.toml"
  expect "0 2" "dispatch table\|Test_GPU.toml" dispatch show --gpu "Test GPU" --out "$work/cut"
  n=$((n + 23))
done
cp "$work/table.toml" "$work/cut/Test_GPU.toml"
expect 0 "2 entries from 1 run" dispatch show --gpu "Test GPU" --out "$work/cut"

rm -rf "$work"
exit "$failed"
