// Host tensors and device elements: dtype names and sizes, packed bit streams, conversion and
// (de)quantisation between host tensors and the device's packed elements.
#include "detail/driver_convert.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "detail/driver_util.hpp"
#include "normcore/float_contract.hpp"

namespace normcore {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::int8:
      return "int8";
    case DType::uint8:
      return "uint8";
    case DType::int16:
      return "int16";
    case DType::uint16:
      return "uint16";
    case DType::int32:
      return "int32";
    case DType::float32:
      return "float32";
    case DType::float16:
      return "float16";
    case DType::bfloat16:
      return "bfloat16";
  }
  return "?";
}

DType parse_dtype(std::string_view text) {
  for (DType t : {DType::int8, DType::uint8, DType::int16, DType::uint16, DType::int32,
                  DType::float32, DType::float16, DType::bfloat16}) {
    if (text == to_string(t)) return t;
  }
  throw DeviceError("unknown element type '" + std::string(text) +
                    "' (int8, uint8, int16, uint16, int32, float32, float16, bfloat16)");
}

std::size_t dtype_bytes(DType t) {
  switch (t) {
    case DType::int8:
    case DType::uint8:
      return 1;
    case DType::int16:
    case DType::uint16:
    case DType::float16:
    case DType::bfloat16:
      return 2;
    case DType::int32:
    case DType::float32:
      return 4;
  }
  return 1;
}

