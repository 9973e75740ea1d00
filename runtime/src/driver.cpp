#include "normcore/driver.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <thread>
#include <type_traits>
#include <vector>

namespace normcore {

namespace {

using Clock = std::chrono::steady_clock;
__extension__ typedef unsigned __int128 u128;

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llX", static_cast<unsigned long long>(v));
  return buf;
}
std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08X", v);
  return buf;
}
std::uint64_t mask_bits(int w) {
  return w >= 64 ? ~0ULL : ((1ULL << w) - 1);
}
std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return (a + b - 1) / b;
}
std::uint64_t round_up(std::uint64_t a, std::uint64_t b) {
  return ceil_div(a, b) * b;
}
double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Range of values a host dtype holds.
std::pair<std::int64_t, std::int64_t> dtype_range(DType t) {
  switch (t) {
    case DType::int8:
      return {-128, 127};
    case DType::uint8:
      return {0, 255};
    case DType::int16:
      return {-32768, 32767};
    case DType::uint16:
      return {0, 65535};
    case DType::int32:
      return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
    case DType::float32:
      break;
  }
  return {0, 0};
}

// Packed little-endian bit stream access (elements of w bits, LSB first).
inline void put_bits(std::uint8_t* base, std::uint64_t index, int w, std::uint64_t v) {
  v &= mask_bits(w);
  if (w == 8) {
    base[index] = static_cast<std::uint8_t>(v);
    return;
  }
  if (w == 16) {
    base[2 * index] = static_cast<std::uint8_t>(v);
    base[2 * index + 1] = static_cast<std::uint8_t>(v >> 8);
    return;
  }
  std::uint64_t bit = index * static_cast<std::uint64_t>(w);
  for (int i = 0; i < w;) {
    const int off = static_cast<int>(bit % 8);
    const int n = std::min(8 - off, w - i);
    const auto m = static_cast<std::uint8_t>(((1u << n) - 1u) << off);
    std::uint8_t& b = base[bit / 8];
    b = static_cast<std::uint8_t>((b & ~m) | ((static_cast<unsigned>(v >> i) << off) & m));
    i += n;
    bit += static_cast<std::uint64_t>(n);
  }
}

inline std::int64_t get_bits(const std::uint8_t* base, std::uint64_t index, int w, bool sgn) {
  std::uint64_t u = 0;
  if (w == 8) {
    u = base[index];
  } else if (w == 16) {
    u = static_cast<std::uint64_t>(base[2 * index]) |
        (static_cast<std::uint64_t>(base[2 * index + 1]) << 8);
  } else {
    std::uint64_t bit = index * static_cast<std::uint64_t>(w);
    for (int i = 0; i < w;) {
      const int off = static_cast<int>(bit % 8);
      const int n = std::min(8 - off, w - i);
      u |= static_cast<std::uint64_t>((base[bit / 8] >> off) & ((1u << n) - 1u)) << i;
      i += n;
      bit += static_cast<std::uint64_t>(n);
    }
  }
  if (sgn && ((u >> (w - 1)) & 1U)) u |= ~0ULL << w;
  return static_cast<std::int64_t>(u);
}

// p as a T pointer, keeping p's constness.
template <typename T, typename V>
auto typed(V* p) {
  if constexpr (std::is_const_v<V>) {
    return static_cast<const T*>(p);
  } else {
    return static_cast<T*>(p);
  }
}

// Calls f(T*) with the pointer cast to the dtype's C++ type (const if p is).
template <typename V, typename F>
void with_type(DType t, V* p, F&& f) {
  switch (t) {
    case DType::int8:
      f(typed<std::int8_t>(p));
      break;
    case DType::uint8:
      f(typed<std::uint8_t>(p));
      break;
    case DType::int16:
      f(typed<std::int16_t>(p));
      break;
    case DType::uint16:
      f(typed<std::uint16_t>(p));
      break;
    case DType::int32:
      f(typed<std::int32_t>(p));
      break;
    case DType::float32:
      f(typed<float>(p));
      break;
  }
}

}  // namespace

std::string_view to_string(DType t) {
  switch (t) {
    case DType::int8:
      return "int8";
    case DType::uint8:
      return "uint8";
    case DType::int16:
      return "int16";
    case DType::uint16:
      return "uint16";
    case DType::int32:
      return "int32";
    case DType::float32:
      return "float32";
  }
  return "?";
}

DType parse_dtype(std::string_view text) {
  for (DType t :
       {DType::int8, DType::uint8, DType::int16, DType::uint16, DType::int32, DType::float32}) {
    if (text == to_string(t)) return t;
  }
  throw DeviceError("unknown element type '" + std::string(text) +
                    "' (int8, uint8, int16, uint16, int32, float32)");
}

std::size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::int8:
    case DType::uint8:
      return 1;
    case DType::int16:
    case DType::uint16:
      return 2;
    case DType::int32:
    case DType::float32:
      return 4;
  }
  return 1;
}

std::string_view to_string(RunState s) {
  switch (s) {
    case RunState::queued:
      return "queued";
    case RunState::running:
      return "running";
    case RunState::completed:
      return "completed";
    case RunState::failed:
      return "failed";
  }
  return "?";
}

