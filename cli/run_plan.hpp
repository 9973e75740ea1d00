// The plan runner: `normcore run --plan DIR` runs every layer of an import plan (normcore
// import, normcore/import/plan.hpp) on a device and checks the outputs against the float
// reference computed from the recovered BN (not from the folded integers):
//   y_ref = clamp(BN(in.scale * (x - in.zp)) / out.scale + out.zp, lo, hi)
// with BN(v) = gamma * (v - mean) / sqrt(var + eps) + beta and [lo, hi] the output range
// intersected with the quantised activation (activation_bounds(), fold.hpp: relu -> lo >= zp,
// relu6 -> hi <= zp + round(6 / out.scale), clamp -> ceil / floor of the quantised bounds). The
// largest |y - y_ref| in output LSBs must not exceed the fold's worst-case error bound.
// A float plan (contract v2) is checked against the float64 batch norm in output ULPs, as
// fold_float bounds it (run_plan_float.cpp).
// Built into `normcore` when NORMCORE_IMPORT is ON (and into import_tests).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "normcore/driver.hpp"
#include "normcore/import/plan.hpp"
#include "normcore/npz.hpp"

namespace normcore::import {

// Deterministic pseudo-random integers uniform over the spec's input range.
std::vector<std::int64_t> random_input(const ArithSpec& spec, std::size_t count,
                                       std::uint64_t seed);

// Integer elements in the narrowest host type holding `bits`-bit values (int8 / uint8 / int16 /
// uint16 / int32: one byte per element of an int8 tensor), owned or borrowed (a mapped .npy of
// that type), so a layer's input and output cost their packed size, not 8 bytes an element.
// Float elements (float16 / bfloat16 / float32) are their bit patterns.
class Elements {
 public:
  Elements() = default;
  Elements(int bits, bool is_signed, std::size_t count);  // owned, zeroed
  Elements(DType t, std::size_t count);                   // owned, zeroed
  static Elements borrow(DType t, const void* data, std::size_t count);
  static DType type_for(int bits, bool is_signed);
  [[nodiscard]] std::size_t size() const { return count_; }
  [[nodiscard]] DType dtype() const { return t_; }
  [[nodiscard]] std::int64_t get(std::size_t i) const;
  void set(std::size_t i, std::int64_t v);
  [[nodiscard]] TensorView view() const { return {t_, data(), count_}; }
  MutableTensorView mutable_view() { return {t_, own_.data(), count_}; }

 private:
  [[nodiscard]] const void* data() const { return ext_ != nullptr ? ext_ : own_.data(); }
  DType t_ = DType::int32;
  std::size_t count_ = 0;
  std::vector<std::uint8_t> own_;
  const void* ext_ = nullptr;
};

// random_input's values as Elements of the spec's input type.
Elements random_elements(const ArithSpec& spec, std::size_t count, std::uint64_t seed);

// The float reference (see above), output LSBs, one per element of x (layout / inner from job).
std::vector<double> reference_output(const BnParams& bn, const ArithSpec& spec,
                                     std::span<const std::int64_t> x, const JobShape& job);

struct LayerCheck {
  std::string name;
  JobShape job;
  std::uint64_t elements = 0;
  double max_err = 0;        // max |y - y_ref|, output LSBs (float output: ULPs of y_ref)
  double bound = 0;          // the fold's worst-case error
  bool within = false;       // max_err <= bound (+ 1e-6 for floating-point noise)
  std::string unit = "LSB";  // "ULP" for a float output
  bool is_float = false;     // a float plan: worst_xf / worst_yf hold the values
  std::uint64_t measured = 0, not_finite = 0, overflowed = 0;  // float plans
  std::uint64_t worst_index = 0;
  std::int64_t worst_x = 0, worst_y = 0;
  double worst_xf = 0, worst_yf = 0;
  double worst_ref = 0;
  std::int64_t worst_channel = 0;
};

// The device job of a planned layer.
JobShape job_shape(const PlanJob& job);

// Uploads the layer's parameter image, runs x (int values, job.elements() of them) and compares.
// Throws Error / DeviceError for bad inputs or a failing device. The output is held in the
// spec's output type (Elements); the reference is computed per element.
LayerCheck run_layer(Accelerator& acc, const PlannedLayer& layer, const Elements& x);
LayerCheck run_layer(Accelerator& acc, const PlannedLayer& layer, std::span<const std::int64_t> x);

// Float plans (run_plan_float.cpp). The host dtype of a float type.
DType float_dtype(NumType t);
// Random inputs of a float layer: per channel mean + 2 sqrt(var) * N(0, 1), rounded once into
// the input type (deterministic for a seed).
Elements random_float_elements(const ArithSpec& spec, const BnParams& bn, const JobShape& job,
                               std::uint64_t seed);
// A float layer's input from a mapped .npy (float16 `<f2`, bfloat16 `<V2` / `|V2`, float32,
// float64): in place when it is the device's type, else each value rounded once (RNE).
Elements float_elements_from(const ArithSpec& spec, const NpyHeader& h, const std::uint8_t* p);
// Runs a float layer and measures its error against the float64 batch norm (see above).
LayerCheck run_float_layer(Accelerator& acc, const PlannedLayer& layer, const Elements& x);

}  // namespace normcore::import

namespace normcore::cli {

struct PlanRunOptions {
  std::string plan;                 // the plan directory
  std::string device;               // device string (Accelerator::open)
  std::vector<std::string> inputs;  // FILE (one-layer plan) or LAYER=FILE: .npy (integer; float
                                    // plans: float16, bfloat16, float32, float64)
  std::uint64_t seed = 1;           // layer i gets random inputs seeded seed + i
  int timeout_ms = 30000;
  std::uint64_t tile = 0;  // largest device job in elements (0: the driver's default)
  bool quiet = false;      // print only failing layers
};

// `normcore run --plan`: the process exit code (0 every layer within its bound, 1 a layer
// exceeds it or the device fails, 2 bad input).
int run_plan(const PlanRunOptions& o);

}  // namespace normcore::cli
