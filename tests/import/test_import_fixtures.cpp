// MLIR fixtures written by the real frameworks (the versions are in each manifest.json):
//   tests/import/fixtures/stablehlo  JAX/Flax, scripts/fixtures/make_flax_fixtures.py
//   tests/import/fixtures/tosa       torch + torch-mlir (TorchToTosa),
//                                    scripts/fixtures/make_torch_tosa_fixtures.py
//   tests/import/fixtures/torch_export  torch.export .pt2 archives (aten.batch_norm, the
//                                    run_decompositions forms), safetensors state_dicts,
//                                    scripts/fixtures/make_torch_export_fixtures.py
//   tests/import/fixtures/relay      Relay text written from its grammar (no TVM with Relay
//                                    installs here), scripts/fixtures/make_relay_fixtures.py:
//                                    the torch / Flax models above, parameters bound from their
//                                    safetensors / msgpack bundles, compared with their outputs
// Every BatchNorm is recognised with the framework's channel axis, epsilon and parameter roles
// (compared with the checkpoint / state_dict), and the folded layer run on the ref device stays
// within the fold's worst-case bound of the framework's own float output (the framework ran the
// BN on the same quantised input).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "normcore/driver.hpp"
#include "normcore/fold.hpp"
#include "normcore/import/bundle.hpp"
#include "normcore/import/hlo.hpp"
#include "normcore/import/mlir.hpp"
#include "normcore/import/onnx.hpp"
#include "normcore/import/plan.hpp"
#include "normcore/import/recognise.hpp"
#include "normcore/import/relay.hpp"
#include "normcore/import/torch_export.hpp"
#include "normcore/manifest.hpp"
#include "normcore/npz.hpp"
#include "normcore/params_file.hpp"
#include "run_plan.hpp"
#include "test_errors.hpp"
#include "test_paths.hpp"