std::string DeviceInfo::describe() const {
  std::string s;
  auto line = [&](const std::string& k, const std::string& v) { s += k + ": " + v + "\n"; };
  line("ID", hex32(id) + (id == 0x4E43424Eu ? " (NCBN)" : " (unexpected)"));
  line("VERSION", hex32(version) + " (contract " + std::to_string(contract) + ", generator " +
                      generator_version + ")");
  line("datapath", std::to_string(lanes) + " lanes, " + (in_signed ? "int" : "uint") +
                       std::to_string(in_bits) + " -> " + (out_signed ? "int" : "uint") +
                       std::to_string(out_bits));
  std::string modes;
  for (int m = 0; m < 4; ++m) {
    if ((round_modes >> m) & 1U) {
      modes += (modes.empty() ? "" : ", ") + std::string(to_string(static_cast<Rounding>(m)));
    }
  }
  line("rounding", modes);
  line("parameters", "up to " + std::to_string(max_channels) + " channels, s " +
                         std::to_string(scale_bits) + " bits, b " + std::to_string(shift_bits) +
                         " bits, " + std::to_string(param_entry_bytes) + " bytes per entry");
  line("lengths", "INNER " + std::to_string(inner_bits) + " bits, OUTER 32 bits");
  line("memory", std::to_string(bus_bytes * 8) + "-bit AXI4, " + std::to_string(addr_bits) +
                     "-bit addresses, bursts of " + std::to_string(max_burst) + ", " +
                     std::to_string(outstanding) + " outstanding");
  line("CAPS", hex32(caps[0]) + " " + hex32(caps[1]) + " " + hex32(caps[2]) + " " + hex32(caps[3]));
  return s;
}

// ---------------------------------------------------------------------------------------------

namespace detail {

struct RunShared {
  std::mutex mu;
  std::condition_variable cv;
  RunState state = RunState::queued;
  std::string error;
  std::exception_ptr exc;
  RunStats stats;
  // The job.
  std::shared_ptr<const ParamsImpl> params;
  TensorView in;
  MutableTensorView out;
  JobShape shape;
  RunOptions opt;
  std::shared_ptr<BufferImpl> bin, bout;  // zero-copy
};

struct Regs {
  const FieldDesc *start, *soft_reset, *en_done, *en_err;
  const FieldDesc *busy, *done, *error;
  const FieldDesc *irq_done, *irq_err;
  const FieldDesc *layout, *rounding, *shift;
  std::uint32_t ctrl, status, irq_status, err_code, err_lo, err_hi;
  std::uint32_t channels, inner, outer, mode, clamp_lo, clamp_hi;
  std::uint32_t src_lo, src_hi, dst_lo, dst_hi, param_lo, param_hi;
  std::uint32_t perf_active;
  bool has_perf = false;

  explicit Regs(const Manifest& m) {
    start = &m.field("CTRL", "start");
    soft_reset = &m.field("CTRL", "soft_reset");
    en_done = &m.field("CTRL", "irq_en_done");
    en_err = &m.field("CTRL", "irq_en_error");
    busy = &m.field("STATUS", "busy");
    done = &m.field("STATUS", "done");
    error = &m.field("STATUS", "error");
    irq_done = &m.field("IRQ_STATUS", "done");
    irq_err = &m.field("IRQ_STATUS", "error");
    layout = &m.field("MODE", "layout");
    rounding = &m.field("MODE", "rounding");
    shift = &m.field("MODE", "shift");
    ctrl = m.offset("CTRL");
    status = m.offset("STATUS");
    irq_status = m.offset("IRQ_STATUS");
    err_code = m.offset("ERR_CODE");
    err_lo = m.offset("ERR_ADDR_LO");
    err_hi = m.offset("ERR_ADDR_HI");
    channels = m.offset("CHANNELS");
    inner = m.offset("INNER");
    outer = m.offset("OUTER");
    mode = m.offset("MODE");
    clamp_lo = m.offset("CLAMP_LO");
    clamp_hi = m.offset("CLAMP_HI");
    src_lo = m.offset("SRC_LO");
    src_hi = m.offset("SRC_HI");
    dst_lo = m.offset("DST_LO");
    dst_hi = m.offset("DST_HI");
    param_lo = m.offset("PARAM_LO");
    param_hi = m.offset("PARAM_HI");
    if (const RegDesc* r = nullptr; (r = find(m, "PERF_ACTIVE")) != nullptr) {
      perf_active = r->offset;
      has_perf = true;
    } else {
      perf_active = 0;
    }
  }
  static const RegDesc* find(const Manifest& m, const char* name) {
    for (const auto& r : m.registers) {
      if (r.name == name) return &r;
    }
    return nullptr;
  }
};

// One device job as programmed into the registers.
struct DevJob {
  std::uint64_t channels = 1, inner = 1, outer = 1;
  Layout layout = Layout::nchw;
  JobSettings settings;
  std::uint64_t src = 0, dst = 0, param = 0;
};

struct DriverCore {
  std::unique_ptr<Device> dev;
  DriverOptions opt;
  DeviceInfo info;
  Regs regs;
  ArithSpec spec;
  std::mutex dev_mu;                               // every device access
  std::map<std::uint32_t, std::uint32_t> shadow;   // last value written to each job register
  bool check_idle = true;                          // verify !busy before the next job
  std::unique_ptr<DmaBuffer> stage_in, stage_out;  // grow-only staging buffers

  std::mutex q_mu;
  std::condition_variable q_cv;
  std::deque<std::shared_ptr<RunShared>> queue;
  bool stop = false;
  std::thread worker;
  DriverStats stats;  // under q_mu

  DriverCore(std::unique_ptr<Device> d, DriverOptions o)
      : dev(std::move(d)),
        opt(std::move(o)),
        regs(dev->manifest()),
        spec(dev->manifest().config.arith()) {}

  [[nodiscard]] const DeviceConfig& cfg() const { return dev->manifest().config; }

  void set(std::uint32_t off, std::uint32_t v) {
    const auto it = shadow.find(off);
    if (it != shadow.end() && it->second == v) return;
    dev->write32(off, v);
    shadow[off] = v;
  }

  std::uint32_t status() { return dev->read32(regs.status); }

  std::string status_text(std::uint32_t st) {
    std::string s = "STATUS=" + hex32(st) + " (busy " + std::to_string(regs.busy->get(st)) +
                    ", done " + std::to_string(regs.done->get(st)) + ", error " +
                    std::to_string(regs.error->get(st)) + ")";
    if (regs.has_perf) s += ", PERF_ACTIVE=" + std::to_string(dev->read32(regs.perf_active));
    return s;
  }

