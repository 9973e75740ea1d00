// The ref device's descriptor ring (a manifest generated with --ring; the format and the rules
// are the register reference's "Descriptor ring" note, docs/architecture.md "Descriptor ring").
// Descriptors run synchronously inside the register write that makes them runnable (RING_HEAD,
// RING_CTRL, or any write once the engine is idle), one after the other while RING_CTRL.enable
// is set, the ring is not stopped, no job runs and RING_TAIL != RING_HEAD.
#include <array>

#include "ref_device.hpp"

namespace normcore::detail::ref {

namespace {

constexpr std::uint64_t kDescBytes = 64;
constexpr std::uint64_t kStatusOffset = 48;  // bytes 48..63: STATUS, ELEMS, ERR_ADDR
constexpr std::uint32_t kFlagIrq = 1u << 16, kFlagSameParams = 1u << 17;

std::uint64_t le(const std::uint8_t* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

void put_le(std::uint8_t* p, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

void RefDevice::resolve_ring_fields() {
  ring_base_lo_ = field("RING_BASE_LO", "addr", false);
  if (!ring_base_lo_) return;
  has_ring_ = true;
  ring_base_hi_ = field("RING_BASE_HI", "value");
  ring_size_ = field("RING_SIZE", "log2_entries");
  ring_head_ = field("RING_HEAD", "index");
  ring_tail_ = field("RING_TAIL", "index");
  ring_enable_ = field("RING_CTRL", "enable");
  ring_resume_ = field("RING_CTRL", "resume");
  ring_skip_ = field("RING_CTRL", "skip");
  ring_coalesce_ = field("RING_CTRL", "coalesce");
  ring_active_ = field("RING_STATUS", "active");
  ring_stopped_ = field("RING_STATUS", "stopped");
  en_ring_ = field("CTRL", "irq_en_ring");
  irq_ring_ = field("IRQ_STATUS", "ring");
}

void RefDevice::ring_control(std::uint32_t pulses) {
  if (get(ring_stopped_) == 0 || busy()) return;  // only a stopped, idle ring takes them
  if ((pulses & ring_skip_.desc->mask()) != 0) {
    set(ring_tail_, (get(ring_tail_) + 1) & ring_tail_.desc->mask() >> ring_tail_.desc->lsb);
    set(ring_stopped_, 0);
  } else if ((pulses & ring_resume_.desc->mask()) != 0) {
    set(ring_stopped_, 0);
  }
}

void RefDevice::ring_soft_reset() {
  set(ring_active_, 0);
  set(ring_tail_, 0);
  set(ring_stopped_, 1);
  ring_done_ = 0;
}

void RefDevice::ring_run() {
  while (get(ring_enable_) != 0 && get(ring_stopped_) == 0 && !busy() &&
         get(ring_tail_) != get(ring_head_)) {
    ring_step();
  }
}

// Stops the ring at TAIL with an error: ERR_CODE, ERR_ADDR, STATUS.error, IRQ_STATUS.error.
void RefDevice::ring_stop(int code, std::uint64_t addr) {
  set(ring_active_, 0);
  set(ring_stopped_, 1);
  finish(false, code, addr);
}

void RefDevice::ring_step() {
  const DeviceConfig& cfg = manifest().config;
  const std::uint64_t bus = static_cast<std::uint64_t>(cfg.bus_bytes());
  const std::uint64_t tail = get(ring_tail_);
  const std::uint64_t slots = std::uint64_t{1} << get(ring_size_);
  const std::uint64_t base = get(ring_base_lo_) << ring_base_lo_.desc->lsb | get(ring_base_hi_)
                                                                                 << 32;
  const std::uint64_t at = base + (tail & (slots - 1)) * kDescBytes;
  clear_for_start();
  set(ring_active_, 1);
  std::array<std::uint8_t, kDescBytes> d{};
  {
    std::lock_guard lock(mem_->mu);
    if (auto bad = mem_->first_bad_read(at, ceil_div(kDescBytes, bus), bus)) {
      set_perf(0, 0);
      ring_stop(code_read_, *bad);  // no status: the descriptor is not readable
      return;
    }
    mem_->read(at, d.data(), kDescBytes);
  }
  const auto flags = static_cast<std::uint32_t>(le(d.data() + 36, 4));
  (void)kFlagSameParams;  // a hint: the ref model reloads nothing it could not reuse anyway
  const Outcome o = run_checked(sized(rules_->from_descriptor(d.data())));
  if (o.hang) {
    set(busy_, 1);  // until CTRL.soft_reset (ring_soft_reset)
    return;
  }
  std::array<std::uint8_t, 16> st{};
  put_le(st.data(), (o.ok ? 1u : 2u) | static_cast<std::uint32_t>(o.code) << 8, 4);
  put_le(st.data() + 4, o.elems & 0xFFFFFFFFu, 4);
  put_le(st.data() + 8, o.addr, 8);
  {
    std::lock_guard lock(mem_->mu);
    if (auto bad = mem_->first_bad_write(at + kStatusOffset, st.size())) {
      ring_stop(code_write_, *bad);
      return;
    }
    mem_->write(at + kStatusOffset, st.data(), st.size());
  }
  if (!o.ok) {
    ring_stop(o.code, o.addr);
    return;
  }
  set(busy_, 0);
  set(done_, 1);
  set(ring_active_, 0);
  const std::uint64_t next = (tail + 1) & (ring_tail_.desc->mask() >> ring_tail_.desc->lsb);
  set(ring_tail_, next);
  ++ring_done_;
  const std::uint64_t every = get(ring_coalesce_);
  if ((flags & kFlagIrq) != 0 || (every != 0 && ring_done_ >= every) || next == get(ring_head_)) {
    set(irq_ring_, 1);
    ring_done_ = 0;
  }
}

}  // namespace normcore::detail::ref
