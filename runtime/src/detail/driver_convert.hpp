// Host tensor <-> packed device elements: dtype conversion and (de)quantisation.
#pragma once

#include <cstdint>
#include <utility>

#include "normcore/driver.hpp"

namespace normcore::detail {

// Range of values a host integer dtype holds ({0, 0} for float32).
std::pair<std::int64_t, std::int64_t> dtype_range(DType t);

// Writes elements [h, h + len) of the host input, converted (float32: quantised with
// opt.in_quant), as packed device elements from index d on. DeviceError naming the element if it
// is NaN or outside the device's input range.
void gather(const TensorView& in, const RunOptions& opt, const ArithSpec& a, std::uint8_t* dst,
            std::uint64_t d, std::uint64_t h, std::uint64_t len);

// Reads packed device elements [d, d + len) into host output elements from h on (float32:
// dequantised with opt.out_quant).
void scatter(const MutableTensorView& out, const RunOptions& opt, const ArithSpec& a,
             const std::uint8_t* src, std::uint64_t d, std::uint64_t h, std::uint64_t len);

}  // namespace normcore::detail
