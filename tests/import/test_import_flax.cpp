// StableHLO fixtures written by the real JAX/Flax (scripts/fixtures/make_flax_fixtures.py, the
// versions in tests/import/fixtures/stablehlo/manifest.json): every BatchNorm is recognised with
// Flax's channel axis, epsilon and parameter roles (compared with the checkpoint bundle), and
// the folded layer run on the ref device stays within the fold's worst-case bound of Flax's own
// float output (Flax ran the BN on the same quantised input).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "normcore/driver.hpp"
#include "normcore/fold.hpp"
#include "normcore/import/bundle.hpp"
#include "normcore/import/mlir.hpp"
#include "normcore/import/plan.hpp"
#include "normcore/import/recognise.hpp"
#include "normcore/manifest.hpp"
#include "normcore/npz.hpp"
#include "normcore/params_file.hpp"
#include "run_plan.hpp"
#include "test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using normcore::import::Graph;

fs::path fixture_dir() {
  return fs::path(normcore::test::source_dir()) / "tests/import/fixtures/stablehlo";
}

nlohmann::json manifest() {
  std::ifstream is(fixture_dir() / "manifest.json");
  return nlohmann::json::parse(is);
}

fs::path device_manifest() {
  return fs::path(normcore::test::devices_dir()) / "normcore" / "rtl" / "manifest.json";
}

std::vector<double> f32s(const normcore::NpyArray& a) {
  return a.as_double;
}

// Checks recognition of every layer of a model against the bundle and the manifest.
void check_layers(const std::string& model, const normcore::import::Recognition& rec,
                  const nlohmann::json& layers,
                  const std::map<std::string, normcore::NpyArray>& vars) {
  ASSERT_EQ(rec.layers.size(), layers.size()) << model;
  EXPECT_TRUE(rec.near_misses.empty()) << model << ": " << rec.near_misses[0].reason;
  for (const auto& m : rec.layers) {
    SCOPED_TRACE(model + " " + m.name);
    ASSERT_TRUE(layers.contains(m.name));
    const auto& l = layers[m.name];
    const auto shape = l["shape"].get<std::vector<std::int64_t>>();
    auto axis = l["axis"].get<int>();
    if (axis < 0) axis += static_cast<int>(shape.size());
    EXPECT_EQ(m.channel_axis, axis);
    EXPECT_EQ(m.shape, shape);
    EXPECT_EQ(m.eps, static_cast<double>(static_cast<float>(l["eps"].get<double>())));
    ASSERT_TRUE(m.complete);
    EXPECT_EQ(m.params.gamma, f32s(vars.at("params/" + m.name + "/scale")));
    EXPECT_EQ(m.params.beta, f32s(vars.at("params/" + m.name + "/bias")));
    EXPECT_EQ(m.params.mean, f32s(vars.at("batch_stats/" + m.name + "/mean")));
    EXPECT_EQ(m.params.var, f32s(vars.at("batch_stats/" + m.name + "/var")));
  }
}

