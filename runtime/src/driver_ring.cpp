// The driver's side of the descriptor ring (a --ring device; the format is the register
// reference's "Descriptor ring" note): a ring of 2^kRingLog2 descriptors in one DMA buffer,
// jobs written as descriptors in ring-sized chunks, one RING_HEAD write per chunk, the wait for
// the drain (IRQ_STATUS.ring or polling RING_TAIL), a failed descriptor skipped, and each job's
// status read back from its descriptor.
#include <algorithm>
#include <cstring>

#include "detail/driver_regs.hpp"
#include "normcore/util/hex.hpp"

namespace normcore::detail {

namespace {

constexpr std::size_t kDescBytes = 64;
constexpr std::uint32_t kIndexMask = 0xFFFF;  // RING_HEAD / RING_TAIL: 16-bit free-running

void put_le(std::span<std::uint8_t> b, std::size_t at, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    b[at + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v >> (8 * i));
}

std::uint64_t get_le(std::span<const std::uint8_t> b, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | b[at + static_cast<std::size_t>(i)];
  return v;
}

}  // namespace

std::uint32_t JobEngine::ring_ctrl_value() const {
  return regs_.ring_enable->put(0, 1);  // coalesce 0: IRQ_STATUS.ring when the ring drains
}

void JobEngine::ring_setup() {
  const bool irq = use_irq_ && dev_.has_irq();
  if (irq) {
    set(regs_.ctrl, regs_.en_ring->put(regs_.en_err->put(regs_.en_done->put(0, 1), 1), 1));
  }
  if (ring_) return;
  ring_ = dev_.alloc(kDescBytes << kRingLog2, 4096);
  std::fill(ring_->map().begin(), ring_->map().end(), std::uint8_t{0});
  // Disabled while it is set up, so that nothing left from an earlier user runs meanwhile.
  dev_.write32(regs_.ring_ctrl, 0);
  shadow_[regs_.ring_ctrl] = 0;
  const std::uint64_t a = ring_->device_address();
  set(regs_.ring_base_lo, static_cast<std::uint32_t>(a));
  set(regs_.ring_base_hi, static_cast<std::uint32_t>(a >> 32));
  set(regs_.ring_size, kRingLog2);
  // Start where the device is: HEAD = TAIL, and leave a stopped state (soft reset) behind.
  head_ = dev_.read32(regs_.ring_tail) & kIndexMask;
  set(regs_.ring_head, head_);
  set(regs_.ring_ctrl, ring_ctrl_value());
  if (regs_.ring_stopped->get(dev_.read32(regs_.ring_status)) != 0) {
    dev_.write32(regs_.ring_ctrl, regs_.ring_resume->put(ring_ctrl_value(), 1));
  }
}

void JobEngine::write_descriptor(std::uint32_t index, const DevJob& j) {
  const std::size_t slot = index & ((1u << kRingLog2) - 1);
  auto b = ring_->map().subspan(slot * kDescBytes, kDescBytes);
  const std::uint64_t ymask = mask_bits(dev_.manifest().config.out_bits);
  std::uint32_t mode = regs_.layout->put(0, j.layout == Layout::nhwc ? 1 : 0);
  mode = regs_.rounding->put(mode, static_cast<std::uint32_t>(j.settings.rounding));
  mode = regs_.shift->put(mode, static_cast<std::uint32_t>(j.settings.shift));
  put_le(b, 0, j.src, 8);
  put_le(b, 8, j.dst, 8);
  put_le(b, 16, j.param, 8);
  put_le(b, 24, j.channels, 4);
  put_le(b, 28, j.inner, 4);
  put_le(b, 32, j.outer, 4);
  put_le(b, 36, mode, 4);
  put_le(b, 40, static_cast<std::uint64_t>(j.settings.lo) & ymask, 4);
  put_le(b, 44, static_cast<std::uint64_t>(j.settings.hi) & ymask, 4);
  std::fill(b.begin() + 48, b.end(), std::uint8_t{0});  // the status the device writes back
}

// The failure of the descriptor at `index`: its written-back status, or (a descriptor that could
// not be read or written back has none) ERR_CODE / ERR_ADDR.
std::string JobEngine::descriptor_error(const DevJob& j, std::uint32_t index) {
  const std::size_t at = (index & ((1u << kRingLog2) - 1)) * kDescBytes;
  ring_->sync_from_device(at, kDescBytes);
  const auto b = ring_->map();
  const std::uint64_t st = get_le(b, at + 48, 4);
  std::uint32_t code = static_cast<std::uint32_t>(st >> 8) & 0xFFu;
  std::uint64_t addr = get_le(b, at + 56, 8);
  if ((st & 2) == 0) {
    code = dev_.read32(regs_.err_code) & 0xFFu;
    addr = dev_.read32(regs_.err_lo) | static_cast<std::uint64_t>(dev_.read32(regs_.err_hi)) << 32;
  }
  return dev_.name() +
         ": device job failed: " + dev_.manifest().error_name(static_cast<int>(code)) +
         " (ERR_CODE=" + std::to_string(code) + ", ERR_ADDR=" + hex(addr) + ", ring descriptor " +
         std::to_string(index) + ") for " + describe(j);
}

void JobEngine::ring_recover() {
  check_idle_ = true;
  (void)soft_reset();  // TAIL = 0 and the ring stopped
  head_ = 0;
  set(regs_.ring_head, 0);
  dev_.write32(regs_.ring_ctrl, regs_.ring_resume->put(ring_ctrl_value(), 1));
}

void JobEngine::ring_chunk(std::span<const DevJob> jobs, std::size_t from, std::size_t n,
                           std::span<RunStats* const> stats,
                           std::vector<std::exception_ptr>& errors) {
  const std::uint32_t first = head_;
  for (std::size_t i = 0; i < n; ++i) {
    write_descriptor(first + static_cast<std::uint32_t>(i), jobs[from + i]);
  }
  ring_->sync_to_device(0, ring_->size());
  head_ = (first + static_cast<std::uint32_t>(n)) & kIndexMask;
  set(regs_.ring_head, head_);
  const bool irq = use_irq_ && dev_.has_irq();
  const auto t0 = Clock::now();
  auto deadline = t0 + job_timeout_;
  std::uint32_t seen = first;
  std::size_t timed_out = n;  // index of the descriptor that timed out (n: none)
  for (;;) {
    if (irq) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
      (void)dev_.wait_irq(std::max(left, std::chrono::milliseconds(0)));
    }
    const std::uint32_t tail = dev_.read32(regs_.ring_tail) & kIndexMask;
    if (tail == head_) break;
    if (tail != seen) {
      seen = tail;
      deadline = Clock::now() + job_timeout_;  // progress: each descriptor gets job_timeout
    }
    if (regs_.ring_stopped->get(dev_.read32(regs_.ring_status)) != 0) {
      const std::size_t i = (tail - first) & kIndexMask;
      errors[from + i] =
          std::make_exception_ptr(DeviceError(descriptor_error(jobs[from + i], tail)));
      clear_irq();
      dev_.write32(regs_.ring_ctrl, regs_.ring_skip->put(ring_ctrl_value(), 1));
      continue;
    }
    if (Clock::now() >= deadline) {
      ++counters_.timeouts;
      timed_out = (tail - first) & kIndexMask;
      errors[from + timed_out] = std::make_exception_ptr(DeviceError(
          dev_.name() + ": job timed out after " + std::to_string(job_timeout_.count()) +
          " ms on the descriptor ring (" + describe(jobs[from + timed_out]) + ", ring descriptor " +
          std::to_string(tail) + "); soft reset done"));
      break;
    }
    if (!irq) (void)dev_.wait_irq(std::chrono::milliseconds(1));
  }
  clear_irq();
  const std::size_t ran = std::min(n, timed_out);  // descriptors that ran (or failed)
  const double waited =
      seconds(Clock::now() - t0) / static_cast<double>(std::max<std::size_t>(ran, 1));
  ring_->sync_from_device(0, ring_->size());
  const auto b = ring_->map();
  for (std::size_t i = 0; i < ran; ++i) {
    const std::size_t at = ((first + i) & ((1u << kRingLog2) - 1)) * kDescBytes;
    if (!errors[from + i] && (get_le(b, at + 48, 4) & 1) == 0) {
      errors[from + i] = std::make_exception_ptr(DeviceError(
          dev_.name() + ": ring descriptor " + std::to_string((first + i) & kIndexMask) +
          " passed without its done status for " + describe(jobs[from + i])));
    }
    stats[from + i]->device_seconds += waited;
    if (!errors[from + i]) ++stats[from + i]->tiles;
  }
  if (timed_out < n) {
    stats[from + timed_out]->device_seconds += seconds(Clock::now() - t0);
    ring_recover();  // then the descriptors after the hung one run again on the clean ring
    if (timed_out + 1 < n) ring_chunk(jobs, from + timed_out + 1, n - timed_out - 1, stats, errors);
  }
}

void JobEngine::execute_all(std::span<const DevJob> jobs, std::span<RunStats* const> stats,
                            std::vector<std::exception_ptr>& errors) {
  errors.assign(jobs.size(), nullptr);
  if (!regs_.has_ring) {
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      try {
        execute(jobs[i], *stats[i]);
      } catch (const DeviceError&) {
        errors[i] = std::current_exception();
      }
    }
    return;
  }
  ensure_idle();
  ring_setup();
  const std::size_t slots = std::size_t{1} << kRingLog2;
  for (std::size_t from = 0; from < jobs.size(); from += slots) {
    ring_chunk(jobs, from, std::min(slots, jobs.size() - from), stats, errors);
  }
}

}  // namespace normcore::detail
