// fold_float (fold_float.hpp): fp32 s / b in double, rounded once, and the exhaustive error
// against the float64 batch norm.
#include "normcore/fold_float.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>

#include "normcore/float_contract.hpp"
#include "normcore/fold.hpp"

namespace normcore {

namespace {

std::string g(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

bool is_sub32(std::uint32_t v) {
  return (v & 0x7F800000u) == 0 && (v & 0x007FFFFFu) != 0;
}

// The job's clamp for the output type: relu, relu6 and clamp{min, max} (bounds rounded to
// nearest in the output type); an integer output uses the integer fold's bounds.
void set_bounds(const BnParams& bn, const ArithSpec& spec, JobSettings& job) {
  if (spec.y_type == NumType::integer) {
    const auto [lo, hi] = activation_bounds(bn, spec);
    job.lo = lo;
    job.hi = hi;
    return;
  }
  const NumType t = spec.y_type;
  if (bn.activation == "relu" || bn.activation == "relu6") job.lo = 0;
  if (bn.activation == "relu6") job.hi = double_to_float(6.0, t);
  if (bn.activation == "clamp") {
    job.lo = double_to_float(bn.act_min, t);
    job.hi = double_to_float(bn.act_max, t);
  }
}

// The float64 batch norm of one input, clamped by the activation (the integer output: quantised
// to output LSBs and clamped to lo..hi, not rounded).
struct Reference {
  const BnParams& bn;
  const ArithSpec& spec;
  const JobSettings& job;
  double operator()(double xr, int c) const {
    const auto ch = static_cast<std::size_t>(c);
    double y = bn.gamma[ch] * (xr - bn.mean[ch]) / std::sqrt(bn.var[ch] + bn.eps) + bn.beta[ch];
    if (spec.y_type == NumType::integer) {
      y = y / bn.out.scale + static_cast<double>(bn.out.zero_point);
      return std::clamp(y, static_cast<double>(job.lo), static_cast<double>(job.hi));
    }
    if (bn.activation == "relu" || bn.activation == "relu6") y = std::max(y, 0.0);
    if (bn.activation == "relu6") y = std::min(y, 6.0);
    if (bn.activation == "clamp") y = std::clamp(y, bn.act_min, bn.act_max);
    return y;
  }
};

void check_float_sides(const BnParams& bn, const ArithSpec& spec) {
  auto identity = [](const Quant& q) { return q.scale == 1 && q.zero_point == 0; };
  if (spec.x_type != NumType::integer && !identity(bn.in)) {
    throw Error(bn.source + ": input: a float input (in_type " +
                std::string(to_string(spec.x_type)) +
                ") takes no quantisation: give \"quant\": \"float\" or input scale 1, "
                "zero_point 0");
  }
  if (spec.y_type != NumType::integer && !identity(bn.out)) {
    throw Error(bn.source + ": output: a float output (out_type " +
                std::string(to_string(spec.y_type)) +
                ") takes no quantisation: give \"quant\": \"float\" or output scale 1, "
                "zero_point 0");
  }
}

void fold_channel(const BnParams& bn, const ArithSpec& spec, FloatChannelReport& r) {
  const auto ch = static_cast<std::size_t>(r.channel);
  const double A = bn.gamma[ch] / std::sqrt(bn.var[ch] + bn.eps);
  const double B = bn.beta[ch] - bn.mean[ch] * A;
  r.a = A * bn.in.scale / bn.out.scale;
  r.d = B / bn.out.scale + static_cast<double>(bn.out.zero_point) -
        r.a * static_cast<double>(bn.in.zero_point);
  const bool flush = spec.flush_subnormals;
  r.s = double_to_float(r.a, NumType::fp32, flush);
  r.b = double_to_float(r.d, NumType::fp32, flush);
  for (auto [what, v, bits] : {std::tuple{"s", r.a, r.s}, std::tuple{"b", r.d, r.b}}) {
    if ((bits & 0x7FFFFFFFu) == 0x7F800000u) {
      r.warnings.push_back(std::string(what) + " = " + g(v) + " overflows fp32: Inf");
    } else if (is_sub32(double_to_float(v, NumType::fp32))) {
      r.warnings.push_back(std::string(what) + " = " + g(v) + " is subnormal in fp32" +
                           (flush ? " (flushed to zero: flush_subnormals)" : ""));
    } else if (v != 0 && (bits & 0x7FFFFFFFu) == 0) {
      r.warnings.push_back(std::string(what) + " = " + g(v) + " underflows fp32 to zero");
    }
  }
}

void evaluate_channel(const ArithSpec& spec, const JobSettings& job, const Reference& ref,
                      std::uint64_t stride, FloatChannelReport& r) {
  const bool xfloat = spec.x_type != NumType::integer;
  const std::int64_t lo = xfloat ? 0 : spec.x_min();
  const std::int64_t hi = xfloat ? 0xFFFF : spec.x_max();
  for (std::int64_t x = lo; x <= hi; x += static_cast<std::int64_t>(stride)) {
    double xr = static_cast<double>(x);
    if (xfloat) {
      const auto bits = static_cast<std::uint32_t>(x);
      xr = float_to_double(bits, spec.x_type);
      if (!std::isfinite(xr)) continue;
      if (spec.flush_subnormals &&
          std::fabs(xr) < std::ldexp(1.0, float_format(spec.x_type).emin()))
        xr = std::copysign(0.0, xr);
    } else {
      xr = bn_input(ref.bn, xr);
    }
    const std::int64_t y = apply_float(x, r.s, r.b, spec, job);
    const double want = ref(xr, r.channel);
    ++r.inputs;
    double err = 0;
    if (spec.y_type == NumType::integer) {
      err = std::fabs(static_cast<double>(y) - want);
    } else {
      const double yd = float_to_double(static_cast<std::uint32_t>(y), spec.y_type);
      const double limit = float_to_double(float_max(spec.y_type), spec.y_type);
      if (std::isinf(yd) && std::isfinite(want)) {
        // overflow: an error only when the float64 result is itself representable
        if (std::fabs(want) <= limit) ++r.overflowed;
        continue;
      }
      err = std::fabs(yd - want) / ulp_of(want, spec.y_type);
    }
    if (err > r.max_err) {
      r.max_err = err;
      r.max_err_x = xr;
    }
  }
}

}  // namespace

double bn_input(const BnParams& bn, double x) {
  return bn.in.scale * (x - static_cast<double>(bn.in.zero_point));
}

double ulp_of(double v, NumType t) {
  const FloatFormat f = float_format(t);
  int e = 0;
  (void)std::frexp(v, &e);  // |v| = m * 2^e, 0.5 <= m < 1: leading bit 2^(e - 1)
  const int lead = v == 0 ? f.emin() : std::max(e - 1, f.emin());
  return std::ldexp(1.0, lead - f.man_bits);
}

FloatFoldResult fold_float(const BnParams& bn, const ArithSpec& spec, Rounding rounding) {
  validate(bn);
  if (const auto e = spec.check(); !e.empty()) throw Error(e);
  if (!spec.is_float()) throw Error("fold_float: an integer datapath (use fold)");
  check_float_sides(bn, spec);
  FloatFoldResult res;
  res.job = float_job(spec);
  res.job.rounding = spec.y_type == NumType::integer ? rounding : Rounding::half_even;
  set_bounds(bn, spec, res.job);
  if (const auto e = res.job.check(spec); !e.empty()) throw Error(bn.source + ": " + e);
  const std::uint64_t range = spec.x_type == NumType::integer
                                  ? static_cast<std::uint64_t>(spec.x_max() - spec.x_min()) + 1
                                  : 0x10000;
  const std::uint64_t stride = std::max<std::uint64_t>(1, range >> 20);
  res.exhaustive = stride == 1;
  const Reference ref{bn, spec, res.job};
  const int channels = static_cast<int>(bn.channels());
  for (int c = 0; c < channels; ++c) {
    FloatChannelReport r;
    r.channel = c;
    fold_channel(bn, spec, r);
    evaluate_channel(spec, res.job, ref, stride, r);
    if (r.overflowed != 0) {
      r.warnings.push_back(std::to_string(r.overflowed) + " inputs give +-Inf (the float64 " +
                           "batch norm is finite there)");
    }
    res.scale.push_back(r.s);
    res.shift.push_back(r.b);
    for (const auto& w : r.warnings)
      res.warnings.push_back("channel " + std::to_string(c) + ": " + w);
    if (c == 0 || r.max_err > res.worst_err) {
      res.worst_err = r.max_err;
      res.worst_channel = c;
    }
    res.channels.push_back(std::move(r));
  }
  return res;
}

std::string format_float_report(const FloatFoldResult& res, const ArithSpec& spec) {
  std::ostringstream os;
  const bool int_out = spec.y_type == NumType::integer;
  const char* unit = int_out ? "LSB" : "ULP";
  auto bound = [&](std::int64_t v) {
    return int_out ? std::to_string(v)
                   : g(float_to_double(static_cast<std::uint32_t>(v), spec.y_type));
  };
  os << "float fold: x " << to_string(spec.x_type) << ", s/b fp32, y " << to_string(spec.y_type)
     << (spec.flush_subnormals ? ", subnormals flushed" : "") << "; clamp " << bound(res.job.lo)
     << ".." << bound(res.job.hi);
  if (int_out) os << ", rounding " << to_string(res.job.rounding);
  os << "\n  c          s (fp32)           b (fp32)   max err (" << unit << ")   at x\n";
  std::vector<std::size_t> order(res.channels.size());
  std::iota(order.begin(), order.end(), 0);
  if (order.size() > 32) {
    std::partial_sort(order.begin(), order.begin() + 8, order.end(), [&](auto a, auto b) {
      return res.channels[a].max_err > res.channels[b].max_err;
    });
    order.resize(8);
    os << "  (the 8 worst of " << res.channels.size() << " channels)\n";
  }
  for (const auto i : order) {
    const auto& r = res.channels[i];
    char line[160];
    std::snprintf(line, sizeof line, "%5d %16.9g %18.9g %16.4f   %.6g\n", r.channel,
                  float_to_double(r.s, NumType::fp32), float_to_double(r.b, NumType::fp32),
                  r.max_err, r.max_err_x);
    os << line;
  }
  for (const auto& w : res.warnings) os << "warning: " << w << "\n";
  char last[160];
  std::snprintf(last, sizeof last,
                "worst-case error: %.4f %s vs float64 batch norm (channel %d, %s)\n", res.worst_err,
                unit, res.worst_channel, res.exhaustive ? "exhaustive" : "sampled");
  os << last;
  return os.str();
}

}  // namespace normcore
