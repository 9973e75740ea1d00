// Builds the streaming core. Module overview (see docs/architecture.md):
//   <n>_core    top: AXI4-Stream in/out, job configuration and set-up, occupancy-based flow control
//   <n>_chan    the lanes' positions: lane 0's channel and every lane's channel offset from it
//   <n>_step    set-up divider: how far a lane's channel moves per beat (L div S, mod C)
//   <n>_ptable  banked parameter table with its loader and the lane crossbar
//   <n>_bank    one bank of the table (a simple dual-port RAM, registered read)
//   <n>_lane    one per lane: multiply-add, rounding, clamp
//   <n>_fifo    output buffer that absorbs the beats in flight when m_axis stalls
#include <stdexcept>

#include "core_flane.hpp"
#include "core_internal.hpp"
#include "normcore/gen/ref_designs.hpp"
#include "primitives.hpp"

namespace normcore::gen {
namespace core {

std::string Variant::word() const {
  std::string w;
  for (const auto& f : fields) w = f.prm + (w.empty() ? "" : ", ") + w;
  return "{" + w + "}";
}

Expr Variant::word_ports() const {
  std::vector<Expr> parts;
  for (auto f = fields.rbegin(); f != fields.rend(); ++f) {
    parts.push_back(ex::ref("prm_" + f->prm + "_i", f->width));
  }
  return ex::cat(std::move(parts));
}

Variant variant(const CoreConfig& c, LaneArith arith) {
  Variant v;
  if (arith == LaneArith::folded) {
    v.fields = {{"scale", c.arith.sw, "s", "lane_s", "s[c], signed"},
                {"offset", c.arith.bw, "b", "lane_b", "b[c], signed"}};
    v.aw = c.acc_bits();
    v.rw = c.rshift_bits();
  } else {
    const auto w = decomposed_widths(c);
    v.dec = true;
    v.fields = {{"mean", w.mw, "mean", "lane_mean",
                 "mean[c], signed, units of 2^-" + std::to_string(w.f) + " of x"},
                {"istd", w.iw, "istd", "lane_istd", "inv_std[c], signed"},
                {"gamma", w.gw, "gamma", "lane_gamma", "gamma[c], signed"},
                {"beta", c.arith.bw, "beta", "lane_beta", "beta[c], signed"}};
    v.aw = w.aw;
    v.rw = w.rw;
    v.extra = kDecomposedExtraStages;
    v.k1w = w.k1w;
  }
  for (const auto& f : v.fields) v.pw += f.width;
  return v;
}

}  // namespace core

namespace {

Module build_bank(const CoreConfig& c, const core::Variant& v) {
  if (c.table_copies()) {  // the address is registered in <n>_ptable
    return core::build_table_ram(
        c, {c.name + "_bank",
            v.pw,
            c.bank_depth(),
            c.xilinx_attrs(),
            {"One lane's copy of the parameter table: " + std::to_string(c.bank_depth()) +
                 " words of " + v.word() + ", one write port,",
             "one read port, registered, then the output register (block RAM with its output",
             "register): a word two cycles after its address (registered in <n>_ptable). Read",
             "every cycle (the word read while writing is not used: no_rw_check)."},
            true,
            true});
  }
  return core::build_table_ram(
      c, {c.name + "_bank",
          v.pw,
          c.bank_depth(),
          c.xilinx_attrs(),
          {"One bank of the parameter table: " + std::to_string(c.bank_depth()) + " words of " +
               v.word() + ", one write port,",
           "one read port, registered, then the output register (maps to block RAM",
           "with its output register): a word two cycles after its address. Read every",
           "cycle; the word read while writing is not used (the core takes no beat then):",
           "no_rw_check, no read-during-write logic, a constant read enable."},
          true,
          true});
}

}  // namespace

std::vector<Module> build_core(const CoreConfig& cfg, LaneArith arith) {
  if (auto err = cfg.check(); !err.empty()) throw std::invalid_argument(err);
  const core::Variant v = core::variant(cfg, arith);
  const auto& a = cfg.arith;
  if (a.is_float() && arith != LaneArith::folded) {
    throw std::invalid_argument("float lanes: not in a PPA reference design");
  }
  // A float pair the float lane does not build (an integer x, an integer y not 8 / 16 bits) keeps
  // the integer lane as a placeholder with the same ports around it: only the accelerator's
  // manifest (gen --accel
  // --manifest-only) is made from it; render_core refuses it and `normcore gen` writes no RTL.
  const bool fl = a.is_float() && core::flane_supports(a);
  Module lane = fl ? core::build_flane({cfg.name + "_lane", a.x_type, a.y_type, a.flush_subnormals,
                                        a.yw, a.y_signed})
                   : core::build_lane(cfg, v);
  return {build_bank(cfg, v),         core::build_step(cfg), core::build_chan(cfg),
          core::build_ptable(cfg, v), std::move(lane),       core::build_out_fifo(cfg, v),
          core::build_top(cfg, v)};
}

}  // namespace normcore::gen