namespace {

namespace fs = std::filesystem;
using normcore::import::Graph;
using Arrays = std::map<std::string, normcore::NpyArray>;

fs::path fixture_dir(const std::string& family) {
  return fs::path(normcore::test::source_dir()) / "tests/import/fixtures" / family;
}

nlohmann::json manifest(const std::string& family) {
  std::ifstream is(fixture_dir(family) / "manifest.json");
  return nlohmann::json::parse(is);
}

fs::path device_manifest() {
  return fs::path(normcore::test::devices_dir()) / "normcore" / "rtl" / "manifest.json";
}

// What the framework says about one BN layer.
struct Expected {
  std::string io;                      // key prefix in <model>.io.npz
  std::string gamma, beta, mean, var;  // keys in <model>.npz
  int axis = 1;
  double eps = 0;
  std::vector<std::int64_t> shape;
  bool eps_double = false;  // eps kept as the framework's double (torch.export), not a float
};

void check_layer(const normcore::import::BnMatch& m, const Expected& e, const Arrays& vars) {
  SCOPED_TRACE(e.io);
  EXPECT_EQ(m.channel_axis, e.axis);
  EXPECT_EQ(m.shape, e.shape);
  EXPECT_EQ(m.eps, e.eps_double ? e.eps : static_cast<double>(static_cast<float>(e.eps)));
  ASSERT_TRUE(m.complete);
  EXPECT_EQ(m.params.gamma, vars.at(e.gamma).as_double);
  EXPECT_EQ(m.params.beta, vars.at(e.beta).as_double);
  EXPECT_EQ(m.params.mean, vars.at(e.mean).as_double);
  EXPECT_EQ(m.params.var, vars.at(e.var).as_double);
}

// Runs every planned layer on the ref device with the framework's quantised BN input and
// compares with the framework's float output of that BN (the fused activation applied); prints
// one table row per layer.
void run_against_framework(const std::string& tag, const std::string& model, const Graph& g,
                           const normcore::import::Recognition& rec,
                           const std::vector<Expected>& want, const Arrays& io) {
  const auto man = normcore::load_manifest(device_manifest());
  normcore::import::PlanOptions opt;
  opt.spec = man.config.arith();
  opt.config_json = man.config_json;
  opt.integer_io = false;
  double ymax = 0;
  for (const auto& e : want) {
    for (double y : io.at(e.io + "/y").as_double) ymax = std::max(ymax, std::fabs(y));
  }
  opt.in = {io.at(want.at(0).io + "/in_scale").as_double.at(0), 0};
  opt.out = {ymax / 100.0, 0};
  const auto plan = normcore::import::make_plan(g, rec, opt);
  const auto dir = fs::temp_directory_path() /
                   ("normcore_fx_" + tag + "_" + model + "_" + std::to_string(::getpid()));
  normcore::import::write_plan(plan, dir);
  const auto lp = normcore::import::read_plan(dir);
  auto acc = normcore::Accelerator::open("ref:" + device_manifest().string());
  ASSERT_EQ(lp.layers.size(), want.size());
  for (std::size_t i = 0; i < plan.layers.size(); ++i) {
    const auto& pl = plan.layers[i];
    const auto& xs = io.at(want[i].io + "/x").as_int;
    const auto& yf = io.at(want[i].io + "/y").as_double;
    ASSERT_EQ(xs.size(), lp.layers[i].job.elements());
    std::vector<std::int32_t> xin(xs.begin(), xs.end()), yout(xs.size());
    auto params = acc.upload(normcore::read_params(lp.layers[i].params_file));
    acc.run(params, normcore::view(xin), normcore::view(yout),
            normcore::import::job_shape(lp.layers[i].job));
    const auto [lo, hi] = normcore::activation_bounds(pl.bn, opt.spec);
    double max_err = 0;
    for (std::size_t k = 0; k < xs.size(); ++k) {
      const double y = pl.match.activation == "relu" ? std::max(yf[k], 0.0) : yf[k];
      const double ref = std::clamp(y / opt.out.scale + static_cast<double>(opt.out.zero_point),
                                    static_cast<double>(lo), static_cast<double>(hi));
      max_err = std::max(max_err, std::fabs(static_cast<double>(yout[k]) - ref));
    }
    // The framework computes in float32: 1e-3 LSB covers its rounding at these magnitudes.
    EXPECT_LE(max_err, pl.fold.worst_err + 1e-3) << model << " " << want[i].io;
    EXPECT_GT(max_err, 0.0) << "a comparison that cannot fail";
    std::printf(
        "[%s] %-14s %-12s axis %d eps %-8g act %-5s %4zu elems: max error %.4f LSB, "
        "bound %.4f LSB\n",
        tag.c_str(), model.c_str(), want[i].io.c_str(), pl.match.channel_axis, pl.match.eps,
        pl.match.activation.c_str(), xs.size(), max_err, static_cast<double>(pl.fold.worst_err));
  }
  fs::remove_all(dir);
}

std::vector<Expected> flax_layers(const nlohmann::json& layers) {
  std::vector<Expected> out;
  for (const auto& [name, l] : layers.items()) {  // BatchNorm_0, BatchNorm_1, ... (sorted)
    Expected e{name,
               "params/" + name + "/scale",
               "params/" + name + "/bias",
               "batch_stats/" + name + "/mean",
               "batch_stats/" + name + "/var",
               l["axis"].get<int>(),
               l["eps"].get<double>(),
               l["shape"].get<std::vector<std::int64_t>>()};
    if (e.axis < 0) e.axis += static_cast<int>(e.shape.size());
    out.push_back(std::move(e));
  }
  return out;
}

TEST(FlaxStablehlo, EveryFixtureRecognisedAndWithinTheBound) {
  const auto j = manifest("stablehlo");
  ASSERT_GE(j["models"].size(), 7U);
  ASSERT_TRUE(j["models"].contains("preact_bn") && j["models"].contains("concat_bn"));
  for (const auto& [model, info] : j["models"].items()) {
    SCOPED_TRACE(model);
    const auto dir = fixture_dir("stablehlo");
    Graph g = normcore::import::load_mlir(dir / (model + ".mlir"));
    normcore::import::attach_bundle(g, normcore::import::load_bundle(dir / (model + ".npz")));
    const auto rec = normcore::import::recognise(g);
    const auto want = flax_layers(info["layers"]);
    ASSERT_EQ(rec.layers.size(), want.size());
    EXPECT_TRUE(rec.near_misses.empty());
    const auto vars = normcore::read_npz(dir / (model + ".npz"));
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(rec.layers[i].name, want[i].io);  // named from the bundle's keys
      check_layer(rec.layers[i], want[i], vars);
    }
    run_against_framework("flax stablehlo", model, g, rec, want,
                          normcore::read_npz(dir / (model + ".io.npz")));
  }
}

