// What the lane's files share (core_lane.cpp: the lane; core_shift.cpp: the shifter's input
// register and the shifter in three parts).
#pragma once

#include <vector>

#include "core_internal.hpp"

namespace normcore::gen::core {

struct LaneWidths {
  int xw, sw, bw, yw, aw, rw;
  int ew;  // {acc, 0}: the shifter also brings out bit R-1
  int nw;  // the floor quotient saturated to nw signed bits
  [[nodiscard]] bool sat() const { return nw < aw; }
  LaneWidths(const CoreConfig& c, const Variant& v)
      : xw(c.arith.xw),
        sw(c.arith.sw),
        bw(c.arith.bw),
        yw(c.arith.yw),
        aw(v.aw),
        rw(v.rw),
        ew(v.aw + 1),
        nw(c.arith.yw + 1) {}
};

// The shifter's input: ext ({acc, 0}, its top bits patched when the select's top bit is folded),
// ext0 ({acc, 0} unpatched: the first part's tests) and acc itself (the fixed-R tests). With
// pipe_acc they are registers (accr_q, extp_q: the patched bits) after the multiply-add.
struct ShiftIn {
  Expr ext, ext0, acc;
};
ShiftIn shift_input(Module& m, const CoreConfig& c, const Variant& v, const LaneWidths& w);

// One >>> stage per select bit hi..lo of `sel`, the largest shift first, src -> out.
void shift_stages(Module& m, const LaneWidths& w, const Expr& sel, const Expr& src, int hi, int lo,
                  const Expr& out);

// pipe_shift3: the shifter in three register-separated parts with the sticky / fits terms of
// each part packed into registered groups of at most two LUT levels, reduced by one LUT level per
// later stage. Returns z (registered), the sticky groups and the fits groups (vectors of at most
// four bits; fits empty without saturation).
std::vector<Expr> lane_shift3(Module& m, const CoreConfig& c, const Variant& v, const LaneWidths& w,
                              const ShiftIn& in);

}  // namespace normcore::gen::core
