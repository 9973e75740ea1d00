// normcore run / normcore info: drive a device (ref, sim, uio) through the host driver.
// `normcore run --plan DIR` runs every layer of an import plan (normcore import) and checks the
// outputs against the float reference of the recovered batch norm.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "commands.hpp"
#include "normcore/driver.hpp"
#if NORMCORE_WITH_IMPORT
#include "run_plan.hpp"
#endif
#include "normcore/npz.hpp"
#include "normcore/params_file.hpp"

namespace normcore::cli {

namespace {

struct RunCli {
  std::string device, params, input, output, shape, layout = "nchw", out_dtype;
  std::vector<std::string> inputs;  // --input (one file; with --plan: LAYER=FILE, repeatable)
  std::string plan;
  std::int64_t seed = 1;  // signed: CLI11 would wrap "-1" into an unsigned option
  double in_scale = 0, out_scale = 0;
  std::int64_t in_zp = 0, out_zp = 0;
  int timeout_ms = 30000;
  bool progress = false, no_progress = false, quiet = false, in_scale_given = false,
       tile_given = false;
  std::int64_t tile = 0;
};

std::vector<std::uint64_t> parse_shape(const std::string& text) {
  std::vector<std::uint64_t> v;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    std::size_t n = 0;
    unsigned long long x = 0;
    const bool digits = !item.empty() && std::all_of(item.begin(), item.end(), [](char ch) {
      return ch >= '0' && ch <= '9';
    });  // std::stoull alone takes "-4" (and wraps it)
    try {
      if (digits) x = std::stoull(item, &n);
    } catch (const std::exception&) {
      throw Error("--shape '" + text + "': '" + item + "' is too large");
    }
    if (!digits || n != item.size() || x == 0) {
      throw Error("--shape '" + text + "': '" + item + "' is not a positive integer");
    }
    v.push_back(x);
  }
  if (v.size() < 2 || v.size() > 4) {
    throw Error("--shape '" + text +
                "': expected N,C,H,W (nchw) or N,H,W,C (nhwc), 2 to 4 numbers");
  }
  std::uint64_t total = 1;
  for (const auto d : v) {
    if (total > std::numeric_limits<std::uint64_t>::max() / d) {
      throw Error("--shape '" + text + "': the element count N*C*H*W overflows 64 bits");
    }
    total *= d;
  }
  return v;
}

// The host dtype matching an .npy array (float64 is converted to float32).
DType host_dtype(const NpyHeader& a, const std::string& path) {
  const std::string t = a.dtype.size() > 1 ? a.dtype.substr(1) : a.dtype;
  if (t == "i1") return DType::int8;
  if (t == "u1") return DType::uint8;
  if (t == "i2") return DType::int16;
  if (t == "u2") return DType::uint16;
  if (t == "i4") return DType::int32;
  if (t == "f4" || t == "f8") return DType::float32;
  if (t == "f2") return DType::float16;   // numpy float16
  if (t == "V2") return DType::bfloat16;  // ml_dtypes bfloat16 ('<V2' / '|V2')
  throw Error(
      "--input " + path + ": dtype " + a.dtype +
      " is not supported (int8, uint8, int16, uint16, int32, float32, float64, float16 <f2, "
      "bfloat16 <V2)");
}

// The smallest host dtype holding the device's outputs.
DType default_out_dtype(const DeviceConfig& c) {
  const NumType y = c.arith().y_type;
  if (y == NumType::fp16) return DType::float16;
  if (y == NumType::bf16) return DType::bfloat16;
  if (y == NumType::fp32) return DType::float32;
  if (c.out_bits <= 8) return c.out_signed ? DType::int8 : DType::uint8;
  if (c.out_bits <= 16) return c.out_signed ? DType::int16 : DType::uint16;
  return DType::int32;
}

// The input's elements as the driver reads them: the mapped file's data in place when its dtype
// is the host dtype and it is aligned for it; otherwise converted (float64 -> float32) or
// copied (misaligned) once into `storage`.
TensorView input_view(const MappedNpy& x, DType t, std::vector<std::uint64_t>& storage) {
  const NpyHeader& h = x.header();
  const auto bytes = x.data();
  const std::size_t item = dtype_bytes(t);
  if (static_cast<std::size_t>(h.item_size) == item &&
      reinterpret_cast<std::uintptr_t>(bytes.data()) % item == 0) {
    return {t, bytes.data(), h.count};
  }
  storage.assign((h.count * item + 7) / 8, 0);
  if (static_cast<std::size_t>(h.item_size) == item) {
    std::memcpy(storage.data(), bytes.data(), bytes.size());
  } else {  // <f8 -> float32, one pass
    auto* out = reinterpret_cast<float*>(storage.data());
    for (std::size_t i = 0; i < h.count; ++i) {
      double v = 0;
      std::memcpy(&v, bytes.data() + i * 8, 8);
      out[i] = static_cast<float>(v);
    }
  }
  return {t, storage.data(), h.count};
}

int do_run_plan(const RunCli& o);

// --params, --output and one --input are required without --plan; prints the error and returns
// false if one is missing.
bool check_required(RunCli& o) {
  for (const auto& [name, value] :
       {std::pair<const char*, const std::string*>{"--params", &o.params},
        {"--output", &o.output}}) {
    if (value->empty()) {
      std::cerr << "normcore run: error: " << name
                << " is required (or run a plan with --plan DIR)\n";
      return false;
    }
  }
  if (o.inputs.size() != 1) {
    std::cerr << "normcore run: error: "
              << (o.inputs.empty() ? "--input is required" : "give one --input")
              << " (or run a plan with --plan DIR)\n";
    return false;
  }
  o.input = o.inputs[0];
  return true;
}

// N, C, HW from --shape (or the array's own shape) and --layout; Error unless it matches the
// input's element count and the parameters' channels.
JobShape job_shape(const RunCli& o, const NpyHeader& x, const ParamImage& image) {
  JobShape shape;
  shape.layout = parse_layout(o.layout);
  std::vector<std::uint64_t> dims;
  if (!o.shape.empty()) {
    dims = parse_shape(o.shape);
  } else {
    for (auto d : x.shape) dims.push_back(d);
    if (dims.size() < 2 || dims.size() > 4) {
      throw Error("--input " + o.input + ": a " + std::to_string(dims.size()) +
                  "-D array needs --shape N,C,H,W");
    }
  }
  if (shape.layout == Layout::nchw) {
    shape.n = dims[0];
    shape.c = dims[1];
    shape.hw = 1;
    for (std::size_t i = 2; i < dims.size(); ++i) shape.hw *= dims[i];
  } else {
    shape.n = dims[0];
    shape.c = dims.back();
    shape.hw = 1;
    for (std::size_t i = 1; i + 1 < dims.size(); ++i) shape.hw *= dims[i];
  }
  if (shape.elements() != x.count) {
    throw Error("--shape: " + std::to_string(shape.n) + "x" + std::to_string(shape.c) + "x" +
                std::to_string(shape.hw) + " = " + std::to_string(shape.elements()) +
                " elements, but " + o.input + " has " + std::to_string(x.count));
  }
  if (shape.c != image.scale.size()) {
    throw Error("--shape: C = " + std::to_string(shape.c) + " but " + o.params + " has " +
                std::to_string(image.scale.size()) + " channels");
  }
  return shape;
}

// --timeout-ms, --tile and the progress display (--progress, or a large tensor on a terminal).
DriverOptions driver_options(const RunCli& o, std::size_t elements) {
  DriverOptions dopt;
  dopt.job_timeout = std::chrono::milliseconds(o.timeout_ms);
  if (o.tile > 0) dopt.max_tile_elements = static_cast<std::uint64_t>(o.tile);
  const bool show =
      !o.no_progress && (o.progress || (!o.quiet && isatty(2) != 0 && elements >= (1u << 22)));
  if (show) {
    dopt.progress = [](std::uint64_t done, std::uint64_t total) {
      std::fprintf(stderr, "\rnormcore run: %3.0f%% (%llu / %llu elements)",
                   100.0 * static_cast<double>(done) / static_cast<double>(total),
                   static_cast<unsigned long long>(done), static_cast<unsigned long long>(total));
      if (done == total) std::fprintf(stderr, "\n");
    };
  }
  return dopt;
}

// --out-dtype, or the device's smallest, or float32 when a float input has --out-scale.
DType output_dtype(const RunCli& o, const DeviceConfig& c, DType in_t) {
  DType out_t = default_out_dtype(c);
  if (!o.out_dtype.empty()) {
    out_t = parse_dtype(o.out_dtype);
  } else if (in_t == DType::float32 && o.out_scale > 0) {
    out_t = DType::float32;
  }
  return out_t;
}

// Everything a run needs, prepared from the user's input.
struct PreparedRun {
  std::optional<Accelerator> acc;
  Params params;
  std::optional<MappedNpy> x;         // the input file, mapped
  std::vector<std::uint64_t> in_tmp;  // only when the input needs converting (input_view)
  TensorView in;
  std::optional<NpyImage> out;  // the output file's image; the driver writes its data()
  DType out_dtype = DType::int8;
  JobShape shape;
  std::vector<std::size_t> out_shape;
  RunOptions ro;
};

// Reads the files, opens the device and uploads the parameters; throws on bad input.
void prepare(const RunCli& o, PreparedRun& p) {
  const ParamImage image = read_params(o.params);
  const NpyHeader& x = p.x.emplace(MappedNpy::open(o.input)).header();
  const DType in_t = host_dtype(x, o.input);
  const bool in_scale_given = o.in_scale_given;
  p.shape = job_shape(o, x, image);
  p.out_shape = x.shape.empty() ? std::vector<std::size_t>{x.count} : x.shape;
  const bool float_in = image.spec.x_type != NumType::integer;
  const bool float_out = image.spec.y_type != NumType::integer;
  if (float_in && in_scale_given) {
    throw Error("--in-scale: the device's input is " + std::string(to_string(image.spec.x_type)) +
                ": no quantisation");
  }
  if (in_t == DType::float32 && !float_in) {
    if (in_scale_given && !(o.in_scale > 0 && std::isfinite(o.in_scale))) {
      std::ostringstream v;
      v << o.in_scale;
      throw Error("--in-scale: " + v.str() + " must be a finite number > 0");
    }
    if (!in_scale_given)
      throw Error("--input " + o.input + " is float: give --in-scale (and --in-zero-point)");
    p.ro.in_quant = Quant{o.in_scale, o.in_zp};
  }
  Accelerator& acc = p.acc.emplace(Accelerator::open(o.device, driver_options(o, x.count)));
  const DType out_t = output_dtype(o, acc.manifest().config, in_t);
  if (out_t == DType::float32 && !float_out) {
    if (!(o.out_scale > 0 && std::isfinite(o.out_scale)))
      throw Error("--out-dtype float32 needs --out-scale > 0 (and --out-zero-point)");
    p.ro.out_quant = Quant{o.out_scale, o.out_zp};
  }
  p.in = input_view(*p.x, in_t, p.in_tmp);
  p.out.emplace(p.out_shape, to_string(out_t));
  p.out_dtype = out_t;
  p.params = acc.upload(image);
}

void print_summary(const RunCli& o, const JobShape& shape, const RunStats& s) {
  std::fprintf(o.output == "-" ? stderr : stdout,
               "normcore run: %llu elements (%llux%llux%llu %s) on %s in %llu device job(s); "
               "device %.3f s, host %.3f s; %llu register reads, %llu writes; wrote %s\n",
               static_cast<unsigned long long>(s.elements),
               static_cast<unsigned long long>(shape.n), static_cast<unsigned long long>(shape.c),
               static_cast<unsigned long long>(shape.hw),
               std::string(to_string(shape.layout)).c_str(), o.device.c_str(),
               static_cast<unsigned long long>(s.tiles), s.device_seconds, s.host_seconds,
               static_cast<unsigned long long>(s.mmio_reads),
               static_cast<unsigned long long>(s.mmio_writes), o.output.c_str());
}

// The exit code of an error after the submit: 2 when it is the user's input (a value of the
// input tensor the device cannot take, an output path that cannot be written), else 1.
int run_failure(const std::exception& e) {
  std::cerr << "normcore run: error: " << e.what() << "\n";
  const bool input = dynamic_cast<const InputValueError*>(&e) != nullptr ||
                     (dynamic_cast<const Error*>(&e) != nullptr &&
                      dynamic_cast<const DeviceError*>(&e) == nullptr);
  return input ? kExitBadInput : kExitFailure;
}

int do_run(RunCli o) {
  if (o.timeout_ms <= 0) {
    std::cerr << "normcore run: error: --timeout: " << o.timeout_ms
              << " must be > 0 (milliseconds)\n";
    return kExitBadInput;
  }
  if (o.tile < 0 || (o.tile_given && o.tile == 0)) {
    std::cerr << "normcore run: error: --tile: " << o.tile << " must be > 0 (elements)\n";
    return kExitBadInput;
  }
  if (o.seed < 0) {
    std::cerr << "normcore run: error: --seed: " << o.seed << " must be >= 0\n";
    return kExitBadInput;
  }
  if (!o.plan.empty()) return do_run_plan(o);
  if (!check_required(o)) return kExitBadInput;
  // Everything up to the submit is the user's input: errors exit 2.
  PreparedRun p;
  Run r;
  try {
    prepare(o, p);
    r = p.acc->submit(p.params, p.in,
                      MutableTensorView{p.out_dtype, p.out->data().data(), p.in.count}, p.shape,
                      p.ro);
  } catch (const std::exception& e) {
    std::cerr << "normcore run: error: " << e.what() << "\n";
    return kExitBadInput;
  }
  try {
    r.get();
  } catch (const std::exception& e) {
    return run_failure(e);
  }
  try {
    write_file_atomic(o.output, p.out->bytes());  // header + elements: one write
  } catch (const std::exception& e) {
    std::cerr << "normcore run: error: --output: " << e.what() << "\n";
    return kExitBadInput;
  }
  if (!o.quiet) print_summary(o, p.shape, r.stats());
  return kExitOk;
}

// --plan: every layer of an import plan, with the given inputs or deterministic random ones,
// against the float reference of the recovered BN.
#if NORMCORE_WITH_IMPORT
int do_run_plan(const RunCli& o) {
  PlanRunOptions p;
  p.plan = o.plan;
  p.device = o.device;
  p.inputs = o.inputs;
  p.seed = static_cast<std::uint64_t>(o.seed);
  p.timeout_ms = o.timeout_ms;
  p.tile = static_cast<std::uint64_t>(o.tile);
  p.quiet = o.quiet;
  return run_plan(p);  // run_plan.cpp
}

#else
int do_run_plan(const RunCli&) {
  std::cerr << "normcore run: error: --plan: this normcore was built without model import "
               "(NORMCORE_IMPORT=OFF)\n";
  return kExitBadInput;
}
#endif

}  // namespace

