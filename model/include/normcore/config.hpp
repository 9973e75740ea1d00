// The configuration schema of a generated core and accelerator: one table of fields (JSON key,
// CLI option, range, help) read by the generator (check, JSON), the runtime's manifest reader and
// the CLI help. CoreConfig / AccelConfig are the values; their derived sizes are the hardware's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <string_view>

#include "normcore/contract.hpp"

namespace normcore {

inline constexpr const char* kGeneratorVersion = "0.1.0";

// Number of bits needed to hold the unsigned value v (at least 1).
int bits_for(long long v);
// ceil(log2(v)) for v >= 1 (0 for v == 1).
int clog2(long long v);

struct AccelConfig;

// How a check names a field: by its CLI option ("--lanes: ...", for `normcore gen`) or by its
// JSON key ("'lanes': ...", for a config file or a manifest).
enum class FieldNames { cli, json };

// One configuration field. Integer fields have a range (and maybe "power of two"); bool and
// string fields have none (a string field lists its allowed values in `choices`, "" = any).
struct ConfigField {
  enum class Kind { integer, boolean, string, number };  // number: a finite double
  enum class Group { core, accel };
  const char* key;     // JSON key in the config object / manifest "config"
  const char* option;  // CLI option (`normcore gen`)
  Kind kind;
  Group group;
  long long lo = 0, hi = 0;
  bool pow2 = false;
  const char* choices = "";  // string fields: "generic|ice40|ecp5|xilinx|asic"
  const char* help = "";     // one line, without the range (help_text() adds it)
  int* (*int_ref)(AccelConfig&) = nullptr;
  bool* (*bool_ref)(AccelConfig&) = nullptr;
  std::string* (*str_ref)(AccelConfig&) = nullptr;
  bool may_be_empty = false;  // string fields with choices: "" (= not fixed) is allowed too
  // Manifests written before the field existed lack it: reading one keeps the default.
  bool optional_in_manifest = false;
  // A renamed field's earlier JSON key and CLI option (nullptr: never renamed). Both are still
  // read, with a warning on stderr naming the new spelling (CHANGELOG.md).
  const char* old_key = nullptr;
  const char* old_option = nullptr;
  double* (*num_ref)(AccelConfig&) = nullptr;  // number fields (range lo..hi, fractions allowed)
  // Element-type fields (in_type, out_type): a string field whose value is a NumType
  // (to_string / parse_num_type spellings); `choices` lists the allowed ones.
  NumType* (*type_ref)(AccelConfig&) = nullptr;
  // A boolean written to the JSON only when true (so configurations without it read as before).
  // Last: the positional initialisers of the schema table end at type_ref.
  bool omit_when_false = false;

  // "Elements per beat (1..64)", "... (power of two, 32..512)".
  [[nodiscard]] std::string help_text() const;
  // "--lanes" or "'lanes'".
  [[nodiscard]] std::string name(FieldNames names) const;
  // Empty when v is allowed, else "<name>: <v> is out of range lo..hi" (or "must be ...").
  [[nodiscard]] std::string check(long long v, FieldNames names = FieldNames::cli) const;
  // String fields with choices: empty when v is one of them (or "" and may_be_empty), else
  // "<name>: must be a, b or c (got 'v')".
  [[nodiscard]] std::string check(const std::string& v, FieldNames names = FieldNames::cli) const;
  // Number fields: empty when lo <= v <= hi (NaN and infinities are not), else the message.
  [[nodiscard]] std::string check_number(double v, FieldNames names = FieldNames::cli) const;
};

// The shortest text that reads back as v ("62.5", "100", "33.333", "nan").
std::string format_number(double v);

// Every field, core fields first, in the order manifests list them.
std::span<const ConfigField> config_schema();
// The field with this JSON key (throws std::logic_error if there is none: a programming error).
const ConfigField& config_field(std::string_view key);

// The float lane (gen/src/core_flane.cpp) has 8 registers: a float core's lane stages as
// CoreConfig::pipeline counts them (one more than the lane's registers).
inline constexpr int kFloatLanePipeline = 9;

struct CoreConfig {
  std::string name = "normcore";   // module name prefix
  int lanes = 8;                   // elements per beat
  ArithSpec arith;                 // element widths and signedness
  int max_channels = 1024;         // table size
  int inner_bits = 24;             // width of the inner-size (HW) config input
  int pipeline = 3;                // register stages from input beat to lane result
  std::string target = "generic";  // generic | ice40 | ecp5 | xilinx | asic: mapping hints
  double clock_mhz = 100;          // clock of the SDC/XDC constraints, MHz (not the RTL); 62.5 ok

  // Specialisation: job settings fixed at generation time, so the logic they would feed is not
  // built. A job whose settings disagree is rejected (core: cfg_error_o; accelerator:
  // ERR_UNSUPPORTED; runtime and ref: before touching the device). Defaults: nothing fixed.
  int fixed_shift = -1;                // R of every job; -1 = set per job (else 0..acc_bits())
  std::string fixed_rounding;          // "" (per job) or floor | half_up | half_even | half_away
  std::string fixed_layout;            // "" (per job) or nchw | nhwc
  bool lanes_divide_channels = false;  // every job's C is a multiple of LANES