namespace detail {

std::pair<std::int64_t, std::int64_t> dtype_range(DType t) {
  switch (t) {
    case DType::int8:
      return {-128, 127};
    case DType::uint8:
      return {0, 255};
    case DType::int16:
      return {-32768, 32767};
    case DType::uint16:
      return {0, 65535};
    case DType::int32:
      return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
    case DType::float32:
    case DType::float16:
    case DType::bfloat16:
      break;
  }
  return {0, 0};
}

namespace {

// Packed little-endian bit stream access (elements of w bits, LSB first).
inline void put_bits(std::uint8_t* base, std::uint64_t index, int w, std::uint64_t v) {
  v &= mask_bits(w);
  if (w == 8) {
    base[index] = static_cast<std::uint8_t>(v);
    return;
  }
  if (w == 16) {
    base[2 * index] = static_cast<std::uint8_t>(v);
    base[2 * index + 1] = static_cast<std::uint8_t>(v >> 8);
    return;
  }
  std::uint64_t bit = index * static_cast<std::uint64_t>(w);
  for (int i = 0; i < w;) {
    const int off = static_cast<int>(bit % 8);
    const int n = std::min(8 - off, w - i);
    const auto m = static_cast<std::uint8_t>(((1u << n) - 1u) << off);
    std::uint8_t& b = base[bit / 8];
    b = static_cast<std::uint8_t>((b & ~m) | ((static_cast<unsigned>(v >> i) << off) & m));
    i += n;
    bit += static_cast<std::uint64_t>(n);
  }
}

inline std::int64_t get_bits(const std::uint8_t* base, std::uint64_t index, int w, bool sgn) {
  std::uint64_t u = 0;
  if (w == 8) {
    u = base[index];
  } else if (w == 16) {
    u = static_cast<std::uint64_t>(base[2 * index]) |
        (static_cast<std::uint64_t>(base[2 * index + 1]) << 8);
  } else {
    std::uint64_t bit = index * static_cast<std::uint64_t>(w);
    for (int i = 0; i < w;) {
      const int off = static_cast<int>(bit % 8);
      const int n = std::min(8 - off, w - i);
      u |= static_cast<std::uint64_t>((base[bit / 8] >> off) & ((1u << n) - 1u)) << i;
      i += n;
      bit += static_cast<std::uint64_t>(n);
    }
  }
  if (sgn && ((u >> (w - 1)) & 1U)) u |= ~0ULL << w;
  return static_cast<std::int64_t>(u);
}

// p as a T pointer, keeping p's constness.
template <typename T, typename V>
auto typed(V* p) {
  if constexpr (std::is_const_v<V>) {
    return static_cast<const T*>(p);
  } else {
    return static_cast<T*>(p);
  }
}

// Calls f(T*) with the pointer cast to the dtype's C++ type (const if p is).
template <typename V, typename F>
void with_type(DType t, V* p, F&& f) {
  switch (t) {
    case DType::int8:
      f(typed<std::int8_t>(p));
      break;
    case DType::uint8:
      f(typed<std::uint8_t>(p));
      break;
    case DType::int16:
      f(typed<std::int16_t>(p));
      break;
    case DType::uint16:
      f(typed<std::uint16_t>(p));
      break;
    case DType::int32:
      f(typed<std::int32_t>(p));
      break;
    case DType::float32:
      f(typed<float>(p));
      break;
    case DType::float16:
    case DType::bfloat16:
      f(typed<std::uint16_t>(p));  // only reached through the float paths (patterns)
      break;
  }
}

// The float type of a host dtype (integer for the integer dtypes).
NumType host_float(DType t) {
  return t == DType::float16    ? NumType::fp16
         : t == DType::bfloat16 ? NumType::bf16
                                : NumType::integer;
}

// A host element as a double (exact: every int32, float16, bfloat16 and float32 is a double).
double host_value(const TensorView& in, std::uint64_t i) {
  if (in.dtype == DType::float32) return static_cast<double>(static_cast<const float*>(in.data)[i]);
  if (const NumType t = host_float(in.dtype); t != NumType::integer) {
    return float_to_double(static_cast<const std::uint16_t*>(in.data)[i], t);
  }
  double v = 0;
  with_type(in.dtype, in.data, [&](const auto* p) { v = static_cast<double>(p[i]); });
  return v;
}

// A float device's input: the same 16-bit type copied, anything else converted with one RNE.
void gather_float(const TensorView& in, const ArithSpec& a, std::uint8_t* dst, std::uint64_t d,
                  std::uint64_t h, std::uint64_t len) {
  if (host_float(in.dtype) == a.x_type) {
    std::memcpy(dst + 2 * d, static_cast<const std::uint16_t*>(in.data) + h,
                static_cast<std::size_t>(2 * len));
    return;
  }
  for (std::uint64_t i = 0; i < len; ++i) {
    put_bits(dst, d + i, 16, double_to_float(host_value(in, h + i), a.x_type));
  }
}

// A float device's output into a float host tensor (the same type copied, else converted).
void scatter_float(const MutableTensorView& out, const ArithSpec& a, const std::uint8_t* src,
                   std::uint64_t d, std::uint64_t h, std::uint64_t len) {
  const NumType t = host_float(out.dtype);
  if (t == a.y_type) {
    std::memcpy(static_cast<std::uint16_t*>(out.data) + h, src + 2 * d,
                static_cast<std::size_t>(2 * len));
    return;
  }
  for (std::uint64_t i = 0; i < len; ++i) {
    const auto bits = static_cast<std::uint32_t>(get_bits(src, d + i, a.yw, false));
    const double v = float_to_double(bits, a.y_type);
    if (out.dtype == DType::float32) {
      static_cast<float*>(out.data)[h + i] = static_cast<float>(v);  // exact unless fp32 -> fp32
    } else {
      static_cast<std::uint16_t*>(out.data)[h + i] =
          static_cast<std::uint16_t>(double_to_float(v, t));
    }
  }
}

}  // namespace

void gather(const TensorView& in, const RunOptions& opt, const ArithSpec& a, std::uint8_t* dst,
            std::uint64_t d, std::uint64_t h, std::uint64_t len) {
  if (a.x_type != NumType::integer) {
    gather_float(in, a, dst, d, h, len);
    return;
  }
  const std::int64_t lo = a.x_min(), hi = a.x_max();
  const int w = a.xw;
  // Fast path: byte elements with the same signedness (int8 -> signed 8, uint8 -> unsigned 8).
  if (w == 8 &&
      ((in.dtype == DType::int8 && a.x_signed) || (in.dtype == DType::uint8 && !a.x_signed))) {
    std::memcpy(dst + d, static_cast<const std::uint8_t*>(in.data) + h,
                static_cast<std::size_t>(len));
    return;
  }
  if (in.dtype == DType::float32) {
    const float* p = static_cast<const float*>(in.data) + h;
    const double inv = 1.0 / opt.in_quant->scale;
    const auto zp = static_cast<double>(opt.in_quant->zero_point);
    for (std::uint64_t i = 0; i < len; ++i) {
      const double x = static_cast<double>(p[i]);
      if (std::isnan(x)) {
        throw InputValueError("input element " + std::to_string(h + i) + " is NaN");
      }
      double q = std::nearbyint(x * inv) + zp;
      q = std::clamp(q, static_cast<double>(lo), static_cast<double>(hi));
      put_bits(dst, d + i, w, static_cast<std::uint64_t>(static_cast<std::int64_t>(q)));
    }
    return;
  }
  with_type(in.dtype, in.data, [&](const auto* p) {
    p += h;
    for (std::uint64_t i = 0; i < len; ++i) {
      const auto v = static_cast<std::int64_t>(p[i]);
      if (v < lo || v > hi) {
        throw InputValueError("input element " + std::to_string(h + i) + " = " + std::to_string(v) +
                              " is outside the device's input range " + std::to_string(lo) + ".." +
                              std::to_string(hi));
      }
      put_bits(dst, d + i, w, static_cast<std::uint64_t>(v));
    }
  });
}

void scatter(const MutableTensorView& out, const RunOptions& opt, const ArithSpec& a,
             const std::uint8_t* src, std::uint64_t d, std::uint64_t h, std::uint64_t len) {
  if (a.y_type != NumType::integer) {
    scatter_float(out, a, src, d, h, len);
    return;
  }
  const int w = a.yw;
  if (w == 8 &&
      ((out.dtype == DType::int8 && a.y_signed) || (out.dtype == DType::uint8 && !a.y_signed))) {
    std::memcpy(static_cast<std::uint8_t*>(out.data) + h, src + d, static_cast<std::size_t>(len));
    return;
  }
  if (out.dtype == DType::float32) {
    float* p = static_cast<float*>(out.data) + h;
    const double s = opt.out_quant->scale;
    const std::int64_t zp = opt.out_quant->zero_point;
    for (std::uint64_t i = 0; i < len; ++i) {
      p[i] = static_cast<float>(s * static_cast<double>(get_bits(src, d + i, w, a.y_signed) - zp));
    }
    return;
  }
  with_type(out.dtype, out.data, [&](auto* p) {
    using T = std::remove_pointer_t<decltype(p)>;
    p += h;
    for (std::uint64_t i = 0; i < len; ++i) {
      p[i] = static_cast<T>(get_bits(src, d + i, w, a.y_signed));
    }
  });
}

}  // namespace detail

}  // namespace normcore
