#include "normcore/contract.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <utility>

#include "normcore/float_contract.hpp"

namespace normcore {

std::string_view to_string(Rounding r) {
  switch (r) {
    case Rounding::floor:
      return "floor";
    case Rounding::half_up:
      return "half_up";
    case Rounding::half_even:
      return "half_even";
    case Rounding::half_away:
      return "half_away";
  }
  return "?";
}

std::string_view to_string(Layout l) {
  return l == Layout::nchw ? "nchw" : "nhwc";
}

Rounding parse_rounding(std::string_view text) {
  for (auto r : {Rounding::floor, Rounding::half_up, Rounding::half_even, Rounding::half_away}) {
    if (text == to_string(r)) return r;
  }
  throw std::invalid_argument("unknown rounding mode '" + std::string(text) +
                              "' (expected floor, half_up, half_even or half_away)");
}

Layout parse_layout(std::string_view text) {
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  if (lower == "nchw") return Layout::nchw;
  if (lower == "nhwc") return Layout::nhwc;
  throw std::invalid_argument("unknown layout '" + std::string(text) + "' (expected nchw or nhwc)");
}

std::string_view to_string(NumType t) {
  switch (t) {
    case NumType::integer:
      return "int";
    case NumType::fp16:
      return "fp16";
    case NumType::bf16:
      return "bf16";
    case NumType::fp32:
      return "fp32";
  }
  return "?";
}

NumType parse_num_type(std::string_view text) {
  for (auto t : {NumType::integer, NumType::fp16, NumType::bf16, NumType::fp32}) {
    if (text == to_string(t)) return t;
  }
  throw std::invalid_argument("unknown element type '" + std::string(text) +
                              "' (expected int, fp16, bf16 or fp32)");
}

int float_bits(NumType t) {
  return t == NumType::integer ? 0 : t == NumType::fp32 ? 32 : 16;
}

namespace {
std::int64_t range_min(int bits, bool is_signed) {
  return is_signed ? -(std::int64_t{1} << (bits - 1)) : 0;
}
std::int64_t range_max(int bits, bool is_signed) {
  return is_signed ? (std::int64_t{1} << (bits - 1)) - 1 : (std::int64_t{1} << bits) - 1;
}
}  // namespace

std::int64_t ArithSpec::x_min() const {
  return range_min(xw, x_signed);
}
std::int64_t ArithSpec::x_max() const {
  return range_max(xw, x_signed);
}
std::int64_t ArithSpec::y_min() const {
  return range_min(yw, y_signed);
}
std::int64_t ArithSpec::y_max() const {
  return range_max(yw, y_signed);
}

std::string ArithSpec::check_float() const {
  if (x_type == NumType::fp32) return "input type (x_type) fp32 is not supported (fp16 or bf16)";
  auto width = [](const char* what, const char* field, int v, NumType t) {
    return std::string(what) + " (" + field + ") = " + std::to_string(v) + " must be " +
           std::to_string(float_bits(t)) + " for type " + std::string(to_string(t));
  };
  if (x_type != NumType::integer && xw != float_bits(x_type))
    return width("input bits", "xw", xw, x_type);
  if (y_type != NumType::integer && yw != float_bits(y_type))
    return width("output bits", "yw", yw, y_type);
  if (sw != 32) return width("scale bits", "sw", sw, NumType::fp32);
  if (bw != 32) return width("offset bits", "bw", bw, NumType::fp32);
  if (xw < 2 || xw > 32)
    return "input bits (xw) = " + std::to_string(xw) + " is out of range 2..32";
  if (yw < 2 || yw > 32)
    return "output bits (yw) = " + std::to_string(yw) + " is out of range 2..32";
  return {};
}

std::string ArithSpec::check() const {
  if (is_float()) return check_float();
  if (flush_subnormals) return "flush_subnormals needs a float input or output type";
  auto bad = [](const char* what, int v, int lo, int hi) {
    return std::string(what) + " = " + std::to_string(v) + " is out of range " +
           std::to_string(lo) + ".." + std::to_string(hi);
  };
  if (xw < 2 || xw > 32) return bad("input bits (xw)", xw, 2, 32);
  if (sw < 2 || sw > 32) return bad("scale bits (sw)", sw, 2, 32);
  if (bw < 2 || bw > 62) return bad("offset bits (bw)", bw, 2, 62);
  if (yw < 2 || yw > 32) return bad("output bits (yw)", yw, 2, 32);
  if (acc_bits() > 64) {
    return "accumulator width max(xw + sw, bw) + 1 = " + std::to_string(acc_bits()) +
           " exceeds 64 bits; narrow the input, scale or offset";
  }
  if (yw > acc_bits()) {
    return "output bits (yw) = " + std::to_string(yw) + " is wider than the accumulator (" +
           std::to_string(acc_bits()) + " bits)";
  }
  return {};
}

std::string JobSettings::check(const ArithSpec& spec) const {
  if (spec.is_float() && shift != 0) {
    return "shift R = " + std::to_string(shift) + " must be 0 for a float datapath";
  }
  if (spec.y_type != NumType::integer) {
    const std::int64_t top = std::int64_t{1} << spec.yw;
    const auto t = spec.y_type;
    for (auto [what, v] : {std::pair{"lo", lo}, std::pair{"hi", hi}}) {
      if (v < 0 || v >= top || is_nan(static_cast<std::uint32_t>(v), t)) {
        return std::string("clamp ") + what + " = " + std::to_string(v) + " is not a non-NaN " +
               std::string(to_string(t)) + " bit pattern";
      }
    }
    if (float_compare(static_cast<std::uint32_t>(lo), static_cast<std::uint32_t>(hi), t) > 0) {
      return "clamp lo = " + std::to_string(float_to_double(static_cast<std::uint32_t>(lo), t)) +
             " is above hi = " + std::to_string(float_to_double(static_cast<std::uint32_t>(hi), t));
    }
    return {};
  }
  if (shift < 0 || shift > spec.acc_bits()) {
    return "shift R = " + std::to_string(shift) + " is out of range 0.." +
           std::to_string(spec.acc_bits());
  }
  if (lo < spec.y_min() || lo > spec.y_max()) {
    return "clamp lo = " + std::to_string(lo) + " is outside the output range " +
           std::to_string(spec.y_min()) + ".." + std::to_string(spec.y_max());
  }
  if (hi < spec.y_min() || hi > spec.y_max()) {
    return "clamp hi = " + std::to_string(hi) + " is outside the output range " +
           std::to_string(spec.y_min()) + ".." + std::to_string(spec.y_max());
  }
  if (lo > hi) return "clamp lo = " + std::to_string(lo) + " is above hi = " + std::to_string(hi);
  return {};
}

std::int64_t round_shift(std::int64_t acc, int shift, Rounding mode) {
  if (shift <= 0) return acc;
  // Exact: q = floor(acc / 2^R), rem = acc - q * 2^R in [0, 2^R). 128 bits so that R = 64 works.
  // (__extension__: __int128 is a GCC/Clang extension; keeps -Wpedantic quiet.)
  __extension__ using i128 = __int128;
  const i128 a = acc;
  const i128 one = 1;
  const i128 q = a >> shift;  // arithmetic shift: floor division by 2^R
  const i128 rem = a - q * (one << shift);
  const i128 half = one << (shift - 1);
  i128 r = q;
  switch (mode) {
    case Rounding::floor:
      break;
    case Rounding::half_up:
      r = q + (rem >= half ? 1 : 0);
      break;
    case Rounding::half_even:
      if (rem > half || (rem == half && (q & 1) != 0)) r = q + 1;
      break;
    case Rounding::half_away:
      if (rem > half || (rem == half && acc >= 0)) r = q + 1;
      break;
  }
  return static_cast<std::int64_t>(r);
}

std::int64_t apply(std::int64_t x, std::int64_t s, std::int64_t b, const JobSettings& job) {
  // |x * s| < 2^62 and |b| < 2^61 inside the checked widths, so the sum is exact in 64 bits.
  const std::int64_t acc = x * s + b;
  const std::int64_t r = round_shift(acc, job.shift, job.rounding);
  return std::min(std::max(r, job.lo), job.hi);
}

void apply_tensor(std::span<const std::int64_t> x, std::span<std::int64_t> y,
                  std::span<const std::int64_t> scale, std::span<const std::int64_t> shift,
                  std::int64_t inner, Layout layout, const JobSettings& job) {
  if (y.size() < x.size()) throw std::invalid_argument("output tensor is smaller than the input");
  if (scale.empty() || scale.size() != shift.size()) {
    throw std::invalid_argument("scale and shift must have the same, non-zero, channel count");
  }
  if (inner < 1) throw std::invalid_argument("inner size must be >= 1");
  const auto channels = static_cast<std::int64_t>(scale.size());
  for (std::size_t e = 0; e < x.size(); ++e) {
    const auto c =
        static_cast<std::size_t>(channel_of(static_cast<std::int64_t>(e), channels, inner, layout));
    y[e] = apply(x[e], scale[c], shift[c], job);
  }
}

}  // namespace normcore
