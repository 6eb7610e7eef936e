#!/bin/bash
# Batch a GPU machine's work into one call (build, tests, validation, runs, SASS):
#   harness/gpu_batch.sh STEP...
# Steps, run in order; each logs to $LOGS/<n>_<step>.log and a failure does not stop the rest:
#   build                  configure + build (header libraries from .deps/usr when present)
#   unpack                 the binaries harness/tools/pack_binaries.sh packed into .khbin, in place
#                          of `build` (refused unless the tree is the one packed); the site-packages
#                          of this machine's python3 (torch) join PYTHONPATH for the peers
#   test                   ctest --preset gpu: every test, and a GPU test that would skip (no
#                          device visible) fails
#   validate:NAME[:ARGS]   kbit-harness validate --variant NAME ARGS (ARGS: ',' for spaces)
#   run:CONFIG[ ARGS]      kbit-harness run CONFIG ARGS --no-plot, then its rows in brief
#                          (harness/tools/csv_brief.py); plot elsewhere with harness/plot.py
#   profile:CONFIG[ ARGS]  kbit-harness profile CONFIG ARGS --no-plot (Nsight Compute counters per
#                          kernel: docs/harness.md "Profiling"); its table is the log's tail
#   sanitize:NAME          compute-sanitizer memcheck, synccheck and racecheck on a quick validate
#   sass:PATTERN           SASS of the first kernel whose mangled name matches PATTERN (regex)
#                          and its opcode mix (harness/tools/sass_mix.py), whole kernel and hot loop
#   cmd:SHELL              any shell command (',' for spaces)
# Python packages for the peers (docs/peers.md): wheels in .whl/ are installed into /tmp/site
# first and put on PYTHONPATH, so that the peers' runner finds them.
# Each step runs under timeout $STEP_TIMEOUT (rc 124: it hung or ran long). Logs go to $LOGS
# (default /tmp/gpu-logs). At the end the logs and the results/ folders the runs wrote are
# packed into $DEST/batch.tar.gz (DEST: $OUT where a remote runner collects its outputs, or .),
# one file, so that a runner that returns few files returns all of it; unpack it in the repo root.
# A tree copied to a remote GPU machine is best kept small (results/ grows with every run):
# carry the header libraries as one archive (tar czf deps-carry.tgz .deps; ~2 MB, ignored by
# git), which is unpacked here when .deps/ is missing (docs/gpu_machines.md, "A GPU machine without
# our packages").
set -u
LOGS=${LOGS:-/tmp/gpu-logs}
STEP_TIMEOUT=${STEP_TIMEOUT:-300}  # seconds per step: a hung kernel costs one step, not the call
DEST=${DEST:-${OUT:-.}}
mkdir -p "$LOGS" "$DEST"
cd "$(dirname "$0")/.."
[ -d .deps/usr ] || [ ! -f deps-carry.tgz ] || tar xzf deps-carry.tgz
export NCCL_NVLS_ENABLE=0
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
H=./build/harness/kbit-harness
summary=()
n=0
start_results=$(mktemp)
touch "$start_results"

step() {  # name, command...
  local name=$1; shift
  n=$((n + 1))
  local log="$LOGS/$(printf %02d $n)_${name//[^A-Za-z0-9_.-]/_}.log"
  local t0=$(date +%s)
  echo "=== [$n] $name" | tee -a "$LOGS/batch.log"
  timeout -k 10 "$STEP_TIMEOUT" "$@" >"$log" 2>&1
  local rc=$? t=$(( $(date +%s) - t0 ))
  tail -n 25 "$log"
  summary+=("$(printf '%-44s rc=%-3s %4ss' "$name" "$rc" "$t")")
}