  // Parameter table: "banked" (one table in P banks and a lane crossbar) or "copies" (every lane
  // holds the whole table and reads its own channel: no crossbar, L times the RAM).
  std::string table = "banked";

  // The pipeline depth `normcore gen --target T` picks when --pipeline is not given: generic 3
  // (fewest registers), ice40 10 (every lane stage at most two LUT levels or one short carry,
  // the multiply-add in SB_MAC16: docs/architecture.md "Pipeline"), ecp5 11 (10 plus the product
  // register before the add: MULT18X18D's output register, core_mac.cpp), xilinx 4 (the lane's
  // multiply-add with its input and output registers, the DSP48E1's A/B/C and P
  // registers), asic 5 (the >>> R shifter registered).
  [[nodiscard]] static int default_pipeline(const std::string& target);
  // The table `normcore gen --target T` picks when --table is not given: copies for ecp5
  // (measured: the crossbar is most of the banked table's logic, docs/architecture.md; L8 x 512
  // channels takes 16 of the LFE5U-25F's 56 DP16KD), banked elsewhere (the least RAM; on the
  // UP5K copies take 27 of its 30 EBR at L4 x 512, so ice40 asks for them with --table copies).
  [[nodiscard]] static std::string default_table(const std::string& target);
  // Xilinx: Vivado attributes (ram_style on the table banks, use_dsp on the lanes' multiply-add).
  // One clock period in whole ps (round(10^6 / clock_mhz), at least 2): the sim:/tlm: traces.
  [[nodiscard]] std::uint64_t clock_period_ps() const;
  [[nodiscard]] bool xilinx_attrs() const { return target == "xilinx"; }

  // Empty if valid, else a message that starts with the offending field ("--lanes: ..." or, with
  // FieldNames::json, "'lanes': ...").
  [[nodiscard]] std::string check(FieldNames names = FieldNames::cli) const;
  // The float datapath (contract v2): in_type / out_type other than int. The generator does not
  // build float lanes yet (issue 18): `normcore gen` refuses such a config (exit 2) except for
  // --accel --manifest-only, whose manifest the ref: device runs.
  [[nodiscard]] bool is_float() const { return arith.is_float(); }
  // A float type fixes its widths: in_bits 16, out_bits 16 / 32, scale_bits = offset_bits = 32.
  // Sets those of the float sides (the CLI does this when the widths are not given).
  void apply_float_widths();

  // The specialisation fields' own rules (part of check()).
  [[nodiscard]] std::string check_specialisation(FieldNames names = FieldNames::cli) const;
  [[nodiscard]] bool has_fixed_shift() const { return fixed_shift >= 0; }
  [[nodiscard]] bool has_fixed_rounding() const { return !fixed_rounding.empty(); }
  [[nodiscard]] bool has_fixed_layout() const { return !fixed_layout.empty(); }
  [[nodiscard]] bool specialised() const {
    return has_fixed_shift() || has_fixed_rounding() || has_fixed_layout() || lanes_divide_channels;
  }
  // Whether this core can run a job (valid for a checked config; the job's own ranges are
  // checked elsewhere): empty, or a message naming the job setting and the fixed value, e.g.
  // "R: 7 differs from this core's fixed shift 8 (fixed_shift)". The one rule the RTL, the ref
  // device, the driver and the CLI share.
  [[nodiscard]] std::string check_job(int shift, Rounding rounding, Layout layout,
                                      long long channels) const;

