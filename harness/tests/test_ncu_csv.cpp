// The Nsight Compute CSV reader of `kbit-harness profile` (harness/ncu_csv.cpp) on committed
// fixtures (harness/tests/fixtures/ncu/): ncu's raw page of one of our rows (warp_specialized at
// M = 16 on llama3_70b.gate_up: its kernel, its split-K reduce, and a clock probe and a cuBLAS
// kernel that must be left out) and of a peer (humming u4 g128 with its lock zeroing, in base
// units; a report without the L2 and shared-memory metrics, as where ncu dropped them), and the
// source page (SASS) of our row.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>

#include "harness/device_info.hpp"
#include "harness/ncu_csv.hpp"
#include "harness/results.hpp"
#include "reference/error.hpp"

using namespace kbit;

namespace {

const std::string kDir = source_dir() + "/harness/tests/fixtures/ncu/";
constexpr std::int64_t kN = 28672, kK = 8192;  // llama3_70b.gate_up

std::vector<KernelProfile> kept(const std::vector<NcuKernel>& ks, bool baseline = false) {
  std::vector<KernelProfile> out;
  for (const auto& k : ks)
    if (helper_kernel(k.name, baseline).empty()) out.push_back(kernel_profile(k, kN, kK));
  return out;
}

}  // namespace

TEST_CASE("ncu raw CSV: header, units row, one row per kernel, program output skipped", "[ncu]") {
  const auto ks = parse_ncu_raw_csv(read_text_file(kDir + "ours_warp_specialized_raw.csv"));
  REQUIRE(ks.size() == 4);
  CHECK(ks[0].name.find("warp_specialized_kernel<") != std::string::npos);
  CHECK(ks[1].name.find("splitk_reduce_kernel") != std::string::npos);
  CHECK(ks[0].value.at("Block Size") == "(384, 1, 1)");  // a quoted field with commas
  CHECK(ks[0].unit.at("gpu__time_duration.sum") == "usecond");
  // "44,040,192" (thousands separators), usecond -> ns, Mbyte / Kbyte -> bytes
  CHECK(ks[0].num("smsp__inst_executed.sum") == Approx(44040192));
  CHECK(ks[0].num("gpu__time_duration.sum") == Approx(80610));
  CHECK(ks[0].num("dram__bytes_read.sum") == Approx(3905.42e6));
  CHECK(ks[0].num("launch__shared_mem_per_block_dynamic") == Approx(197630));
  CHECK(ks[0].num("lts__t_bytes.sum") == Approx(4210.69e6));  // Mbyte -> bytes
  CHECK(ks[0].num("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum") == Approx(3686400));
  CHECK(ks[0].num("no_such_metric") == 0);
  CHECK_THROWS_AS(parse_ncu_raw_csv("==PROF== no kernels were profiled\n"), Error);
}

TEST_CASE("ncu: helper kernels are left out by name, whatever their position", "[ncu]") {
  const auto ks = parse_ncu_raw_csv(read_text_file(kDir + "ours_warp_specialized_raw.csv"));
  CHECK(helper_kernel(ks[0].name, false).empty());
  CHECK(helper_kernel(ks[1].name, false).empty());  // the row's own split-K reduce stays
  CHECK(helper_kernel(ks[2].name, false) == "clock probe (device_utils.cu)");
  CHECK(helper_kernel(ks[3].name, false) == "cuBLAS (the baseline)");
  CHECK(helper_kernel(ks[3].name, true).empty());  // cuBLAS is a baseline row's own kernel
  CHECK(
      !helper_kernel("void kbit::fill_random_kernel<__half>(__half *, long, unsigned long)", false)
           .empty());
  CHECK(
      !helper_kernel("void kbit::gpu::awq_pack_kernel(const unsigned char *, ...)", false).empty());
  CHECK(helper_kernel("void kbit::gpu::dequantize_kernel<4, __half>(...)", false).empty());
  CHECK(helper_kernel("void kbit::variants::awq_gemv_kernel<__half>(GemvArgs)", false).empty());
  // A peer's kernels are its own, helper patterns or not in their template arguments.
  const auto peer = parse_ncu_raw_csv(read_text_file(kDir + "peer_humming_raw.csv"));
  REQUIRE(peer.size() == 2);
  CHECK(kept(peer).size() == 2);
  CHECK(kept(ks).size() == 2);
}