// The same Flax lowerings as XLA HLO text (`.as_text(dialect="hlo")`): parameters named
// variables__params____BatchNorm_0____scale__.1, bound from the .npz bundle by role.
TEST(FlaxHlo, EveryFixtureRecognisedAndWithinTheBound) {
  const auto j = manifest("stablehlo");
  ASSERT_GE(j["models"].size(), 7U);
  for (const auto& [model, info] : j["models"].items()) {
    SCOPED_TRACE(model);
    const auto dir = fixture_dir("stablehlo");
    Graph g = normcore::import::load_hlo(dir / (model + ".hlo"));
    EXPECT_EQ(g.format, "hlo");
    normcore::import::attach_bundle(g, normcore::import::load_bundle(dir / (model + ".npz")));
    const auto rec = normcore::import::recognise(g);
    auto want = flax_layers(info["layers"]);
    for (auto& e : want) e.eps_double = true;  // HLO prints eps as 1e-05: read as that double
    ASSERT_EQ(rec.layers.size(), want.size());
    EXPECT_TRUE(rec.near_misses.empty());
    const auto vars = normcore::read_npz(dir / (model + ".npz"));
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(rec.layers[i].pattern, "decomposed");
      check_layer(rec.layers[i], want[i], vars);
    }
    run_against_framework("flax hlo", model, g, rec, want,
                          normcore::read_npz(dir / (model + ".io.npz")));
  }
}

TEST(FlaxStablehlo, ConstantsVariantHexLiterals) {
  // The same model lowered with its variables closed over: dense<"0x..."> and splat constants.
  const auto j = manifest("stablehlo");
  for (const auto& [model, info] : j["models"].items()) {
    if (!info["const_variant"].get<bool>()) continue;
    const auto dir = fixture_dir("stablehlo");
    const Graph g = normcore::import::load_mlir(dir / (model + "_const.mlir"));
    EXPECT_EQ(g.inputs.size(), 1U) << "only x is an argument";
    const auto rec = normcore::import::recognise(g);
    const auto want = flax_layers(info["layers"]);
    ASSERT_EQ(rec.layers.size(), want.size());
    const auto vars = normcore::read_npz(dir / (model + ".npz"));
    for (std::size_t i = 0; i < want.size(); ++i) check_layer(rec.layers[i], want[i], vars);
  }
}

std::vector<Expected> torch_layers(const nlohmann::json& layers, bool eps_double) {
  std::vector<Expected> want;
  for (const auto& l : layers) {  // execution order = graph order
    const auto m = l["module"].get<std::string>();
    want.push_back({m, m + ".weight", m + ".bias", m + ".running_mean", m + ".running_var", 1,
                    l["eps"].get<double>(), l["shape"].get<std::vector<std::int64_t>>(),
                    eps_double});
  }
  return want;
}

// Every model in three forms: aten.batch_norm (torch.export.export), the default
// run_decompositions (_native_batch_norm_legit_no_training) and the decomposed aten chain.
TEST(TorchExport, EveryFixtureRecognisedAndWithinTheBound) {
  const auto j = manifest("torch_export");
  ASSERT_GE(j["models"].size(), 7U);
  ASSERT_TRUE(j["models"].contains("preact_bn") && j["models"].contains("concat_bn"));
  const std::map<std::string, std::string> pattern = {
      {"", "batchnorm"}, {".legit", "batchnorm"}, {".aten", "decomposed"}};
  for (const auto& [model, info] : j["models"].items()) {
    for (const auto& [variant, pat] : pattern) {
      SCOPED_TRACE(model + variant);
      const auto dir = fixture_dir("torch_export");
      const Graph g = normcore::import::load_torch_export(dir / (model + variant + ".pt2"));
      EXPECT_EQ(g.format, "torch.export");
      const auto rec = normcore::import::recognise(g);
      const auto want = torch_layers(info["layers"], true);
      ASSERT_EQ(rec.layers.size(), want.size());
      EXPECT_TRUE(rec.near_misses.empty());
      const auto vars = normcore::read_npz(dir / (model + ".npz"));
      for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(rec.layers[i].name, want[i].io);  // from the parameters' fqn
        EXPECT_EQ(rec.layers[i].pattern, pat);
        check_layer(rec.layers[i], want[i], vars);
      }
      run_against_framework("torch.export" + variant, model, g, rec, want,
                            normcore::read_npz(dir / (model + ".io.npz")));
    }
  }
}

// The weights come from the archive's raw storage entries through their strides: the
// channels_last conv weight (strides [27,1,9,3]) equals the state_dict's.
TEST(TorchExport, WeightsThroughStrides) {
  const auto dir = fixture_dir("torch_export");
  const Graph g = normcore::import::load_torch_export(dir / "conv_bn_relu_cl.pt2");
  const auto vars = normcore::read_npz(dir / "conv_bn_relu_cl.npz");
  const int w = g.find("p_conv_weight");
  ASSERT_GE(w, 0);
  const auto& v = g.values[static_cast<std::size_t>(w)];
  ASSERT_TRUE(v.constant);
  EXPECT_EQ(v.origin, "parameter 'conv.weight'");
  EXPECT_EQ(v.constant->data, vars.at("conv.weight").as_double);
  EXPECT_EQ(v.shape, (std::vector<std::int64_t>{8, 3, 3, 3}));
}

