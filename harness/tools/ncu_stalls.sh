#!/bin/bash
# Nsight Compute stall reasons and memory counters for one kernel launch (docs/findings.md):
#   harness/tools/ncu_stalls.sh KERNEL_REGEX build/harness/kbit-harness run experiments/gemv_goal.toml \
#       --variants scalar_gemv --shapes llama3_70b.gate_up --m 1 --no-plot --quiet
# KERNEL_REGEX matches the demangled base name (scalar_gemv_kernel); after --mangled, the mangled
# name (scalar_gemv_kernelILi2ELi1E6__half: one template instance).
base=function
[ "$1" = --mangled ] && base=mangled && shift
k=$1; shift
m=""
for r in long_scoreboard short_scoreboard mio_throttle lg_throttle barrier wait math_pipe_throttle not_selected dispatch_stall no_instruction; do m="$m,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"; done
m="${m#,},dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active,smsp__inst_executed_op_shfl.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__warps_active.avg.per_cycle_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,gpu__time_duration.sum"
ncu --clock-control none --kernel-name-base $base -k "regex:$k" -c 1 --metrics "$m" "$@" 2>&1 | grep -E "^\s+(smsp|dram|lts|l1tex|sm__|gpu__)"
