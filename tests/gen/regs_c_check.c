/* Compiled as C99 (gcc -std=c99 -Wall -Wextra -pedantic -Werror) and as C++ by
 * tests/gen/flow_files.sh against a generated normcore_regs.h: the header is plain C that a
 * firmware build can include, and its macros and helpers work on a register image. */
#include "normcore_regs.h"

#define COUNT_ONE(...) +1
#define CHECK_FIELD(R, F)                                                                   \
  if (NORMCORE_REGS_##R##_##F##_MASK !=                                                      \
      ((0xFFFFFFFFu >> (32u - NORMCORE_REGS_##R##_##F##_WIDTH)) << NORMCORE_REGS_##R##_##F##_SHIFT)) \
    return 10;                                                                               \
  if ((NORMCORE_REGS_##R##_MASK & NORMCORE_REGS_##R##_##F##_MASK) == 0u) return 11;          \
  if (NORMCORE_REGS_##R##_##F##_GET(NORMCORE_REGS_##R##_RESET) != NORMCORE_REGS_##R##_##F##_RESET) \
    return 12;

static int check(void) {
  uint32_t image[1u << (NORMCORE_REGS_ADDR_BITS - 2u)];
  volatile uint32_t* base = image;
  uint32_t v;
  if ((0 NORMCORE_REGS_FOREACH_REG(COUNT_ONE)) != (int)NORMCORE_REGS_REGISTER_COUNT) return 1;
  NORMCORE_REGS_FOREACH_FIELD(CHECK_FIELD)
  normcore_regs_write(base, NORMCORE_REGS_CTRL_OFFSET, 0u);
  v = NORMCORE_REGS_CTRL_START_SET(normcore_regs_read(base, NORMCORE_REGS_CTRL_OFFSET), 1u);
  normcore_regs_write(base, NORMCORE_REGS_CTRL_OFFSET, v);
  if (NORMCORE_REGS_CTRL_START_GET(image[NORMCORE_REGS_CTRL_OFFSET / 4u]) != 1u) return 2;
  if (NORMCORE_REGS_CTRL_START_ACCESS != NORMCORE_REGS_ACCESS_W1S_SC) return 3;
  return 0;
}

int main(void) {
  return check();
}