TEST_CASE("ncu: per-weight normalization and the row's sum over its kernels", "[ncu]") {
  CHECK(per_weight(46095401, kN, kK) == Approx(6.28).epsilon(1e-4));
  CHECK(per_weight(100, 0, kK) == 0);
  const auto ours = kept(parse_ncu_raw_csv(read_text_file(kDir + "ours_warp_specialized_raw.csv")));
  REQUIRE(ours.size() == 2);
  CHECK(ours[0].inst_per_weight == Approx(44040192.0 * 32 / (double(kN) * kK)));  // 6.0
  CHECK(ours[0].inst_per_weight == Approx(6.0));
  CHECK(ours[0].time_us == Approx(80.61));
  CHECK(ours[0].tensor_gmma_pct == Approx(8.73));
  CHECK(ours[0].tensor_pct() == Approx(9.21));  // the larger of the two pipes
  CHECK(ours[0].registers == 168);
  CHECK(ours[0].block == 384);
  CHECK(ours[0].occupancy_pct == Approx(18.75));
  const auto top = ours[0].top_stalls(3);
  REQUIRE(top.size() == 3);
  CHECK(top[0].first == "long_scoreboard");
  CHECK(top[1].first == "wait");
  CHECK(top[2].first == "sleeping");
  double all = 0;
  for (const auto& [r, v] : ours[0].stalls) all += v;
  CHECK(top[0].second == Approx(1.92 / all));
  const KernelProfile s = sum_profile(ours, kN, kK);
  CHECK(s.kernel == "(sum)");
  CHECK(s.time_us == Approx(80.61 + 2.89));
  CHECK(s.inst_executed == Approx(44040192.0 + 2055209));
  CHECK(s.inst_per_weight == Approx(6.28).epsilon(1e-3));
  CHECK(s.dram_write_bytes == Approx(2 * 917.5e3));
  CHECK(s.issue_active_pct == Approx((80.61 * 62.10 + 2.89 * 21.40) / (80.61 + 2.89)));
  CHECK(s.registers == 168);  // the longest kernel's
  // L2 and shared memory: bytes and wavefronts add up, percentages are time-weighted
  CHECK(ours[0].l2_pct == Approx(41.27));
  CHECK(ours[0].l2_bytes == Approx(4210.69e6));
  CHECK(ours[0].smem_pct == Approx(21.64));
  CHECK(ours[0].smem_wavefronts == Approx(3686400));
  CHECK(ours[1].l2_pct == Approx(18.05));
  CHECK(s.l2_bytes == Approx(4210.69e6 + 16.88e6));
  CHECK(s.smem_wavefronts == Approx(3686400.0 + 57344));
  CHECK(s.l2_pct == Approx((80.61 * 41.27 + 2.89 * 18.05) / (80.61 + 2.89)));
  CHECK(s.smem_pct == Approx((80.61 * 21.64 + 2.89 * 3.10) / (80.61 + 2.89)));
  // The peer in base units: seconds -> ns, bytes as they are.
  const auto peer = kept(parse_ncu_raw_csv(read_text_file(kDir + "peer_humming_raw.csv")));
  CHECK(peer[0].time_us == Approx(43.19));
  CHECK(peer[0].dram_read_bytes == Approx(3803512832.0));
  CHECK(peer[0].smem_dynamic == Approx(215040));
  CHECK(peer[0].top_stalls(1).at(0).first == "gmma");
  CHECK(sum_profile(peer, kN, kK).inst_per_weight ==
        Approx((22974300.0 + 3584) * 32 / (double(kN) * kK)));
}

