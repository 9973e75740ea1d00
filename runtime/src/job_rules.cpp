// A job's validation as <n>_ctrl does it (job_rules.hpp).
#include "job_rules.hpp"

#include <string>

#include "normcore/util/bits.hpp"

namespace normcore::detail {

namespace {

std::uint64_t le(const std::uint8_t* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

int code_of(const Manifest& m, const char* name) {
  const auto it = m.error_codes.find(name);
  if (it == m.error_codes.end()) throw Error("error_codes has no '" + std::string(name) + "'");
  return it->second;
}

}  // namespace

JobRules::JobRules(const Manifest& m) : m_(&m) {
  channels_ = field("CHANNELS", "value");
  inner_ = field("INNER", "value");
  outer_ = field("OUTER", "value");
  layout_ = field("MODE", "layout");
  rounding_ = field("MODE", "rounding");
  shift_ = field("MODE", "shift");
  lo_ = field("CLAMP_LO", "value");
  hi_ = field("CLAMP_HI", "value");
  src_lo_ = field("SRC_LO", "value");
  src_hi_ = field("SRC_HI", "value");
  dst_lo_ = field("DST_LO", "value");
  dst_hi_ = field("DST_HI", "value");
  param_lo_ = field("PARAM_LO", "value");
  param_hi_ = field("PARAM_HI", "value");
  win_base_lo_ = field("WIN_BASE_LO", "value", false);
  win_base_hi_ = field("WIN_BASE_HI", "value", false);
  win_last_lo_ = field("WIN_LAST_LO", "value", false);
  win_last_hi_ = field("WIN_LAST_HI", "value", false);
  code_channels = code_of(m, "bad_channels");
  code_zero = code_of(m, "zero_length");
  code_shift = code_of(m, "bad_shift");
  code_misaligned = code_of(m, "misaligned");
  code_window = code_of(m, "window");
  code_overlap = code_of(m, "overlap");
  code_read = code_of(m, "read");
  code_write = code_of(m, "write");
  if (m.error_codes.count("unsupported") != 0) code_unsupported = code_of(m, "unsupported");
}

JobRules::F JobRules::field(const char* reg, const char* name, bool required) const {
  for (const auto& r : m_->registers) {
    if (r.name != reg) continue;
    for (const auto& f : r.fields) {
      if (f.name == name) return F{r.offset, &f};
    }
    if (required) (void)r.field(name);  // throws
    return {};
  }
  if (required) (void)m_->reg(reg);  // throws the manifest's message
  return {};
}

std::uint64_t JobRules::get(const F& f, const std::function<std::uint32_t(std::uint32_t)>& reg) {
  return f.desc != nullptr ? f.desc->get(reg(f.offset)) : 0;
}

// A raw value of a whole-register field (bit 0 up) as writing it to the register would keep it.
std::uint64_t JobRules::as_field(const F& f, std::uint64_t raw) {
  return f.desc != nullptr ? f.desc->get(f.desc->put(0, raw)) : 0;
}

RawJob JobRules::from_registers(const std::function<std::uint32_t(std::uint32_t)>& reg) const {
  RawJob r;
  r.channels = get(channels_, reg);
  r.inner = get(inner_, reg);
  r.outer = get(outer_, reg);
  r.layout = get(layout_, reg);
  r.rounding = get(rounding_, reg);
  r.shift = get(shift_, reg);
  r.lo = get(lo_, reg);
  r.hi = get(hi_, reg);
  r.src = get(src_lo_, reg) | get(src_hi_, reg) << 32;
  r.dst = get(dst_lo_, reg) | get(dst_hi_, reg) << 32;
  r.param = get(param_lo_, reg) | get(param_hi_, reg) << 32;
  return r;
}

std::uint64_t JobRules::win_base(const std::function<std::uint32_t(std::uint32_t)>& reg) const {
  return win_base_lo_.desc != nullptr ? get(win_base_lo_, reg) | get(win_base_hi_, reg) << 32 : 0;
}

std::uint64_t JobRules::win_last(const std::function<std::uint32_t(std::uint32_t)>& reg) const {
  return win_last_lo_.desc != nullptr ? get(win_last_lo_, reg) | get(win_last_hi_, reg) << 32
                                      : ~std::uint64_t{0};
}

RawJob JobRules::from_descriptor(const std::uint8_t* d) const {
  RawJob r;
  r.src = le(d + 0, 8);
  r.dst = le(d + 8, 8);
  r.param = le(d + 16, 8);
  r.channels = as_field(channels_, le(d + 24, 4));
  r.inner = as_field(inner_, le(d + 28, 4));
  r.outer = as_field(outer_, le(d + 32, 4));
  // MODE's fields in place (bits 15:0 as the register holds them; 16 and up are flags).
  const auto mode = static_cast<std::uint32_t>(le(d + 36, 4) & 0xFFFFu);
  r.layout = layout_.desc->get(mode);
  r.rounding = rounding_.desc->get(mode);
  r.shift = shift_.desc->get(mode);
  r.lo = as_field(lo_, le(d + 40, 4));
  r.hi = as_field(hi_, le(d + 44, 4));
  return r;
}

JobRegs JobRules::sized(const RawJob& r, std::uint64_t win_base, std::uint64_t win_last) const {
  const DeviceConfig& cfg = m_->config;
  const int yw = cfg.out_bits;
  JobRegs j;
  j.channels = r.channels;
  j.inner = r.inner;
  j.outer = r.outer;
  j.layout = r.layout != 0 ? Layout::nhwc : Layout::nchw;
  j.rounding = static_cast<Rounding>(r.rounding & 3);
  j.shift = static_cast<int>(r.shift);
  j.lo = cfg.out_signed ? bits::sign_extend(r.lo, yw) : static_cast<std::int64_t>(r.lo);
  j.hi = cfg.out_signed ? bits::sign_extend(r.hi, yw) : static_cast<std::int64_t>(r.hi);
  j.src = r.src;
  j.dst = r.dst;
  j.param = r.param;
  j.win_base = win_base;
  j.win_last = win_last;

  // Sizes (exact: C * HW * N needs up to 11 + 24 + 32 bits; 128-bit arithmetic throughout).
  j.total = static_cast<ref::u128>(j.channels) * j.inner * j.outer;
  j.in_bytes = (j.total * static_cast<unsigned>(cfg.in_bits) + 7) / 8;
  j.out_bytes = (j.total * static_cast<unsigned>(yw) + 7) / 8;
  j.prm_bytes = static_cast<ref::u128>(j.channels) * static_cast<unsigned>(cfg.param_entry_bytes());
  return j;
}

int JobRules::check(const JobRegs& j) const {
  using ref::u128;
  const DeviceConfig& cfg = m_->config;
  const std::uint64_t bus = static_cast<std::uint64_t>(cfg.bus_bytes());
  const u128 in_end = static_cast<u128>(j.src) + j.in_bytes - 1;
  const u128 out_end = static_cast<u128>(j.dst) + j.out_bytes - 1;
  const u128 prm_end = static_cast<u128>(j.param) + j.prm_bytes - 1;
  const u128 addr_limit = u128{1} << cfg.addr_bits;
  auto in_window = [&](std::uint64_t start, u128 end) {
    return start >= j.win_base && end <= j.win_last && end < addr_limit;
  };
  if (j.channels == 0 || j.channels > static_cast<std::uint64_t>(cfg.max_channels)) {
    return code_channels;
  }
  if (j.inner == 0 || j.outer == 0) return code_zero;
  if (j.shift > cfg.arith().acc_bits() || (cfg.arith().is_float() && j.shift != 0)) {
    return code_shift;
  }
  // A specialised core: exactly CoreConfig::check_job, which the RTL's checks are built from.
  if (!cfg.accel.core.check_job(j.shift, j.rounding, j.layout, static_cast<long long>(j.channels))
           .empty()) {
    return code_unsupported;
  }
  if (j.src % bus != 0 || j.dst % bus != 0 || j.param % bus != 0) return code_misaligned;
  if (!in_window(j.src, in_end) || !in_window(j.dst, out_end) || !in_window(j.param, prm_end)) {
    return code_window;
  }
  if (static_cast<u128>(j.src) <= out_end && static_cast<u128>(j.dst) <= in_end &&
      !(cfg.out_bits <= cfg.in_bits && j.src == j.dst)) {
    return code_overlap;
  }
  return 0;
}

}  // namespace normcore::detail
