// The Accelerator facade: opening and identifying the device, uploading parameters, allocating
// buffers, checking and queueing runs; and the Params and Buffer handles. The work itself is in
// driver_regs.cpp (registers), driver_queue.cpp (worker), driver_tiling.cpp (device jobs) and
// driver_convert.cpp (element conversion).
#include "normcore/driver.hpp"

#include <algorithm>
#include <cmath>

#include "detail/driver_convert.hpp"
#include "detail/driver_core.hpp"
#include "detail/driver_tiling.hpp"
#include "detail/driver_util.hpp"

namespace normcore {

using detail::ceil_div;
using detail::mask_bits;

namespace {

__extension__ typedef unsigned __int128 u128;

DmaBuffer& buffer_of(const std::shared_ptr<detail::BufferImpl>& b) {
  if (!b) throw DeviceError("Buffer: empty buffer handle");
  return *b->buf;
}

}  // namespace

const ParamImage& Params::image() const {
  if (!impl_) throw DeviceError("Params: empty parameter handle");
  return impl_->image;
}

std::span<std::uint8_t> Buffer::map() {
  return buffer_of(impl_).map();
}
std::size_t Buffer::size() const {
  return buffer_of(impl_).size();
}
std::uint64_t Buffer::device_address() const {
  return buffer_of(impl_).device_address();
}

Accelerator Accelerator::open(std::string_view device_string, DriverOptions options) {
  return Accelerator(open_device(device_string), std::move(options));
}

Accelerator::Accelerator(std::unique_ptr<Device> device, DriverOptions options) {
  if (!device) throw DeviceError("Accelerator: no device");
  if (options.max_tile_elements == 0) throw DeviceError("DriverOptions: max_tile_elements is 0");
  core_ = std::make_shared<detail::DriverCore>(std::move(device), std::move(options));
  core_->info = detail::read_info(*core_->dev);
  core_->engine.clear_irq();  // leave no stale interrupt from before we opened it
  if (core_->engine.has_ring()) {
    // Every queued run at once: their tiles go to the descriptor ring together.
    core_->queue.start_batched([k = core_.get()](std::span<detail::RunShared* const> runs,
                                                 std::vector<std::exception_ptr>& errs) {
      detail::run_batch(*k, runs, errs);
    });
  } else {
    core_->queue.start([k = core_.get()](detail::RunShared& r) { detail::run_job(*k, r); });
  }
}

Accelerator::~Accelerator() {
  if (!core_) return;
  core_->queue.stop();
  std::lock_guard lk(core_->dev_mu);
  core_->stage_in.reset();
  core_->stage_out.reset();
}

Accelerator::Accelerator(Accelerator&&) noexcept = default;
Accelerator& Accelerator::operator=(Accelerator&& o) noexcept {
  if (this != &o) {
    Accelerator tmp(std::move(*this));
    core_ = std::move(o.core_);
  }
  return *this;
}

const DeviceInfo& Accelerator::info() const {
  return core_->info;
}
const Manifest& Accelerator::manifest() const {
  return core_->dev->manifest();
}
Device& Accelerator::device() {
  return *core_->dev;
}

DriverStats Accelerator::stats() const {
  DriverStats s = core_->queue.stats();
  std::lock_guard lk(core_->dev_mu);
  s.timeouts = core_->engine.counters().timeouts;
  s.soft_resets = core_->engine.counters().soft_resets;
  s.mmio_reads = core_->dev->counters().reads;
  s.mmio_writes = core_->dev->counters().writes;
  return s;
}

Buffer Accelerator::alloc(std::size_t bytes) {
  auto b = std::make_shared<detail::BufferImpl>();
  b->core = core_;
  std::lock_guard lk(core_->dev_mu);
  b->buf = core_->dev->alloc(bytes, 4096);
  return Buffer(std::move(b));
}

namespace {

// DeviceError unless the image was folded for this device and its settings are supported.
void check_fits(const detail::DriverCore& k, const ParamImage& image) {
  const ArithSpec& d = k.spec;
  const ArithSpec& p = image.spec;
  auto differ = [&](const char* what, long long got, long long want) {
    throw DeviceError("params: " + std::string(what) + " is " + std::to_string(got) +
                      " but device " + k.dev->name() + " takes " + std::to_string(want) +
                      " (fold the layer for this device's configuration)");
  };
  if (p.x_type != d.x_type || p.y_type != d.y_type || p.flush_subnormals != d.flush_subnormals) {
    throw DeviceError("params: element types " + std::string(to_string(p.x_type)) + " -> " +
                      std::string(to_string(p.y_type)) + (p.flush_subnormals ? " (flush)" : "") +
                      " but device " + k.dev->name() + " takes " +
                      std::string(to_string(d.x_type)) + " -> " + std::string(to_string(d.y_type)) +
                      (d.flush_subnormals ? " (flush)" : "") +
                      " (fold the layer for this device's configuration)");
  }
  if (p.xw != d.xw) differ("in_bits", p.xw, d.xw);
  if (p.x_signed != d.x_signed) differ("in_signed", p.x_signed, d.x_signed);
  if (p.sw != d.sw) differ("scale_bits", p.sw, d.sw);
  if (p.bw != d.bw) differ("offset_bits", p.bw, d.bw);
  if (p.yw != d.yw) differ("out_bits", p.yw, d.yw);
  if (p.y_signed != d.y_signed) differ("out_signed", p.y_signed, d.y_signed);
  try {
    check_image(image, "params");
  } catch (const Error& e) {
    throw DeviceError(e.what());
  }
  // A specialised device (CAPS4, manifest fixed_*): R, rounding and C % LANES are known here;
  // the layout is checked at submit (check_job_fits).
  const CoreConfig& core = k.cfg().accel.core;
  const Layout any = core.has_fixed_layout() ? parse_layout(core.fixed_layout) : Layout::nchw;
  if (const auto e = core.check_job(image.job.shift, image.job.rounding, any,
                                    static_cast<long long>(image.scale.size()));
      !e.empty()) {
    throw DeviceError("params: " + e + ": device " + k.dev->name() + " cannot run it");
  }
  if (((k.info.round_modes >> static_cast<unsigned>(image.job.rounding)) & 1U) == 0) {
    throw DeviceError("params: rounding " + std::string(to_string(image.job.rounding)) +
                      " is not supported by device " + k.dev->name());
  }
}

// The table of channels [c0, c0 + channels) in a new device buffer: s | b << sw per entry,
// param_entry_bytes little-endian bytes. Caller holds dev_mu.
detail::ParamGroup write_group(detail::DriverCore& k, const ParamImage& image, std::uint64_t c0,
                               std::uint64_t channels) {
  const ArithSpec& p = image.spec;
  const auto eb = static_cast<std::size_t>(k.info.param_entry_bytes);
  detail::ParamGroup g;
  g.c0 = c0;
  g.channels = channels;
  g.buf = k.dev->alloc(static_cast<std::size_t>(channels) * eb, 4096);
  auto bytes = g.buf->map();
  for (std::uint64_t i = 0; i < channels; ++i) {
    const auto s =
        static_cast<u128>(static_cast<std::uint64_t>(image.scale[c0 + i]) & mask_bits(p.sw));
    const auto b =
        static_cast<u128>(static_cast<std::uint64_t>(image.shift[c0 + i]) & mask_bits(p.bw));
    const u128 e = s | (b << p.sw);
    for (std::size_t j = 0; j < eb; ++j) {
      bytes[static_cast<std::size_t>(i) * eb + j] = static_cast<std::uint8_t>(e >> (8 * j));
    }
  }
  g.buf->sync_to_device(0, static_cast<std::size_t>(channels) * eb);
  return g;
}

}  // namespace

Params Accelerator::upload(const ParamImage& image) {
  check_fits(*core_, image);
  auto prm = std::make_shared<detail::ParamsImpl>();
  prm->image = image;
  prm->core = core_;
  const std::uint64_t c = image.scale.size();
  const auto maxc = static_cast<std::uint64_t>(core_->info.max_channels);
  prm->group_channels = ceil_div(c, ceil_div(c, maxc));
  if (core_->cfg().accel.core.lanes_divide_channels) {
    // Every group a multiple of LANES (C is one, check_fits): balanced groups of whole beats.
    const auto l = static_cast<std::uint64_t>(core_->info.lanes);
    const std::uint64_t beats = c / l, max_beats = maxc / l;
    prm->group_channels = l * ceil_div(beats, ceil_div(beats, max_beats));
  }
  std::lock_guard lk(core_->dev_mu);
  for (std::uint64_t c0 = 0; c0 < c; c0 += prm->group_channels) {
    prm->groups.push_back(write_group(*core_, image, c0, std::min(prm->group_channels, c - c0)));
  }
  return Params(std::move(prm));
}

namespace {

// The run's layout against a device with a fixed layout (R, rounding and C: at upload).
void check_job_fits(const detail::DriverCore& k, const detail::ParamsImpl& p, const JobShape& s) {
  const CoreConfig& core = k.cfg().accel.core;
  if (const auto e = core.check_job(p.image.job.shift, p.image.job.rounding, s.layout,
                                    static_cast<long long>(s.c));
      !e.empty()) {
    throw DeviceError(e + ": device " + k.dev->name() + " cannot run it");
  }
}

void check_shape(const detail::ParamsImpl& p, const JobShape& s) {
  if (s.n == 0 || s.c == 0 || s.hw == 0) {
    throw DeviceError("bad shape N=" + std::to_string(s.n) + " C=" + std::to_string(s.c) +
                      " HW=" + std::to_string(s.hw) + ": every dimension must be >= 1");
  }
  if (s.n > (std::uint64_t{1} << 40) || s.c > (std::uint64_t{1} << 24) ||
      s.hw > (std::uint64_t{1} << 40) || s.n * s.c > (std::uint64_t{1} << 50) ||
      s.elements() / s.n / s.c != s.hw) {
    throw DeviceError("bad shape: N*C*HW is too large");
  }
  if (s.c != p.image.scale.size()) {
    throw DeviceError("bad shape: C=" + std::to_string(s.c) + " but the parameters have " +
                      std::to_string(p.image.scale.size()) + " channels");
  }
}

void check_quant(const std::optional<Quant>& q, const char* what) {
  if (!(q->scale > 0) || !std::isfinite(q->scale)) {
    throw DeviceError(std::string(what) + ".scale must be a positive finite number");
  }
}

// An integer device's host dtypes: float32 with quantisation, integers in range.
void check_int_tensors(const ParamImage& image, const TensorView& input,
                       const MutableTensorView& output, const RunOptions& options) {
  if (input.dtype == DType::float16 || input.dtype == DType::bfloat16 ||
      output.dtype == DType::float16 || output.dtype == DType::bfloat16) {
    throw DeviceError("float16 / bfloat16 tensors need a float device (in_type / out_type)");
  }
  if (input.dtype == DType::float32) {
    if (!options.in_quant) throw DeviceError("float32 input needs in_quant (scale, zero point)");
    check_quant(options.in_quant, "in_quant");
  }
  if (output.dtype == DType::float32) {
    if (!options.out_quant) throw DeviceError("float32 output needs out_quant (scale, zero point)");
    check_quant(options.out_quant, "out_quant");
  } else {
    const auto [lo, hi] = detail::dtype_range(output.dtype);
    if (image.job.lo < lo || image.job.hi > hi) {
      throw DeviceError("output type " + std::string(to_string(output.dtype)) +
                        " cannot hold the results (clamp " + std::to_string(image.job.lo) + ".." +
                        std::to_string(image.job.hi) + ")");
    }
  }
}

bool float_dtype(DType t) {
  return t == DType::float16 || t == DType::bfloat16 || t == DType::float32;
}

// A float device (contract v2): a float side takes float16, bfloat16 or float32 (converted, no
// quantisation); an integer side as on an integer device, without quantisation.
void check_float_tensors(const ParamImage& image, const TensorView& input,
                         const MutableTensorView& output) {
  const ArithSpec& a = image.spec;
  const std::string in_t(to_string(input.dtype)), out_t(to_string(output.dtype));
  if ((a.x_type != NumType::integer) != float_dtype(input.dtype)) {
    throw DeviceError("input type " + in_t + ": the device takes " +
                      (a.x_type != NumType::integer
                           ? std::string(to_string(a.x_type)) + " (float16, bfloat16 or float32)"
                           : std::string("integers")));
  }
  if (a.y_type != NumType::integer && !float_dtype(output.dtype)) {
    throw DeviceError("output type " + out_t + ": the device returns " +
                      std::string(to_string(a.y_type)) + " (float16, bfloat16 or float32)");
  }
  if (a.y_type == NumType::integer) {
    const auto [lo, hi] = detail::dtype_range(output.dtype);
    if (float_dtype(output.dtype) || image.job.lo < lo || image.job.hi > hi) {
      throw DeviceError("output type " + out_t + " cannot hold the results (clamp " +
                        std::to_string(image.job.lo) + ".." + std::to_string(image.job.hi) + ")");
    }
  }
}

// The host tensors of a run: sizes, data, dtypes (with quantisation for float32) and overlap.
void check_tensors(const ParamImage& image, const TensorView& input,
                   const MutableTensorView& output, const JobShape& shape,
                   const RunOptions& options) {
  const std::uint64_t n = shape.elements();
  if (input.count != n) {
    throw DeviceError("input has " + std::to_string(input.count) + " elements, the shape " +
                      std::to_string(shape.n) + "x" + std::to_string(shape.c) + "x" +
                      std::to_string(shape.hw) + " needs " + std::to_string(n));
  }
  if (output.count != n) {
    throw DeviceError("output buffer too small or too large: " + std::to_string(output.count) +
                      " elements, the shape needs " + std::to_string(n));
  }
  if (input.data == nullptr || output.data == nullptr) throw DeviceError("null tensor data");
  if (image.spec.is_float()) {
    check_float_tensors(image, input, output);
  } else {
    check_int_tensors(image, input, output, options);
  }
  const auto* ib = static_cast<const std::uint8_t*>(input.data);
  const auto* ob = static_cast<const std::uint8_t*>(output.data);
  const std::size_t ibytes = input.count * dtype_bytes(input.dtype);
  const std::size_t obytes = output.count * dtype_bytes(output.dtype);
  if (ib < ob + obytes && ob < ib + ibytes) {
    throw DeviceError("input and output tensors overlap (use separate host buffers)");
  }
}

// Zero-copy: the shape must fit the device in one job and the buffers must hold it.
void check_zero_copy(const detail::DriverCore& k, const detail::ParamsImpl& p, const Buffer& in,
                     const Buffer& out, const JobShape& shape) {
  const DeviceConfig& c = k.cfg();
  const std::uint64_t n = shape.elements();
  if (p.groups.size() != 1) {
    throw DeviceError("zero-copy run: C=" + std::to_string(shape.c) + " exceeds the device's " +
                      std::to_string(c.max_channels) + " channels; use host tensors (tiled)");
  }
  if (shape.layout == Layout::nchw && shape.hw > c.max_inner()) {
    throw DeviceError("zero-copy run: HW=" + std::to_string(shape.hw) + " exceeds INNER's " +
                      std::to_string(c.max_inner()) + "; use host tensors (tiled)");
  }
  const std::uint64_t outer = shape.layout == Layout::nchw ? shape.n : shape.n * shape.hw;
  if (outer > c.max_outer()) {
    throw DeviceError("zero-copy run: OUTER=" + std::to_string(outer) +
                      " exceeds 2^32-1; use host tensors (tiled)");
  }
  const std::uint64_t need_in = ceil_div(n * static_cast<std::uint64_t>(c.in_bits), 8);
  const std::uint64_t need_out = ceil_div(n * static_cast<std::uint64_t>(c.out_bits), 8);
  if (in.size() < need_in) {
    throw DeviceError("input buffer too small: " + std::to_string(in.size()) +
                      " bytes, the shape needs " + std::to_string(need_in));
  }
  if (out.size() < need_out) {
    throw DeviceError("output buffer too small: " + std::to_string(out.size()) +
                      " bytes, the shape needs " + std::to_string(need_out));
  }
}

}  // namespace

Run Accelerator::submit(const Params& params, TensorView input, MutableTensorView output,
                        const JobShape& shape, const RunOptions& options) {
  if (!params.valid()) throw DeviceError("submit: no parameters");
  if (params.impl_->core != core_) {
    throw DeviceError("submit: parameters uploaded to another device");
  }
  check_shape(*params.impl_, shape);
  check_job_fits(*core_, *params.impl_, shape);
  check_tensors(params.impl_->image, input, output, shape, options);
  auto r = std::make_shared<detail::RunShared>();
  r->params = params.impl_;
  r->in = input;
  r->out = output;
  r->shape = shape;
  r->opt = options;
  r->stats.elements = shape.elements();
  core_->queue.push(r);
  return Run(r);
}

Run Accelerator::submit(const Params& params, const Buffer& input, const Buffer& output,
                        const JobShape& shape) {
  if (!params.valid()) throw DeviceError("submit: no parameters");
  if (!input.valid() || !output.valid()) throw DeviceError("submit: empty buffer handle");
  if (params.impl_->core != core_ || input.impl_->core != core_ || output.impl_->core != core_) {
    throw DeviceError("submit: parameters or buffers belong to another device");
  }
  check_shape(*params.impl_, shape);
  check_job_fits(*core_, *params.impl_, shape);
  check_zero_copy(*core_, *params.impl_, input, output, shape);
  auto r = std::make_shared<detail::RunShared>();
  r->params = params.impl_;
  r->bin = input.impl_;
  r->bout = output.impl_;
  r->shape = shape;
  r->stats.elements = shape.elements();
  core_->queue.push(r);
  return Run(r);
}

void Accelerator::run(const Params& params, TensorView input, MutableTensorView output,
                      const JobShape& shape, const RunOptions& options) {
  submit(params, input, output, shape, options).get();
}

void Accelerator::run(const Params& params, const Buffer& input, const Buffer& output,
                      const JobShape& shape) {
  submit(params, input, output, shape).get();
}

}  // namespace normcore
