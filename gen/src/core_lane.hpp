// What the lane's files share (core_lane.cpp: the lane; core_shift.cpp: the shifter's input
// register and the shifter in three parts).
#pragma once

#include <vector>

#include "core_internal.hpp"

namespace normcore::gen::core {

// The default target (generic) with a signed y keeps the floor quotient in yw signed bits: a q
// that does not fit them is beyond lo and hi, and a q that fits with q + 1 = 2^(yw-1) is above hi
// (the clamp compares q with hi before the +1), so the clamp is the same; 5 LUT4 less a lane on
// iCE40 (a shifter output bit and the compares' LUTs). The other targets keep yw + 1 (their RTL
// unchanged); an unsigned y needs yw + 1 (q up to 2^yw - 1, signed).
inline bool narrow_quotient(const CoreConfig& c) {
  return c.target == "generic" && c.arith.y_signed;
}

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
        nw(c.arith.yw + (narrow_quotient(c) ? 0 : 1)) {}
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

// The clamp's lower bound min(lo, hi): lo_i, or ~nlo_i (lane_nlo).
Expr lane_lo(Module& m, const CoreConfig& c);
// The output register's input: y, or 0 for an element with tkeep = 0 (lane_keep).
Expr lane_keep_mask(Module& m, const CoreConfig& c, const LaneWidths& w, const Expr& y);

// The lane's clamp registers (the result's low bits, rq < lo, rq < hi + 1 and, with saturation
// folded in, q fits / acc < 0; fits invalid without it) and the clamp after them: below / above
// and y_q = keep mask of the clamp (one form for every lane that clamps from these registers).
// lane_inc's keep groups of round_i (two LUT levels from registers): h & (mode 1, or mode 2 and
// q odd), h & mode 3 & acc >= 0, h & (mode 2 or 3); the +1 is a | b | (c & sticky).
struct IncGroups {
  Expr a, b, c;
};
IncGroups inc_groups(Module& m, const Expr& h, const Expr& q0, const Expr& neg);

struct ClampRegs {
  Expr rq, below, not_above, fits, neg;
};
void lane_clamp_early(Module& m, const CoreConfig& c, const LaneWidths& w,
                      const std::vector<Expr>& qi, const Expr& blo, const Expr& bhi,
                      const Expr& rqs, std::vector<Flop>& ff);
void lane_clamp_out(Module& m, const CoreConfig& c, const LaneWidths& w, const ClampRegs& r,
                    const std::string& rq);
// spec::early_round: the shifter's last part also registers the +1 decision (inc_q, the fourth
// element of lane_shift3's result); then rqx_q = q + inc (one chain), the two compares on it, and
// the clamp. zsf: lane_shift3's result.
void lane_round_early(Module& m, const CoreConfig& c, const LaneWidths& w,
                      const std::vector<Expr>& zsf);

}  // namespace normcore::gen::core
