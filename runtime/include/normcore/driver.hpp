// The host driver API: what an application uses to run batch norm on a normcore device.
//
//   auto acc = normcore::Accelerator::open("ref:build/devices/normcore/rtl/manifest.json");
//   normcore::Params params = acc.upload(normcore::read_params("layer.params.bin"));  // s, b, R
//   const normcore::JobShape shape{.n = 1, .c = 64, .hw = 56 * 56};
//   std::vector<std::int8_t> x(shape.elements()), y(x.size());
//   acc.run(params, normcore::view(x), normcore::view(y), shape);               // blocking
//   normcore::Run r = acc.submit(params, normcore::view(x), normcore::view(y), shape);  // queued
//   if (r.wait(std::chrono::seconds(1))) r.get();  // get() rethrows the job's DeviceError
//   normcore::Buffer in = acc.alloc(x.size()), out = acc.alloc(y.size());  // zero-copy
//   std::memcpy(in.map().data(), x.data(), x.size());
//   acc.run(params, in, out, shape);  // out.map() holds y
//
// Params, Buffer and Run are handles in XRT's manner: cheap to copy or move, every copy refers
// to the same parameters, buffer or job, and what they refer to lives while a copy does (a
// queued run keeps its parameters and buffers alive). A default-constructed handle is empty.
//
// Host tensors (int8/uint8/int16/uint16/int32, or float32 with quantisation parameters) are
// copied into device buffers tile by tile: tensors beyond the device's limits (channels above
// MAX_CHANNELS, HW beyond the INNER register, very large tensors) are split into several device
// jobs invisibly. Device buffers (alloc()) run without copies when the job fits the device.
// Jobs run in submission order on one worker thread; every method is thread-safe. A job that
// does not finish within DriverOptions::job_timeout soft-resets the device and fails. Device
// errors become DeviceError with the register values in the message.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "normcore/bn_params.hpp"  // Quant
#include "normcore/contract.hpp"
#include "normcore/device.hpp"
#include "normcore/params_file.hpp"  // ParamImage

namespace normcore {

// float16 / bfloat16: IEEE binary16 / bfloat16 bit patterns (2 bytes each) for the float
// devices of contract v2; a float device also takes float32 host tensors (converted in the
// driver, one rounding to nearest even) and no quantisation.
enum class DType : std::uint8_t { int8, uint8, int16, uint16, int32, float32, float16, bfloat16 };
std::string_view to_string(DType t);
DType parse_dtype(std::string_view text);  // "int8" ... "bfloat16"; DeviceError otherwise
std::size_t dtype_bytes(DType t);

// A host tensor: `count` elements of `dtype` at `data`, C order. The memory must stay valid
// (and, for outputs, untouched) until the run that uses it has finished.
struct MutableTensorView {
  DType dtype = DType::int8;
  void* data = nullptr;
  std::size_t count = 0;
};
struct TensorView {
  DType dtype = DType::int8;
  const void* data = nullptr;
  std::size_t count = 0;
  TensorView() = default;
  TensorView(DType t, const void* d, std::size_t n) : dtype(t), data(d), count(n) {}
  TensorView(const MutableTensorView& m)  // NOLINT: a mutable view is also a view
      : dtype(m.dtype), data(m.data), count(m.count) {}
};

template <typename T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<std::int8_t>() {
  return DType::int8;
}
template <>
constexpr DType dtype_of<std::uint8_t>() {
  return DType::uint8;
}
template <>
constexpr DType dtype_of<std::int16_t>() {
  return DType::int16;
}
template <>
constexpr DType dtype_of<std::uint16_t>() {
  return DType::uint16;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::int32;
}
template <>
constexpr DType dtype_of<float>() {
  return DType::float32;
}
template <typename T>
TensorView view(std::span<const T> s) {
  return {dtype_of<T>(), s.data(), s.size()};
}
template <typename T>
TensorView view(const std::vector<T>& v) {
  return view(std::span<const T>(v));
}
template <typename T>
MutableTensorView view(std::span<T> s) {
  return {dtype_of<T>(), s.data(), s.size()};
}
template <typename T>
MutableTensorView view(std::vector<T>& v) {
  return view(std::span<T>(v));
}

// N x C x HW elements in `layout` (nchw: [N][C][HW], nhwc: [N][HW][C]).
struct JobShape {
  std::uint64_t n = 1, c = 1, hw = 1;
  Layout layout = Layout::nchw;
  [[nodiscard]] std::uint64_t elements() const { return n * c * hw; }
};

struct RunOptions {
  std::optional<Quant> in_quant;   // required for a float32 input: q = clamp(round(x/scale)+zp)
  std::optional<Quant> out_quant;  // required for a float32 output: y = scale * (q - zp)
};

// ID, VERSION and CAPS as read from the device, decoded with the manifest's field positions.
struct DeviceInfo {
  std::uint32_t id = 0, version = 0, caps[5] = {0, 0, 0, 0, 0};
  int contract = 0;
  std::string generator_version;  // "major.minor.patch"
  int lanes = 0, in_bits = 0, out_bits = 0;
  bool in_signed = false, out_signed = false;
  unsigned round_modes = 0;  // bit per Rounding value
  unsigned layouts = 3;      // bit per Layout value (CAPS4; both when the device has no CAPS4)
  bool c_multiple_of_lanes = false;  // CHANNELS must be a multiple of lanes
  int fixed_shift = -1;              // the one R the device runs, -1: any
  int max_channels = 0, bus_bytes = 0, addr_bits = 0, outstanding = 0, max_burst = 0;
  int scale_bits = 0, offset_bits = 0, inner_bits = 0, param_entry_bytes = 0;
  [[nodiscard]] std::string describe() const;  // multi-line, for `normcore info`
};

struct RunStats {
  std::uint64_t elements = 0;
  std::uint64_t tiles = 0;  // device jobs
  std::uint64_t mmio_reads = 0, mmio_writes = 0;
  double host_seconds = 0;    // staging, conversion, register programming
  double device_seconds = 0;  // waiting for the device (wait_irq)
};

enum class RunState : std::uint8_t { queued, running, completed, failed };
std::string_view to_string(RunState s);

namespace detail {
struct RunShared;
struct DriverCore;
struct ParamsImpl;
struct BufferImpl;
}  // namespace detail

// Handle of a submitted job (copyable; all copies refer to the same job).
class Run {
 public:
  Run() = default;
  // True once the run has finished (completed or failed); false if `timeout` passed first.
  bool wait(std::chrono::milliseconds timeout) const;
  // Waits until finished; rethrows the job's error (DeviceError) if it failed.
  void get() const;
  [[nodiscard]] RunState state() const;
  [[nodiscard]] std::string error() const;  // empty unless failed
  [[nodiscard]] RunStats stats() const;     // final once finished
  [[nodiscard]] bool valid() const { return s_ != nullptr; }

