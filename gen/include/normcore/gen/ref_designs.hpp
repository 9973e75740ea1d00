// Reference designs for PPA comparisons (docs/ppa.md), built with the same module IR and emitter
// as the core and sized from the same CoreConfig (lanes, element / scale / shift widths, max
// channels):
//   bare_mac    the physical limit: per lane one registered a*b + c (inputs and output registered)
//   decomposed  the batch norm a framework lowering produces at the same precision:
//               (x - mean) * inv_std * gamma + beta as separate registered fixed-point stages,
//               parameters per channel, then round and clamp to the output width.
//   decomposed-core  the same arithmetic inside the whole normcore core: the core's parameter
//               table (four fields per channel), position tracking, flow control, output
//               buffer and round/clamp, so that whole-design ratios compare like with like
//               (build_core with LaneArith::decomposed; --pipeline / --target apply as to the
//               core).
//   hard-mac-ice40 / hard-mac-ecp5 / hard-mac-xilinx  the hard multiplier's own limit: per lane
//               one instantiated DSP primitive (SB_MAC16, MULT18X18D, DSP48E1) with its input,
//               pipeline and output registers, at the primitive's native widths (ref_hard.cpp).
// They are measuring sticks, not products: bare_mac and decomposed have no stream flow control and
// the simplifications listed in docs/ppa.md (all of which make them smaller, never larger).
#pragma once

#include <string>
#include <vector>

#include "normcore/gen/config.hpp"
#include "normcore/gen/core.hpp"
#include "normcore/gen/ir.hpp"

namespace normcore::gen {

enum class RefDesign {
  bare_mac,
  decomposed,
  decomposed_core,
  hard_mac_ice40,
  hard_mac_ecp5,
  hard_mac_xilinx
};

// "bare-mac" / "decomposed" / "decomposed-core" / "hard-mac-ice40" / ...
std::string to_string(RefDesign d);
// Top module name: <name>_bare_mac, <name>_decomposed, <name>_core (decomposed-core) or
// <name>_hard_mac (the hard-mac designs).
std::string ref_top_name(const CoreConfig& cfg, RefDesign d);

// Fixed-point widths of the decomposed design (derived from the core's widths).
struct DecomposedWidths {
  int mw;   // mean: signed, units of 2^-f of x
  int f;    // fraction bits of the mean
  int dw;   // x - mean (exact)
  int iw;   // inv_std (signed, per-tensor exponent k1)
  int tw;   // normalised value after requantisation (saturated)
  int gw;   // gamma
  int aw;   // t * gamma + beta (exact)
  int k1w;  // width of the requantisation shift input
  int rw;   // width of the output shift input
  [[nodiscard]] int param_bits(int bw) const { return mw + iw + gw + bw; }
};
DecomposedWidths decomposed_widths(const CoreConfig& cfg);

// The hard-block designs: family, primitive, signed operand widths a, b, addend c (0: no add),
// product p; latency a/b -> p and c -> p in cycles (every register inside the primitive).
struct HardMacSpec {
  std::string family, primitive;
  int aw, bw, cw, pw;
  int latency, c_latency;
};
bool is_hard_mac(RefDesign d);
HardMacSpec hard_mac_spec(RefDesign d);  // throws std::logic_error for another design

// All modules of the design, the top last. cfg must pass check().
std::vector<Module> build_ref(const CoreConfig& cfg, RefDesign d);

// Verilog files, manifest.json (kind "reference") and filelist.f.
std::vector<GeneratedFile> render_ref(const CoreConfig& cfg, RefDesign d);

}  // namespace normcore::gen