  // Derived sizes (valid only for a checked config).
  [[nodiscard]] int acc_bits() const { return arith.acc_bits(); }
  [[nodiscard]] int chan_bits() const { return bits_for(max_channels); }  // holds C
  [[nodiscard]] int rshift_bits() const { return bits_for(acc_bits()); }  // holds R
  [[nodiscard]] int banks() const { return 1 << clog2(lanes); }           // power of two >= L
  [[nodiscard]] int bank_sel_bits() const { return clog2(lanes); }
  // The direct table (no lane crossbar): NHWC and C a multiple of LANES (a power of two > 1)
  // make every beat's channels c0 .. c0+L-1 with c0 a multiple of L, so lane i always reads
  // bank i at c0 / L and the table needs no wrap-around copies.
  [[nodiscard]] bool table_direct() const {
    return lanes_divide_channels && fixed_layout == "nhwc" && lanes > 1 &&
           (lanes & (lanes - 1)) == 0;
  }
  // The per-lane table copies (table "copies"; the direct table wins where it applies, and one
  // lane has nothing to copy): lane i's RAM holds all C words and is read at (c0 + d_i) mod C.
  [[nodiscard]] bool table_copies() const {
    return table == "copies" && lanes > 1 && !table_direct();
  }
  [[nodiscard]] int bank_depth() const {                           // words per bank
    if (table_copies()) return std::max(max_channels, lanes - 1);  // copies at C .. L - 2
    if (table_direct()) return std::max(1, max_channels >> bank_sel_bits());
    return ((max_channels + banks() - 2) >> bank_sel_bits()) + 1;
  }
  // Cycles from c0 to the lanes' parameters: the bank read and the bank's output register; the
  // per-lane copies register c0 / d_i and then their read address first (four).
  [[nodiscard]] int table_stages() const { return table_copies() ? 4 : 2; }
  [[nodiscard]] int bank_addr_bits() const { return clog2(bank_depth() < 2 ? 2 : bank_depth()); }
  [[nodiscard]] int lane_count_bits() const { return bits_for(lanes); }  // holds L
  // Narrow in-channel offsets (used while S < L): the walker's r, per-lane q_i, L mod S, S - (L
  // mod S).
  [[nodiscard]] int chan_low_bits() const { return std::min(lane_count_bits(), inner_bits); }
  [[nodiscard]] int param_bits() const { return arith.sw + arith.bw; }
  // The lane's stages as `pipeline` counts them (the lane has one register fewer): `pipeline`,
  // or for a float datapath the float lane's fixed kFloatLanePipeline (`pipeline` not used).
  [[nodiscard]] int lane_stages() const { return arith.is_float() ? kFloatLanePipeline : pipeline; }
  // Cycles from an accepted input beat to its output beat on m_axis (unstalled).
  [[nodiscard]] int latency() const { return lane_stages() + table_stages(); }
  // Beats the core holds (in flight plus buffered): sized so an unstalled stream never bubbles.
  // (latency + 2: the admission rule ignores this cycle's delivery, so it needs one more slot.)
  [[nodiscard]] int fifo_depth() const { return latency() + 2; }
  // Optional lane registers, each added by one more pipeline step (the lane has pipeline - 1
  // register stages: the accumulator and the output always, these in between):
  [[nodiscard]] bool pipe_xbar() const { return pipeline >= 4; }     // lane input regs after xbar
  [[nodiscard]] bool pipe_shift() const { return pipeline >= 5; }    // after the >>> R shifter
  [[nodiscard]] bool pipe_round() const { return pipeline >= 6; }    // after rounding
  [[nodiscard]] bool pipe_shift2() const { return pipeline >= 7; }   // inside the shifter
  [[nodiscard]] bool pipe_sat() const { return pipeline >= 8; }      // after saturation
  [[nodiscard]] bool pipe_acc() const { return pipeline >= 9; }      // acc in the fabric, after MAC
  [[nodiscard]] bool pipe_shift3() const { return pipeline >= 10; }  // shifter in three parts
  [[nodiscard]] bool pipe_prod() const { return pipeline >= 11; }    // product, before the add
  // The >>> R shifter's register-separated parts: 3 (pipe_shift3), 2 (pipe_shift2) or 1.
  [[nodiscard]] int shift_parts() const { return pipe_shift3() ? 3 : pipe_shift2() ? 2 : 1; }
  [[nodiscard]] std::string top_name() const { return name + "_core"; }

  // The core fields of the schema (an accelerator's fields are not written).
  [[nodiscard]] nlohmann::json to_json() const;
  // Reads a config object (missing keys keep their defaults). Throws std::invalid_argument
  // naming the key on a type error or an unknown key (accelerator keys are known keys).
  static CoreConfig from_json(const nlohmann::json& j);
};

struct AccelConfig {
  CoreConfig core;
  int bus_bits = 64;        // AXI4 data width: 32, 64, 128, 256 or 512
  int addr_bits = 32;       // AXI4 address width: 32..64
  int id_bits = 4;          // AXI4 ID width: 1..8
  int max_burst = 32;       // beats per burst: power of two, 1..256
  int outstanding = 8;      // read bursts in flight: 1..16 (>= 4 hides memory latency)
  int axil_addr_bits = 12;  // AXI4-Lite address width (4 KiB register window)
  // The descriptor ring (RING_* registers, docs/architecture.md "Descriptor ring"): the
  // descriptor fetcher in <n>_ctrl (gen/src/accel_ring.cpp), the ref: model (ref_ring.cpp).
  bool ring = false;

  // As CoreConfig::check.
  [[nodiscard]] std::string check(FieldNames names = FieldNames::cli) const;
  [[nodiscard]] int bus_bytes() const { return bus_bits / 8; }
  // Bytes per parameter entry in memory: {b, s} packed (s in the low bits), 8 or 16 bytes.
  [[nodiscard]] int param_entry_bytes() const { return core.param_bits() <= 64 ? 8 : 16; }
  [[nodiscard]] std::string top_name() const { return core.name + "_top"; }
  [[nodiscard]] nlohmann::json to_json() const;
  // As CoreConfig::from_json; with `require_all`, every field but "target" must be present
  // (a manifest written by `normcore gen --accel`).
  static AccelConfig from_json(const nlohmann::json& j, bool require_all = false);
};

}  // namespace normcore