  // Soft reset; true if the engine is idle afterwards.
  bool soft_reset() {
    {
      std::lock_guard lk(q_mu);
      ++stats.soft_resets;
    }
    dev->write32(regs.ctrl, regs.soft_reset->put(0, 1));
    const auto deadline = Clock::now() + opt.reset_timeout;
    for (;;) {
      if (regs.busy->get(status()) == 0) break;
      if (Clock::now() >= deadline) return false;
      (void)dev->wait_irq(std::chrono::milliseconds(1));  // lets a simulated device advance
    }
    dev->write32(regs.irq_status, regs.irq_done->mask() | regs.irq_err->mask());
    return true;
  }

  void ensure_idle() {
    if (!check_idle) return;
    const std::uint32_t st = status();
    if (regs.busy->get(st) != 0 && !soft_reset()) {
      throw DeviceError(dev->name() + ": device busy before a job and still busy after a soft " +
                        "reset (" + status_text(status()) + "); it needs a hardware reset");
    }
    dev->write32(regs.irq_status, regs.irq_done->mask() | regs.irq_err->mask());
    check_idle = false;
  }

  std::string describe(const DevJob& j) const {
    return "C=" + std::to_string(j.channels) + " INNER=" + std::to_string(j.inner) +
           " OUTER=" + std::to_string(j.outer) + " " + std::string(to_string(j.layout)) +
           " SRC=" + hex(j.src) + " DST=" + hex(j.dst) + " PARAM=" + hex(j.param);
  }

  // Programs, starts and waits for one device job. Caller holds dev_mu.
  void execute(const DevJob& j, RunStats& st) {
    ensure_idle();
    const int yw = cfg().out_bits;
    set(regs.channels, static_cast<std::uint32_t>(j.channels));
    set(regs.inner, static_cast<std::uint32_t>(j.inner));
    set(regs.outer, static_cast<std::uint32_t>(j.outer));
    std::uint32_t mode = regs.layout->put(0, j.layout == Layout::nhwc ? 1 : 0);
    mode = regs.rounding->put(mode, static_cast<std::uint32_t>(j.settings.rounding));
    mode = regs.shift->put(mode, static_cast<std::uint32_t>(j.settings.shift));
    set(regs.mode, mode);
    set(regs.clamp_lo,
        static_cast<std::uint32_t>(static_cast<std::uint64_t>(j.settings.lo) & mask_bits(yw)));
    set(regs.clamp_hi,
        static_cast<std::uint32_t>(static_cast<std::uint64_t>(j.settings.hi) & mask_bits(yw)));
    set(regs.src_lo, static_cast<std::uint32_t>(j.src));
    set(regs.src_hi, static_cast<std::uint32_t>(j.src >> 32));
    set(regs.dst_lo, static_cast<std::uint32_t>(j.dst));
    set(regs.dst_hi, static_cast<std::uint32_t>(j.dst >> 32));
    set(regs.param_lo, static_cast<std::uint32_t>(j.param));
    set(regs.param_hi, static_cast<std::uint32_t>(j.param >> 32));
    const bool irq = opt.use_irq && dev->has_irq();
    std::uint32_t ctrl = regs.start->put(0, 1);
    if (irq) ctrl = regs.en_err->put(regs.en_done->put(ctrl, 1), 1);
    dev->write32(regs.ctrl, ctrl);

    const auto t0 = Clock::now();
    const auto deadline = t0 + opt.job_timeout;
    std::uint32_t stv = 0;
    bool finished = false;
    for (;;) {
      const auto now = Clock::now();
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
      if (irq) {
        finished = left.count() > 0 && dev->wait_irq(left);
        stv = status();
        if (finished && regs.busy->get(stv) == 0) break;
        if (!finished) break;
      } else {
        stv = status();
        if (regs.busy->get(stv) == 0 && (regs.done->get(stv) != 0 || regs.error->get(stv) != 0)) {
          finished = true;
          break;
        }
        if (left.count() <= 0) break;
        (void)dev->wait_irq(std::min(left, std::chrono::milliseconds(1)));
      }
    }
    st.device_seconds += seconds(Clock::now() - t0);
    if (!finished) {
      {
        std::lock_guard lk(q_mu);
        ++stats.timeouts;
      }
      const std::string before = status_text(stv);
      check_idle = true;
      const bool idle = soft_reset();
      throw DeviceError(
          dev->name() + ": job timed out after " + std::to_string(opt.job_timeout.count()) +
          " ms (" + describe(j) + "; " + before + "); " +
          (idle ? "soft reset done, the device is idle again"
                : "the device is still busy after a soft reset (" + status_text(status()) + ")"));
    }
    dev->write32(regs.irq_status, regs.irq_done->mask() | regs.irq_err->mask());
    if (regs.error->get(stv) != 0) {
      const std::uint32_t code = dev->read32(regs.err_code) & 0xFFu;
      const std::uint64_t addr =
          dev->read32(regs.err_lo) | (static_cast<std::uint64_t>(dev->read32(regs.err_hi)) << 32);
      check_idle = true;
      throw DeviceError(dev->name() + ": device job failed: " +
                        dev->manifest().error_name(static_cast<int>(code)) +
                        " (ERR_CODE=" + std::to_string(code) + ", ERR_ADDR=" + hex(addr) + ", " +
                        status_text(stv) + ") for " + describe(j));
    }
    if (regs.done->get(stv) == 0) {
      check_idle = true;
      throw DeviceError(dev->name() + ": interrupt without done or error (" + status_text(stv) +
                        ") for " + describe(j));
    }
    ++st.tiles;
  }

  DmaBuffer& staging(std::unique_ptr<DmaBuffer>& slot, std::uint64_t bytes) {
    const std::uint64_t want = round_up(std::max<std::uint64_t>(bytes, 1), 4096);
    if (!slot || slot->size() < want) {
      slot.reset();
      slot = dev->alloc(static_cast<std::size_t>(want), 4096);
    }
    return *slot;
  }
};

}  // namespace detail

