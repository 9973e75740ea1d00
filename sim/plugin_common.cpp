// The device plugins' shared part (plugin_common.hpp) and their exported C ABI
// (runtime/src/sim_loader.cpp documents it).
#include "plugin_common.hpp"

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <utility>

#include "normcore/util/hex.hpp"

#define NC_PLUGIN_EXPORT __attribute__((visibility("default")))

namespace normcore::plugin {
namespace {

class ShadowBuffer final : public DmaBuffer {
 public:
  ShadowBuffer(std::weak_ptr<BufferRegion> region, std::string device, std::uint64_t addr,
               std::size_t bytes)
      : region_(std::move(region)), device_(std::move(device)), addr_(addr), shadow_(bytes, 0) {}
  ~ShadowBuffer() override {
    if (auto r = region_.lock()) r->release(addr_);
  }
  ShadowBuffer(const ShadowBuffer&) = delete;
  ShadowBuffer& operator=(const ShadowBuffer&) = delete;

  [[nodiscard]] std::uint64_t device_address() const override { return addr_; }
  [[nodiscard]] std::size_t size() const override { return shadow_.size(); }
  [[nodiscard]] std::span<std::uint8_t> map() override { return shadow_; }

  void sync_to_device(std::size_t offset, std::size_t length) override {
    checked(offset, length, "sync_to_device")
        ->write(addr_ + offset, std::span<const std::uint8_t>(shadow_).subspan(offset, length));
  }
  void sync_from_device(std::size_t offset, std::size_t length) override {
    checked(offset, length, "sync_from_device")
        ->read(addr_ + offset, std::span<std::uint8_t>(shadow_).subspan(offset, length));
  }

 private:
  std::shared_ptr<BufferRegion> checked(std::size_t offset, std::size_t length,
                                        const char* what) const {
    if (offset > shadow_.size() || length > shadow_.size() - offset) {
      throw DeviceError(device_ + ": " + what + "(" + std::to_string(offset) + ", " +
                        std::to_string(length) + ") is outside the " +
                        std::to_string(shadow_.size()) + "-byte buffer at " + hex(addr_));
    }
    auto r = region_.lock();
    if (!r || !r->is_open()) {
      throw DeviceError(device_ + ": " + what + " on a buffer whose device was closed");
    }
    return r;
  }

