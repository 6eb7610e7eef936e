// Variant 04's compile-time knobs and diagnostics (variants/04_scalar_gemv.cu includes this,
// nothing else: the host plan reads them through scalar_gemv::knobs()): every default, and why it
// is that. docs/variants/04_scalar_gemv.md has the sweeps; override with -D at configure time, e.g.
// cmake -DCMAKE_CUDA_FLAGS="-DKBIT_GEMV_STAGES=3", or harness/gpu_session.sh knobs:FLAGS:CONFIG.
#pragma once

#ifndef KBIT_GEMV_STAGES  // 2 beat 3 and 4 (notes.md: v5, and two groups per block in session 10)
#define KBIT_GEMV_STAGES 2
#endif
#ifndef KBIT_GEMV_MAX_REGS  // 96: 2 blocks of 288 threads per SM (9 warps allocate as 10)
#define KBIT_GEMV_MAX_REGS 96
#endif
#ifndef KBIT_GEMV_WINDOW     // rows x units of A staged per window (v6 until 7d8bbd4: 4 units at
#define KBIT_GEMV_WINDOW 16  // every M; 16 row-units is the shared memory M = 4 had then)
#endif
#ifndef KBIT_GEMV_ALIGN_SLACK  // % more units per block allowed to align stripes on k-bands
#define KBIT_GEMV_ALIGN_SLACK 20
#endif
// Diagnostics (results are wrong, never commit a run of them; the pair table is left out):
// 1 the consumers only drain the ring (the stream alone); 2 also no absmax copies; 4 no A
// windows; 5 no consumers, the producer refills a stage once it has landed (docs/notes.md).
#ifndef KBIT_GEMV_DIAG_NO_MATH
#define KBIT_GEMV_DIAG_NO_MATH 0
#endif
// Diagnostic: 1 compiles no split-tile end at all, every segment stores its sums into C (wrong
// wherever a tile is split): what the ends' code costs the main loop (session 14). 2: the same,
// but split tiles still launch as the clusters their end would use: what cluster scheduling costs.
// 3: the ends are compiled in and the launch is the default one, but the host tells every segment
// that it is its tile's only contributor, so none runs an end: the ends' code against their run.
// 4: as 3, but the cluster end is not compiled in (the tagged and workspace ends are).
// 5: as 2, with every end's code compiled into the producer's path, never run (session 23).
#ifndef KBIT_GEMV_DIAG_NO_ENDS
#define KBIT_GEMV_DIAG_NO_ENDS 0
#endif
#ifndef KBIT_GEMV_CLUSTER_SPLIT  // 0: no cluster end (split tiles end through L2; session 12)
#define KBIT_GEMV_CLUSTER_SPLIT 1
#endif
// How the ranks of a cluster hand their sums to rank 0 (session 13): 1 st.async, which completes
// bytes on rank 0's receive mbarrier; 0 DSMEM stores and the cluster barrier (session 12: 0.4-0.7
// us slower on 8B gate/up, but the one racecheck can run: it hangs on st.async).
#ifndef KBIT_GEMV_CLUSTER_PUSH
#define KBIT_GEMV_CLUSTER_PUSH 1
#endif
#ifndef KBIT_GEMV_TAGGED_END    // 1: k-band splits whose clusters do not fit end through tagged L2
#define KBIT_GEMV_TAGGED_END 1  // slots (session 13); 0: through the workspace and its counter
#endif
// Which bit widths' dense M = 1, 2 kernels compile the tagged end: bit k for K = k; 0x18: K = 3,
// 4. Compiled into K = 5 it cost every M = 1, 2 row 3-8% (Llama3-70B 81 -> 87 us, no spills),
// into K = 2 up to 0.8 us (session 14); those kernels end such tiles through the workspace.
#ifndef KBIT_GEMV_TAGGED_KS
#define KBIT_GEMV_TAGGED_KS 0x18
#endif
// 1: in dependent launches at M = 1, 2 a segment's units 0 and 1 are copied to registers before
// griddepcontrol.wait (session 16: 8B gate/up -0.2 us with PDL); 0: unit 0 only.
#ifndef KBIT_GEMV_FIRST_TWO
#define KBIT_GEMV_FIRST_TWO 1
#endif
#ifndef KBIT_GEMV_WHOLE_TILES    // 1: M = 3, 4 plans that split no tile run a kernel without the
#define KBIT_GEMV_WHOLE_TILES 1  // split-tile ends (session 14); 0: the kernel with them
#endif
#ifndef KBIT_GEMV_WAIT_STATS  // 1: print where the blocks' time goes (common/wait_stats.cuh)
#define KBIT_GEMV_WAIT_STATS 0
#endif
