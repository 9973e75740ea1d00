// The ref device's compute kernel: an element range of a job, every output value from
// normcore::apply, directly or through per-channel lookup tables filled with it; and the
// threads it runs on.
#pragma once

#include <cstdint>
#include <vector>

#include "detail/parallel.hpp"
#include "normcore/contract.hpp"
#include "normcore/util/bits.hpp"
#include "ref_affine.hpp"

namespace normcore::detail::ref {

// The compute kernel: element range [e0, e1) of a job (run), every input element through the
// golden model or through lookup tables filled with it (fill_row).
struct Kernel {
  const std::uint8_t* in = nullptr;  // packed input, element 0 at bit 0
  std::uint8_t* out = nullptr;       // packed output, element 0 at bit 0
  int xw = 8, yw = 8;
  bool x_signed = true;
  std::uint64_t channels = 1;
  std::uint64_t stride = 1;  // elements per channel run: HW (NCHW) or 1 (NHWC)
  const std::int64_t* scale = nullptr;
  const std::int64_t* shift = nullptr;
  JobSettings job;
  const std::uint8_t* lut8 = nullptr;  // [c][256] output bytes (xw == yw == 8)
  const std::uint32_t* lut = nullptr;  // [c][2^xw] output bits (xw <= 16)
  const Affine8* affine = nullptr;     // NHWC bytes in int32 lanes (ref_affine.hpp)

  // One table row: every input code of channel c through the golden model.
  template <typename T>
  void fill_row(T* row, std::uint64_t c) const {
    const std::uint64_t codes = std::uint64_t{1} << xw;
    const std::uint64_t ymask = bits::mask(yw);
    for (std::uint64_t v = 0; v < codes; ++v) {
      const std::int64_t x = bits::to_int(v, xw, x_signed);
      row[v] =
          static_cast<T>(static_cast<std::uint64_t>(apply(x, scale[c], shift[c], job)) & ymask);
    }
  }

  // The requirement for splitting: e0 * xw and e0 * yw are multiples of 8 (except e0 = 0 and
  // the end of the tensor), so each range starts and ends on whole bytes.
  void run(std::uint64_t e0, std::uint64_t e1) const;

 private:
  // Byte in, byte out (lut8): one table row per channel run.
  void run8(std::uint64_t e0, std::uint64_t e1, std::uint64_t c, std::uint64_t r) const;
};

using normcore::detail::parallel_for;

// Runs the kernel over elements [0, total): lookup tables when they pay, split into byte-aligned
// ranges over up to `threads` threads (one range in place with narrower output).
void compute(const Kernel& base, std::uint64_t total, bool in_place, unsigned threads);

}  // namespace normcore::detail::ref
