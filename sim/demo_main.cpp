// The demo: runs one batch-norm layer through the Verilated core of the default configuration.
//   demo_runner --params params.bin --bn bn.json [--shape N,C,H,W] [--layout nchw|nhwc]
//               [--seed S] [--stall P]
// Makes a random int tensor, streams it through the RTL (with random stalls), and prints the
// result next to the golden model (must be bit-exact) and the float reference (error in LSBs).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core_driver.hpp"
#include "normcore/bn_params.hpp"
#include "normcore/fold.hpp"
#include "normcore/params_file.hpp"

namespace {

std::vector<std::int64_t> parse_shape(const std::string& s) {
  std::vector<std::int64_t> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) v.push_back(std::stoll(item));
  if (v.size() != 4) throw std::invalid_argument("--shape must be N,C,H,W");
  for (auto d : v) {
    if (d < 1) throw std::invalid_argument("--shape dimensions must be >= 1");
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace normcore;
  std::string params_path, bn_path, shape_text = "2,8,7,7", layout_text = "nchw";
  std::uint64_t seed = 1;
  double stall = 0.2;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--params")
      params_path = v;
    else if (k == "--bn")
      bn_path = v;
    else if (k == "--shape")
      shape_text = v;
    else if (k == "--layout")
      layout_text = v;
    else if (k == "--seed")
      seed = std::stoull(v);
    else if (k == "--stall")
      stall = std::stod(v);
    else {
      std::cerr << "demo_runner: unknown option " << k << "\n";
      return 2;
    }
  }
  try {
    if (params_path.empty() || bn_path.empty()) {
      throw std::invalid_argument("--params and --bn are required");
    }
    const ParamImage img = read_params(params_path);
    const BnParams bn = load_bn_json(bn_path);
    const auto shape = parse_shape(shape_text);
    const Layout layout = parse_layout(layout_text);
    sim::CoreDriver drv(seed);
    const ArithSpec hw = drv.shape().arith();
    if (img.spec.xw != hw.xw || img.spec.yw != hw.yw || img.spec.sw != hw.sw ||
        img.spec.bw != hw.bw || img.spec.x_signed != hw.x_signed ||
        img.spec.y_signed != hw.y_signed) {
      throw std::invalid_argument(params_path + " was folded for other widths than this core");
    }
    const auto channels = static_cast<std::int64_t>(img.scale.size());
    if (shape[1] != channels) {
      throw std::invalid_argument("--shape C = " + std::to_string(shape[1]) + " but " +
                                  params_path + " has " + std::to_string(channels) + " channels");
    }
    const std::int64_t inner = shape[2] * shape[3];
    const auto total = static_cast<std::size_t>(shape[0] * channels * inner);
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::int64_t> xd(hw.x_min(), hw.x_max());
    std::vector<std::int64_t> x(total), want(total);
    for (auto& v : x) v = xd(rng);
    apply_tensor(x, want, img.scale, img.shift, inner, layout, img.job);

    drv.reset();
    sim::CoreJob job{static_cast<int>(channels), inner, layout, img.job};
    const int setup = drv.configure(job);
    if (setup < 0) throw std::runtime_error("the core rejected the configuration");
    if (!drv.load_params(img.scale, img.shift)) throw std::runtime_error("param load hung");
    const std::uint64_t t0 = drv.cycle();
    const auto r = drv.stream(x, stall, stall);
    const std::uint64_t cycles = drv.cycle() - t0;
    for (const auto& e : r.errors) std::cerr << "protocol: " << e << "\n";

    // Float reference from the original BN parameters.
    const auto ad = ideal_affine(bn);
    std::size_t mismatches = 0;
    long double max_err = 0, sum_err = 0;
    for (std::size_t e = 0; e < total; ++e) {
      if (e >= r.y.size() || r.y[e] != want[e]) ++mismatches;
      const auto c = static_cast<std::size_t>(
          channel_of(static_cast<std::int64_t>(e), channels, inner, layout));
      long double ref = ad[c].first * static_cast<long double>(x[e]) + ad[c].second;
      ref = std::clamp<long double>(ref, static_cast<long double>(img.job.lo),
                                    static_cast<long double>(img.job.hi));
      const long double err =
          std::fabs(static_cast<long double>(e < r.y.size() ? r.y[e] : 0) - ref);
      max_err = std::max(max_err, err);
      sum_err += err;
    }
    const int L = drv.shape().lanes;
    std::printf("normcore demo: %d-lane core, int%d -> int%d, R = %d, %s, clamp [%lld, %lld]\n", L,
                hw.xw, hw.yw, img.job.shift, std::string(to_string(img.job.rounding)).c_str(),
                static_cast<long long>(img.job.lo), static_cast<long long>(img.job.hi));
    std::printf("tensor %s (%s), %zu elements, %llu beats; set-up %d cycles\n", shape_text.c_str(),
                layout_text.c_str(), total, static_cast<unsigned long long>(r.out_beats), setup);
    std::printf("two elements of each channel (channel: x -> y, float reference):\n");
    std::vector<int> shown(static_cast<std::size_t>(channels), 0);
    for (std::size_t e = 0; e < total; ++e) {
      const auto c = static_cast<std::size_t>(
          channel_of(static_cast<std::int64_t>(e), channels, inner, layout));
      if (shown[c] >= 2 || c >= 16) continue;
      ++shown[c];
      const long double ref = std::clamp<long double>(
          ad[c].first * static_cast<long double>(x[e]) + ad[c].second,
          static_cast<long double>(img.job.lo), static_cast<long double>(img.job.hi));
      std::printf("  c%zu: %5lld -> %5lld   (%.3Lf)\n", c, static_cast<long long>(x[e]),
                  static_cast<long long>(e < r.y.size() ? r.y[e] : 0), ref);
    }
    std::printf("RTL vs golden model: %zu mismatches in %zu elements%s\n", mismatches, total,
                mismatches == 0 ? " (bit-exact)" : "");
    std::printf("RTL vs float BN: max error %.4Lf LSB, mean %.4Lf LSB\n", max_err,
                sum_err / static_cast<long double>(total));
    std::printf("stream: %llu cycles with %.0f%% random stalls on each side (%.3f beats/cycle)\n",
                static_cast<unsigned long long>(cycles), stall * 100,
                static_cast<double>(r.out_beats) / static_cast<double>(cycles));
    return (mismatches == 0 && r.errors.empty()) ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << "demo_runner: error: " << e.what() << "\n";
    return 2;
  }
}
