// Built by tests/gen/flow_files.sh against one generated design directory: the plain C register
// header (normcore_regs.h) says exactly what the C++ header (normcore_regs.hpp, the one the
// co-simulation and the runtime tests exercise against the RTL) says: the same registers in the
// same order with the same offsets, resets and masks, and the same fields with the same shift,
// width, mask, reset and access. Exit 0 when they agree; the first difference otherwise.
#include <cstdio>
#include <cstring>

#include "normcore_regs.h"
#include "normcore_regs.hpp"

namespace {

int fail(const char* what, const char* reg, const char* field) {
  std::fprintf(stderr, "C header differs from C++ header: %s of %s%s%s\n", what, reg,
               field[0] != 0 ? "." : "", field);
  return 1;
}

int compare() {
  namespace cpp = normcore_regs;
  unsigned r = 0, f = 0;
  const char* reg_name = "";
#define CHECK_REG(R)                                                                          \
  if (r >= cpp::kRegisterCount) return fail("count", #R, "");                                 \
  if (std::strcmp(cpp::kRegisters[r].name, #R) != 0) return fail("name", #R, "");             \
  if (cpp::kRegisters[r].offset != NORMCORE_REGS_##R##_OFFSET) return fail("offset", #R, ""); \
  if (cpp::kRegisters[r].reset != NORMCORE_REGS_##R##_RESET) return fail("reset", #R, "");    \
  if (cpp::kRegisters[r].mask != NORMCORE_REGS_##R##_MASK) return fail("mask", #R, "");       \
  ++r;
  NORMCORE_REGS_FOREACH_REG(CHECK_REG)
  if (r != cpp::kRegisterCount || r != NORMCORE_REGS_REGISTER_COUNT) return fail("count", "", "");
  r = 0;
#define CHECK_FIELD(R, F)                                                                       \
  if (std::strcmp(reg_name, #R) != 0) {                                                         \
    if (reg_name[0] != 0 && f != cpp::kRegisters[r].field_count) return fail("fields", #R, ""); \
    if (reg_name[0] != 0) ++r;                                                                  \
    while (r < cpp::kRegisterCount && cpp::kRegisters[r].field_count == 0) ++r;                 \
    reg_name = #R;                                                                              \
    f = 0;                                                                                      \
  }                                                                                             \
  {                                                                                             \
    const cpp::FieldDesc& d = cpp::kRegisters[r].fields[f++];                                   \
    if (d.shift != NORMCORE_REGS_##R##_##F##_SHIFT) return fail("shift", #R, #F);               \
    if (d.width != NORMCORE_REGS_##R##_##F##_WIDTH) return fail("width", #R, #F);               \
    if (d.mask != NORMCORE_REGS_##R##_##F##_MASK) return fail("mask", #R, #F);                  \
    if (d.reset != NORMCORE_REGS_##R##_##F##_RESET) return fail("reset", #R, #F);               \
    if (static_cast<unsigned>(d.access) != NORMCORE_REGS_##R##_##F##_ACCESS)                    \
      return fail("access", #R, #F);                                                            \
  }
  NORMCORE_REGS_FOREACH_FIELD(CHECK_FIELD)
  if (f != cpp::kRegisters[r].field_count) return fail("fields", reg_name, "");
  std::printf("C and C++ register headers agree: %u registers\n", cpp::kRegisterCount);
  return 0;
}

}  // namespace

int main() {
  return compare();
}
