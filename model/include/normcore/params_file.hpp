// params.bin: the folded parameter image the device (and the simulator) loads. Little endian.
//
//   offset  size  field
//        0     4  magic "NCPB"
//        4     4  u32 version = 1
//        8     4  u32 channels C
//       12     1  u8 rounding (Rounding enum value)
//       13     1  u8 layout hint (0)
//       14     2  u16 reserved (0)
//       16     4  i32 shift R
//       20     4  i32 reserved (0)
//       24     8  i64 clamp lo
//       32     8  i64 clamp hi
//       40     6  u8 xw, u8 x_signed, u8 sw, u8 bw, u8 yw, u8 y_signed
//       46     3  u8 x_type, u8 y_type, u8 flush_subnormals (version 2: a float image; NumType
//                 codes 0 int, 1 fp16, 2 bf16, 3 fp32); version 1: zero
//       49    15  zero
//       64   8*C  i64 scale[C]   (s)
//   64+8*C   8*C  i64 offset[C]  (b)
//   A float image (version 2) holds s and b as fp32 bit patterns (0..2^32-1) and a float output's
//   lo / hi as bit patterns of its type (docs/contract.md, section 9).
//   total 64 + 16*C bytes
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>
#include <vector>

#include "normcore/bn_params.hpp"  // normcore::Error
#include "normcore/contract.hpp"

namespace normcore {

inline constexpr std::uint32_t kParamsVersion = 1;       // integer images
inline constexpr std::uint32_t kParamsVersionFloat = 2;  // float images (contract v2)
inline constexpr std::size_t kParamsHeaderBytes = 64;

struct ParamImage {
  ArithSpec spec;
  JobSettings job;
  // s[c], b[c] (`shift` holds the offsets b: a C++ name kept for existing callers; R is job.shift)
  std::vector<std::int64_t> scale, shift;
};

// Throws Error (prefixed by `name`) unless spec.check(), job.check(spec) pass, scale and shift
// have the same non-zero length and every s / b lies inside its width.
void check_image(const ParamImage& image, std::string_view name);

std::vector<std::uint8_t> encode_params(const ParamImage& image);
// `name` prefixes error messages (normally the file name).
ParamImage decode_params(std::span<const std::uint8_t> bytes, std::string_view name);

// Checks, then writes "<path>.tmp.<pid>" and renames it over `path` (the temporary is removed on
// failure).
void write_params(const std::filesystem::path& path, const ParamImage& image);
// Validates magic, version, size ("truncated: expected N bytes, found M"), header fields and
// every value (check_image).
ParamImage read_params(const std::filesystem::path& path);

}  // namespace normcore
