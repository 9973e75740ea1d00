// The state behind an Accelerator and behind the Params and Buffer handles.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "driver_queue.hpp"
#include "driver_regs.hpp"
#include "normcore/driver.hpp"

namespace normcore::detail {

struct DriverCore {
  std::unique_ptr<Device> dev;
  DriverOptions opt;
  DeviceInfo info;
  ArithSpec spec;
  std::mutex dev_mu;                               // every device access
  JobEngine engine;                                // under dev_mu
  std::unique_ptr<DmaBuffer> stage_in, stage_out;  // under dev_mu; grow-only staging buffers
  JobQueue queue;

  DriverCore(std::unique_ptr<Device> d, DriverOptions o)
      : dev(std::move(d)),
        opt(std::move(o)),
        spec(dev->manifest().config.arith()),
        engine(*dev, opt) {}

  [[nodiscard]] const DeviceConfig& cfg() const { return dev->manifest().config; }
};

// One channel group's table on the device.
struct ParamGroup {
  std::uint64_t c0 = 0, channels = 0;
  std::unique_ptr<DmaBuffer> buf;
};

struct ParamsImpl {
  ParamImage image;
  std::shared_ptr<DriverCore> core;
  std::vector<ParamGroup> groups;  // channel groups of <= MAX_CHANNELS
  std::uint64_t group_channels = 0;

  ParamsImpl() = default;
  ParamsImpl(const ParamsImpl&) = delete;
  ParamsImpl& operator=(const ParamsImpl&) = delete;
  ~ParamsImpl() {
    if (core) {
      std::lock_guard lk(core->dev_mu);
      groups.clear();
    }
  }
};

struct BufferImpl {
  std::shared_ptr<DriverCore> core;
  std::unique_ptr<DmaBuffer> buf;

  BufferImpl() = default;
  BufferImpl(const BufferImpl&) = delete;
  BufferImpl& operator=(const BufferImpl&) = delete;
  ~BufferImpl() {
    if (core && buf) {
      std::lock_guard lk(core->dev_mu);
      buf.reset();
    }
  }
};

}  // namespace normcore::detail
