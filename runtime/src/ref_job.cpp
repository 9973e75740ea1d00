// A job of the ref device (ref_device.cpp describes the device): START takes a snapshot of the
// job registers, validates it as <n>_ctrl does, applies the configured faults, then runs the DMA
// against the live buffers and the kernel (ref_kernel.cpp) and reports like the RTL.
#include <algorithm>
#include <vector>

#include "ref_device.hpp"
#include "ref_float.hpp"

namespace normcore::detail::ref {

namespace {

// PERF_ACTIVE of a job that stops after validation: the 64 sizing cycles plus the check, as the
// RTL counts busy cycles.
constexpr std::uint64_t kSizingCycles = 64 + 3;

// Where the write bursts from DST fail: bursts of at most max_burst words, never across 4 KiB.
// The burst holding the first unwritable byte fails; the bursts before it are written.
struct WritePlan {
  std::uint64_t bytes = 0;                 // bytes to write
  std::optional<std::uint64_t> bad_burst;  // start of the failing burst
};

WritePlan plan_writes(const Memory& mem, std::uint64_t dst, std::uint64_t n_out,
                      std::uint64_t max_burst_bytes) {
  WritePlan plan;
  plan.bytes = n_out;
  const auto bad_write = mem.first_bad_write(dst, n_out);
  if (!bad_write) return plan;
  std::uint64_t a = dst;
  for (;;) {
    const std::uint64_t len = std::min(max_burst_bytes, 4096 - (a & 4095));
    if (*bad_write - a < len) break;
    a += len;
  }
  plan.bad_burst = a;
  plan.bytes = a - dst;
  return plan;
}

// Elements per channel run: HW (NCHW) or 1 (NHWC).
template <typename Job>
std::uint64_t stride_of(const Job& j) {
  return j.layout == Layout::nchw ? j.inner : 1;
}

}  // namespace

// The job registers' fields are JobRules' (one resolution of the register description).
RefDevice::JobRegs RefDevice::snapshot() const {
  return sized(rules_->from_registers(reg_value()));
}

// The job of raw field values (as the registers hold them), with WIN_BASE/WIN_LAST and the sizes.
RefDevice::JobRegs RefDevice::sized(const RawJob& r) const {
  const auto reg = reg_value();
  return rules_->sized(r, rules_->win_base(reg), rules_->win_last(reg));
}

// Validation (no memory access on failure), the configured faults, then the job (ring jobs too).
RefDevice::Outcome RefDevice::run_checked(const JobRegs& j) {
  if (const int fail = rules_->check(j); fail != 0) {
    set_perf(kSizingCycles, 0);
    return {false, fail, 0, 0, false};
  }
  ++jobs_;
  if (opt_.faults.hang_job != 0 && jobs_ == opt_.faults.hang_job) {
    return {false, 0, 0, 0, true};  // busy until CTRL.soft_reset
  }
  if (opt_.faults.fail_job != 0 && jobs_ == opt_.faults.fail_job) {
    set_perf(kSizingCycles, 0);
    if (opt_.faults.fail_write) return {false, code_write_, j.dst, 0, false};
    return {false, code_read_, j.src, 0, false};
  }
  std::lock_guard lock(mem_->mu);
  return run_job(j);
}

void RefDevice::start_job() {
  clear_for_start();
  const Outcome o = run_checked(snapshot());
  if (o.hang) {
    set(busy_, 1);  // until CTRL.soft_reset
    return;
  }
  finish(o.ok, o.code, o.addr);
}

// PERF_ACTIVE, an ideal cycle estimate (no memory stalls): sizing and checks (67), core set-up
// (2 * lanes + 2), the parameter load (one cycle per bus word or table entry, whichever is
// more), the stream (one beat of `lanes` elements per cycle unless the bus words in or out are
// more), the pipeline drain (the lane's stages + 2: the core's latency) and the final flush (2).
std::uint64_t RefDevice::ideal_cycles(const JobRegs& j) const {
  const DeviceConfig& cfg = manifest().config;
  const std::uint64_t bus = static_cast<std::uint64_t>(cfg.bus_bytes());
  const std::uint64_t lanes = static_cast<std::uint64_t>(std::max(1, cfg.lanes));
  const std::uint64_t prm_words = ceil_div(static_cast<std::uint64_t>(j.prm_bytes), bus);
  const std::uint64_t in_words = static_cast<std::uint64_t>((j.in_bytes + bus - 1) / bus);
  const std::uint64_t out_words = static_cast<std::uint64_t>((j.out_bytes + bus - 1) / bus);
  const std::uint64_t stream =
      std::max({ceil_div(static_cast<std::uint64_t>(j.total), lanes), in_words, out_words});
  const int lane_stages = cfg.accel.core.lane_stages();  // the float lane has its own depth
  return kSizingCycles + 2 * lanes + 2 + std::max(prm_words, j.channels) + stream +
         static_cast<std::uint64_t>(lane_stages) + 2 + 2;
}

// Parameters: C entries, little endian, s in the low scale_bits bits, b above it.
void RefDevice::read_params(const JobRegs& j, std::vector<std::int64_t>& scale,
                            std::vector<std::int64_t>& shift) const {
  const DeviceConfig& cfg = manifest().config;
  const std::uint64_t pe = static_cast<std::uint64_t>(cfg.param_entry_bytes());
  const std::uint64_t n_prm = static_cast<std::uint64_t>(j.prm_bytes);
  std::vector<std::uint8_t> prm(static_cast<std::size_t>(n_prm));
  mem_->read(j.param, prm.data(), n_prm);
  scale.resize(static_cast<std::size_t>(j.channels));
  shift.resize(static_cast<std::size_t>(j.channels));
  for (std::uint64_t c = 0; c < j.channels; ++c) {
    const std::uint64_t at = c * pe * 8;
    const auto i = static_cast<std::size_t>(c);
    scale[i] = bits::sign_extend(bits::get(prm, at, cfg.scale_bits), cfg.scale_bits);
    shift[i] = bits::sign_extend(
        bits::get(prm, at + static_cast<std::uint64_t>(cfg.scale_bits), cfg.offset_bits),
        cfg.offset_bits);
  }
}

// The DMA and the arithmetic of a valid job (memory lock held).
RefDevice::Outcome RefDevice::run_job(const JobRegs& j) {
  const DeviceConfig& cfg = manifest().config;
  const std::uint64_t bus = static_cast<std::uint64_t>(cfg.bus_bytes());
  const std::uint64_t prm_words = ceil_div(static_cast<std::uint64_t>(j.prm_bytes), bus);
  const std::uint64_t in_words = static_cast<std::uint64_t>((j.in_bytes + bus - 1) / bus);
  const Memory& mem = *mem_;
  // Reads: the parameter table, then the input, in bus words; the first failing word stops it.
  if (auto bad = mem.first_bad_read(j.param, prm_words, bus)) {
    set_perf(kSizingCycles, 0);
    return {false, code_read_, *bad, 0, false};
  }
  if (auto bad = mem.first_bad_read(j.src, in_words, bus)) {
    set_perf(kSizingCycles + prm_words, 0);
    return {false, code_read_, *bad, 0, false};
  }
  const std::uint64_t n_out = static_cast<std::uint64_t>(j.out_bytes);
  const WritePlan wp =
      plan_writes(mem, j.dst, n_out, static_cast<std::uint64_t>(cfg.max_burst) * bus);
  std::vector<std::int64_t> scale, shift;
  read_params(j, scale, shift);

  // Input and output: in place in the buffers when each lies inside one, else staged.
  const std::uint64_t n_in = static_cast<std::uint64_t>(j.in_bytes);
  std::vector<std::uint8_t> in_stage, out_stage;
  const std::uint8_t* in_ptr = mem.contiguous(j.src, n_in, false);
  if (in_ptr == nullptr) {
    in_stage.resize(static_cast<std::size_t>(n_in));
    mem.read(j.src, in_stage.data(), n_in);
    in_ptr = in_stage.data();
  }
  std::uint8_t* out_ptr = wp.bad_burst ? nullptr : mem.contiguous(j.dst, n_out, true);
  if (out_ptr == nullptr) {
    out_stage.resize(static_cast<std::size_t>(n_out));
    out_ptr = out_stage.data();
  }

  const std::uint64_t n_total = static_cast<std::uint64_t>(j.total);
  if (cfg.arith().is_float()) {  // contract v2: the float kernel (ref_float.cpp)
    const FloatKernel fk{in_ptr,       out_ptr,      cfg.arith(),  j.channels,
                         stride_of(j), scale.data(), shift.data(), {0, j.rounding, j.lo, j.hi}};
    compute_float(fk, n_total, in_ptr == out_ptr, opt_.threads);
  }
  Kernel k;
  k.in = in_ptr;
  k.out = out_ptr;
  k.xw = cfg.in_bits;
  k.yw = cfg.out_bits;
  k.x_signed = cfg.in_signed;
  k.channels = j.channels;
  k.stride = stride_of(j);
  k.scale = scale.data();
  k.shift = shift.data();
  k.job = JobSettings{j.shift, j.rounding, j.lo, j.hi};
  if (!cfg.arith().is_float()) compute(k, n_total, in_ptr == out_ptr, opt_.threads);

  if (!out_stage.empty()) mem.write(j.dst, out_stage.data(), wp.bytes);
  if (wp.bad_burst) {
    const std::uint64_t elems =
        std::min<std::uint64_t>(n_total, wp.bytes * 8 / static_cast<std::uint64_t>(cfg.out_bits));
    set_perf(kSizingCycles + prm_words + wp.bytes / bus, elems);
    return {false, code_write_, *wp.bad_burst, elems, false};
  }
  set_perf(ideal_cycles(j), n_total);
  return {true, 0, 0, n_total, false};
}

}  // namespace normcore::detail::ref