  std::weak_ptr<BufferRegion> region_;
  std::string device_;
  std::uint64_t addr_;
  std::vector<std::uint8_t> shadow_;
};

std::optional<std::uint32_t> find_offset(const Manifest& m, const char* name) {
  for (const auto& r : m.registers) {
    if (r.name == name) return r.offset;
  }
  return std::nullopt;
}

const std::string& built_config() {
  static const std::string canonical = nlohmann::json::parse(kPlugin.config_json).dump();
  return canonical;
}

}  // namespace

std::uint64_t region_size(std::uint64_t mem, int addr_bits) {
  if (addr_bits < 64) return std::min(mem, (std::uint64_t{1} << addr_bits) - kRegionBase);
  return mem;
}

void BufferRegion::release(std::uint64_t addr) {
  const auto it = live_.find(addr);
  if (it == live_.end()) return;
  if (counters != nullptr) counters->buffer_bytes -= it->second;
  live_.erase(it);
  alloc_.release(addr);
  on_buffers_changed();
}

std::unique_ptr<DmaBuffer> alloc_buffer(const std::shared_ptr<BufferRegion>& region,
                                        const std::string& device, std::size_t bytes,
                                        std::size_t align) {
  if (bytes == 0) throw DeviceError(device + ": alloc of 0 bytes");
  if (align == 0 || (align & (align - 1)) != 0) {
    throw DeviceError(device + ": alloc alignment " + std::to_string(align) +
                      " is not a power of two");
  }
  BufferRegion& r = *region;
  const std::uint64_t a = std::max<std::uint64_t>(align, r.bus_bytes_);
  std::optional<std::uint64_t> at;
  if (bytes <= r.alloc_.size()) at = r.alloc_.allocate(r.round_up(bytes), a);
  if (!at) {
    throw DeviceError(device + ": out of device memory: " + std::to_string(bytes) +
                      " bytes (alignment " + std::to_string(a) + ") requested, " +
                      std::to_string(r.alloc_.in_use()) + " of " + std::to_string(r.alloc_.size()) +
                      " bytes in use (option mem=)");
  }
  auto buf = std::make_unique<ShadowBuffer>(region, device, *at, bytes);
  r.live_[*at] = bytes;
  r.on_buffers_changed();
  if (r.counters != nullptr) {
    ++r.counters->buffers;
    r.counters->buffer_bytes += bytes;
  }
  return buf;
}

PluginDevice::PluginDevice(const DeviceSpec& spec, const Manifest& manifest,
                           detail::FaultOptions faults)
    : Device(spec.text, manifest),
      faults_(faults),
      ctrl_(manifest.offset("CTRL")),
      status_(manifest.offset("STATUS")),
      start_(manifest.field("CTRL", "start")),
      soft_reset_(manifest.field("CTRL", "soft_reset")),
      busy_(manifest.field("STATUS", "busy")) {
  if (!faults_.any()) return;
  rules_.emplace(this->manifest());
  shadow_.assign(manifest.window_bytes() / 4, 0);
  for (const auto& r : manifest.registers) shadow_.at(r.offset / 4) = r.reset;
  if (!find_offset(manifest, "RING_BASE_LO")) return;
  has_ring_ = true;
  ring_ctrl_ = manifest.offset("RING_CTRL");
  ring_base_lo_ = manifest.field("RING_BASE_LO", "addr");
  ring_base_hi_ = manifest.field("RING_BASE_HI", "value");
  ring_size_ = manifest.field("RING_SIZE", "log2_entries");
  ring_head_ = manifest.field("RING_HEAD", "index");
  ring_enable_ = manifest.field("RING_CTRL", "enable");
  ring_resume_ = manifest.field("RING_CTRL", "resume");
  ring_skip_ = manifest.field("RING_CTRL", "skip");
  ring_stopped_ =
      manifest.field("RING_STATUS", "stopped").get(manifest.reg("RING_STATUS").reset) != 0;
}

void PluginDevice::do_write32(std::uint32_t offset, std::uint32_t value) {
  if (offset == ctrl_) before_ctrl_write(value);
  if (has_ring_ && offset == ring_ctrl_) ring_control(value);
  write_register(offset, value);
  if (!faults_.any()) return;
  shadow_.at(offset / 4) = value;
  if (has_ring_) ring_plan();
}

std::uint64_t PluginDevice::win_base() const {
  return rules_->win_base([this](std::uint32_t o) { return reg(o); });
}
std::uint64_t PluginDevice::win_last() const {
  return rules_->win_last([this](std::uint32_t o) { return reg(o); });
}

bool PluginDevice::count_job(std::uint64_t src, std::uint64_t dst, bool ring) {
  ++jobs_;
  JobFaults f;
  f.fail = jobs_ == faults_.fail_job;
  f.fail_write = faults_.fail_write;
  f.addr = faults_.fail_write ? dst : src;
  const bool hang = jobs_ == faults_.hang_job;
  if (hang && ring) f.hang_read = src;
  f.hang = hang && !ring;
  if (f.fail || hang || armed_) arm(f);
  armed_ = f.fail || hang;
  return armed_;
}

// Watches CTRL writes. A soft reset ends a hang (and wins over a START in the same write) and
// resets the ring mirror as the device resets the ring; a START accepted while idle whose job
// passes validation is counted (its faults armed, the previous job's cleared).
void PluginDevice::before_ctrl_write(std::uint32_t value) {
  if (!faults_.any()) return;
  if (soft_reset_.get(value) != 0) {
    end_hang();
    armed_ = false;
    ring_pos_ = 0;
    ring_stopped_ = true;
    return;
  }
  if (start_.get(value) == 0) return;
  const auto st = peek_register(status_);
  if (!st || busy_.get(*st) != 0) return;  // START ignored while busy
  const detail::JobRegs j = rules_->sized(
      rules_->from_registers([this](std::uint32_t o) { return reg(o); }), win_base(), win_last());
  if (rules_->check(j) == 0) {
    (void)count_job(j.src, j.dst, false);
  } else if (armed_) {
    arm(JobFaults{});
    armed_ = false;
  }
}

// RING_CTRL.resume / skip act on a stopped, idle ring: the mirror takes TAIL from the device
// then (so a stop it did not predict, e.g. a bus error put into the memory model, is followed).
void PluginDevice::ring_control(std::uint32_t value) {
  if (!faults_.any() || (ring_resume_.get(value) == 0 && ring_skip_.get(value) == 0)) return;
  const Manifest& m = manifest();
  const auto st = peek_register(status_);
  const auto rs = peek_register(m.offset("RING_STATUS"));
  const auto tail = peek_register(m.offset("RING_TAIL"));
  if (!st || !rs || !tail || busy_.get(*st) != 0 ||
      m.field("RING_STATUS", "stopped").get(*rs) == 0) {
    return;
  }
  const std::uint32_t index = m.field("RING_TAIL", "index").get(*tail);
  ring_pos_ = (index + (ring_skip_.get(value) != 0 ? 1U : 0U)) & ring_head_.get(0xFFFFFFFFu);
  ring_stopped_ = false;
}

// The descriptors the ring runs from the mirror's position to HEAD, in order, as ref_ring.cpp
// runs them: each one that passes validation is counted; one that fails it, or meets a fault,
// stops the ring (a hang: until soft reset).
void PluginDevice::ring_plan() {
  const Manifest& m = manifest();
  auto field_of = [&](const char* r, const FieldDesc& f) -> std::uint64_t {
    return f.get(reg(m.offset(r)));
  };
  while (!ring_stopped_ && field_of("RING_CTRL", ring_enable_) != 0 &&
         ring_pos_ != field_of("RING_HEAD", ring_head_)) {
    const std::uint64_t base = field_of("RING_BASE_LO", ring_base_lo_) << ring_base_lo_.lsb |
                               field_of("RING_BASE_HI", ring_base_hi_) << 32;
    const std::uint64_t slots = std::uint64_t{1} << field_of("RING_SIZE", ring_size_);
    std::array<std::uint8_t, 64> d{};
    read_memory(base + (ring_pos_ & (slots - 1)) * 64, d);
    const detail::JobRegs j =
        rules_->sized(rules_->from_descriptor(d.data()), win_base(), win_last());
    if (rules_->check(j) != 0) {
      ring_stopped_ = true;
      return;
    }
    if (count_job(j.src, j.dst, true)) {
      ring_stopped_ = true;
      return;
    }
    ring_pos_ = (ring_pos_ + 1) & ring_head_.get(0xFFFFFFFFu);
  }
}

}  // namespace normcore::plugin