// Runs every planned layer on the ref device with Flax's quantised BN input and compares with
// Flax's float output of that BN (activation applied as fused); prints a table row per layer.
void run_against_flax(const std::string& model, const Graph& g,
                      const normcore::import::Recognition& rec,
                      const std::map<std::string, normcore::NpyArray>& io) {
  const auto man = normcore::load_manifest(device_manifest());
  normcore::import::PlanOptions opt;
  opt.spec = man.config.arith();
  opt.config_json = man.config_json;
  opt.integer_io = false;
  double ymax = 0;
  double in_scale = 0;
  for (const auto& m : rec.layers) {
    for (double y : io.at(m.name + "/y").as_double) ymax = std::max(ymax, std::fabs(y));
    in_scale = io.at(m.name + "/in_scale").as_double.at(0);
  }
  opt.in = {in_scale, 0};
  opt.out = {ymax / 100.0, 0};
  const auto plan = normcore::import::make_plan(g, rec, opt);
  const auto dir =
      fs::temp_directory_path() / ("normcore_flax_" + model + "_" + std::to_string(::getpid()));
  normcore::import::write_plan(plan, dir);
  const auto lp = normcore::import::read_plan(dir);
  auto acc = normcore::Accelerator::open("ref:" + device_manifest().string());
  ASSERT_EQ(lp.layers.size(), plan.layers.size());
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    const auto& pl = plan.layers[i];
    const auto& xs = io.at(pl.match.name + "/x").as_int;
    const auto& yf = io.at(pl.match.name + "/y").as_double;
    ASSERT_EQ(xs.size(), lp.layers[i].job.elements());
    std::vector<std::int32_t> xin(xs.begin(), xs.end()), yout(xs.size());
    const auto image = normcore::read_params(lp.layers[i].params_file);
    auto params = acc.upload(image);
    acc.run(params, normcore::view(xin), normcore::view(yout),
            normcore::import::job_shape(lp.layers[i].job));
    const auto [lo, hi] = normcore::activation_bounds(pl.bn, opt.spec);
    double max_err = 0;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      double y = yf[k];
      if (pl.match.activation == "relu") y = std::max(y, 0.0);
      const double want = std::clamp(y / opt.out.scale + static_cast<double>(opt.out.zero_point),
                                     static_cast<double>(lo), static_cast<double>(hi));
      max_err = std::max(max_err, std::fabs(static_cast<double>(yout[k]) - want));
    }
    // Flax computes in float32: 1e-3 LSB covers its rounding at these magnitudes.
    EXPECT_LE(max_err, pl.fold.worst_err + 1e-3) << model << " " << pl.match.name;
    EXPECT_GT(max_err, 0.0) << "a comparison that cannot fail";
    std::printf(
        "[flax stablehlo] %-14s %-12s axis %d eps %-8g %4zu elems: max error %.4f LSB, "
        "bound %.4f LSB\n",
        model.c_str(), pl.match.name.c_str(), pl.match.channel_axis, pl.match.eps, xs.size(),
        max_err, static_cast<double>(pl.fold.worst_err));
  }
  fs::remove_all(dir);
}

TEST(FlaxStablehlo, EveryFixtureRecognisedAndWithinTheBound) {
  const auto j = manifest();
  ASSERT_GE(j["models"].size(), 6U);
  for (const auto& [model, info] : j["models"].items()) {
    SCOPED_TRACE(model);
    Graph g = normcore::import::load_mlir(fixture_dir() / (model + ".mlir"));
    const auto bundle = normcore::import::load_bundle(fixture_dir() / (model + ".npz"));
    normcore::import::attach_bundle(g, bundle);
    const auto rec = normcore::import::recognise(g);
    const auto vars = normcore::read_npz(fixture_dir() / (model + ".npz"));
    const auto io = normcore::read_npz(fixture_dir() / (model + ".io.npz"));
    check_layers(model, rec, info["layers"], vars);
    run_against_flax(model, g, rec, io);
  }
}

TEST(FlaxStablehlo, ConstantsVariantHexLiterals) {
  // The same model lowered with its variables closed over: dense<"0x..."> and splat constants.
  const auto j = manifest();
  for (const auto& [model, info] : j["models"].items()) {
    if (!info["const_variant"].get<bool>()) continue;
    const Graph g = normcore::import::load_mlir(fixture_dir() / (model + "_const.mlir"));
    EXPECT_TRUE(g.inputs.size() == 1U) << "only x is an argument";
    auto rec = normcore::import::recognise(g);
    ASSERT_EQ(rec.layers.size(), 1U);
    rec.layers[0].name = "BatchNorm_0";  // named from the nodes here (no bundle keys)
    check_layers(model, rec, info["layers"], normcore::read_npz(fixture_dir() / (model + ".npz")));
  }
}

}  // namespace
