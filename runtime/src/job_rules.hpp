// A job's validation as <n>_ctrl does it (its checks, its order, its codes), shared by the ref
// device (ref_job.cpp, ref_ring.cpp) and the sim: / tlm: plugins' fault injection
// (sim/plugin_common.cpp), which counts the jobs that pass it: the job registers as START takes
// them, or a 64-byte ring descriptor (the register reference's "Descriptor ring" note).
#pragma once

#include <cstdint>
#include <functional>

#include "normcore/contract.hpp"
#include "normcore/manifest.hpp"
#include "ref_memory.hpp"  // u128

namespace normcore::detail {

// Field values as the job registers (or a descriptor) hold them.
struct RawJob {
  std::uint64_t channels = 0, inner = 0, outer = 0, layout = 0, rounding = 0, shift = 0;
  std::uint64_t lo = 0, hi = 0, src = 0, dst = 0, param = 0;
};

// A job as START (or a descriptor) takes it, with WIN_BASE/WIN_LAST and its sizes.
struct JobRegs {
  std::uint64_t channels = 0, inner = 0, outer = 0;
  Layout layout = Layout::nchw;
  Rounding rounding = Rounding::half_up;
  int shift = 0;
  std::int64_t lo = 0, hi = 0;
  std::uint64_t src = 0, dst = 0, param = 0, win_base = 0, win_last = 0;
  ref::u128 total = 0, in_bytes = 0, out_bytes = 0, prm_bytes = 0;
};

class JobRules {
 public:
  explicit JobRules(const Manifest& m);

  // The raw job of the job registers; `reg` answers a register's value by offset.
  [[nodiscard]] RawJob from_registers(const std::function<std::uint32_t(std::uint32_t)>& reg) const;
  // WIN_BASE / WIN_LAST from the registers (0 / all ones without a window).
  [[nodiscard]] std::uint64_t win_base(
      const std::function<std::uint32_t(std::uint32_t)>& reg) const;
  [[nodiscard]] std::uint64_t win_last(
      const std::function<std::uint32_t(std::uint32_t)>& reg) const;
  // The raw job of a 64-byte descriptor (each field cut to its register's bits).
  [[nodiscard]] RawJob from_descriptor(const std::uint8_t* d) const;
  [[nodiscard]] JobRegs sized(const RawJob& r, std::uint64_t win_base,
                              std::uint64_t win_last) const;
  // The RTL's checks in its priority order: 0 when the job is valid, else its error code.
  [[nodiscard]] int check(const JobRegs& j) const;

  // Error codes by name (0 for "unsupported" when the manifest has none).
  int code_channels = 0, code_zero = 0, code_shift = 0, code_misaligned = 0;
  int code_window = 0, code_overlap = 0, code_read = 0, code_write = 0, code_unsupported = 0;

 private:
  struct F {
    std::uint32_t offset = 0;
    const FieldDesc* desc = nullptr;
  };
  F field(const char* reg, const char* name, bool required = true) const;
  static std::uint64_t get(const F& f, const std::function<std::uint32_t(std::uint32_t)>& reg);
  static std::uint64_t as_field(const F& f, std::uint64_t raw);

  const Manifest* m_;
  F channels_, inner_, outer_, layout_, rounding_, shift_, lo_, hi_;
  F src_lo_, src_hi_, dst_lo_, dst_hi_, param_lo_, param_hi_;
  F win_base_lo_, win_base_hi_, win_last_lo_, win_last_hi_;
};

}  // namespace normcore::detail
