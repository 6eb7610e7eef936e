// Hopper warpgroup MMA (wgmma.mma_async, PTX ISA 8.0, sm_90a) with A from registers ("RS"):
// a warpgroup (4 warps, 128 threads) computes D[64 x N] += A[64 x 16] * B[16 x N] in fp32, A in
// the registers of the 128 threads, B read by the tensor cores from a shared-memory descriptor.
// A's fragment per warp w is the mma.m16n8k16 A fragment of rows 16w .. 16w + 15: a[0] = (row
// lane/4, k 2(lane%4) + {0,1}), a[1] = row + 8, a[2] = k + 8, a[3] = both. D: warp w holds rows
// 16w + lane/4 (+8 in d[4j+2], d[4j+3]) at columns 8j + 2(lane%4) + {0,1}, j = 0 .. N/8 - 1.
// The wrappers below are regular: one per N, written out because an asm statement needs its
// operand list spelled out, the element type filled into the instruction by a macro.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace kbit::dev::wgmma {

#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define KBIT_NO_WGMMA 1  // wgmma and setmaxnreg exist on sm_90a only (not sm_90, not sm_100)
#endif

// Shared-memory matrix descriptor of a K-major operand whose rows are 128 bytes (64 16-bit
// elements) with the 128-byte swizzle the TMA wrote (tile base 1024-byte aligned): start
// address >> 4 in bits 0..13, leading byte offset (unused by a swizzled K-major operand: 1),
// stride byte offset 1024 >> 4 (8 rows of 128 B between core-matrix groups) in bits 32..45,
// swizzle mode 1 (128 B) in bits 62..63. Step k16 of the 64-wide row starts 32 bytes further.
__device__ __forceinline__ uint64_t desc_k_major_sw128(uint32_t smem_addr) {
  return (uint64_t(1) << 62) | (uint64_t(1024 >> 4) << 32) | (uint64_t(1) << 16) |
         uint64_t((smem_addr & 0x3FFFF) >> 4);
}

// The same descriptor built from its start-address field (shared address >> 4, 14 bits), whose
// steps (k16 steps, boxes) a caller adds to the field alone: two 32-bit halves, no 64-bit add
// with its carry, and a field ptxas knows to be warp-uniform stays in a uniform register.
__device__ __forceinline__ uint64_t desc_k_major_sw128_at(uint32_t start_field) {
  uint64_t d;
  asm("mov.b64 %0, {%1, %2};"
      : "=l"(d)
      : "r"(start_field | (1u << 16)), "r"((1u << 30) | (1024u >> 4)));
  return d;
}

// Orders register writes (A fragments, accumulators) before the wgmma that reads them.
__device__ __forceinline__ void fence() {
#ifdef KBIT_NO_WGMMA
  __trap();
#else
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}
// Closes the wgmmas issued since the last commit into one group.
__device__ __forceinline__ void commit() {
#ifdef KBIT_NO_WGMMA
  __trap();
#else
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}
// Waits until at most N groups are pending: their A registers may then be rewritten.
template <int N>
__device__ __forceinline__ void wait() {
#ifdef KBIT_NO_WGMMA
  __trap();
#else
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
#endif
}

// Keeps the compiler from moving accesses to an accumulator across a wgmma still in flight,
// and keeps a register A operand live (in its registers) until the wgmma reading it is waited
// for: called after the wait, it makes the registers an input there.
template <int R>
__device__ __forceinline__ void fence_operands(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
template <int R>
__device__ __forceinline__ void fence_operands(uint32_t (&a)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+r"(a[i])::"memory");
}

// A block's register split for setmaxnreg, in steps of 8 as the instruction takes them: what
// ptxas allocates a thread from the launch bounds (`threads` a block, `blocks_per_sm` an SM), and
// what the consumers may claim once `producer_threads` keep `producer_regs`: the rest of the
// block's pool, to it exactly or below (an .inc past the pool waits forever).
constexpr int launch_registers(int threads, int blocks_per_sm = 1) {
  return 65536 / blocks_per_sm / threads / 8 * 8;
}
constexpr int consumer_registers(int threads, int producer_threads, int producer_regs,
                                 int blocks_per_sm = 1) {
  return (threads * launch_registers(threads, blocks_per_sm) - producer_threads * producer_regs) /
         (threads - producer_threads) / 8 * 8;
}

// Register budget of a warpgroup (setmaxnreg): the producer gives registers back, the consumers
// take them. Every warp of the warpgroup executes it.
template <int Regs>
__device__ __forceinline__ void release_registers() {
#ifdef KBIT_NO_WGMMA
  __trap();
#else
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(Regs));
#endif
}
template <int Regs>
__device__ __forceinline__ void claim_registers() {
#ifdef KBIT_NO_WGMMA
  __trap();
#else
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(Regs));
#endif
}

template <typename T>
inline constexpr bool kWgmmaElement = std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

// One macro per N below writes the instruction for element type TY ("f16" or "bf16") over the
// accumulators d, the A registers a, the B descriptor desc and the flag accumulate (PTX names
// every register: no loop can write the operand lists).