TEST_CASE("ncu: L2 and shared-memory counters a report lacks are not measured, not 0", "[ncu]") {
  // The peer's report has none of them (as where the device's ncu rejected them and profile
  // dropped them): each is NaN, profile.csv's field is empty, the rest of the row is intact.
  const auto peer = kept(parse_ncu_raw_csv(read_text_file(kDir + "peer_humming_raw.csv")));
  REQUIRE(peer.size() == 2);
  for (double v : {peer[0].l2_pct, peer[0].l2_bytes, peer[0].smem_pct, peer[0].smem_wavefronts})
    CHECK(!measured(v));
  CHECK(profile_field(peer[0].l2_pct).empty());
  CHECK(profile_field(peer[0].smem_wavefronts, 15).empty());
  CHECK(peer[0].dram_pct == Approx(88.71));
  const KernelProfile ps = sum_profile(peer, kN, kK);
  CHECK(!measured(ps.l2_pct));
  CHECK(!measured(ps.l2_bytes));
  CHECK(!measured(ps.smem_pct));
  CHECK(!measured(ps.smem_wavefronts));
  CHECK(ps.dram_read_bytes > 0);
  // A total over kernels of which one lacks the counter is not measured either (no silent 0).
  const auto ours = kept(parse_ncu_raw_csv(read_text_file(kDir + "ours_warp_specialized_raw.csv")));
  const KernelProfile mixed = sum_profile({ours[0], peer[0]}, kN, kK);
  CHECK(!measured(mixed.l2_bytes));
  CHECK(!measured(mixed.smem_pct));
  CHECK(mixed.dram_read_bytes == Approx(3905.42e6 + 3803512832.0));
  CHECK(!measured(sum_profile({}, kN, kK).l2_pct));
  // A field ncu prints as "n/a" is not a number; a measured 0 stays 0.
  NcuKernel na;
  na.value["lts__t_bytes.sum"] = "n/a";
  na.value["lts__throughput.avg.pct_of_peak_sustained_elapsed"] = "0";
  const KernelProfile np = kernel_profile(na, kN, kK);
  CHECK(!measured(np.l2_bytes));
  CHECK(measured(np.l2_pct));
  CHECK(np.l2_pct == 0);
  CHECK(profile_field(np.l2_pct) == "0");
  // profile.csv's numbers: bytes in full, percentages to 6 digits.
  CHECK(profile_field(ours[0].l2_bytes, 15) == "4210690000");
  CHECK(profile_field(ours[0].l2_pct) == "41.27");
  CHECK(profile_field(ours[0].smem_wavefronts, 15) == "3686400");
}

TEST_CASE("ncu source page: SASS per kernel, opcode classes and the hot loop", "[ncu]") {
  const auto sass = parse_ncu_source_csv(read_text_file(kDir + "ours_warp_specialized_sass.csv"));
  REQUIRE(sass.size() == 4);
  CHECK(sass[0].name.find("warp_specialized_kernel<") != std::string::npos);
  REQUIRE(sass[0].lines.size() == 22);
  CHECK(sass[0].lines[1].address == 0x7f3a2c000010ull);
  CHECK(sass[0].lines[6].executed == 1981440);
  CHECK(sass_opcode("@!P0 LDG.E.128 R4, desc[UR4][R2.64]") == "LDG");
  CHECK(sass_opcode("  HGMMA.64x16x16.F32 R24, gdesc[UR4], R24") == "HGMMA");
  CHECK(opcode_class("HGMMA") == "mma");
  CHECK(opcode_class("LOP3") == "logic");
  CHECK(opcode_class("LDSM") == "smem");
  CHECK(opcode_class("WARPGROUP") == "other");
  const OpcodeMix m = opcode_mix(sass[0]);
  // The inner loop (0x60..0x110), not the outer one around it.
  CHECK(m.loop_found);
  CHECK(m.loop_instructions == 12);
  const double L = 1981440, loop = 11 * L + L / 4;
  CHECK(m.loop_share.at("logic") == Approx(2 * L / loop));
  CHECK(m.loop_share.at("mma") == Approx(L / 4 / loop));
  CHECK(m.loop_opcodes.front().first == "LOP3");
  CHECK(loop_mix_text(m, 2).rfind("LOP3 ", 0) == 0);
  CHECK(m.executed.at("mma") == Approx(L / 4));
  double total = 0;
  for (const auto& l : sass[0].lines) total += l.executed;
  CHECK(m.total == Approx(total));
  // No backward branch: the whole kernel is the "loop".
  const OpcodeMix r = opcode_mix(sass[1]);
  CHECK(!r.loop_found);
  CHECK(r.loop_instructions == 6);
}

