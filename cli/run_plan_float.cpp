// The plan runner's float half (run_plan.hpp): a layer of a float plan (contract v2: fp16 / bf16
// in, fp16 / bf16 / fp32 or integer out) on a device against the float64 batch norm of the
// recovered BN, the error in output ULPs (an integer output: LSBs) measured as fold_float
// measures it, so that the fold's bound applies:
//   x_r = the input's value (flushed to a signed zero when the device flushes subnormals)
//   y_r = gamma * (x_r - mean) / sqrt(var + eps) + beta, clamped by the activation (an integer
//         output: / out.scale + out.zp, clamped to the job's bounds, not rounded)
//   err = |y - y_r| / ulp(y_r) in the output type (fold_float.hpp's ulp_of); NaN / Inf inputs
//         and outputs that overflow to Inf while y_r is finite are counted, not measured.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "normcore/float_contract.hpp"
#include "normcore/fold_float.hpp"
#include "normcore/params_file.hpp"
#include "run_plan.hpp"

namespace normcore::import {

namespace {

// The float64 batch norm of one input of channel ch (see above).
struct FloatReference {
  const BnParams& bn;
  const ArithSpec& spec;
  const JobSettings& job;
  double operator()(double xr, std::size_t ch) const {
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

// The value of an input pattern as the device takes it (flush: a subnormal is a signed zero).
double input_value(std::uint32_t bits, const ArithSpec& spec) {
  double v = float_to_double(bits, spec.x_type);
  if (spec.flush_subnormals && std::fabs(v) < std::ldexp(1.0, float_format(spec.x_type).emin())) {
    v = std::copysign(0.0, v);
  }
  return v;
}

// One element's error (y: the output pattern or integer); false when it is not measured.
bool element_error(const ArithSpec& spec, std::int64_t y, double want, double& err, double& yv) {
  if (spec.y_type == NumType::integer) {
    yv = static_cast<double>(y);
    err = std::fabs(yv - want);
    return true;
  }
  yv = float_to_double(static_cast<std::uint32_t>(y), spec.y_type);
  if (std::isinf(yv) && std::isfinite(want)) return false;  // overflow: counted by the caller
  err = std::fabs(yv - want) / ulp_of(want, spec.y_type);
  return true;
}

}  // namespace

DType float_dtype(NumType t) {
  return t == NumType::fp16   ? DType::float16
         : t == NumType::bf16 ? DType::bfloat16
                              : DType::float32;
}

Elements random_float_elements(const ArithSpec& spec, const BnParams& bn, const JobShape& job,
                               std::uint64_t seed) {
  // Around each channel's mean, two standard deviations wide: the layer's own input range.
  Elements x(float_dtype(spec.x_type), static_cast<std::size_t>(job.elements()));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> unit(0.0, 1.0);
  const auto c = static_cast<std::int64_t>(job.c), inner = static_cast<std::int64_t>(job.hw);
  for (std::size_t e = 0; e < x.size(); ++e) {
    const auto ch =
        static_cast<std::size_t>(channel_of(static_cast<std::int64_t>(e), c, inner, job.layout));
    const double v = bn.mean[ch] + 2.0 * std::sqrt(bn.var[ch]) * unit(rng);
    x.set(e, double_to_float(v, spec.x_type));
  }
  return x;
}

Elements float_elements_from(const ArithSpec& spec, const NpyHeader& h, const std::uint8_t* p) {
  const DType want = float_dtype(spec.x_type);
  const bool f16 = h.kind == 'f' && h.item_size == 2, bf16 = h.kind == 'V' && h.item_size == 2;
  if (h.dtype.front() != '>' &&
      ((f16 && want == DType::float16) || (bf16 && want == DType::bfloat16))) {
    return Elements::borrow(want, p, h.count);  // the device's type: used in place
  }
  Elements x(want, h.count);  // else each value rounded once (RNE) into the device's type
  const auto w = static_cast<std::size_t>(h.item_size);
  for (std::size_t e = 0; e < h.count; ++e, p += w) {
    std::uint64_t u = 0;
    for (std::size_t b = 0; b < w; ++b) u |= static_cast<std::uint64_t>(p[b]) << (8 * b);
    double v = 0;
    if (f16 || bf16) {
      v = float_to_double(static_cast<std::uint32_t>(u), f16 ? NumType::fp16 : NumType::bf16);
    } else if (w == 4) {
      v = float_to_double(static_cast<std::uint32_t>(u), NumType::fp32);
    } else {
      std::memcpy(&v, &u, 8);
    }
    x.set(e, double_to_float(v, spec.x_type));
  }
  return x;
}

LayerCheck run_float_layer(Accelerator& acc, const PlannedLayer& layer, const Elements& x) {
  const ParamImage image = read_params(layer.params_file);
  const BnParams bn = load_bn_json(layer.bn_file);
  const ArithSpec& spec = image.spec;
  if (bn.channels() != layer.job.c || image.scale.size() != layer.job.c) {
    throw Error(layer.name + ": " + layer.bn_file.string() + " has " +
                std::to_string(bn.channels()) + " channels, " + layer.params_file.string() + " " +
                std::to_string(image.scale.size()) + ", the job " + std::to_string(layer.job.c));
  }
  if (x.size() != layer.job.elements()) {
    throw Error(layer.name + ": the input has " + std::to_string(x.size()) +
                " elements, the layer needs " + std::to_string(layer.job.elements()));
  }
  Elements y = spec.y_type == NumType::integer ? Elements(spec.yw, spec.y_signed, x.size())
                                               : Elements(float_dtype(spec.y_type), x.size());
  auto params = acc.upload(image);
  const JobShape job = job_shape(layer.job);
  acc.run(params, x.view(), y.mutable_view(), job);
  const FloatReference ref{bn, spec, image.job};
  LayerCheck r;
  r.name = layer.name;
  r.job = job;
  r.elements = x.size();
  r.bound = layer.worst_err;
  r.unit = spec.y_type == NumType::integer ? "LSB" : "ULP";
  r.is_float = true;
  const auto c = static_cast<std::int64_t>(job.c), inner = static_cast<std::int64_t>(job.hw);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double xr = input_value(static_cast<std::uint32_t>(x.get(i)), spec);
    const std::int64_t ch = channel_of(static_cast<std::int64_t>(i), c, inner, job.layout);
    if (!std::isfinite(xr)) {
      ++r.not_finite;
      continue;
    }
    const double want = ref(xr, static_cast<std::size_t>(ch));
    double err = 0, yv = 0;
    if (!element_error(spec, y.get(i), want, err, yv)) {
      ++r.overflowed;
      continue;
    }
    const bool first = r.measured++ == 0;
    if (first || err > r.max_err) {
      r.max_err = err;
      r.worst_index = i;
      r.worst_xf = xr;
      r.worst_yf = yv;
      r.worst_ref = want;
      r.worst_channel = ch;
    }
  }
  r.within = r.max_err <= r.bound + 1e-6;
  return r;
}

}  // namespace normcore::import