// ---------------------------------------------------------------------------------------------

namespace detail {

// One channel group's table on the device.
struct ParamGroup {
  std::uint64_t c0 = 0, channels = 0;
  std::unique_ptr<DmaBuffer> buf;
};

struct ParamsImpl {
  ParamImage image;
  std::shared_ptr<DriverCore> core;
  std::vector<ParamGroup> groups;  // channel groups of <= MAX_CHANNELS
  std::uint64_t group_channels = 0;

  ParamsImpl() = default;
  ParamsImpl(const ParamsImpl&) = delete;
  ParamsImpl& operator=(const ParamsImpl&) = delete;
  ~ParamsImpl() {
    if (core) {
      std::lock_guard lk(core->dev_mu);
      groups.clear();
    }
  }
};

struct BufferImpl {
  std::shared_ptr<DriverCore> core;
  std::unique_ptr<DmaBuffer> buf;

  BufferImpl() = default;
  BufferImpl(const BufferImpl&) = delete;
  BufferImpl& operator=(const BufferImpl&) = delete;
  ~BufferImpl() {
    if (core && buf) {
      std::lock_guard lk(core->dev_mu);
      buf.reset();
    }
  }
};

}  // namespace detail

const ParamImage& Params::image() const {
  if (!impl_) throw DeviceError("Params: empty parameter handle");
  return impl_->image;
}

namespace {
DmaBuffer& buffer_of(const std::shared_ptr<detail::BufferImpl>& b) {
  if (!b) throw DeviceError("Buffer: empty buffer handle");
  return *b->buf;
}
}  // namespace

std::span<std::uint8_t> Buffer::map() {
  return buffer_of(impl_).map();
}
std::size_t Buffer::size() const {
  return buffer_of(impl_).size();
}
std::uint64_t Buffer::device_address() const {
  return buffer_of(impl_).device_address();
}

bool Run::wait(std::chrono::milliseconds timeout) const {
  if (!s_) throw DeviceError("Run::wait on an empty run handle");
  std::unique_lock lk(s_->mu);
  return s_->cv.wait_for(lk, timeout, [&] {
    return s_->state == RunState::completed || s_->state == RunState::failed;
  });
}

void Run::get() const {
  if (!s_) throw DeviceError("Run::get on an empty run handle");
  std::unique_lock lk(s_->mu);
  s_->cv.wait(lk,
              [&] { return s_->state == RunState::completed || s_->state == RunState::failed; });
  if (s_->exc) std::rethrow_exception(s_->exc);
}

RunState Run::state() const {
  std::lock_guard lk(s_->mu);
  return s_->state;
}
std::string Run::error() const {
  std::lock_guard lk(s_->mu);
  return s_->error;
}
RunStats Run::stats() const {
  std::lock_guard lk(s_->mu);
  return s_->stats;
}

// ---------------------------------------------------------------------------------------------

namespace {

DeviceInfo read_info(Device& dev) {
  const Manifest& m = dev.manifest();
  DeviceInfo in;
  std::string mismatch;
  auto rd = [&](const char* name) {
    const RegDesc& r = m.reg(name);
    const std::uint32_t v = dev.read32(r.offset);
    if (v != r.reset) {
      std::string fields;
      for (const auto& f : r.fields) {
        if (f.get(v) != f.get(r.reset)) {
          fields += (fields.empty() ? "" : ", ") + f.name + " " + std::to_string(f.get(v)) +
                    " vs " + std::to_string(f.get(r.reset));
        }
      }
      mismatch += std::string(mismatch.empty() ? "" : "; ") + name + " reads " + hex32(v) +
                  ", the manifest says " + hex32(r.reset) + " (" + fields + ")";
    }
    return v;
  };
  in.id = rd("ID");
  in.version = rd("VERSION");
  const char* caps[] = {"CAPS0", "CAPS1", "CAPS2", "CAPS3"};
  for (int i = 0; i < 4; ++i) in.caps[i] = rd(caps[i]);
  if (!mismatch.empty()) {
    throw DeviceError(dev.name() + ": the device does not match its manifest " + m.source + ": " +
                      mismatch);
  }
  auto f = [&](const char* reg, const char* field) {
    const RegDesc& r = m.reg(reg);
    const int idx = reg[4] - '0';
    const std::uint32_t v = std::string_view(reg) == "VERSION" ? in.version
                            : std::string_view(reg) == "ID"    ? in.id
                                                               : in.caps[idx];
    return static_cast<int>(r.field(field).get(v));
  };
  in.contract = f("VERSION", "contract");
  in.generator_version = std::to_string(f("VERSION", "major")) + "." +
                         std::to_string(f("VERSION", "minor")) + "." +
                         std::to_string(f("VERSION", "patch"));
  in.lanes = f("CAPS0", "lanes");
  in.in_bits = f("CAPS0", "in_bits");
  in.in_signed = f("CAPS0", "in_signed") != 0;
  in.out_bits = f("CAPS0", "out_bits");
  in.out_signed = f("CAPS0", "out_signed") != 0;
  in.round_modes = static_cast<unsigned>(f("CAPS0", "round_modes"));
  in.max_channels = f("CAPS1", "max_channels");
  in.bus_bytes = f("CAPS2", "bus_bytes");
  in.addr_bits = f("CAPS2", "addr_bits");
  in.outstanding = f("CAPS2", "outstanding");
  in.max_burst = 1 << f("CAPS2", "max_burst_log2");
  in.scale_bits = f("CAPS3", "scale_bits");
  in.shift_bits = f("CAPS3", "shift_bits");
  in.inner_bits = f("CAPS3", "inner_bits");
  in.param_entry_bytes = f("CAPS3", "param_entry_bytes");
  if (in.contract != kContractVersion) {
    throw DeviceError(dev.name() + ": device implements arithmetic contract " +
                      std::to_string(in.contract) + ", this runtime " +
                      std::to_string(kContractVersion));
  }
  return in;
}

struct Tile {
  std::uint64_t n0, nn, g, p0, pw;
};

}  // namespace

