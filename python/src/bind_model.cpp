// Bindings of normcore::model: widths (ArithSpec), float BN parameters (BnParams), the fold and
// the parameter image (params.bin). Every computation is the C++ library's.
#include <pybind11/stl.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common.hpp"
#include "normcore/config.hpp"
#include "normcore/float_contract.hpp"
#include "normcore/fold.hpp"
#include "normcore/fold_float.hpp"
#include "normcore/params_file.hpp"

namespace normcore::py {

namespace {

std::vector<double> to_vector(
    const pyb::array_t<double, pyb::array::c_style | pyb::array::forcecast>& a) {
  return {a.data(), a.data() + a.size()};
}

pyb::array_t<std::int64_t> to_array(const std::vector<std::int64_t>& v) {
  return pyb::array_t<std::int64_t>(static_cast<pyb::ssize_t>(v.size()), v.data());
}

// The widths of a generated core or accelerator (manifest.json with "config") or of a bare config
// object file, as `normcore import --config` reads them.
ArithSpec spec_from_config(const std::string& path) {
  std::ifstream is(path);
  if (!is) throw Error("config: cannot open " + path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(is);
  } catch (const nlohmann::json::exception& e) {
    throw Error("config " + path + ": malformed JSON: " + e.what());
  }
  if (j.contains("config") && j["config"].is_object()) j = j["config"];
  CoreConfig cfg;
  try {
    cfg = CoreConfig::from_json(j);
  } catch (const std::exception& e) {
    throw Error("config " + path + ": " + e.what());
  }
  if (const auto err = cfg.check(FieldNames::json); !err.empty()) {
    throw Error("config " + path + ": " + err);
  }
  return cfg.arith;
}

void bind_spec(pyb::module_& m) {
  pyb::class_<ArithSpec>(m, "ArithSpec", "Number widths of a datapath (contract.hpp)")
      .def(pyb::init([](int xw, bool x_signed, int sw, int bw, int yw, bool y_signed,
                        const std::string& in_type, const std::string& out_type, bool flush) {
             ArithSpec s{xw, x_signed, sw, bw, yw, y_signed};
             s.x_type = parse_num_type(in_type);
             s.y_type = parse_num_type(out_type);
             s.flush_subnormals = flush;
             apply_float_widths(s);  // a float side fixes its width, s and b become fp32
             if (const auto err = s.check(); !err.empty()) throw Error("ArithSpec: " + err);
             return s;
           }),
           pyb::arg("in_bits") = 8, pyb::arg("in_signed") = true, pyb::arg("scale_bits") = 16,
           pyb::arg("offset_bits") = 32, pyb::arg("out_bits") = 8, pyb::arg("out_signed") = true,
           pyb::arg("in_type") = "int", pyb::arg("out_type") = "int",
           pyb::arg("flush_subnormals") = false)
      .def_static("from_config", &spec_from_config, pyb::arg("path"),
                  "Widths of a manifest.json (core or accelerator) or config JSON file")
      .def_readonly("in_bits", &ArithSpec::xw)
      .def_readonly("in_signed", &ArithSpec::x_signed)
      .def_readonly("scale_bits", &ArithSpec::sw)
      .def_readonly("offset_bits", &ArithSpec::bw)
      .def_property_readonly("shift_bits",
                             [](const ArithSpec& s) {
                               if (PyErr_WarnEx(PyExc_DeprecationWarning,
                                                "ArithSpec.shift_bits is deprecated, use "
                                                "ArithSpec.offset_bits",
                                                1) != 0)
                                 throw pyb::error_already_set();
                               return s.bw;
                             })
      .def_readonly("out_bits", &ArithSpec::yw)
      .def_readonly("out_signed", &ArithSpec::y_signed)
      .def_property_readonly("in_type",
                             [](const ArithSpec& s) { return std::string(to_string(s.x_type)); })
      .def_property_readonly("out_type",
                             [](const ArithSpec& s) { return std::string(to_string(s.y_type)); })
      .def_readonly("flush_subnormals", &ArithSpec::flush_subnormals)
      .def_property_readonly("is_float", &ArithSpec::is_float)
      .def_property_readonly(
          "in_range", [](const ArithSpec& s) { return pyb::make_tuple(s.x_min(), s.x_max()); })
      .def_property_readonly(
          "out_range", [](const ArithSpec& s) { return pyb::make_tuple(s.y_min(), s.y_max()); })
      .def("__repr__", [](const ArithSpec& s) {
        std::ostringstream os;
        if (s.is_float()) {
          os << "ArithSpec(in_type='" << to_string(s.x_type) << "', out_type='"
             << to_string(s.y_type)
             << "', flush_subnormals=" << (s.flush_subnormals ? "True" : "False");
          if (s.x_type == NumType::integer) os << ", in_bits=" << s.xw;
          if (s.y_type == NumType::integer) os << ", out_bits=" << s.yw;
          os << ")";
          return os.str();
        }
        os << "ArithSpec(in_bits=" << s.xw << ", in_signed=" << (s.x_signed ? "True" : "False")
           << ", scale_bits=" << s.sw << ", offset_bits=" << s.bw << ", out_bits=" << s.yw
           << ", out_signed=" << (s.y_signed ? "True" : "False") << ")";
        return os.str();
      });
}

void bind_image(pyb::module_& m) {
  pyb::class_<ParamImage>(m, "ParamImage",
                          "Folded parameters s[c], b[c], R, rounding, clamp (params.bin)")
      .def_static(
          "load", [](const std::string& path) { return read_params(path); }, pyb::arg("path"))
      .def_static(
          "from_bytes",
          [](const pyb::bytes& b, const std::string& name) {
            const std::string s = b;
            return decode_params(
                std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()), name);
          },
          pyb::arg("data"), pyb::arg("name") = "bytes")
      .def(
          "save", [](const ParamImage& p, const std::string& path) { write_params(path, p); },
          pyb::arg("path"))
      .def("to_bytes",
           [](const ParamImage& p) {
             const auto v = encode_params(p);
             return pyb::bytes(reinterpret_cast<const char*>(v.data()), v.size());
           })
      .def_property_readonly("channels", [](const ParamImage& p) { return p.scale.size(); })
      .def_property_readonly("scale", [](const ParamImage& p) { return to_array(p.scale); })
      .def_property_readonly("bias", [](const ParamImage& p) { return to_array(p.shift); })
      .def_property_readonly("shift", [](const ParamImage& p) { return p.job.shift; })
      .def_property_readonly(
          "rounding", [](const ParamImage& p) { return std::string(to_string(p.job.rounding)); })
      .def_property_readonly(
          "clamp", [](const ParamImage& p) { return pyb::make_tuple(p.job.lo, p.job.hi); })
      .def_readonly("spec", &ParamImage::spec)
      .def("__repr__", [](const ParamImage& p) {
        return "ParamImage(channels=" + std::to_string(p.scale.size()) +
               ", shift=" + std::to_string(p.job.shift) +
               ", rounding=" + std::string(to_string(p.job.rounding)) + ")";
      });
}

void bind_bn(pyb::module_& m) {
  pyb::class_<BnParams>(m, "BnParams", "Float batch-norm parameters and quantisation (bn.json)")
      .def_static(
          "from_json",
          [](const std::string& text, const std::string& source) {
            return parse_bn_json(text, source);
          },
          pyb::arg("text"), pyb::arg("source") = "bn")
      .def_static(
          "load", [](const std::string& path) { return load_bn_json(path); }, pyb::arg("path"))
      .def_static(
          "from_arrays",
          [](const pyb::array_t<double, pyb::array::c_style | pyb::array::forcecast>& gamma,
             const pyb::array_t<double, pyb::array::c_style | pyb::array::forcecast>& beta,
             const pyb::array_t<double, pyb::array::c_style | pyb::array::forcecast>& mean,
             const pyb::array_t<double, pyb::array::c_style | pyb::array::forcecast>& var,
             double eps, std::optional<std::pair<double, std::int64_t>> in_quant,
             std::optional<std::pair<double, std::int64_t>> out_quant,
             const std::string& activation, double act_min, double act_max,
             std::optional<std::string> rounding) {
            BnParams p;
            p.gamma = to_vector(gamma);
            p.beta = to_vector(beta);
            p.mean = to_vector(mean);
            p.var = to_vector(var);
            p.eps = eps;
            p.integer_io = !in_quant && !out_quant;
            if (in_quant) p.in = Quant{in_quant->first, in_quant->second};
            if (out_quant) p.out = Quant{out_quant->first, out_quant->second};
            p.activation = activation;
            p.act_min = act_min;
            p.act_max = act_max;
            if (rounding) p.rounding = parse_rounding(*rounding);
            p.source = "bn";
            validate(p);
            return p;
          },
          pyb::arg("gamma"), pyb::arg("beta"), pyb::arg("mean"), pyb::arg("var"),
          pyb::arg("eps") = 1e-5, pyb::arg("in_quant") = pyb::none(),
          pyb::arg("out_quant") = pyb::none(), pyb::arg("activation") = "none",
          pyb::arg("act_min") = 0.0, pyb::arg("act_max") = 0.0, pyb::arg("rounding") = pyb::none())
      .def_property_readonly("channels", &BnParams::channels)
      .def_readonly("gamma", &BnParams::gamma)
      .def_readonly("beta", &BnParams::beta)
      .def_readonly("mean", &BnParams::mean)
      .def_readonly("var", &BnParams::var)
      .def_readonly("eps", &BnParams::eps)
      .def_readonly("integer_io", &BnParams::integer_io)
      .def_property_readonly(
          "in_quant",
          [](const BnParams& p) { return pyb::make_tuple(p.in.scale, p.in.zero_point); })
      .def_property_readonly(
          "out_quant",
          [](const BnParams& p) { return pyb::make_tuple(p.out.scale, p.out.zero_point); })
      .def_readonly("activation", &BnParams::activation);
}

struct PyFold {
  FoldResult result;
  ParamImage image;
  std::string report;
};

void bind_fold(pyb::module_& m) {
  pyb::class_<PyFold>(m, "FoldResult", "The fold's result: the image and its exact error report")
      .def_readonly("params", &PyFold::image)
      .def_readonly("report", &PyFold::report)
      .def_property_readonly(
          "worst_error", [](const PyFold& f) { return static_cast<double>(f.result.worst_err); })
      .def_property_readonly("worst_channel",
                             [](const PyFold& f) { return f.result.worst_channel; })
      .def_property_readonly("shift", [](const PyFold& f) { return f.result.job.shift; })
      .def_property_readonly("warnings", [](const PyFold& f) { return f.result.warnings; })
      .def_property_readonly("channel_errors", [](const PyFold& f) {
        std::vector<double> v;
        for (const auto& c : f.result.channels) v.push_back(static_cast<double>(c.max_err));
        return v;
      });
  m.def(
      "fold",
      [](const BnParams& bn, const ArithSpec& spec, std::optional<std::string> rounding,
         std::optional<int> shift) {
        FoldOptions o;
        if (rounding) o.rounding = parse_rounding(*rounding);
        o.force_shift = shift;
        PyFold f;
        {
          pyb::gil_scoped_release nogil;
          f.result = fold(bn, spec, o);
          f.report = format_report(f.result, spec, bn);
        }
        f.image = ParamImage{spec, f.result.job, f.result.scale, f.result.shift};
        return f;
      },
      pyb::arg("bn"), pyb::arg("spec"), pyb::arg("rounding") = pyb::none(),
      pyb::arg("shift") = pyb::none(), "Folds float BN into the contract's integers");
}

struct PyFloatFold {
  FloatFoldResult result;
  ParamImage image;
  std::string report, unit;
};

// The float datapath's fold (contract v2) and the golden model of its lanes, for tests.
void bind_float(pyb::module_& m) {
  pyb::class_<PyFloatFold>(m, "FloatFoldResult",
                           "The float fold's result: fp32 s, b and the error in output ULPs")
      .def_readonly("params", &PyFloatFold::image)
      .def_readonly("report", &PyFloatFold::report)
      .def_readonly("unit", &PyFloatFold::unit)
      .def_property_readonly("worst_error", [](const PyFloatFold& f) { return f.result.worst_err; })
      .def_property_readonly("worst_channel",
                             [](const PyFloatFold& f) { return f.result.worst_channel; })
      .def_property_readonly("exhaustive", [](const PyFloatFold& f) { return f.result.exhaustive; })
      .def_property_readonly("shift", [](const PyFloatFold&) { return 0; })
      .def_property_readonly("warnings", [](const PyFloatFold& f) { return f.result.warnings; })
      .def_property_readonly("channel_errors", [](const PyFloatFold& f) {
        std::vector<double> v;
        for (const auto& c : f.result.channels) v.push_back(c.max_err);
        return v;
      });
  m.def(
      "fold_float",
      [](const BnParams& bn, const ArithSpec& spec, std::optional<std::string> rounding) {
        const Rounding r =
            rounding ? parse_rounding(*rounding) : bn.rounding.value_or(Rounding::half_even);
        PyFloatFold f;
        {
          pyb::gil_scoped_release nogil;
          f.result = fold_float(bn, spec, r);
          f.report = format_float_report(f.result, spec);
        }
        f.unit = spec.y_type == NumType::integer ? "LSB" : "ULP";
        f.image = ParamImage{spec, f.result.job, f.result.scale, f.result.shift};
        return f;
      },
      pyb::arg("bn"), pyb::arg("spec"), pyb::arg("rounding") = pyb::none(),
      "Folds float BN into fp32 s, b for a float datapath (fold_float.hpp)");
  m.def(
      "apply_float",
      [](const pyb::array_t<std::int64_t, pyb::array::c_style | pyb::array::forcecast>& x,
         const pyb::array_t<std::uint32_t, pyb::array::c_style | pyb::array::forcecast>& s,
         const pyb::array_t<std::uint32_t, pyb::array::c_style | pyb::array::forcecast>& b,
         const ArithSpec& spec, std::int64_t lo, std::int64_t hi, const std::string& rounding) {
        if (s.size() != x.size() || b.size() != x.size()) {
          throw Error("apply_float: x, s and b need the same number of elements");
        }
        JobSettings job{0, parse_rounding(rounding), lo, hi};
        if (const auto err = job.check(spec); !err.empty()) throw Error("apply_float: " + err);
        pyb::array_t<std::int64_t> y(x.size());
        const std::int64_t* xp = x.data();
        const std::uint32_t* sp = s.data();
        const std::uint32_t* bp = b.data();
        std::int64_t* yp = y.mutable_data();
        const auto n = static_cast<std::size_t>(x.size());
        pyb::gil_scoped_release nogil;
        for (std::size_t i = 0; i < n; ++i) yp[i] = apply_float(xp[i], sp[i], bp[i], spec, job);
        return y;
      },
      pyb::arg("x"), pyb::arg("s"), pyb::arg("b"), pyb::arg("spec"), pyb::arg("lo"), pyb::arg("hi"),
      pyb::arg("rounding") = "half_even",
      "The float golden model (float_contract.hpp) element by element: x patterns (or "
      "integers), s and b fp32 patterns, lo / hi patterns of the output type (or integers)");
  m.def(
      "float_bits",
      [](const pyb::array_t<double, pyb::array::c_style | pyb::array::forcecast>& v,
         const std::string& type) {
        const NumType t = parse_num_type(type);
        if (t == NumType::integer) throw Error("float_bits: '" + type + "' is not a float type");
        pyb::array_t<std::uint32_t> out(v.size());
        for (pyb::ssize_t i = 0; i < v.size(); ++i) {
          out.mutable_data()[i] = double_to_float(v.data()[i], t);
        }
        return out;
      },
      pyb::arg("values"), pyb::arg("type"),
      "Values rounded once to nearest even into fp16 / bf16 / fp32 patterns (double_to_float: "
      "the driver's conversion of float32 host tensors)");
}

}  // namespace

void bind_model(pyb::module_& m) {
  bind_spec(m);
  bind_image(m);
  bind_bn(m);
  bind_fold(m);
  bind_float(m);
}

}  // namespace normcore::py