extern "C" {

NC_PLUGIN_EXPORT int normcore_sim_abi() {
  return normcore::plugin::kAbi;
}

NC_PLUGIN_EXPORT const char* normcore_sim_config() {
  try {
    return normcore::plugin::built_config().c_str();
  } catch (...) {
    return nullptr;
  }
}

NC_PLUGIN_EXPORT normcore::Device* normcore_sim_open(const normcore::DeviceSpec& spec,
                                                     const normcore::Manifest& manifest,
                                                     std::string* error) {
  using namespace normcore;
  const plugin::PluginInfo& info = plugin::kPlugin;
  try {
    const auto want = nlohmann::json::parse(manifest.config_json);
    if (want.dump() != plugin::built_config()) {
      throw DeviceError("device '" + spec.text + "': manifest mismatch: " + manifest.source +
                        " describes config " + manifest.config_json +
                        " but the plugin was built for " + plugin::built_config() + " (from " +
                        info.manifest + ")");
    }
    return info.open(spec, manifest).release();
  } catch (const std::exception& e) {
    if (error != nullptr) *error = e.what();
  } catch (...) {
    if (error != nullptr) {
      *error = "device '" + spec.text + "': unknown error in the " + info.kind + " plugin";
    }
  }
  return nullptr;
}

}  // extern "C"