// ---------------------------------------------------------------------------------------------

namespace {

void worker_loop(detail::DriverCore& k);

}  // namespace

Accelerator Accelerator::open(std::string_view device_string, DriverOptions options) {
  return Accelerator(open_device(device_string), std::move(options));
}

Accelerator::Accelerator(std::unique_ptr<Device> device, DriverOptions options) {
  if (!device) throw DeviceError("Accelerator: no device");
  if (options.max_tile_elements == 0) throw DeviceError("DriverOptions: max_tile_elements is 0");
  core_ = std::make_shared<detail::DriverCore>(std::move(device), std::move(options));
  core_->info = read_info(*core_->dev);
  // Leave no stale interrupt from before we opened it.
  core_->dev->write32(core_->regs.irq_status,
                      core_->regs.irq_done->mask() | core_->regs.irq_err->mask());
  core_->worker = std::thread([k = core_.get()] { worker_loop(*k); });
}

Accelerator::~Accelerator() {
  if (!core_) return;
  {
    std::lock_guard lk(core_->q_mu);
    core_->stop = true;
  }
  core_->q_cv.notify_all();
  if (core_->worker.joinable()) core_->worker.join();
  std::lock_guard lk(core_->dev_mu);
  core_->stage_in.reset();
  core_->stage_out.reset();
}

Accelerator::Accelerator(Accelerator&&) noexcept = default;
Accelerator& Accelerator::operator=(Accelerator&& o) noexcept {
  if (this != &o) {
    Accelerator tmp(std::move(*this));
    core_ = std::move(o.core_);
  }
  return *this;
}

const DeviceInfo& Accelerator::info() const {
  return core_->info;
}
const Manifest& Accelerator::manifest() const {
  return core_->dev->manifest();
}
Device& Accelerator::device() {
  return *core_->dev;
}

DriverStats Accelerator::stats() const {
  DriverStats s;
  {
    std::lock_guard lk(core_->q_mu);
    s = core_->stats;
  }
  std::lock_guard lk(core_->dev_mu);
  s.mmio_reads = core_->dev->counters().reads;
  s.mmio_writes = core_->dev->counters().writes;
  return s;
}

Buffer Accelerator::alloc(std::size_t bytes) {
  auto b = std::make_shared<detail::BufferImpl>();
  b->core = core_;
  std::lock_guard lk(core_->dev_mu);
  b->buf = core_->dev->alloc(bytes, 4096);
  return Buffer(std::move(b));
}