 private:
  friend class Accelerator;
  explicit Run(std::shared_ptr<detail::RunShared> s) : s_(std::move(s)) {}
  std::shared_ptr<detail::RunShared> s_;
};

// Handle of folded parameters resident on the device (one table per channel group), from
// Accelerator::upload(). Immutable; copies share the device tables, freed with the last copy.
class Params {
 public:
  Params() = default;  // empty: valid() is false, image() and channels() throw DeviceError
  [[nodiscard]] const ParamImage& image() const;
  [[nodiscard]] std::size_t channels() const { return image().scale.size(); }
  [[nodiscard]] bool valid() const { return impl_ != nullptr; }

 private:
  friend class Accelerator;
  explicit Params(std::shared_ptr<const detail::ParamsImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const detail::ParamsImpl> impl_;
};

// Handle of a device buffer for zero-copy runs (XRT's bo), from Accelerator::alloc(): fill map()
// with packed elements (in_bits each, LSB first), submit, then read map() after the run (the
// driver syncs both ways). Copies share the buffer, freed with the last copy.
class Buffer {
 public:
  Buffer() = default;  // empty: valid() is false, the accessors throw DeviceError
  [[nodiscard]] std::span<std::uint8_t> map();
  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] std::uint64_t device_address() const;
  [[nodiscard]] bool valid() const { return impl_ != nullptr; }

 private:
  friend class Accelerator;
  explicit Buffer(std::shared_ptr<detail::BufferImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::BufferImpl> impl_;
};

struct DriverOptions {
  std::chrono::milliseconds job_timeout{30000};   // per device job (tile)
  std::chrono::milliseconds reset_timeout{2000};  // for the engine to go idle after soft reset
  std::uint64_t max_tile_elements = std::uint64_t{1} << 24;  // staging buffer size per tile
  bool use_irq = true;  // false: poll STATUS instead of waiting for the interrupt
  // Host threads for staging (gathering and converting host tensors into the device buffers,
  // and back); 0: NORMCORE_THREADS, else the machine's. Results are identical for any count.
  unsigned threads = 0;
  // Called on the worker thread after every tile: (elements done, elements total) of the run;
  // and while a device job runs, every progress_interval, from the device's element counter
  // (PERF_ELEMS, cleared by START), so that one large job does not show a single 100%.
  std::function<void(std::uint64_t, std::uint64_t)> progress;
  std::chrono::milliseconds progress_interval{250};
};

struct DriverStats {
  std::uint64_t runs = 0, failed_runs = 0, tiles = 0, timeouts = 0, soft_resets = 0;
  std::uint64_t mmio_reads = 0, mmio_writes = 0;  // device totals since open
};

class Accelerator {
 public:
  // Opens the device (open_device) and checks ID, VERSION and CAPS against its manifest:
  // DeviceError naming the register, both values and the decoded fields on a mismatch.
  static Accelerator open(std::string_view device_string, DriverOptions options = {});
  explicit Accelerator(std::unique_ptr<Device> device, DriverOptions options = {});
  ~Accelerator();  // finishes every queued run, then stops the worker
  Accelerator(Accelerator&&) noexcept;
  Accelerator& operator=(Accelerator&&) noexcept;

  [[nodiscard]] const DeviceInfo& info() const;
  [[nodiscard]] const Manifest& manifest() const;
  [[nodiscard]] DriverStats stats() const;

  // Checks the image against the device (widths equal to the device's, settings supported)
  // and copies its table to the device. DeviceError naming the mismatch.
  Params upload(const ParamImage& image);

  // Queues a job on host tensors. Checks synchronously (DeviceError): element counts equal to
  // shape.elements(), shape non-zero, channels equal to the params', dtypes able to hold the
  // device's input/output ranges (or float32 with quantisation), in/out not overlapping.
  Run submit(const Params& params, TensorView input, MutableTensorView output,
             const JobShape& shape, const RunOptions& options = {});
  // Queues a zero-copy job on device buffers (no tiling: the shape must fit the device).
  Run submit(const Params& params, const Buffer& input, const Buffer& output,
             const JobShape& shape);
  // submit(...).get()
  void run(const Params& params, TensorView input, MutableTensorView output, const JobShape& shape,
           const RunOptions& options = {});
  void run(const Params& params, const Buffer& input, const Buffer& output, const JobShape& shape);

  Buffer alloc(std::size_t bytes);

  // The device itself, for diagnostics and tests. Only touch it while no run is in progress.
  Device& device();

 private:
  std::shared_ptr<detail::DriverCore> core_;
};

}  // namespace normcore
