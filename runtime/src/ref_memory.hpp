// The ref device's memory: the live DMA buffers, nothing else (ref_device.cpp describes the
// rules: reads are whole bus words inside one buffer, writes bytes inside a buffer's requested
// size). Shared by the device and its buffers, which may outlive it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "addr_alloc.hpp"

namespace normcore::detail::ref {

__extension__ using u128 = unsigned __int128;

inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

struct Block {
  std::uint64_t addr = 0;
  std::uint64_t size = 0;  // requested bytes (writable)
  std::uint64_t span = 0;  // size rounded up to bus words (readable)
  std::uint8_t* data = nullptr;
};

class RefDevice;

struct Memory {
  Memory(std::uint64_t base, std::uint64_t size) : alloc(base, size) {}
  std::mutex mu;
  AddressAllocator alloc;
  std::map<std::uint64_t, Block> live;  // by address
  RefDevice* owner = nullptr;           // null once the device is gone

  // The live block containing byte `addr`, readable (span) or writable (size) extent.
  const Block* find(std::uint64_t addr, bool for_write) const {
    auto it = live.upper_bound(addr);
    if (it == live.begin()) return nullptr;
    --it;
    const Block& b = it->second;
    return addr - b.addr < (for_write ? b.size : b.span) ? &b : nullptr;
  }
  // First bus word of `words` words from the bus-aligned `addr` that is not inside one live
  // buffer (words never straddle buffers: blocks are bus-aligned whole words).
  std::optional<std::uint64_t> first_bad_read(std::uint64_t addr, u128 words,
                                              std::uint64_t bus) const {
    const u128 end = static_cast<u128>(addr) + words * bus;
    u128 cur = addr;
    while (cur < end) {
      const Block* b = find(static_cast<std::uint64_t>(cur), false);
      if (b == nullptr) return static_cast<std::uint64_t>(cur);
      cur = static_cast<u128>(b->addr) + b->span;
    }
    return std::nullopt;
  }
  // First byte of [addr, addr + bytes) outside every live buffer's requested size.
  std::optional<std::uint64_t> first_bad_write(std::uint64_t addr, u128 bytes) const {
    const u128 end = static_cast<u128>(addr) + bytes;
    u128 cur = addr;
    while (cur < end) {
      const Block* b = find(static_cast<std::uint64_t>(cur), true);
      if (b == nullptr) return static_cast<std::uint64_t>(cur);
      cur = static_cast<u128>(b->addr) + b->size;
    }
    return std::nullopt;
  }
  // Host pointer to [addr, addr + bytes) if it lies inside one buffer, else nullptr.
  std::uint8_t* contiguous(std::uint64_t addr, std::uint64_t bytes, bool for_write) const {
    const Block* b = find(addr, for_write);
    if (b == nullptr) return nullptr;
    const std::uint64_t off = addr - b->addr;
    return bytes <= (for_write ? b->size : b->span) - off ? b->data + off : nullptr;
  }
  // Copies between device memory and host memory; the range must have been checked.
  void read(std::uint64_t addr, std::uint8_t* dst, std::uint64_t bytes) const {
    while (bytes > 0) {
      const Block* b = find(addr, false);
      const std::uint64_t off = addr - b->addr;
      const std::uint64_t n = std::min(bytes, b->span - off);
      std::memcpy(dst, b->data + off, static_cast<std::size_t>(n));
      addr += n;
      dst += n;
      bytes -= n;
    }
  }
  void write(std::uint64_t addr, const std::uint8_t* src, std::uint64_t bytes) const {
    while (bytes > 0) {
      const Block* b = find(addr, true);
      const std::uint64_t off = addr - b->addr;
      const std::uint64_t n = std::min(bytes, b->size - off);
      std::memcpy(b->data + off, src, static_cast<std::size_t>(n));
      addr += n;
      src += n;
      bytes -= n;
    }
  }
};

}  // namespace normcore::detail::ref