// The m64n16k16 instruction for element type TY ("f16" or "bf16").
#define KBIT_WGMMA_RS_N16(TY)                                                               \
  asm volatile(                                                                             \
      "{ .reg .pred p; setp.ne.b32 p, %13, 0;\n"                                            \
      "wgmma.mma_async.sync.aligned.m64n16k16.f32." TY "." TY                               \
      " {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, p, 1, 1, 0; }"                     \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), \
        "+f"(d[7])                                                                          \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(int(accumulate)))

// The m64n32k16 instruction for element type TY ("f16" or "bf16").
#define KBIT_WGMMA_RS_N32(TY)                                                                    \
  asm volatile(                                                                                  \
      "{ .reg .pred p; setp.ne.b32 p, %21, 0;\n"                                                 \
      "wgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY                                    \
      " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, p, 1, " \
      "1, 0; }"                                                                                  \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),      \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),  \
        "+f"(d[14]), "+f"(d[15])                                                                 \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(int(accumulate)))

// The m64n64k16 instruction for element type TY ("f16" or "bf16").
#define KBIT_WGMMA_RS_N64(TY)                                                                      \
  asm volatile(                                                                                    \
      "{ .reg .pred p; setp.ne.b32 p, %37, 0;\n"                                                   \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY                                      \
      " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%"  \
      "24,%25,%26,%27,%28,%29,%30,%31}, {%32,%33,%34,%35}, %36, p, 1, 1, 0; }"                     \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),        \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),    \
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])                                         \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(int(accumulate)))

// The m64n128k16 instruction for element type TY ("f16" or "bf16").
#define KBIT_WGMMA_RS_N128(TY)                                                                     \
  asm volatile(                                                                                    \
      "{ .reg .pred p; setp.ne.b32 p, %69, 0;\n"                                                   \
      "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY                                     \
      " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%"  \
      "24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%"   \
      "46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "                  \
      "{%64,%65,%66,%67}, %68, p, 1, 1, 0; }"                                                      \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),        \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),    \
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), \
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), \
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), \
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), \
        "+f"(d[63])                                                                                \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(int(accumulate)))

// The m64n256k16 instruction for element type TY ("f16" or "bf16").
#define KBIT_WGMMA_RS_N256(TY)                                                                     \
  asm volatile(                                                                                    \
      "{ .reg .pred p; setp.ne.b32 p, %133, 0;\n"                                                  \
      "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY                                     \
      " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%"  \
      "24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%"   \
      "46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,%64,%65,%66,%67,%"   \
      "68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%"   \
      "90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%" \
      "110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}," \
      " {%128,%129,%130,%131}, %132, p, 1, 1, 0; }"                                                \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),        \
        "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),    \
        "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), \
        "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), \
        "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), \
        "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), \
        "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), \
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), \
        "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), \
        "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), \
        "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), \
        "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), \
        "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), \
        "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),          \
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]),        \
        "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]),        \
        "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]),        \
        "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])         \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(int(accumulate)))

// D[64 x N] (+)= A[64 x 16] (registers) * B[16 x N] (descriptor, K-major); accumulate = false
// overwrites D (the first k16 step of a tile). T: __half or __nv_bfloat16; N: 16, 32, 64, 128, 256.
template <int N, typename T>
struct MmaRS {
  static_assert(kWgmmaElement<T>, "wgmma RS: fp16 or bf16 elements");
  static_assert(N == 16 || N == 32 || N == 64 || N == 128 || N == 256, "wgmma RS: N = 16..256");
  static constexpr int kRegs = N / 2;  // fp32 accumulators a thread holds
  static __device__ __forceinline__ void run(float (&d)[kRegs], const uint32_t (&a)[4],
                                             uint64_t desc, bool accumulate) {
#ifdef KBIT_NO_WGMMA
    __trap();
#else
#define KBIT_WGMMA_RS_TYPED(INSTR)         \
  if constexpr (std::is_same_v<T, __half>) \
    INSTR("f16");                          \
  else                                     \
    INSTR("bf16")
    if constexpr (N == 16) {
      KBIT_WGMMA_RS_TYPED(KBIT_WGMMA_RS_N16);
    } else if constexpr (N == 32) {
      KBIT_WGMMA_RS_TYPED(KBIT_WGMMA_RS_N32);
    } else if constexpr (N == 64) {
      KBIT_WGMMA_RS_TYPED(KBIT_WGMMA_RS_N64);
    } else if constexpr (N == 128) {
      KBIT_WGMMA_RS_TYPED(KBIT_WGMMA_RS_N128);
    } else {
      KBIT_WGMMA_RS_TYPED(KBIT_WGMMA_RS_N256);
    }
#undef KBIT_WGMMA_RS_TYPED
#endif
  }
};
#undef KBIT_WGMMA_RS_N16
#undef KBIT_WGMMA_RS_N32
#undef KBIT_WGMMA_RS_N64
#undef KBIT_WGMMA_RS_N128
#undef KBIT_WGMMA_RS_N256

}  // namespace kbit::dev::wgmma
