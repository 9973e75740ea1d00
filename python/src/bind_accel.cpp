// Bindings of the host driver (runtime/include/normcore/driver.hpp): Accelerator, Params, Buffer
// (buffer protocol, zero copy) and Run (submit's handle). Host tensors are numpy arrays passed
// to the driver as views without copies; the GIL is released while the driver works.
#include <pybind11/chrono.h>
#include <pybind11/stl.h>

#include <memory>

#include "common.hpp"

namespace normcore::py {

namespace {

using QuantArg = std::optional<std::pair<double, std::int64_t>>;

// The Python Accelerator: the driver plus nothing else (runs keep it alive through `owner`).
struct PyAccel {
  std::unique_ptr<Accelerator> acc;
  Accelerator& get() {
    if (!acc) throw Error("Accelerator: closed");
    return *acc;
  }
};

// A queued run: the driver's handle, the arrays it reads and writes (kept alive until it has
// finished) and the accelerator (for the register snapshot of a failure).
struct PyRun {
  Run run;
  pyb::object input, output, owner;
  std::shared_ptr<PyAccel> acc;
  PyRun() = default;
  PyRun(const PyRun&) = delete;
  PyRun& operator=(const PyRun&) = delete;
  ~PyRun() {
    // The driver may still be writing the output array: wait before letting go of it.
    if (run.valid()) {
      pyb::gil_scoped_release nogil;
      run.wait(std::chrono::hours(24 * 365));
    }
  }
  void get() {
    try {
      pyb::gil_scoped_release nogil;
      run.get();
    } catch (const DeviceError& e) {
      raise_device_error(e, acc && acc->acc ? acc->acc.get() : nullptr);
    }
  }
};

JobShape job_shape(std::uint64_t n, std::uint64_t c, std::uint64_t hw, const std::string& layout) {
  JobShape s;
  s.n = n;
  s.c = c;
  s.hw = hw;
  s.layout = parse_layout(layout);
  return s;
}

RunOptions run_options(const QuantArg& in_q, const QuantArg& out_q) {
  RunOptions o;
  if (in_q) o.in_quant = Quant{in_q->first, in_q->second};
  if (out_q) o.out_quant = Quant{out_q->first, out_q->second};
  return o;
}

void check_contiguous(const pyb::array& a, const char* what) {
  if ((a.flags() & pyb::array::c_style) == 0) {
    throw Error(std::string(what) + ": the array must be C-contiguous (np.ascontiguousarray)");
  }
}

pyb::dict stats_dict(const RunStats& s) {
  pyb::dict d;
  d["elements"] = s.elements;
  d["tiles"] = s.tiles;
  d["mmio_reads"] = s.mmio_reads;
  d["mmio_writes"] = s.mmio_writes;
  d["host_seconds"] = s.host_seconds;
  d["device_seconds"] = s.device_seconds;
  return d;
}

pyb::dict info_dict(const Accelerator& a) {
  const DeviceInfo& i = a.info();
  pyb::dict d;
  d["lanes"] = i.lanes;
  d["in_bits"] = i.in_bits;
  const ArithSpec spec = a.manifest().config.arith();
  d["in_type"] = std::string(to_string(spec.x_type));   // "int", "fp16", "bf16"
  d["out_type"] = std::string(to_string(spec.y_type));  // "int", "fp16", "bf16", "fp32"
  d["flush_subnormals"] = spec.flush_subnormals;
  d["out_bits"] = i.out_bits;
  d["in_signed"] = i.in_signed;
  d["out_signed"] = i.out_signed;
  d["max_channels"] = i.max_channels;
  d["bus_bytes"] = i.bus_bytes;
  d["scale_bits"] = i.scale_bits;
  d["offset_bits"] = i.offset_bits;
  d["inner_bits"] = i.inner_bits;
  d["fixed_shift"] = i.fixed_shift;
  d["c_multiple_of_lanes"] = i.c_multiple_of_lanes;
  d["layouts"] = i.layouts;
  d["generator_version"] = i.generator_version;
  d["manifest"] = a.manifest().source;
  d["top"] = a.manifest().top;
  return d;
}

std::shared_ptr<PyRun> submit_host(const std::shared_ptr<PyAccel>& self, const Params& params,
                                   const pyb::array& x, const pyb::array& y, std::uint64_t n,
                                   std::uint64_t c, std::uint64_t hw, const std::string& layout,
                                   const QuantArg& in_q, const QuantArg& out_q,
                                   const std::string& in_as, const std::string& out_as) {
  check_contiguous(x, "input");
  check_contiguous(y, "output");
  if (!y.writeable()) throw Error("output: the array is read-only");
  const TensorView in{dtype_of_array(x, "input", in_as), x.data(),
                      static_cast<std::size_t>(x.size())};
  const MutableTensorView out{dtype_of_array(y, "output", out_as), const_cast<void*>(y.data()),
                              static_cast<std::size_t>(y.size())};
  auto r = std::make_shared<PyRun>();
  r->input = x;
  r->output = y;
  r->acc = self;
  try {
    r->run =
        self->get().submit(params, in, out, job_shape(n, c, hw, layout), run_options(in_q, out_q));
  } catch (const DeviceError& e) {
    // A check before anything ran (shape, dtypes, channels): the caller's input.
    PyErr_SetString(exceptions().error, e.what());
    throw pyb::error_already_set();
  }
  return r;
}

std::shared_ptr<PyRun> submit_buffers(const std::shared_ptr<PyAccel>& self, const Params& params,
                                      const Buffer& x, const Buffer& y, std::uint64_t n,
                                      std::uint64_t c, std::uint64_t hw,
                                      const std::string& layout) {
  auto r = std::make_shared<PyRun>();
  r->input = pyb::cast(x);
  r->output = pyb::cast(y);
  r->acc = self;
  try {
    r->run = self->get().submit(params, x, y, job_shape(n, c, hw, layout));
  } catch (const DeviceError& e) {
    PyErr_SetString(exceptions().error, e.what());
    throw pyb::error_already_set();
  }
  return r;
}

void bind_run(pyb::module_& m) {
  pyb::class_<PyRun, std::shared_ptr<PyRun>>(m, "Run", "Handle of a submitted job")
      .def(
          "wait",
          [](PyRun& r, std::optional<double> timeout) {
            pyb::gil_scoped_release nogil;
            const auto ms =
                timeout ? static_cast<std::int64_t>(*timeout * 1000.0) : std::int64_t{1} << 40;
            return r.run.wait(std::chrono::milliseconds(ms));
          },
          pyb::arg("timeout") = pyb::none(),
          "True once finished (completed or failed); False if `timeout` seconds passed first")
      .def("get", &PyRun::get, "Waits; raises the job's DeviceError if it failed")
      .def_property_readonly("state",
                             [](const PyRun& r) { return std::string(to_string(r.run.state())); })
      .def_property_readonly("error", [](const PyRun& r) { return r.run.error(); })
      .def_property_readonly("stats", [](const PyRun& r) { return stats_dict(r.run.stats()); })
      .def_readonly("output", &PyRun::output);
}

void bind_handles(pyb::module_& m) {
  pyb::class_<Params>(m, "Params", "Folded parameters resident on a device (Accelerator.upload)")
      .def_property_readonly("channels", &Params::channels)
      .def_property_readonly("image", &Params::image);
  pyb::class_<Buffer>(m, "Buffer", pyb::buffer_protocol(),
                      "A device buffer (zero copy): numpy.frombuffer(buf, dtype) maps it")
      .def_buffer([](Buffer& b) {
        const auto s = b.map();
        return pyb::buffer_info(s.data(), 1, pyb::format_descriptor<std::uint8_t>::format(), 1,
                                {static_cast<pyb::ssize_t>(s.size())}, {pyb::ssize_t{1}}, false);
      })
      .def_property_readonly("size", &Buffer::size)
      .def_property_readonly("device_address", &Buffer::device_address)
      .def("__len__", &Buffer::size);
}

void bind_accelerator(pyb::module_& m) {
  pyb::class_<PyAccel, std::shared_ptr<PyAccel>>(m, "Accelerator", "The host driver of a device")
      .def_static(
          "open",
          [](const std::string& device, double job_timeout, bool use_irq,
             std::optional<std::uint64_t> max_tile) {
            DriverOptions o;
            o.job_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(job_timeout * 1e3));
            o.use_irq = use_irq;
            if (max_tile) o.max_tile_elements = *max_tile;
            auto a = std::make_shared<PyAccel>();
            pyb::gil_scoped_release nogil;
            a->acc = std::make_unique<Accelerator>(Accelerator::open(device, o));
            return a;
          },
          pyb::arg("device"), pyb::arg("job_timeout") = 30.0, pyb::arg("use_irq") = true,
          pyb::arg("max_tile_elements") = pyb::none())
      .def_property_readonly("info", [](PyAccel& a) { return info_dict(a.get()); })
      .def_property_readonly("spec", [](PyAccel& a) { return a.get().manifest().config.arith(); })
      .def("describe", [](PyAccel& a) { return a.get().info().describe(); })
      .def(
          "upload", [](PyAccel& a, const ParamImage& image) { return a.get().upload(image); },
          pyb::arg("image"))
      .def(
          "alloc", [](PyAccel& a, std::size_t bytes) { return a.get().alloc(bytes); },
          pyb::arg("nbytes"))
      .def("submit_host", &submit_host, pyb::arg("params"), pyb::arg("x"), pyb::arg("y"),
           pyb::arg("n"), pyb::arg("c"), pyb::arg("hw"), pyb::arg("layout") = "nchw",
           pyb::arg("in_quant") = pyb::none(), pyb::arg("out_quant") = pyb::none(),
           pyb::arg("in_as") = "", pyb::arg("out_as") = "")
      .def("submit_buffers", &submit_buffers, pyb::arg("params"), pyb::arg("x"), pyb::arg("y"),
           pyb::arg("n"), pyb::arg("c"), pyb::arg("hw"), pyb::arg("layout") = "nchw")
      .def("read_register",
           [](PyAccel& a, const std::string& name) {
             Accelerator& acc = a.get();
             return acc.device().read32(acc.manifest().offset(name));
           })
      .def("stats",
           [](PyAccel& a) {
             const DriverStats s = a.get().stats();
             pyb::dict d;
             d["runs"] = s.runs;
             d["failed_runs"] = s.failed_runs;
             d["tiles"] = s.tiles;
             d["timeouts"] = s.timeouts;
             d["soft_resets"] = s.soft_resets;
             return d;
           })
      .def("close", [](PyAccel& a) {
        pyb::gil_scoped_release nogil;
        a.acc.reset();
      });
}

}  // namespace

void bind_accel(pyb::module_& m) {
  bind_run(m);
  bind_handles(m);
  bind_accelerator(m);
}

}  // namespace normcore::py
