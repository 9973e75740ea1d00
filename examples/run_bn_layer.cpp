// Example application: fold a batch-norm layer for a device, run it there, check the result.
//
//   run_bn_layer <device> [bn.json] [N H W]
//   run_bn_layer ref:build/devices/normcore/rtl/manifest.json examples/bn_layer.json 2 7 7
//   run_bn_layer sim:build/devices/normcore/rtl/manifest.json,latency=32
//
// 1. reads the layer (gamma, beta, mean, var, eps, quantisation, activation) and folds it for
//    the device's datapath (its manifest says the widths);
// 2. opens the device, uploads the folded parameters, runs a random int8 tensor;
// 3. checks every output against the golden model (bit-exact) and against the float batch norm
//    (within the fold's reported worst-case error), and exits non-zero if either check fails.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "normcore/driver.hpp"
#include "normcore/fold.hpp"

int main(int argc, char** argv) {
  using namespace normcore;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <device> [bn.json] [N H W]\n", argv[0]);
    return 2;
  }
  const std::string device = argv[1];
  const std::string layer = argc > 2 ? argv[2] : NORMCORE_SOURCE_DIR "/examples/bn_layer.json";
  const std::uint64_t n = argc > 5 ? std::stoull(argv[3]) : 2;
  const std::uint64_t h = argc > 5 ? std::stoull(argv[4]) : 7;
  const std::uint64_t w = argc > 5 ? std::stoull(argv[5]) : 7;
  try {
    auto acc = Accelerator::open(device);
    std::printf("device %s\n%s", device.c_str(), acc.info().describe().c_str());
    const BnParams bn = load_bn_json(layer);
    const ArithSpec spec = acc.manifest().config.arith();
    const FoldResult f = fold(bn, spec);
    const ParamImage image{spec, f.job, f.scale, f.shift};
    std::printf("folded %zu channels: R = %d, %s, clamp [%lld, %lld], worst-case error %.4Lf LSB\n",
                bn.channels(), f.job.shift, std::string(to_string(f.job.rounding)).c_str(),
                static_cast<long long>(f.job.lo), static_cast<long long>(f.job.hi), f.worst_err);
    auto params = acc.upload(image);

    const JobShape shape{n, bn.channels(), h * w, Layout::nchw};
    std::mt19937_64 rng(2026);
    std::uniform_int_distribution<std::int64_t> xd(spec.x_min(), spec.x_max());
    std::vector<std::int64_t> x(shape.elements());
    for (auto& v : x) v = xd(rng);
    std::vector<std::int32_t> xi(x.begin(), x.end()), yi(x.size());
    Run run = acc.submit(params, view(xi), view(yi), shape);
    run.get();

    std::vector<std::int64_t> golden(x.size());
    apply_tensor(x, golden, image.scale, image.shift, static_cast<std::int64_t>(shape.hw),
                 shape.layout, image.job);
    const auto affine = ideal_affine(bn);
    std::uint64_t mismatches = 0;
    long double worst = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (yi[i] != golden[i]) ++mismatches;
      const auto c = static_cast<std::size_t>(
          channel_of(static_cast<std::int64_t>(i), static_cast<std::int64_t>(shape.c),
                     static_cast<std::int64_t>(shape.hw), shape.layout));
      long double ideal = affine[c].first * static_cast<long double>(x[i]) + affine[c].second;
      ideal =
          std::clamp(ideal, static_cast<long double>(f.job.lo), static_cast<long double>(f.job.hi));
      worst = std::max(worst, std::fabs(static_cast<long double>(yi[i]) - ideal));
    }
    const RunStats s = run.stats();
    std::printf(
        "ran %llu elements (%llux%llux%llux%llu) in %llu device job(s), %llu register "
        "accesses; device %.4f s, host %.4f s\n",
        static_cast<unsigned long long>(x.size()), static_cast<unsigned long long>(n),
        static_cast<unsigned long long>(shape.c), static_cast<unsigned long long>(h),
        static_cast<unsigned long long>(w), static_cast<unsigned long long>(s.tiles),
        static_cast<unsigned long long>(s.mmio_reads + s.mmio_writes), s.device_seconds,
        s.host_seconds);
    std::printf(
        "golden model: %llu mismatches; float batch norm: max error %.4Lf LSB (bound %.4Lf)\n",
        static_cast<unsigned long long>(mismatches), worst, f.worst_err);
    const bool ok = mismatches == 0 && worst <= f.worst_err + 1e-9L;
    std::printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "run_bn_layer: error: %s\n", e.what());
    return 2;
  }
}