for s in "$@"; do
  kind=${s%%:*}; arg=${s#*:}; arg=${arg//,/ }
  case $kind in
    build) step build bash -c 'extra=""; [ -d .deps/usr ] && extra="-DCMAKE_PREFIX_PATH=$PWD/.deps/usr";
             cmake --preset default $extra -DKBIT_PTXAS_VERBOSE=ON >/dev/null && cmake --build --preset default -j16' ;;
    # The packed binary runs the peers with the interpreter it was configured with where it was
    # built (KBIT_PYTHON, e.g. /usr/bin/python3), which may lack torch here: once the binary is in
    # place, the site-packages of the PATH's python3 (one that imports torch) go on PYTHONPATH,
    # where that interpreter is the same Python (major.minor) as the configured one.
    unpack) step unpack harness/tools/pack_binaries.sh --unpack
            if [ -x "$H" ]; then
              cfg_py=$(strings "$H" 2>/dev/null | grep -m1 -E '^/[^ ]*python3[.0-9]*$')
              site=$(python3 -c 'import site, sys, torch
print(site.getsitepackages()[0], "%d.%d" % sys.version_info[:2])' 2>/dev/null)
              ver=$([ -n "$cfg_py" ] && "$cfg_py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
              if [ -n "$site" ] && [ "${site#* }" = "$ver" ]; then
                export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}${site% *}
              fi
              echo "unpack: the peers run with ${cfg_py:-an unknown python} ${ver:-(not found)}; PYTHONPATH=${PYTHONPATH:-}"
            fi ;;
    test) step test ctest --preset gpu -j4 ;;
    validate) v=${arg%%:*}; x=""; [[ $arg == *:* ]] && x=${arg#*:}
              step "validate_$v" $H validate --variant $v $x ;;
    run) cfg=${arg%% *}; m=$(mktemp)  # the brief reads the CSV this run wrote (--out-root too)
         step "run_$(basename ${cfg%.toml})" bash -c "$H run $arg --no-plot --quiet &&
           python3 harness/tools/csv_brief.py \$(find results /tmp -name results.csv -newer $m 2>/dev/null | head -1)" ;;
    profile) step "profile_$(basename ${arg%% *} .toml)" $H profile $arg --no-plot ;;
    sanitize) c="--cases n200_k96 n1000_k2080 n5000_k480 n4000_k2048 moe_e8_n200_k96 --quick --no-seed-shapes"
              rk=3  # racecheck's width
              # An AWQ row's cases carry their group, and its weights are 4-bit (validate refuses
              # a selection of none of the row's cases)
              case $arg in awq_*)
                c="--cases awq_g32_n200_k96 awq_g64_n5000_k384 awq_g128_n296_k1024 awq_g128_n1000_k2176 --quick --no-seed-shapes"
                rk=4 ;;
              esac
              step "memcheck_$arg" compute-sanitizer --tool memcheck --error-exitcode 9 $H validate --variant $arg $c --k-bits 4
              step "synccheck_$arg" compute-sanitizer --tool synccheck --error-exitcode 9 $H validate --variant $arg $c --k-bits 4
              # racecheck hangs on scalar_gemv's cluster end (st.async, n5000_k480) and on its tagged
              # end (rank 0 waits for other blocks, which racecheck runs one after another;
              # n4000_k2048): it checks the other cases here, and those two with the options that
              # end their split tiles through the workspace instead
              r=${c/n5000_k480 /}; r=${r/n4000_k2048 /}
              # racecheck misreads variant 07's split-K release (bar.arrive) before the staged
              # store's barriers (ws::FixedOwner, harness/tools/racecheck_probe.cu): its own
              # kernels are checked without split tiles, then split from the registers (a split
              # tile's owner storing through the ring is the one path racecheck leaves unchecked)
              if [ "$arg" = fragment_mma ] || [ "$arg" = awq_fragment_mma ]; then
                step "racecheck_$arg" compute-sanitizer --tool racecheck --error-exitcode 9 $H validate --variant $arg $r --k-bits $rk --split-k off
                step "racecheck_${arg}_split" compute-sanitizer --tool racecheck --error-exitcode 9 $H validate --variant $arg $r --k-bits $rk --split-k on --option staged_store=1
              else
                step "racecheck_$arg" compute-sanitizer --tool racecheck --error-exitcode 9 $H validate --variant $arg $r --k-bits $rk
              fi
              [ "$arg" = scalar_gemv ] && step "racecheck_workspace_ends" compute-sanitizer --tool racecheck --error-exitcode 9 \
                $H validate --variant $arg --cases n5000_k480 n4000_k2048 --quick --no-seed-shapes --k-bits 3 \
                --option cluster_end=0 --option tagged_end=0 ;;
    sass) step "sass" bash -c "for o in \$(find build/variants/CMakeFiles/kbit_gpu.dir -name '*.cu.o'); do cuobjdump -sass \$o; done > /tmp/all.sass &&
             python3 harness/tools/sass_mix.py '$arg' --out '$LOGS/kernel_$n.sass' < /tmp/all.sass &&
             python3 harness/tools/sass_mix.py '$arg' --loop < /tmp/all.sass" ;;
    cmd) step "cmd" bash -c "$arg" ;;
    *) echo "unknown step '$s'"; exit 2 ;;
  esac
done

new=$(find results \( -name results.csv -o -name profile.csv \) -newer "$start_results" 2>/dev/null |
  xargs -r -n1 dirname)
echo; echo "=== summary"; printf '%s\n' "${summary[@]}" | tee -a "$LOGS/batch.log"
mkdir -p gpu-logs && cp "$LOGS"/* gpu-logs/ 2>/dev/null
# Nsight Compute's reports (*.ncu-rep, megabytes each) stay on the machine; their CSVs come along.
tar czf "$DEST/batch.tar.gz" --exclude='*.ncu-rep' gpu-logs $new && echo "packed gpu-logs/ $new into $DEST/batch.tar.gz"