Params Accelerator::upload(const ParamImage& image) {
  const ArithSpec& d = core_->spec;
  const ArithSpec& p = image.spec;
  auto differ = [&](const char* what, long long got, long long want) {
    throw DeviceError("params: " + std::string(what) + " is " + std::to_string(got) +
                      " but device " + core_->dev->name() + " takes " + std::to_string(want) +
                      " (fold the layer for this device's configuration)");
  };
  if (p.xw != d.xw) differ("in_bits", p.xw, d.xw);
  if (p.x_signed != d.x_signed) differ("in_signed", p.x_signed, d.x_signed);
  if (p.sw != d.sw) differ("scale_bits", p.sw, d.sw);
  if (p.bw != d.bw) differ("shift_bits", p.bw, d.bw);
  if (p.yw != d.yw) differ("out_bits", p.yw, d.yw);
  if (p.y_signed != d.y_signed) differ("out_signed", p.y_signed, d.y_signed);
  try {
    check_image(image, "params");
  } catch (const Error& e) {
    throw DeviceError(e.what());
  }
  if (((core_->info.round_modes >> static_cast<unsigned>(image.job.rounding)) & 1U) == 0) {
    throw DeviceError("params: rounding " + std::string(to_string(image.job.rounding)) +
                      " is not supported by device " + core_->dev->name());
  }
  auto prm = std::make_shared<detail::ParamsImpl>();
  prm->image = image;
  prm->core = core_;
  const std::uint64_t c = image.scale.size();
  const std::uint64_t maxc = static_cast<std::uint64_t>(core_->info.max_channels);
  const std::uint64_t groups = ceil_div(c, maxc);
  prm->group_channels = ceil_div(c, groups);
  const int eb = core_->info.param_entry_bytes;
  std::lock_guard lk(core_->dev_mu);
  for (std::uint64_t c0 = 0; c0 < c; c0 += prm->group_channels) {
    detail::ParamGroup g;
    g.c0 = c0;
    g.channels = std::min(prm->group_channels, c - c0);
    g.buf = core_->dev->alloc(static_cast<std::size_t>(g.channels) * static_cast<std::size_t>(eb),
                              4096);
    auto bytes = g.buf->map();
    for (std::uint64_t i = 0; i < g.channels; ++i) {
      const auto s =
          static_cast<u128>(static_cast<std::uint64_t>(image.scale[c0 + i]) & mask_bits(p.sw));
      const auto b =
          static_cast<u128>(static_cast<std::uint64_t>(image.shift[c0 + i]) & mask_bits(p.bw));
      const u128 e = s | (b << p.sw);
      for (int k = 0; k < eb; ++k) {
        bytes[static_cast<std::size_t>(i) * static_cast<std::size_t>(eb) +
              static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(e >> (8 * k));
      }
    }
    g.buf->sync_to_device(0, static_cast<std::size_t>(g.channels) * static_cast<std::size_t>(eb));
    prm->groups.push_back(std::move(g));
  }
  return Params(std::move(prm));
}

namespace {

void check_common(const detail::DriverCore& k, const detail::ParamsImpl& p, const JobShape& s) {
  if (s.n == 0 || s.c == 0 || s.hw == 0) {
    throw DeviceError("bad shape N=" + std::to_string(s.n) + " C=" + std::to_string(s.c) +
                      " HW=" + std::to_string(s.hw) + ": every dimension must be >= 1");
  }
  if (s.n > (std::uint64_t{1} << 40) || s.c > (std::uint64_t{1} << 24) ||
      s.hw > (std::uint64_t{1} << 40) || s.n * s.c > (std::uint64_t{1} << 50) ||
      s.elements() / s.n / s.c != s.hw) {
    throw DeviceError("bad shape: N*C*HW is too large");
  }
  if (s.c != p.image.scale.size()) {
    throw DeviceError("bad shape: C=" + std::to_string(s.c) + " but the parameters have " +
                      std::to_string(p.image.scale.size()) + " channels");
  }
  (void)k;
}

}  // namespace

Run Accelerator::submit(const Params& params, TensorView input, MutableTensorView output,
                        const JobShape& shape, const RunOptions& options) {
  if (!params.valid()) throw DeviceError("submit: no parameters");
  if (params.impl_->core != core_) {
    throw DeviceError("submit: parameters uploaded to another device");
  }
  check_common(*core_, *params.impl_, shape);
  const std::uint64_t n = shape.elements();
  if (input.count != n) {
    throw DeviceError("input has " + std::to_string(input.count) + " elements, the shape " +
                      std::to_string(shape.n) + "x" + std::to_string(shape.c) + "x" +
                      std::to_string(shape.hw) + " needs " + std::to_string(n));
  }
  if (output.count != n) {
    throw DeviceError("output buffer too small or too large: " + std::to_string(output.count) +
                      " elements, the shape needs " + std::to_string(n));
  }
  if (input.data == nullptr || output.data == nullptr) throw DeviceError("null tensor data");
  const ArithSpec& a = core_->spec;
  if (input.dtype == DType::float32) {
    if (!options.in_quant) throw DeviceError("float32 input needs in_quant (scale, zero point)");
    if (!(options.in_quant->scale > 0) || !std::isfinite(options.in_quant->scale)) {
      throw DeviceError("in_quant.scale must be a positive finite number");
    }
  } else {
    const auto [lo, hi] = dtype_range(input.dtype);
    (void)lo;
    (void)hi;
  }
  if (output.dtype == DType::float32) {
    if (!options.out_quant) throw DeviceError("float32 output needs out_quant (scale, zero point)");
    if (!(options.out_quant->scale > 0) || !std::isfinite(options.out_quant->scale)) {
      throw DeviceError("out_quant.scale must be a positive finite number");
    }
  } else {
    const auto [lo, hi] = dtype_range(output.dtype);
    const auto& js = params.image().job;
    if (js.lo < lo || js.hi > hi) {
      throw DeviceError("output type " + std::string(to_string(output.dtype)) +
                        " cannot hold the results (clamp " + std::to_string(js.lo) + ".." +
                        std::to_string(js.hi) + ")");
    }
  }
  (void)a;
  const auto* ib = static_cast<const std::uint8_t*>(input.data);
  auto* ob = static_cast<std::uint8_t*>(output.data);
  const std::size_t ibytes = input.count * dtype_bytes(input.dtype);
  const std::size_t obytes = output.count * dtype_bytes(output.dtype);
  if (ib < ob + obytes && ob < ib + ibytes) {
    throw DeviceError("input and output tensors overlap (use separate host buffers)");
  }
  auto r = std::make_shared<detail::RunShared>();
  r->params = params.impl_;
  r->in = input;
  r->out = output;
  r->shape = shape;
  r->opt = options;
  r->stats.elements = n;
  {
    std::lock_guard lk(core_->q_mu);
    core_->queue.push_back(r);
    ++core_->stats.runs;
  }
  core_->q_cv.notify_all();
  return Run(r);
}

Run Accelerator::submit(const Params& params, const Buffer& input, const Buffer& output,
                        const JobShape& shape) {
  if (!params.valid()) throw DeviceError("submit: no parameters");
  if (!input.valid() || !output.valid()) throw DeviceError("submit: empty buffer handle");
  if (params.impl_->core != core_ || input.impl_->core != core_ || output.impl_->core != core_) {
    throw DeviceError("submit: parameters or buffers belong to another device");
  }
  check_common(*core_, *params.impl_, shape);
  const DeviceConfig& c = core_->cfg();
  const std::uint64_t n = shape.elements();
  if (params.impl_->groups.size() != 1) {
    throw DeviceError("zero-copy run: C=" + std::to_string(shape.c) + " exceeds the device's " +
                      std::to_string(c.max_channels) + " channels; use host tensors (tiled)");
  }
  if (shape.layout == Layout::nchw && shape.hw > c.max_inner()) {
    throw DeviceError("zero-copy run: HW=" + std::to_string(shape.hw) + " exceeds INNER's " +
                      std::to_string(c.max_inner()) + "; use host tensors (tiled)");
  }
  const std::uint64_t outer = shape.layout == Layout::nchw ? shape.n : shape.n * shape.hw;
  if (outer > c.max_outer()) {
    throw DeviceError("zero-copy run: OUTER=" + std::to_string(outer) +
                      " exceeds 2^32-1; use host tensors (tiled)");
  }
  const std::uint64_t need_in = ceil_div(n * static_cast<std::uint64_t>(c.in_bits), 8);
  const std::uint64_t need_out = ceil_div(n * static_cast<std::uint64_t>(c.out_bits), 8);
  if (input.size() < need_in) {
    throw DeviceError("input buffer too small: " + std::to_string(input.size()) +
                      " bytes, the shape needs " + std::to_string(need_in));
  }
  if (output.size() < need_out) {
    throw DeviceError("output buffer too small: " + std::to_string(output.size()) +
                      " bytes, the shape needs " + std::to_string(need_out));
  }
  auto r = std::make_shared<detail::RunShared>();
  r->params = params.impl_;
  r->bin = input.impl_;
  r->bout = output.impl_;
  r->shape = shape;
  r->stats.elements = n;
  {
    std::lock_guard lk(core_->q_mu);
    core_->queue.push_back(r);
    ++core_->stats.runs;
  }
  core_->q_cv.notify_all();
  return Run(r);
}

void Accelerator::run(const Params& params, TensorView input, MutableTensorView output,
                      const JobShape& shape, const RunOptions& options) {
  submit(params, input, output, shape, options).get();
}

void Accelerator::run(const Params& params, const Buffer& input, const Buffer& output,
                      const JobShape& shape) {
  submit(params, input, output, shape).get();
}

// ---------------------------------------------------------------------------------------------
// The worker: tiles, staging, conversion.

namespace {

// Writes elements [h, h + len) of the host input, converted, as packed device elements from
// index d on.
void gather_run(const TensorView& in, const RunOptions& opt, const ArithSpec& a, std::uint8_t* dst,
                std::uint64_t d, std::uint64_t h, std::uint64_t len) {
  const std::int64_t lo = a.x_min(), hi = a.x_max();
  const int w = a.xw;
  // Fast path: byte elements with the same signedness (int8 -> signed 8, uint8 -> unsigned 8).
  if (w == 8 &&
      ((in.dtype == DType::int8 && a.x_signed) || (in.dtype == DType::uint8 && !a.x_signed))) {
    std::memcpy(dst + d, static_cast<const std::uint8_t*>(in.data) + h,
                static_cast<std::size_t>(len));
    return;
  }
  if (in.dtype == DType::float32) {
    const float* p = static_cast<const float*>(in.data) + h;
    const double inv = 1.0 / opt.in_quant->scale;
    const auto zp = static_cast<double>(opt.in_quant->zero_point);
    for (std::uint64_t i = 0; i < len; ++i) {
      const double x = static_cast<double>(p[i]);
      if (std::isnan(x)) {
        throw DeviceError("input element " + std::to_string(h + i) + " is NaN");
      }
      double q = std::nearbyint(x * inv) + zp;
      q = std::clamp(q, static_cast<double>(lo), static_cast<double>(hi));
      put_bits(dst, d + i, w, static_cast<std::uint64_t>(static_cast<std::int64_t>(q)));
    }
    return;
  }
  with_type(in.dtype, in.data, [&](const auto* p) {
    p += h;
    for (std::uint64_t i = 0; i < len; ++i) {
      const auto v = static_cast<std::int64_t>(p[i]);
      if (v < lo || v > hi) {
        throw DeviceError("input element " + std::to_string(h + i) + " = " + std::to_string(v) +
                          " is outside the device's input range " + std::to_string(lo) + ".." +
                          std::to_string(hi));
      }
      put_bits(dst, d + i, w, static_cast<std::uint64_t>(v));
    }
  });
}

void scatter_run(const MutableTensorView& out, const RunOptions& opt, const ArithSpec& a,
                 const std::uint8_t* src, std::uint64_t d, std::uint64_t h, std::uint64_t len) {
  const int w = a.yw;
  if (w == 8 &&
      ((out.dtype == DType::int8 && a.y_signed) || (out.dtype == DType::uint8 && !a.y_signed))) {
    std::memcpy(static_cast<std::uint8_t*>(out.data) + h, src + d, static_cast<std::size_t>(len));
    return;
  }
  if (out.dtype == DType::float32) {
    float* p = static_cast<float*>(out.data) + h;
    const double s = opt.out_quant->scale;
    const std::int64_t zp = opt.out_quant->zero_point;
    for (std::uint64_t i = 0; i < len; ++i) {
      p[i] = static_cast<float>(s * static_cast<double>(get_bits(src, d + i, w, a.y_signed) - zp));
    }
    return;
  }
  with_type(out.dtype, out.data, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    p += h;
    for (std::uint64_t i = 0; i < len; ++i) {
      p[i] = static_cast<T>(get_bits(src, d + i, w, a.y_signed));
    }
  });
}

std::vector<Tile> plan_tiles(const detail::DriverCore& k, const JobShape& s,
                             std::uint64_t group_channels) {
  const DeviceConfig& c = k.cfg();
  const std::uint64_t budget = k.opt.max_tile_elements;
  const std::uint64_t cg = group_channels;
  const std::uint64_t groups = ceil_div(s.c, cg);
  std::uint64_t pw = s.hw;
  if (s.layout == Layout::nchw) pw = std::min(pw, c.max_inner());
  pw = std::min(pw, std::max<std::uint64_t>(1, budget / cg));
  if (s.layout == Layout::nhwc) pw = std::min(pw, c.max_outer());
  std::uint64_t nn = 1;
  if (pw == s.hw) {
    nn = std::clamp<std::uint64_t>(budget / (cg * s.hw), 1, s.n);
    if (s.layout == Layout::nchw) {
      nn = std::min(nn, c.max_outer());
    } else {
      nn = std::min(nn, std::max<std::uint64_t>(1, c.max_outer() / s.hw));
    }
  }
  std::vector<Tile> t;
  for (std::uint64_t n0 = 0; n0 < s.n; n0 += nn) {
    for (std::uint64_t g = 0; g < groups; ++g) {
      for (std::uint64_t p0 = 0; p0 < s.hw; p0 += pw) {
        t.push_back({n0, std::min(nn, s.n - n0), g, p0, std::min(pw, s.hw - p0)});
      }
    }
  }
  return t;
}

void run_host(detail::DriverCore& k, detail::RunShared& r) {
  const detail::ParamsImpl& prm = *r.params;
  const JobShape& s = r.shape;
  const ArithSpec& a = k.spec;
  const auto tiles = plan_tiles(k, s, prm.group_channels);
  std::uint64_t done = 0;
  for (const Tile& t : tiles) {
    const auto& g = prm.groups[static_cast<std::size_t>(t.g)];
    const std::uint64_t cg = g.channels, c0 = g.c0;
    const std::uint64_t elems = t.nn * cg * t.pw;
    const std::uint64_t in_bytes = ceil_div(elems * static_cast<std::uint64_t>(a.xw), 8);
    const std::uint64_t out_bytes = ceil_div(elems * static_cast<std::uint64_t>(a.yw), 8);
    std::lock_guard lk(k.dev_mu);
    const std::uint64_t reads0 = k.dev->counters().reads, writes0 = k.dev->counters().writes;
    DmaBuffer& bi = k.staging(k.stage_in, in_bytes);
    DmaBuffer& bo = k.staging(k.stage_out, out_bytes);
    std::uint8_t* ip = bi.map().data();
    // Gather into the device layout of this tile: nchw [nn][cg][pw], nhwc [nn][pw][cg].
    std::uint64_t d = 0;
    for (std::uint64_t n = t.n0; n < t.n0 + t.nn; ++n) {
      if (s.layout == Layout::nchw) {
        for (std::uint64_t c = c0; c < c0 + cg; ++c, d += t.pw) {
          gather_run(r.in, r.opt, a, ip, d, (n * s.c + c) * s.hw + t.p0, t.pw);
        }
      } else {
        for (std::uint64_t p = t.p0; p < t.p0 + t.pw; ++p, d += cg) {
          gather_run(r.in, r.opt, a, ip, d, (n * s.hw + p) * s.c + c0, cg);
        }
      }
    }
    bi.sync_to_device(0, static_cast<std::size_t>(in_bytes));
    detail::DevJob j;
    j.channels = cg;
    j.layout = s.layout;
    if (s.layout == Layout::nchw) {
      j.inner = t.pw;
      j.outer = t.nn;
    } else {
      j.inner = 1;
      j.outer = t.nn * t.pw;
    }
    j.settings = prm.image.job;
    j.src = bi.device_address();
    j.dst = bo.device_address();
    j.param = g.buf->device_address();
    k.execute(j, r.stats);
    bo.sync_from_device(0, static_cast<std::size_t>(out_bytes));
    const std::uint8_t* op = bo.map().data();
    d = 0;
    for (std::uint64_t n = t.n0; n < t.n0 + t.nn; ++n) {
      if (s.layout == Layout::nchw) {
        for (std::uint64_t c = c0; c < c0 + cg; ++c, d += t.pw) {
          scatter_run(r.out, r.opt, a, op, d, (n * s.c + c) * s.hw + t.p0, t.pw);
        }
      } else {
        for (std::uint64_t p = t.p0; p < t.p0 + t.pw; ++p, d += cg) {
          scatter_run(r.out, r.opt, a, op, d, (n * s.hw + p) * s.c + c0, cg);
        }
      }
    }
    r.stats.mmio_reads += k.dev->counters().reads - reads0;
    r.stats.mmio_writes += k.dev->counters().writes - writes0;
    done += elems;
    if (k.opt.progress) k.opt.progress(done, s.elements());
  }
}

void run_zero_copy(detail::DriverCore& k, detail::RunShared& r) {
  const detail::ParamsImpl& prm = *r.params;
  const JobShape& s = r.shape;
  const ArithSpec& a = k.spec;
  const std::uint64_t n = s.elements();
  std::lock_guard lk(k.dev_mu);
  const std::uint64_t reads0 = k.dev->counters().reads, writes0 = k.dev->counters().writes;
  r.bin->buf->sync_to_device(
      0, static_cast<std::size_t>(ceil_div(n * static_cast<std::uint64_t>(a.xw), 8)));
  detail::DevJob j;
  j.channels = s.c;
  j.layout = s.layout;
  j.inner = s.layout == Layout::nchw ? s.hw : 1;
  j.outer = s.layout == Layout::nchw ? s.n : s.n * s.hw;
  j.settings = prm.image.job;
  j.src = r.bin->buf->device_address();
  j.dst = r.bout->buf->device_address();
  j.param = prm.groups[0].buf->device_address();
  k.execute(j, r.stats);
  r.bout->buf->sync_from_device(
      0, static_cast<std::size_t>(ceil_div(n * static_cast<std::uint64_t>(a.yw), 8)));
  r.stats.mmio_reads += k.dev->counters().reads - reads0;
  r.stats.mmio_writes += k.dev->counters().writes - writes0;
  if (k.opt.progress) k.opt.progress(n, n);
}

void worker_loop(detail::DriverCore& k) {
  for (;;) {
    std::shared_ptr<detail::RunShared> r;
    {
      std::unique_lock lk(k.q_mu);
      k.q_cv.wait(lk, [&] { return k.stop || !k.queue.empty(); });
      if (k.queue.empty()) return;  // stop requested and nothing left
      r = k.queue.front();
      k.queue.pop_front();
    }
    {
      std::lock_guard lk(r->mu);
      r->state = RunState::running;
    }
    const auto t0 = Clock::now();
    std::exception_ptr exc;
    std::string err;
    try {
      if (r->bin != nullptr) {
        run_zero_copy(k, *r);
      } else {
        run_host(k, *r);
      }
    } catch (const std::exception& e) {
      exc = std::current_exception();
      err = e.what();
    }
    {
      std::lock_guard lk(k.q_mu);
      k.stats.tiles += r->stats.tiles;
      if (exc) ++k.stats.failed_runs;
    }
    {
      std::lock_guard lk(r->mu);
      r->stats.host_seconds = seconds(Clock::now() - t0) - r->stats.device_seconds;
      r->state = exc ? RunState::failed : RunState::completed;
      r->exc = exc;
      r->error = err;
      r->params.reset();
      r->bin.reset();
      r->bout.reset();
    }
    r->cv.notify_all();
  }
}

}  // namespace

}  // namespace normcore
