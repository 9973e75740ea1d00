// The plan runner (run_plan.hpp): a planned layer on a device against the float reference, and
// `normcore run --plan`.
#include "run_plan.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <tuple>

#include "commands.hpp"
#include "normcore/npz.hpp"
#include "normcore/params_file.hpp"

namespace normcore::import {

namespace {

std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

JobShape job_shape(const PlanJob& job) {
  return JobShape{job.n, job.c, job.hw, job.layout};
}

std::vector<std::int64_t> random_input(const ArithSpec& spec, std::size_t count,
                                       std::uint64_t seed) {
  std::vector<std::int64_t> x(count);
  const std::int64_t lo = spec.x_min();
  const auto range = static_cast<std::uint64_t>(spec.x_max() - spec.x_min()) + 1;
  std::uint64_t s = seed;
  for (auto& v : x) v = lo + static_cast<std::int64_t>(splitmix64(s) % range);
  return x;
}

DType Elements::type_for(int bits, bool is_signed) {
  if (bits <= 8) return is_signed ? DType::int8 : DType::uint8;
  if (bits <= 16) return is_signed ? DType::int16 : DType::uint16;
  return DType::int32;
}

Elements::Elements(int bits, bool is_signed, std::size_t count)
    : t_(type_for(bits, is_signed)), count_(count), own_(count * dtype_bytes(t_)) {}

Elements::Elements(DType t, std::size_t count)
    : t_(t), count_(count), own_(count * dtype_bytes(t)) {}

Elements Elements::borrow(DType t, const void* data, std::size_t count) {
  Elements e;
  e.t_ = t;
  e.count_ = count;
  e.ext_ = data;
  return e;
}

std::int64_t Elements::get(std::size_t i) const {
  const auto* p = static_cast<const std::uint8_t*>(data()) + i * dtype_bytes(t_);
  switch (t_) {
    case DType::int8:
      return static_cast<std::int8_t>(*p);
    case DType::uint8:
      return *p;
    case DType::int16: {
      std::int16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::uint16:
    case DType::float16:  // float types: the bit patterns
    case DType::bfloat16: {
      std::uint16_t v;
      std::memcpy(&v, p, 2);
      return v;
    }
    case DType::float32: {
      std::uint32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
    default: {
      std::int32_t v;
      std::memcpy(&v, p, 4);
      return v;
    }
  }
}

void Elements::set(std::size_t i, std::int64_t v) {
  // Little-endian host: the low bytes of the value are the element.
  const auto u = static_cast<std::uint64_t>(v);
  std::memcpy(own_.data() + i * dtype_bytes(t_), &u, dtype_bytes(t_));
}

Elements random_elements(const ArithSpec& spec, std::size_t count, std::uint64_t seed) {
  Elements x(spec.xw, spec.x_signed, count);
  const std::int64_t lo = spec.x_min();
  const auto range = static_cast<std::uint64_t>(spec.x_max() - spec.x_min()) + 1;
  std::uint64_t s = seed;
  for (std::size_t i = 0; i < count; ++i) {
    x.set(i, lo + static_cast<std::int64_t>(splitmix64(s) % range));
  }
  return x;
}

namespace {

// The float reference of one element (reference_output), without a vector of them.
struct Reference {
  Quant in, out;
  std::int64_t lo = 0, hi = 0, c = 1, inner = 1;
  Layout layout = Layout::nchw;
  const BnParams& bn;
  std::vector<double> k;
  Reference(const BnParams& b, const ArithSpec& spec, const JobShape& job) : bn(b) {
    in = bn.integer_io ? Quant{} : bn.in;
    out = bn.integer_io ? Quant{} : bn.out;
    std::tie(lo, hi) = activation_bounds(bn, spec);
    c = static_cast<std::int64_t>(job.c);
    inner = static_cast<std::int64_t>(job.hw);
    layout = job.layout;
    k.resize(job.c);
    for (std::size_t i = 0; i < job.c; ++i) k[i] = bn.gamma[i] / std::sqrt(bn.var[i] + bn.eps);
  }
  [[nodiscard]] double operator()(std::size_t e, std::int64_t x) const {
    const auto ch =
        static_cast<std::size_t>(channel_of(static_cast<std::int64_t>(e), c, inner, layout));
    const double xr = in.scale * static_cast<double>(x - in.zero_point);
    const double v = (xr - bn.mean[ch]) * k[ch] + bn.beta[ch];
    const double q = v / out.scale + static_cast<double>(out.zero_point);
    return std::clamp(q, static_cast<double>(lo), static_cast<double>(hi));
  }
};

}  // namespace

std::vector<double> reference_output(const BnParams& bn, const ArithSpec& spec,
                                     std::span<const std::int64_t> x, const JobShape& job) {
  const Reference ref(bn, spec, job);
  std::vector<double> y(x.size());
  for (std::size_t e = 0; e < x.size(); ++e) y[e] = ref(e, x[e]);
  return y;
}

LayerCheck run_layer(Accelerator& acc, const PlannedLayer& layer, const Elements& x) {
  const ParamImage image = read_params(layer.params_file);
  const BnParams bn = load_bn_json(layer.bn_file);
  if (bn.channels() != layer.job.c || image.scale.size() != layer.job.c) {
    throw Error(layer.name + ": " + layer.bn_file.string() + " has " +
                std::to_string(bn.channels()) + " channels, " + layer.params_file.string() + " " +
                std::to_string(image.scale.size()) + ", the job " + std::to_string(layer.job.c));
  }
  if (x.size() != layer.job.elements()) {
    throw Error(layer.name + ": the input has " + std::to_string(x.size()) +
                " elements, the layer's shape " + shape_str(layer.shape) + " needs " +
                std::to_string(layer.job.elements()));
  }
  const auto [lo, hi] = activation_bounds(bn, image.spec);
  if (lo != image.job.lo || hi != image.job.hi) {
    throw Error(layer.name + ": " + layer.params_file.string() + " clamps to [" +
                std::to_string(image.job.lo) + ", " + std::to_string(image.job.hi) + "] but " +
                layer.bn_file.string() + " quantises its activation to [" + std::to_string(lo) +
                ", " + std::to_string(hi) + "]");
  }
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::int64_t v = x.get(i);
    if (v < image.spec.x_min() || v > image.spec.x_max()) {
      throw InputValueError(layer.name + ": input element " + std::to_string(i) + " = " +
                            std::to_string(v) + " is outside the input range " +
                            std::to_string(image.spec.x_min()) + ".." +
                            std::to_string(image.spec.x_max()));
    }
  }
  Elements yout(image.spec.yw, image.spec.y_signed, x.size());
  auto params = acc.upload(image);
  const JobShape job = job_shape(layer.job);
  acc.run(params, x.view(), yout.mutable_view(), job);
  const Reference ref(bn, image.spec, job);
  LayerCheck r;
  r.name = layer.name;
  r.job = job;
  r.elements = x.size();
  r.bound = layer.worst_err;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::int64_t xv = x.get(i), yv = yout.get(i);
    const double want = ref(i, xv);
    const double err = std::fabs(static_cast<double>(yv) - want);
    if (err > r.max_err || i == 0) {
      r.max_err = err;
      r.worst_index = i;
      r.worst_x = xv;
      r.worst_y = yv;
      r.worst_ref = want;
      r.worst_channel =
          channel_of(static_cast<std::int64_t>(i), static_cast<std::int64_t>(layer.job.c),
                     static_cast<std::int64_t>(layer.job.hw), layer.job.layout);
    }
  }
  r.within = r.max_err <= r.bound + 1e-6;
  return r;
}

LayerCheck run_layer(Accelerator& acc, const PlannedLayer& layer, std::span<const std::int64_t> x) {
  // The values in an int32 holder (the widest input type): range errors name the element.
  Elements e(32, true, x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const bool fits = x[i] >= INT32_MIN && x[i] <= INT32_MAX;
    e.set(i, fits ? x[i] : 0);
    if (!fits) {
      throw InputValueError(layer.name + ": input element " + std::to_string(i) + " = " +
                            std::to_string(x[i]) + " is outside the input range");
    }
  }
  return run_layer(acc, layer, e);
}

}  // namespace normcore::import

namespace normcore::cli {

namespace {

// --input FILE / LAYER=FILE: the input file of each named layer.
std::map<std::string, std::string> input_files(const import::LoadedPlan& plan,
                                               const std::vector<std::string>& inputs) {
  std::map<std::string, std::string> files;
  for (const auto& in : inputs) {
    const auto eq = in.find('=');
    std::string layer, file;
    if (eq == std::string::npos) {
      if (plan.layers.size() != 1) {
        throw Error("--input " + in + ": the plan has " + std::to_string(plan.layers.size()) +
                    " layers: give LAYER=FILE");
      }
      layer = plan.layers[0].name;
      file = in;
    } else {
      layer = in.substr(0, eq);
      file = in.substr(eq + 1);
    }
    bool known = false;
    std::string names;
    for (const auto& l : plan.layers) {
      known = known || l.name == layer;
      names += (names.empty() ? "" : ", ") + l.name;
    }
    if (!known)
      throw Error("--input " + in + ": no layer '" + layer + "' in the plan (layers: " + names +
                  ")");
    if (!files.emplace(layer, file).second)
      throw Error("--input: layer '" + layer + "' given twice");
  }
  return files;
}

// The input of every layer: a file from --input (mapped and its header checked up front, so a
// bad file fails before any layer runs; the elements are decoded when the layer runs), else
// random. One layer's elements are held at a time.
struct PlanInputs {
  std::vector<std::optional<MappedNpy>> files;  // per layer; none: random
  std::vector<std::string> from;
};

PlanInputs plan_inputs(const PlanRunOptions& o, const import::LoadedPlan& plan, Accelerator& acc,
                       const std::map<std::string, std::string>& files) {
  PlanInputs in;
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    const auto& l = plan.layers[i];
    (void)acc.upload(read_params(l.params_file));  // widths and settings fit the device
    auto it = files.find(l.name);
    if (it == files.end()) {
      in.files.emplace_back();
      in.from.push_back("random (seed " + std::to_string(o.seed + i) + ")");
      continue;
    }
    MappedNpy m = MappedNpy::open(it->second);
    const NpyHeader& h = m.header();
    if (plan.spec.x_type != NumType::integer) {
      const bool ok =
          (h.kind == 'f' && (h.item_size == 2 || h.item_size == 4 || h.item_size == 8)) ||
          (h.kind == 'V' && h.item_size == 2);
      if (!ok) {
        throw Error("--input " + it->second + ": dtype " + h.dtype + " is not a float type " +
                    "(float16 <f2, bfloat16 <V2 / |V2, float32, float64) for the " +
                    std::string(to_string(plan.spec.x_type)) + " plan");
      }
    } else if (h.kind != 'i' && h.kind != 'u' && h.kind != 'b') {
      throw Error("--input " + it->second + ": dtype " + h.dtype + " is not an integer type");
    }
    if (h.count != l.job.elements()) {
      throw Error("--input " + it->second + ": " + std::to_string(h.count) + " elements, layer '" +
                  l.name + "' needs " + std::to_string(l.job.elements()));
    }
    in.files.emplace_back(std::move(m));
    in.from.push_back(it->second);
  }
  return in;
}

// Layer i's input elements: the mapped file's integers in place when they are the spec's input
// type (little-endian host), else decoded into that type; or random.
// (Trailing return type: clang-format reads a line starting with `import` as a C++20 module
// import and mangles the function.)
auto layer_input(const PlanRunOptions& o, const import::LoadedPlan& plan, const PlanInputs& in,
                 std::size_t i) -> import::Elements {
  const bool xfloat = plan.spec.x_type != NumType::integer;
  if (!in.files[i] && xfloat) {
    const auto& l = plan.layers[i];
    return import::random_float_elements(plan.spec, load_bn_json(l.bn_file),
                                         import::job_shape(l.job), o.seed + i);
  }
  if (!in.files[i]) {
    return import::random_elements(plan.spec, plan.layers[i].job.elements(), o.seed + i);
  }
  const NpyHeader& h = in.files[i]->header();
  const std::uint8_t* p = in.files[i]->data().data();
  if (xfloat) return import::float_elements_from(plan.spec, h, p);
  const auto w = static_cast<std::size_t>(h.item_size);
  const DType want = import::Elements::type_for(plan.spec.xw, plan.spec.x_signed);
  const bool same = w == dtype_bytes(want) && h.kind == (plan.spec.x_signed ? 'i' : 'u') &&
                    h.dtype.front() != '>';
  if (same) return import::Elements::borrow(want, p, h.count);
  import::Elements x(plan.spec.xw, plan.spec.x_signed, h.count);
  for (std::size_t e = 0; e < h.count; ++e, p += w) {
    std::uint64_t u = 0;
    for (std::size_t b = 0; b < w; ++b) u |= static_cast<std::uint64_t>(p[b]) << (8 * b);
    if (h.kind == 'i' && w < 8 && ((u >> (8 * w - 1)) & 1u) != 0) {
      u |= ~std::uint64_t{0} << (8 * w);
    }
    const auto v = static_cast<std::int64_t>(u);
    if (v < plan.spec.x_min() || v > plan.spec.x_max()) {
      throw InputValueError("input element " + std::to_string(e) + " = " + std::to_string(v) +
                            " is outside the input range " + std::to_string(plan.spec.x_min()) +
                            ".." + std::to_string(plan.spec.x_max()));
    }
    x.set(e, v);
  }
  return x;
}

void print_check(const PlanRunOptions& o, const import::PlannedLayer& l,
                 const import::LayerCheck& c, const std::string& from) {
  if (o.quiet && c.within) return;
  std::printf("layer %s: %llux%llux%llu %s on %s, input %s: max error %.6f %s (bound %.6f %s) %s\n",
              l.name.c_str(), static_cast<unsigned long long>(c.job.n),
              static_cast<unsigned long long>(c.job.c), static_cast<unsigned long long>(c.job.hw),
              std::string(to_string(c.job.layout)).c_str(), o.device.c_str(), from.c_str(),
              c.max_err, c.unit.c_str(), c.bound, c.unit.c_str(),
              c.within ? "ok" : "EXCEEDS THE BOUND");
  if (c.is_float && (c.not_finite != 0 || c.overflowed != 0)) {
    std::printf("  not measured: %llu NaN / Inf inputs, %llu outputs overflowing to Inf\n",
                static_cast<unsigned long long>(c.not_finite),
                static_cast<unsigned long long>(c.overflowed));
  }
  if (!c.within && c.is_float) {
    std::printf("  worst: element %llu (channel %lld): x = %.9g, y = %.9g, reference %.9g\n",
                static_cast<unsigned long long>(c.worst_index),
                static_cast<long long>(c.worst_channel), c.worst_xf, c.worst_yf, c.worst_ref);
  } else if (!c.within) {
    std::printf("  worst: element %llu (channel %lld): x = %lld, y = %lld, reference %.6f\n",
                static_cast<unsigned long long>(c.worst_index),
                static_cast<long long>(c.worst_channel), static_cast<long long>(c.worst_x),
                static_cast<long long>(c.worst_y), c.worst_ref);
  }
}

}  // namespace

// Every layer of the plan, with the given inputs or deterministic random ones, against the
// float reference of the recovered BN.
int run_plan(const PlanRunOptions& o) {
  std::optional<Accelerator> acc;
  import::LoadedPlan plan;
  PlanInputs in;
  try {
    plan = import::read_plan(o.plan);
    if (plan.layers.empty()) throw Error(o.plan + ": the plan has no layers");
    const auto files = input_files(plan, o.inputs);
    DriverOptions dopt;
    dopt.job_timeout = std::chrono::milliseconds(o.timeout_ms);
    if (o.tile > 0) dopt.max_tile_elements = o.tile;
    acc.emplace(Accelerator::open(o.device, dopt));
    in = plan_inputs(o, plan, *acc, files);
  } catch (const std::exception& e) {
    std::cerr << "normcore run: error: " << e.what() << "\n";
    return kExitBadInput;
  }
  bool all_ok = true;
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    const auto& l = plan.layers[i];
    import::LayerCheck c;
    try {
      c = plan.spec.is_float() ? import::run_float_layer(*acc, l, layer_input(o, plan, in, i))
                               : import::run_layer(*acc, l, layer_input(o, plan, in, i));
    } catch (const std::exception& e) {
      std::cerr << "normcore run: error: layer " << l.name << ": " << e.what() << "\n";
      return dynamic_cast<const InputValueError*>(&e) != nullptr ? kExitBadInput : kExitFailure;
    }
    all_ok = all_ok && c.within;
    print_check(o, l, c, in.from[i]);
  }
  if (!all_ok) {
    std::cerr << "normcore run: error: a layer's error exceeds its fold bound\n";
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace normcore::cli
