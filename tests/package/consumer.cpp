// Uses each installed library once: the generator writes an accelerator's manifest, the model
// folds a batch norm for it, the runtime runs a job on the reference device and checks it against
// the golden model; import (when installed) parses a one-node HLO module.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "normcore/config.hpp"
#include "normcore/contract.hpp"
#include "normcore/driver.hpp"
#include "normcore/fold.hpp"
#include "normcore/gen/accel.hpp"
#include "normcore/gen/core.hpp"
#include "normcore/params_file.hpp"
#ifdef CONSUMER_WITH_IMPORT
#include "normcore/import/hlo.hpp"
#endif

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer <work dir>\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  normcore::AccelConfig cfg;
  cfg.core.name = "pkg";
  cfg.core.lanes = 4;
  if (const auto err = cfg.check(); !err.empty()) {
    std::fprintf(stderr, "config: %s\n", err.c_str());
    return 1;
  }
  std::filesystem::create_directories(dir);
  for (const auto& f : normcore::gen::render_accel(cfg)) {
    std::ofstream(dir / f.name, std::ios::binary) << f.content;
  }
  normcore::BnParams bn;
  bn.integer_io = true;
  bn.gamma = {1.0, 2.0, 0.5};
  bn.beta = {0.0, -1.0, 3.0};
  bn.mean = {1.0, 0.0, -2.0};
  bn.var = {1.0, 4.0, 0.25};
  bn.eps = 1e-5;
  const auto folded = normcore::fold(bn, cfg.core.arith);
  const normcore::ParamImage image{cfg.core.arith, folded.job, folded.scale, folded.shift};
  auto acc = normcore::Accelerator::open("ref:" + (dir / "manifest.json").string());
  auto params = acc.upload(image);
  const normcore::JobShape shape{.n = 2, .c = 3, .hw = 5};
  std::vector<std::int8_t> x(shape.elements()), y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::int8_t>(i * 7 % 256 - 128);
  acc.run(params, normcore::view(x), normcore::view(y), shape);
  int bad = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto c = static_cast<std::size_t>(
        normcore::channel_of(static_cast<std::int64_t>(i), 3, 5, normcore::Layout::nchw));
    const auto want = normcore::apply(x[i], folded.scale[c], folded.shift[c], folded.job);
    bad += want != y[i];
  }
#ifdef CONSUMER_WITH_IMPORT
  const auto g = normcore::import::parse_hlo(
      "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p)\n}\n",
      "consumer.hlo");
  std::printf("import: parsed an HLO module of %zu nodes\n", g.nodes.size());
#endif
  std::printf("consumer: %zu elements on ref:, %d mismatches\n", x.size(), bad);
  return bad == 0 ? 0 : 1;
}
