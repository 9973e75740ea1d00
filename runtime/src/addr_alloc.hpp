// First-fit allocator of a device address range, shared by the backends that carve DMA buffers
// out of one region (ref and sim: a synthetic device address space; uio: the u-dma-buf region).
// Not thread-safe (devices are used by one thread at a time).
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <optional>

namespace normcore::detail {

class AddressAllocator {
 public:
  AddressAllocator(std::uint64_t base, std::uint64_t size) : base_(base), size_(size) {
    if (size > 0) free_[base] = size;
  }

  // First-fit block of `bytes` (> 0) at a multiple of `align` (a power of two), or nullopt.
  std::optional<std::uint64_t> allocate(std::uint64_t bytes, std::uint64_t align) {
    if (bytes == 0 || align == 0 || (align & (align - 1)) != 0) return std::nullopt;
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      const std::uint64_t start = it->first, len = it->second;
      const std::uint64_t at = (start + align - 1) & ~(align - 1);
      if (at < start || at - start > len || len - (at - start) < bytes) continue;
      const std::uint64_t head = at - start, tail = len - head - bytes;
      free_.erase(it);
      if (head > 0) free_[start] = head;
      if (tail > 0) free_[at + bytes] = tail;
      used_[at] = bytes;
      in_use_ += bytes;
      return at;
    }
    return std::nullopt;
  }

  // Frees a block returned by allocate(); false if `addr` is not the start of a live block.
  bool release(std::uint64_t addr) {
    const auto u = used_.find(addr);
    if (u == used_.end()) return false;
    std::uint64_t start = addr, len = u->second;
    in_use_ -= len;
    used_.erase(u);
    auto next = free_.lower_bound(start);
    if (next != free_.end() && next->first == start + len) {
      len += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == start) {
        start = prev->first;
        len += prev->second;
        free_.erase(prev);
      }
    }
    free_[start] = len;
    return true;
  }

  // The live block containing [addr, addr + bytes), as (start, size), if any.
  std::optional<std::pair<std::uint64_t, std::uint64_t>> block_of(std::uint64_t addr,
                                                                  std::uint64_t bytes) const {
    auto it = used_.upper_bound(addr);
    if (it == used_.begin()) return std::nullopt;
    --it;
    if (addr - it->first >= it->second || bytes > it->second - (addr - it->first)) {
      return std::nullopt;
    }
    return std::make_pair(it->first, it->second);
  }

  [[nodiscard]] std::uint64_t base() const { return base_; }
  [[nodiscard]] std::uint64_t size() const { return size_; }
  [[nodiscard]] std::uint64_t in_use() const { return in_use_; }
  [[nodiscard]] std::size_t live_blocks() const { return used_.size(); }

 private:
  std::uint64_t base_, size_;
  std::uint64_t in_use_ = 0;
  std::map<std::uint64_t, std::uint64_t> free_;  // start -> length
  std::map<std::uint64_t, std::uint64_t> used_;  // start -> length
};

}  // namespace normcore::detail
