// Verification-only output of `normcore gen --formal` (gen/src/formal.cpp): the lane's behavioural
// reference of the contract and the proof harness that scripts/prove.sh checks with yosys-smtbmc.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "normcore/gen/core.hpp"

namespace normcore::gen {

// formal/<name>_lane_ref.v (the contract for one element, plain behavioural Verilog) and
// formal/<name>_lane_fv.v (harness: lane == reference delayed by the lane's latency, for free
// inputs and a free job), and formal/<name>_pos_fv.v for an integer lane; a float config gives
// render_formal_float's two files.
std::vector<GeneratedFile> render_formal(const CoreConfig& cfg);

// The generated-file header (generator version, config) of formal/<file> as Verilog comments.
std::string formal_header(const CoreConfig& cfg, const std::string& file);

// The float lane's formal/<name>_lane_ref.v (the float contract, docs/contract.md section 9,
// exact in a wide fixed-point window, rounded once) and formal/<name>_lane_fv.v
// (gen/src/formal_float.cpp). No stream harness.
std::vector<GeneratedFile> render_formal_float(const CoreConfig& cfg);
nlohmann::json formal_float_manifest(const CoreConfig& cfg);

// formal/<name>_pos_fv.v: the core's stream bookkeeping (channel tracker, table addressing)
// against position -> channel by division, for one free valid job (gen/src/formal_pos.cpp). A
// comment only when the offset or output bits cannot hold MAX_CHANNELS - 1 (b[c] = c tags the
// channel).
std::string render_pos_fv(const CoreConfig& cfg);

// formal/<name>_trk_fv.v: the core's lane positions (channel tracker <n>_chan and what feeds it)
// against an element counter and position -> channel by division, for any sequence of valid jobs
// (gen/src/formal_trk.cpp); the core's wires in_fire, pos_c0, pos_d are made ports by Yosys
// `expose` (scripts/prove.sh).
std::string render_trk_fv(const CoreConfig& cfg);

// formal/<name>_tab_fv.v: the parameter table <n>_ptable alone, loaded with per-channel tags and
// read at free windows (c0 < C, d_i < L): every lane's fields are channel (c0 + d_i) mod C's
// (gen/src/formal_tab.cpp).
std::string render_tab_fv(const CoreConfig& cfg);

// The manifest's "formal" entry for those files (harness, reference, dut, latency).
nlohmann::json formal_manifest(const CoreConfig& cfg);

}  // namespace normcore::gen
