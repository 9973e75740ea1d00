// Register programming: the manifest's offsets and fields, shadowed job registers, one device
// job started and waited for (interrupt or polling), soft reset after a time-out, and the error
// registers turned into DeviceError messages.
#include "detail/driver_regs.hpp"

#include <algorithm>

#include "normcore/util/hex.hpp"

namespace normcore::detail {

namespace {

const RegDesc* find_reg(const Manifest& m, const char* name) {
  for (const auto& r : m.registers) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

}  // namespace

Regs::Regs(const Manifest& m)
    : start(&m.field("CTRL", "start")),
      soft_reset(&m.field("CTRL", "soft_reset")),
      en_done(&m.field("CTRL", "irq_en_done")),
      en_err(&m.field("CTRL", "irq_en_error")),
      busy(&m.field("STATUS", "busy")),
      done(&m.field("STATUS", "done")),
      error(&m.field("STATUS", "error")),
      irq_done(&m.field("IRQ_STATUS", "done")),
      irq_err(&m.field("IRQ_STATUS", "error")),
      layout(&m.field("MODE", "layout")),
      rounding(&m.field("MODE", "rounding")),
      shift(&m.field("MODE", "shift")),
      ctrl(m.offset("CTRL")),
      status(m.offset("STATUS")),
      irq_status(m.offset("IRQ_STATUS")),
      err_code(m.offset("ERR_CODE")),
      err_lo(m.offset("ERR_ADDR_LO")),
      err_hi(m.offset("ERR_ADDR_HI")),
      channels(m.offset("CHANNELS")),
      inner(m.offset("INNER")),
      outer(m.offset("OUTER")),
      mode(m.offset("MODE")),
      clamp_lo(m.offset("CLAMP_LO")),
      clamp_hi(m.offset("CLAMP_HI")),
      src_lo(m.offset("SRC_LO")),
      src_hi(m.offset("SRC_HI")),
      dst_lo(m.offset("DST_LO")),
      dst_hi(m.offset("DST_HI")),
      param_lo(m.offset("PARAM_LO")),
      param_hi(m.offset("PARAM_HI")) {
  if (const RegDesc* r = find_reg(m, "PERF_ACTIVE"); r != nullptr) {
    perf_active = r->offset;
    has_perf = true;
  }
  if (find_reg(m, "RING_HEAD") != nullptr) {
    has_ring = true;
    ring_base_lo = m.offset("RING_BASE_LO");
    ring_base_hi = m.offset("RING_BASE_HI");
    ring_size = m.offset("RING_SIZE");
    ring_head = m.offset("RING_HEAD");
    ring_tail = m.offset("RING_TAIL");
    ring_ctrl = m.offset("RING_CTRL");
    ring_status = m.offset("RING_STATUS");
    ring_enable = &m.field("RING_CTRL", "enable");
    ring_skip = &m.field("RING_CTRL", "skip");
    ring_resume = &m.field("RING_CTRL", "resume");
    ring_stopped = &m.field("RING_STATUS", "stopped");
    en_ring = &m.field("CTRL", "irq_en_ring");
    irq_ring = &m.field("IRQ_STATUS", "ring");
  }
  const RegDesc* lo = find_reg(m, "PERF_ELEMS_LO");
  const RegDesc* hi = find_reg(m, "PERF_ELEMS_HI");
  if (lo != nullptr && hi != nullptr) {
    perf_elems_lo = lo->offset;
    perf_elems_hi = hi->offset;
    has_elems = true;
  }
}

JobEngine::JobEngine(Device& dev, const DriverOptions& opt)
    : dev_(dev),
      regs_(dev.manifest()),
      job_timeout_(opt.job_timeout),
      reset_timeout_(opt.reset_timeout),
      progress_interval_(std::max(opt.progress_interval, std::chrono::milliseconds(1))),
      use_irq_(opt.use_irq) {}

void JobEngine::report_elems() {
  const std::uint64_t lo = dev_.read32(regs_.perf_elems_lo);
  const std::uint64_t hi = dev_.read32(regs_.perf_elems_hi);
  (*on_elems_)(lo | hi << 32);
}

void JobEngine::clear_irq() {
  dev_.write32(regs_.irq_status, regs_.irq_done->mask() | regs_.irq_err->mask() |
                                     (regs_.has_ring ? regs_.irq_ring->mask() : 0));
}

void JobEngine::set(std::uint32_t off, std::uint32_t v) {
  const auto it = shadow_.find(off);
  if (it != shadow_.end() && it->second == v) return;
  dev_.write32(off, v);
  shadow_[off] = v;
}

std::uint32_t JobEngine::status() {
  return dev_.read32(regs_.status);
}

std::string JobEngine::status_text(std::uint32_t st) {
  std::string s = "STATUS=" + hex(st, 8) + " (busy " + std::to_string(regs_.busy->get(st)) +
                  ", done " + std::to_string(regs_.done->get(st)) + ", error " +
                  std::to_string(regs_.error->get(st)) + ")";
  if (regs_.has_perf) s += ", PERF_ACTIVE=" + std::to_string(dev_.read32(regs_.perf_active));
  return s;
}

std::string JobEngine::describe(const DevJob& j) const {
  return "C=" + std::to_string(j.channels) + " INNER=" + std::to_string(j.inner) +
         " OUTER=" + std::to_string(j.outer) + " " + std::string(to_string(j.layout)) +
         " SRC=" + hex(j.src) + " DST=" + hex(j.dst) + " PARAM=" + hex(j.param);
}

bool JobEngine::soft_reset() {
  ++counters_.soft_resets;
  dev_.write32(regs_.ctrl, regs_.soft_reset->put(0, 1));
  const auto deadline = Clock::now() + reset_timeout_;
  for (;;) {
    if (regs_.busy->get(status()) == 0) break;
    if (Clock::now() >= deadline) return false;
    (void)dev_.wait_irq(std::chrono::milliseconds(1));  // lets a simulated device advance
  }
  clear_irq();
  return true;
}

void JobEngine::ensure_idle() {
  if (!check_idle_) return;
  const std::uint32_t st = status();
  if (regs_.busy->get(st) != 0 && !soft_reset()) {
    throw DeviceError(dev_.name() + ": device busy before a job and still busy after a soft " +
                      "reset (" + status_text(status()) + "); it needs a hardware reset");
  }
  clear_irq();
  check_idle_ = false;
}

void JobEngine::program(const DevJob& j) {
  const std::uint64_t ymask = mask_bits(dev_.manifest().config.out_bits);
  set(regs_.channels, static_cast<std::uint32_t>(j.channels));
  set(regs_.inner, static_cast<std::uint32_t>(j.inner));
  set(regs_.outer, static_cast<std::uint32_t>(j.outer));
  std::uint32_t mode = regs_.layout->put(0, j.layout == Layout::nhwc ? 1 : 0);
  mode = regs_.rounding->put(mode, static_cast<std::uint32_t>(j.settings.rounding));
  mode = regs_.shift->put(mode, static_cast<std::uint32_t>(j.settings.shift));
  set(regs_.mode, mode);
  set(regs_.clamp_lo,
      static_cast<std::uint32_t>(static_cast<std::uint64_t>(j.settings.lo) & ymask));
  set(regs_.clamp_hi,
      static_cast<std::uint32_t>(static_cast<std::uint64_t>(j.settings.hi) & ymask));
  set(regs_.src_lo, static_cast<std::uint32_t>(j.src));
  set(regs_.src_hi, static_cast<std::uint32_t>(j.src >> 32));
  set(regs_.dst_lo, static_cast<std::uint32_t>(j.dst));
  set(regs_.dst_hi, static_cast<std::uint32_t>(j.dst >> 32));
  set(regs_.param_lo, static_cast<std::uint32_t>(j.param));
  set(regs_.param_hi, static_cast<std::uint32_t>(j.param >> 32));
}

bool JobEngine::start() {
  const bool irq = use_irq_ && dev_.has_irq();
  std::uint32_t ctrl = regs_.start->put(0, 1);
  if (irq) ctrl = regs_.en_err->put(regs_.en_done->put(ctrl, 1), 1);
  if (irq && regs_.has_ring) ctrl = regs_.en_ring->put(ctrl, 1);
  dev_.write32(regs_.ctrl, ctrl);
  shadow_[regs_.ctrl] = regs_.start->put(ctrl, 0);  // CTRL's enables as they now are
  return irq;
}

// With on_elems_, the wait is cut into progress intervals, each followed by a report.
bool JobEngine::wait_finished(bool irq, Clock::time_point deadline, std::uint32_t& stv) {
  const bool reports = on_elems_ != nullptr && regs_.has_elems;
  auto next_report = Clock::now() + progress_interval_;
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
    const bool sliced = reports && left > progress_interval_;
    if (irq) {
      const bool finished = left.count() > 0 && dev_.wait_irq(sliced ? progress_interval_ : left);
      stv = status();
      if (finished && regs_.busy->get(stv) == 0) return true;
      if (!finished && !sliced) return false;
      if (!finished) report_elems();
    } else {
      stv = status();
      if (regs_.busy->get(stv) == 0 && (regs_.done->get(stv) != 0 || regs_.error->get(stv) != 0)) {
        return true;
      }
      if (left.count() <= 0) return false;
      if (reports && Clock::now() >= next_report) {
        report_elems();
        next_report = Clock::now() + progress_interval_;
      }
      (void)dev_.wait_irq(std::min(left, std::chrono::milliseconds(1)));
    }
  }
}

void JobEngine::fail_timeout(const DevJob& j, std::uint32_t stv) {
  ++counters_.timeouts;
  const std::string before = status_text(stv);
  check_idle_ = true;
  const bool idle = soft_reset();
  throw DeviceError(
      dev_.name() + ": job timed out after " + std::to_string(job_timeout_.count()) + " ms (" +
      describe(j) + "; " + before + "); " +
      (idle ? "soft reset done, the device is idle again"
            : "the device is still busy after a soft reset (" + status_text(status()) + ")"));
}

void JobEngine::check_result(const DevJob& j, std::uint32_t stv) {
  clear_irq();
  if (regs_.error->get(stv) != 0) {
    const std::uint32_t code = dev_.read32(regs_.err_code) & 0xFFu;
    const std::uint64_t addr =
        dev_.read32(regs_.err_lo) | (static_cast<std::uint64_t>(dev_.read32(regs_.err_hi)) << 32);
    check_idle_ = true;
    throw DeviceError(dev_.name() +
                      ": device job failed: " + dev_.manifest().error_name(static_cast<int>(code)) +
                      " (ERR_CODE=" + std::to_string(code) + ", ERR_ADDR=" + hex(addr) + ", " +
                      status_text(stv) + ") for " + describe(j));
  }
  if (regs_.done->get(stv) == 0) {
    check_idle_ = true;
    throw DeviceError(dev_.name() + ": interrupt without done or error (" + status_text(stv) +
                      ") for " + describe(j));
  }
}

void JobEngine::execute(const DevJob& j, RunStats& st,
                        const std::function<void(std::uint64_t)>& on_elems) {
  ensure_idle();
  program(j);
  const bool irq = start();
  const auto t0 = Clock::now();
  std::uint32_t stv = 0;
  on_elems_ = on_elems ? &on_elems : nullptr;
  bool finished = false;
  try {
    finished = wait_finished(irq, t0 + job_timeout_, stv);
  } catch (...) {
    on_elems_ = nullptr;
    throw;
  }
  on_elems_ = nullptr;
  st.device_seconds += seconds(Clock::now() - t0);
  if (!finished) fail_timeout(j, stv);
  check_result(j, stv);
  ++st.tiles;
}

}  // namespace normcore::detail