TEST_CASE("ncu: a kernel's name as a literal regex", "[ncu]") {
  const std::string name =
      "void kbit::variants::ws::warp_specialized_kernel<kbit::variants::ws::KbitTiles<4>, 16, "
      "__half>(kbit::variants::ws::KbitTiles<4>::Args, CUtensorMap)";
  const std::regex r(regex_escape(name));
  CHECK(std::regex_search(name, r));
  CHECK(
      !std::regex_search(std::string("void kbit::variants::ws::warp_specialized_kernel<kbit"), r));
  CHECK(regex_escape("a.b*(c)[d]{e}|f+g?^$\\") ==
        "a\\.b\\*\\(c\\)\\[d\\]\\{e\\}\\|f\\+g\\?\\^\\$\\\\");
}

TEST_CASE("ncu: the opcode classes are sass_mix.py's, in its order", "[ncu]") {
  const std::string py = read_text_file(source_dir() + "/harness/tools/sass_mix.py");
  std::size_t at = 0;
  for (const auto& c : opcode_classes()) {
    if (c.regex.empty()) continue;  // "other": what no class matches
    const auto found = py.find("r\"" + c.regex + "\"", at);
    INFO(c.key << ": " << c.regex);
    REQUIRE(found != std::string::npos);
    at = found;
  }
}

TEST_CASE("ncu: the refusal lines (no counters here) are found in a log", "[ncu]") {
  CHECK(ncu_refusal("==PROF== Connected to process 7\n==ERROR== ERR_NVGPUCTRPERM - The user does "
                    "not have permission to access NVIDIA GPU Performance Counters\n") ==
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
        "Performance Counters");
  CHECK(!ncu_refusal("==ERROR== Failed to initialize the profiler (LibraryNotLoaded)\n").empty());
  CHECK(!ncu_refusal("==ERROR== Failed to initialize the profiler\n").empty());
  CHECK(ncu_refusal("==PROF== Disconnected from process 7\n").empty());
  CHECK(ncu_refusal("").empty());
}

TEST_CASE("ncu: metrics the device's ncu does not know are found on its error lines", "[ncu]") {
  const std::vector<std::string> asked = {
      "smsp__inst_executed.sum",
      "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
      "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio"};
  const std::string log =
      "==PROF== Connected to process 7\n"
      "==ERROR== Failed to find metric sm__pipe_tensor_op_gmma_cycles_active\n"
      "==ERROR== Failed to find metric "
      "smsp__average_warps_issue_stalled_gmma_per_issue_active.ratio\n"
      "smsp__inst_executed.sum is named here, but on no error line\n";
  CHECK(rejected_metrics(log, asked) == std::vector<std::string>{asked[1], asked[2]});
  CHECK(rejected_metrics("==ERROR== smsp__inst_executed_pipe_lsu is unknown\n", asked).empty());
  CHECK(rejected_metrics("==PROF== Disconnected\n", asked).empty());
  // The L2 and shared-memory metrics: a rejected base name drops the metrics built on it alone.
  const auto& all = profile_metrics();
  CHECK(rejected_metrics("==ERROR== Failed to find metric lts__t_bytes\n", all) ==
        std::vector<std::string>{"lts__t_bytes.sum"});
  CHECK(rejected_metrics(
            "==ERROR== Failed to find metric l1tex__data_pipe_lsu_wavefronts_mem_shared\n", all) ==
        std::vector<std::string>{
            "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
            "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"});
}

TEST_CASE("ncu: the metric list holds what profile.csv reads", "[ncu]") {
  const auto& m = profile_metrics();
  for (const char* want :
       {"smsp__inst_executed.sum", "gpu__time_duration.sum",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
        "lts__throughput.avg.pct_of_peak_sustained_elapsed", "lts__t_bytes.sum",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed",
        "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"})
    CHECK(std::find(m.begin(), m.end(), want) != m.end());
  CHECK(std::find(stall_reasons().begin(), stall_reasons().end(), "selected") ==
        stall_reasons().end());
}