// torch.export.save pickles a weight that is a tensor subclass (use_pickle: torch 2.15's
// _should_use_pickle; a plain tensor or Parameter is always raw bytes). preact_bn.pickled.pt2
// holds the running statistics so: they stay without data, the layers are found but cannot be
// planned (the message names the pickled buffers), and the model's safetensors bundle fills
// them: the same parameters and the same run against torch as the unpickled archive.
TEST(TorchExport, PickledWeightsFilledFromABundle) {
  const auto j = manifest("torch_export");
  ASSERT_TRUE(j.contains("pickled"));
  const auto& pk = j["pickled"];
  const auto dir = fixture_dir("torch_export");
  const auto model = pk["model"].get<std::string>();
  Graph g = normcore::import::load_torch_export(dir / pk["archive"].get<std::string>());
  const auto vars = normcore::read_npz(dir / (model + ".npz"));
  const auto names = pk["use_pickle"].get<std::vector<std::string>>();
  ASSERT_EQ(names.size(), 4U);
  int pickled = 0;
  for (const auto& v : g.values) {
    const bool is_pickled = std::any_of(names.begin(), names.end(), [&](const std::string& n) {
      return v.origin == "buffer '" + n + "' (pickled by torch (a tensor subclass): not read)";
    });
    if (is_pickled) {
      ++pickled;
      EXPECT_FALSE(v.constant) << v.origin;
    }
  }
  EXPECT_EQ(pickled, 4);
  const int w = g.find("p_bn1_weight");  // not pickled: read from its raw entry
  ASSERT_GE(w, 0);
  ASSERT_TRUE(g.values[static_cast<std::size_t>(w)].constant);
  EXPECT_EQ(g.values[static_cast<std::size_t>(w)].constant->data, vars.at("bn1.weight").as_double);

  auto rec = normcore::import::recognise(g);
  ASSERT_EQ(rec.layers.size(), 2U);
  EXPECT_FALSE(rec.layers[0].complete);
  normcore::import::PlanOptions opt;
  opt.spec = normcore::load_manifest(device_manifest()).config.arith();
  const std::string err =
      normcore::test::error_of([&] { (void)normcore::import::make_plan(g, rec, opt); });
  EXPECT_NE(err.find("parameters without data: 'b_bn1_running_mean' (buffer 'bn1.running_mean' "
                     "(pickled by torch"),
            std::string::npos)
      << err;

  normcore::import::attach_bundle(
      g, normcore::import::load_bundle(dir / pk["bundle"].get<std::string>()));
  rec = normcore::import::recognise(g);
  const auto want = torch_layers(j["models"][model]["layers"], true);
  ASSERT_EQ(rec.layers.size(), want.size());
  EXPECT_TRUE(rec.near_misses.empty());
  for (std::size_t i = 0; i < want.size(); ++i) check_layer(rec.layers[i], want[i], vars);
  run_against_framework("torch.export.pickled", model, g, rec, want,
                        normcore::read_npz(dir / (model + ".io.npz")));
}

TEST(TorchExport, TrainingModeRefused) {
  const auto path = fixture_dir("torch_export") / "train_bn.pt2";
  try {
    (void)normcore::import::load_torch_export(path);
    FAIL() << "no error";
  } catch (const normcore::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("node 'batch_norm' (aten.batch_norm.default): training=True"),
              std::string::npos)
        << msg;
  }
}

