// Bit packing, as the manifest's tensor_packing and param_entry describe it and as the RTL's
// ports and gearboxes lay elements out: LSB first. Bit k of a stream of words is bit k % W of
// word k / W (W = 8 for bytes in memory, 32 for a Verilated wide port's words); a value of
// `width` bits at bit `lsb` occupies stream bits lsb .. lsb + width - 1, its bit 0 first.
// Header-only (the co-simulation harnesses are built by Verilator's make flow); every width is
// 0..64 bits, `lsb` any bit of the stream.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

namespace normcore::bits {

// The low `width` bits set (width 0..64).
constexpr std::uint64_t mask(int width) {
  return width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
}

// The low `width` bits of v (two's complement for negative values).
constexpr std::uint64_t truncate(std::int64_t v, int width) {
  return static_cast<std::uint64_t>(v) & mask(width);
}

// A width-bit two's complement field as a signed value (width 1..64).
constexpr std::int64_t sign_extend(std::uint64_t v, int width) {
  const int sh = 64 - width;
  return static_cast<std::int64_t>(v << sh) >> sh;
}

// A width-bit field as signed (sign-extended) or unsigned.
constexpr std::int64_t to_int(std::uint64_t v, int width, bool is_signed) {
  return is_signed && width > 0 ? sign_extend(v, width)
                                : static_cast<std::int64_t>(v & mask(width));
}

namespace detail {

template <class Word>
std::uint64_t get(std::span<const Word> words, std::uint64_t lsb, int width) {
  static_assert(std::is_unsigned_v<Word>);
  constexpr int kW = std::numeric_limits<Word>::digits;
  std::uint64_t v = 0;
  for (int done = 0; done < width;) {
    const std::uint64_t bit = lsb + static_cast<std::uint64_t>(done);
    const int off = static_cast<int>(bit % kW);
    const int n = std::min(kW - off, width - done);
    const auto w = static_cast<std::uint64_t>(words[static_cast<std::size_t>(bit / kW)]);
    v |= ((w >> off) & mask(n)) << done;
    done += n;
  }
  return v;
}

template <class Word>
void put(std::span<Word> words, std::uint64_t lsb, int width, std::uint64_t value) {
  static_assert(std::is_unsigned_v<Word>);
  constexpr int kW = std::numeric_limits<Word>::digits;
  for (int done = 0; done < width;) {
    const std::uint64_t bit = lsb + static_cast<std::uint64_t>(done);
    const int off = static_cast<int>(bit % kW);
    const int n = std::min(kW - off, width - done);
    Word& w = words[static_cast<std::size_t>(bit / kW)];
    const std::uint64_t m = mask(n) << off;
    const std::uint64_t part = ((value >> done) & mask(n)) << off;
    w = static_cast<Word>((static_cast<std::uint64_t>(w) & ~m) | part);
    done += n;
  }
}

}  // namespace detail

// The width-bit value at stream bit lsb (the words must hold it).
inline std::uint64_t get(std::span<const std::uint8_t> bytes, std::uint64_t lsb, int width) {
  return detail::get(bytes, lsb, width);
}
inline std::uint64_t get(std::span<const std::uint32_t> words, std::uint64_t lsb, int width) {
  return detail::get(words, lsb, width);
}
// Replaces the width bits at stream bit lsb with the low width bits of value; the other bits keep
// their values.
inline void put(std::span<std::uint8_t> bytes, std::uint64_t lsb, int width, std::uint64_t value) {
  detail::put(bytes, lsb, width, value);
}
inline void put(std::span<std::uint32_t> words, std::uint64_t lsb, int width, std::uint64_t value) {
  detail::put(words, lsb, width, value);
}

// Little-endian unsigned integer of `bytes` bytes (0..8) at byte `at`.
inline std::uint64_t load_le(std::span<const std::uint8_t> in, std::size_t at, int bytes) {
  return get(in, std::uint64_t{8} * at, 8 * bytes);
}
inline void store_le(std::span<std::uint8_t> out, std::size_t at, std::uint64_t v, int bytes) {
  put(out, std::uint64_t{8} * at, 8 * bytes, v);
}

// Bytes needed for `bits` bits.
constexpr std::uint64_t bytes_for(std::uint64_t bits) {
  return (bits + 7) / 8;
}

// Element i of `values` at bits i*width.., the last byte padded with zeros.
inline std::vector<std::uint8_t> pack(std::span<const std::int64_t> values, int width) {
  std::vector<std::uint8_t> out(
      static_cast<std::size_t>(bytes_for(values.size() * static_cast<std::uint64_t>(width))), 0);
  std::uint64_t bit = 0;
  for (const std::int64_t v : values) {
    put(out, bit, width, truncate(v, width));
    bit += static_cast<std::uint64_t>(width);
  }
  return out;
}

// The first n width-bit elements of `bytes`, sign-extended when is_signed.
inline std::vector<std::int64_t> unpack(std::span<const std::uint8_t> bytes, std::uint64_t n,
                                        int width, bool is_signed) {
  std::vector<std::int64_t> out(static_cast<std::size_t>(n));
  for (std::uint64_t i = 0; i < n; ++i) {
    out[static_cast<std::size_t>(i)] =
        to_int(get(bytes, i * static_cast<std::uint64_t>(width), width), width, is_signed);
  }
  return out;
}

// Sequential reader of an LSB-first byte stream. It reads a byte only when its bits are needed,
// so an in-place job with output width <= input width never reads a byte a Writer on the same
// memory has already replaced.
class Reader {
 public:
  explicit Reader(const std::uint8_t* p) : p_(p) {}
  std::uint64_t get(int width) {
    if (width > 56) {  // the accumulator takes up to 7 + 56 bits
      const std::uint64_t lo = get(32);
      return lo | get(width - 32) << 32;
    }
    while (nbits_ < width) {
      acc_ |= static_cast<std::uint64_t>(*p_++) << nbits_;
      nbits_ += 8;
    }
    const std::uint64_t v = acc_ & mask(width);
    acc_ >>= width;
    nbits_ -= width;
    return v;
  }

 private:
  const std::uint8_t* p_;
  std::uint64_t acc_ = 0;  // bits read, not yet returned
  int nbits_ = 0;
};

// Sequential writer of an LSB-first byte stream; writes whole bytes only, flush() pads the final
// partial byte with zeros (as the RTL's output gearbox writes it whole).
class Writer {
 public:
  explicit Writer(std::uint8_t* p) : p_(p) {}
  void put(std::uint64_t v, int width) {
    if (width > 56) {  // the accumulator takes up to 7 + 56 bits
      put(v, 32);
      put(v >> 32, width - 32);
      return;
    }
    acc_ |= (v & mask(width)) << nbits_;
    nbits_ += width;
    while (nbits_ >= 8) {
      *p_++ = static_cast<std::uint8_t>(acc_);
      acc_ >>= 8;
      nbits_ -= 8;
    }
  }
  void flush() {
    if (nbits_ > 0) *p_++ = static_cast<std::uint8_t>(acc_);
    acc_ = 0;
    nbits_ = 0;
  }

 private:
  std::uint8_t* p_;
  std::uint64_t acc_ = 0;  // bits not yet written
  int nbits_ = 0;
};

}  // namespace normcore::bits