Action add_run(CLI::App& app) {
  auto o = std::make_shared<RunCli>();
  auto* sub = app.add_subcommand("run", "Run a BN job on a device (ref, sim, tlm or uio)");
  sub->add_option(
         "--device", o->device,
         "Device string: ref:<manifest.json> | sim:<manifest.json>[,latency=N,stall=P,"
         "trace=f.vcd] | tlm:<manifest.json>[,latency=N] | uio:<uioN>,manifest=<m>,dma=<udmabufN>")
      ->required();
  auto* params = sub->add_option("--params", o->params, "Folded parameter image (normcore fold)");
  sub->add_option("--input", o->inputs,
                  ".npy input (int8, uint8, int16, uint16, int32, float32; float devices: "
                  "float16, bfloat16); with --plan: LAYER=FILE (repeatable; integer .npy, or "
                  "float for a float plan; other layers get random inputs)")
      ->allow_extra_args(false);
  auto* output = sub->add_option(
      "--output", o->output,
      ".npy output (a file is replaced atomically; - is standard output, the summary then goes "
      "to stderr)");
  auto* shape = sub->add_option(
      "--shape", o->shape, "N,C,H,W (nchw) or N,H,W,C (nhwc); default: the input array's shape");
  auto* layout = sub->add_option("--layout", o->layout, "nchw | nhwc")->capture_default_str();
  auto* in_scale =
      sub->add_option("--in-scale", o->in_scale, "Quantisation scale of a float32 input");
  auto* in_zp =
      sub->add_option("--in-zero-point", o->in_zp, "Quantisation zero point of a float32 input");
  auto* out_scale = sub->add_option("--out-scale", o->out_scale,
                                    "Dequantise the output with this scale (float32)");
  auto* out_zp =
      sub->add_option("--out-zero-point", o->out_zp, "Zero point for dequantising the output");
  auto* out_dtype =
      sub->add_option("--out-dtype", o->out_dtype,
                      "Output element type (default: the device's output type, or float32 with "
                      "--out-scale and a float input)");
  auto* plan =
      sub->add_option("--plan", o->plan,
                      "Run every layer of an import plan (normcore import) and compare with "
                      "the float reference of the recovered BN; exit 1 if a layer's error "
                      "exceeds the fold's bound");
  sub->add_option("--seed", o->seed, "Seed of the random inputs of --plan")->capture_default_str();
  for (auto* opt : {params, output, shape, layout, in_scale, in_zp, out_scale, out_zp, out_dtype}) {
    plan->excludes(opt);
  }
  sub->add_option("--timeout", o->timeout_ms, "Per device job time-out in ms")
      ->capture_default_str();
  auto* tile = sub->add_option("--tile", o->tile, "Largest device job in elements (default 16 Mi)");
  sub->add_flag("--progress", o->progress,
                "Print progress to stderr, also inside long device jobs (default: on a terminal, "
                "for 4 Mi elements and more)");
  sub->add_flag("--no-progress", o->no_progress, "No progress, even on a terminal");
  sub->add_flag("-q,--quiet", o->quiet, "No summary line");
  return [o, in_scale, tile] {
    o->in_scale_given = in_scale->count() > 0;
    o->tile_given = tile->count() > 0;
    return do_run(*o);
  };
}

Action add_info(CLI::App& app) {
  auto dev = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("info", "Print a device's ID, version and capabilities");
  sub->add_option("--device", *dev, "Device string (see normcore run --help)")->required();
  return [dev] {
    try {
      auto acc = Accelerator::open(*dev);
      std::cout << "device: " << *dev << "\nmanifest: " << acc.manifest().source << " (top "
                << acc.manifest().top << ")\n"
                << acc.info().describe();
      return kExitOk;
    } catch (const std::exception& e) {
      std::cerr << "normcore info: error: " << e.what() << "\n";
      return kExitBadInput;
    }
  };
}

}  // namespace normcore::cli