// nn.batch_norm + TupleGetItem and the SimplifyInference form (x * s + (beta - mean * s):
// "folded-shift") of every Relay fixture, its
// arguments bound from the framework's own checkpoint (torch safetensors, Flax msgpack).
TEST(Relay, EveryFixtureRecognisedAndWithinTheBound) {
  const auto j = manifest("relay");
  ASSERT_GE(j["models"].size(), 10U);
  for (const char* m : {"preact_bn", "concat_bn", "nhwc_preact_bn", "nhwc_concat_bn"}) {
    ASSERT_TRUE(j["models"].contains(m)) << m;
  }
  for (const auto& [model, info] : j["models"].items()) {
    for (const std::string variant : {"", ".simplified"}) {
      SCOPED_TRACE(model + variant);
      const auto src = fixture_dir(info["family"].get<std::string>());
      Graph g = normcore::import::load_relay(fixture_dir("relay") / (model + variant + ".relay"));
      EXPECT_EQ(g.format, "relay");
      normcore::import::attach_bundle(
          g, normcore::import::load_bundle(src / info["bundle"].get<std::string>()));
      const auto rec = normcore::import::recognise(g);
      std::vector<Expected> want;
      for (const auto& l : info["layers"]) {
        want.push_back({l["io"], l["gamma"], l["beta"], l["mean"], l["var"], l["axis"].get<int>(),
                        l["eps"].get<double>(), l["shape"].get<std::vector<std::int64_t>>(), true});
      }
      ASSERT_EQ(rec.layers.size(), want.size());
      EXPECT_TRUE(rec.near_misses.empty());
      const auto vars = normcore::read_npz(src / info["reference"].get<std::string>());
      for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(rec.layers[i].pattern, variant.empty() ? "batchnorm" : "folded-shift");
        check_layer(rec.layers[i], want[i], vars);
      }
      run_against_framework("relay" + variant, model, g, rec, want,
                            normcore::read_npz(src / info["io"].get<std::string>()));
    }
  }
}

// torch.onnx.export (dynamo, opset 20) of the TOSA fixtures' models: by default it folds a BN
// that follows a Conv / Gemm into its weights (the file has no BatchNormalization for it, and an
// import that finds none says the conv may include it); optimize=False keeps every BN.
TEST(TorchOnnx, EveryFixtureRecognisedAndWithinTheBound) {
  const auto j = manifest("onnx");
  ASSERT_GE(j["models"].size(), 6U);
  int kept = 0, folded = 0;
  for (const auto& [model, info] : j["models"].items()) {
    const auto dir = fixture_dir("onnx");
    const auto all = torch_layers(info["layers"], false);  // epsilon is a float attribute
    const auto vars = normcore::read_npz(dir / (model + ".npz"));
    for (const auto& [file, f] : info["files"].items()) {
      SCOPED_TRACE(file);
      const Graph g = normcore::import::load_onnx(dir / file);
      const auto rec = normcore::import::recognise(g);
      std::vector<Expected> want;  // the modules whose BatchNormalization torch left
      for (const auto& m : f["bn_modules"]) {
        const auto it = std::find_if(all.begin(), all.end(), [&](const Expected& e) {
          return e.io == m.get<std::string>();
        });
        ASSERT_NE(it, all.end());
        want.push_back(*it);
      }
      kept += static_cast<int>(want.size());
      folded += static_cast<int>(all.size() - want.size());
      ASSERT_EQ(rec.layers.size(), want.size());
      EXPECT_TRUE(rec.near_misses.empty());
      if (want.empty()) {
        EXPECT_NE(rec.note.find("may already include it"), std::string::npos) << rec.note;
        continue;
      }
      EXPECT_EQ(rec.note, "");
      for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(rec.layers[i].name, want[i].io);  // from the initializers' names
        EXPECT_EQ(rec.layers[i].pattern, "batchnorm");
        check_layer(rec.layers[i], want[i], vars);
      }
      run_against_framework("torch onnx" + file.substr(model.size()), model, g, rec, want,
                            normcore::read_npz(dir / (model + ".io.npz")));
    }
  }
  EXPECT_GT(folded, 0) << "torch's default export folds conv + BN";
  EXPECT_GE(kept, 12);
}

TEST(TorchTosa, EveryFixtureRecognisedAndWithinTheBound) {
  const auto j = manifest("tosa");
  ASSERT_GE(j["models"].size(), 6U);
  ASSERT_TRUE(j["models"].contains("preact_bn") && j["models"].contains("concat_bn"));
  for (const auto& [model, info] : j["models"].items()) {
    SCOPED_TRACE(model);
    const auto dir = fixture_dir("tosa");
    const Graph g = normcore::import::load_mlir(dir / (model + ".mlir"));
    EXPECT_EQ(g.inputs.size(), 1U) << "torch-mlir embeds the parameters";
    const auto rec = normcore::import::recognise(g);
    const auto want = torch_layers(info["layers"], false);
    ASSERT_EQ(rec.layers.size(), want.size());
    EXPECT_TRUE(rec.near_misses.empty());
    const auto vars = normcore::read_npz(dir / (model + ".npz"));
    for (std::size_t i = 0; i < want.size(); ++i) check_layer(rec.layers[i], want[i], vars);
    run_against_framework("torch tosa", model, g, rec, want,
                          normcore::read_npz(dir / (model + ".io.npz")));
  }
}

}  // namespace
