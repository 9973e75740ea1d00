// The accelerator's register description (accel_register_map): identification, capabilities,
// control and status, job settings, addresses and performance counters.
#include <cctype>

#include "normcore/gen/regs.hpp"
#include "regs_internal.hpp"

namespace normcore::gen {

using regs_detail::ones;

namespace {

struct Version {
  std::uint64_t major = 0, minor = 0, patch = 0;
};

Version parse_version(const std::string& text) {
  Version v;
  std::uint64_t* parts[] = {&v.major, &v.minor, &v.patch};
  std::size_t i = 0;
  for (char ch : text) {
    if (ch == '.') {
      if (++i >= 3) break;
    } else if (std::isdigit(static_cast<unsigned char>(ch))) {
      *parts[i] = *parts[i] * 10 + static_cast<std::uint64_t>(ch - '0');
    } else {
      break;  // pre-release suffix
    }
  }
  return v;
}

std::uint64_t spec_rounding(const CoreConfig& c) {
  return static_cast<std::uint64_t>(parse_rounding(c.fixed_rounding));
}

Field ro_const(std::string name, int lsb, int width, std::uint64_t value, std::string desc) {
  return Field{std::move(name), lsb, width, Access::ro, value, std::move(desc), true};
}
Field ro_in(std::string name, int lsb, int width, std::string desc) {
  return Field{std::move(name), lsb, width, Access::ro, 0, std::move(desc), false};
}
Field rw(std::string name, int lsb, int width, std::uint64_t reset, std::string desc) {
  return Field{std::move(name), lsb, width, Access::rw, reset, std::move(desc), false};
}
Field w1c(std::string name, int lsb, int width, std::string desc) {
  return Field{std::move(name), lsb, width, Access::w1c, 0, std::move(desc), false};
}
Field w1s_sc(std::string name, int lsb, std::string desc) {
  return Field{std::move(name), lsb, 1, Access::w1s_sc, 0, std::move(desc), false};
}

// Appends registers to a map.
struct MapBuilder {
  RegisterMap& m;
  void add(std::string name, std::uint32_t offset, std::string desc, std::vector<Field> f) {
    m.regs.push_back(Register{std::move(name), offset, std::move(desc), std::move(f)});
  }
  void whole_rw(std::string name, std::uint32_t offset, std::uint64_t reset, std::string desc,
                std::string fdesc) {
    add(std::move(name), offset, std::move(desc), {rw("value", 0, 32, reset, std::move(fdesc))});
  }
  void whole_ro(std::string name, std::uint32_t offset, const std::string& desc) {
    add(std::move(name), offset, desc, {ro_in("value", 0, 32, desc)});
  }
};

// Identification and capabilities (constants).
void ident_and_caps(MapBuilder& b, const AccelConfig& cfg) {
  const CoreConfig& c = cfg.core;
  const ArithSpec& a = c.arith;
  const Version ver = parse_version(kGeneratorVersion);
  b.add("ID", 0x000, "Identification", {ro_const("magic", 0, 32, kRegsMagic, "\"NCBN\" in ASCII")});
  b.add("VERSION", 0x004, "Generator and contract versions",
        {ro_const("patch", 0, 8, ver.patch, "generator version, patch"),
         ro_const("minor", 8, 8, ver.minor, "generator version, minor"),
         ro_const("major", 16, 8, ver.major, "generator version, major"),
         ro_const("contract", 24, 8, static_cast<std::uint64_t>(kContractVersion),
                  "arithmetic contract version")});
  b.add("CAPS0", 0x008, "Capabilities: datapath",
        {ro_const("lanes", 0, 8, static_cast<std::uint64_t>(c.lanes), "elements per stream beat"),
         ro_const("in_bits", 8, 6, static_cast<std::uint64_t>(a.xw), "input element bits"),
         ro_const("in_signed", 14, 1, a.x_signed ? 1 : 0, "input is two's complement"),
         ro_const("flush", 15, 1, a.flush_subnormals ? 1 : 0,
                  "float: subnormal inputs and results are flushed to signed zeros"),
         ro_const("out_bits", 16, 6, static_cast<std::uint64_t>(a.yw), "output element bits"),
         ro_const("out_signed", 22, 1, a.y_signed ? 1 : 0, "output is two's complement"),
         ro_const("round_modes", 24, 4,
                  c.has_fixed_rounding() ? std::uint64_t{1} << spec_rounding(c) : 0xF,
                  "supported rounding modes, bit per mode (floor, half_up, half_even, half_away)"),
         // contract v2: element types (0 int, 1 fp16, 2 bf16, 3 fp32); flush above
         ro_const("in_type", 28, 2, static_cast<std::uint64_t>(a.x_type),
                  "input element type: 0 int, 1 fp16, 2 bf16"),
         ro_const("out_type", 30, 2, static_cast<std::uint64_t>(a.y_type),
                  "output element type: 0 int, 1 fp16, 2 bf16, 3 fp32")});
  b.add("CAPS1", 0x00C, "Capabilities: channel table",
        {ro_const("max_channels", 0, 17, static_cast<std::uint64_t>(c.max_channels),
                  "largest CHANNELS value")});
  b.add(
      "CAPS2", 0x010, "Capabilities: memory interface",
      {ro_const("bus_bytes", 0, 8, static_cast<std::uint64_t>(cfg.bus_bytes()),
                "AXI4 data bus width in bytes"),
       ro_const("addr_bits", 8, 7, static_cast<std::uint64_t>(cfg.addr_bits), "AXI4 address bits"),
       ro_const("outstanding", 16, 5, static_cast<std::uint64_t>(cfg.outstanding),
                "read bursts in flight"),
       ro_const("max_burst_log2", 24, 4, static_cast<std::uint64_t>(clog2(cfg.max_burst)),
                "log2 of the beats per burst")});
  b.add(
      "CAPS3", 0x014, "Capabilities: parameter format",
      {ro_const("scale_bits", 0, 6, static_cast<std::uint64_t>(a.sw), "scale s[c] bits (signed)"),
       ro_const("offset_bits", 8, 6, static_cast<std::uint64_t>(a.bw), "offset b[c] bits (signed)"),
       ro_const("inner_bits", 16, 6, static_cast<std::uint64_t>(c.inner_bits), "INNER.value bits"),
       ro_const("param_entry_bytes", 24, 5, static_cast<std::uint64_t>(cfg.param_entry_bytes()),
                "bytes per parameter entry in memory ({b, s}, s in the low bits)")});
  const std::uint64_t layouts =
      c.has_fixed_layout() ? std::uint64_t{1} << (c.fixed_layout == "nhwc" ? 1 : 0) : 3;
  b.add("CAPS4", 0x018,
        "Capabilities: specialisation (job settings fixed when generated; others: ERR_UNSUPPORTED)",
        {ro_const("layouts", 0, 2, layouts, "supported layouts, bit per layout (nchw, nhwc)"),
         ro_const("c_multiple_of_lanes", 2, 1, c.lanes_divide_channels ? 1 : 0,
                  "CHANNELS must be a multiple of CAPS0.lanes"),
         ro_const("shift_fixed", 3, 1, c.has_fixed_shift() ? 1 : 0,
                  "MODE.shift must equal fixed_shift"),
         ro_const("fixed_shift", 8, 7,
                  c.has_fixed_shift() ? static_cast<std::uint64_t>(c.fixed_shift) : 0,
                  "the one R this core runs (when shift_fixed)")});
}

// Control and status.
void control_and_status(MapBuilder& b, bool ring) {
  std::vector<Field> ctrl = {
      w1s_sc("start", 0, "write 1: start a job with the current settings"),
      w1s_sc("soft_reset", 1, "write 1: abort the job and reset the engine (not the registers)"),
      rw("irq_en_done", 8, 1, 0, "raise irq_o when IRQ_STATUS.done is set"),
      rw("irq_en_error", 9, 1, 0, "raise irq_o when IRQ_STATUS.error is set")};
  std::vector<Field> irq = {w1c("done", 0, 1, "a job completed (write 1 to clear)"),
                            w1c("error", 1, 1, "a job stopped with an error (write 1 to clear)")};
  if (ring) {
    ctrl.push_back(rw("irq_en_ring", 10, 1, 0, "raise irq_o when IRQ_STATUS.ring is set"));
    irq.push_back(w1c("ring", 2, 1,
                      "ring descriptors completed: every RING_CTRL.coalesce, a descriptor with "
                      "its irq flag, or the ring drained (write 1 to clear)"));
  }
  b.add("CTRL", 0x020, "Control", std::move(ctrl));
  b.add("STATUS", 0x024, "Status",
        {ro_in("busy", 0, 1, "a job is running"), ro_in("done", 1, 1, "the last job completed"),
         ro_in("error", 2, 1, "the last job stopped with an error (see ERR_CODE)"),
         w1c("start_ignored", 3, 1, "START was written while busy (sticky; write 1 to clear)")});
  b.add("IRQ_STATUS", 0x028, "Interrupt status (irq_o = |(IRQ_STATUS & CTRL.irq_en_*))",
        std::move(irq));
  std::vector<FieldValue> codes;
  for (const auto& e : accel_error_codes()) {
    codes.push_back({static_cast<std::uint64_t>(e.code), e.name, e.meaning});
  }
  b.add("ERR_CODE", 0x02C, "Error code of the last failed job",
        {ro_in("code", 0, 8, "the error of the last failed job: see the values below")});
  b.m.values.emplace_back("ERR_CODE.code", std::move(codes));
  b.whole_ro("ERR_ADDR_LO", 0x030, "Failing address, bits 31:0");
  b.whole_ro("ERR_ADDR_HI", 0x034, "Failing address, bits 63:32");
}

// Job settings.
void job_settings(MapBuilder& b, const CoreConfig& c) {
  const ArithSpec& a = c.arith;
  const int yw = a.yw;
  const auto y_bits = [&](std::int64_t v) {
    return static_cast<std::uint64_t>(v) & ones(yw);  // two's complement in yw bits
  };
  b.add("CHANNELS", 0x040, "Channels C of the tensor",
        {rw("value", 0, c.chan_bits(), 1, "C, 1.." + std::to_string(c.max_channels))});
  b.add("INNER", 0x044, "Inner size HW (elements per channel and image)",
        {rw("value", 0, c.inner_bits, 1, "HW >= 1")});
  b.whole_rw("OUTER", 0x048, 1, "Outer size N (images)", "N >= 1");
  // A specialised core resets MODE to its fixed settings, so a job that leaves MODE alone runs.
  const std::string only = " (this core: only ";
  b.add("MODE", 0x04C, "Job mode",
        {rw("layout", 0, 1, c.has_fixed_layout() && c.fixed_layout == "nhwc" ? 1 : 0,
            "0: NCHW, 1: NHWC" + (c.has_fixed_layout() ? only + c.fixed_layout + ")" : "")),
         rw("rounding", 4, 2,
            c.has_fixed_rounding() ? spec_rounding(c)
                                   : static_cast<std::uint64_t>(Rounding::half_even),
            "0: floor, 1: half_up, 2: half_even, 3: half_away" +
                (c.has_fixed_rounding() ? only + c.fixed_rounding + ")" : "")),
         rw("shift", 8, c.rshift_bits(),
            c.has_fixed_shift() ? static_cast<std::uint64_t>(c.fixed_shift) : 0,
            "right shift R, 0.." + std::to_string(c.acc_bits()) +
                (c.has_fixed_shift() ? only + std::to_string(c.fixed_shift) + ")" : ""))});
  b.add("CLAMP_LO", 0x050, "Lower clamp bound",
        {rw("value", 0, yw, y_bits(a.y_min()),
            "lo, " + std::string(a.y_signed ? "two's complement" : "unsigned"))});
  b.add("CLAMP_HI", 0x054, "Upper clamp bound",
        {rw("value", 0, yw, y_bits(a.y_max()),
            "hi, " + std::string(a.y_signed ? "two's complement" : "unsigned"))});
}

// Addresses and performance counters.
void addresses_and_perf(MapBuilder& b) {
  b.whole_rw("SRC_LO", 0x060, 0, "Input tensor address, bits 31:0", "byte address");
  b.whole_rw("SRC_HI", 0x064, 0, "Input tensor address, bits 63:32", "byte address");
  b.whole_rw("DST_LO", 0x068, 0, "Output tensor address, bits 31:0", "byte address");
  b.whole_rw("DST_HI", 0x06C, 0, "Output tensor address, bits 63:32", "byte address");
  b.whole_rw("PARAM_LO", 0x070, 0, "Parameter table address, bits 31:0", "byte address");
  b.whole_rw("PARAM_HI", 0x074, 0, "Parameter table address, bits 63:32", "byte address");
  b.whole_rw("WIN_BASE_LO", 0x078, 0, "Allowed memory window: first byte address, bits 31:0",
             "byte address");
  b.whole_rw("WIN_BASE_HI", 0x07C, 0, "Allowed memory window: first byte address, bits 63:32",
             "byte address");
  b.whole_rw("WIN_LAST_LO", 0x080, 0xFFFFFFFF,
             "Allowed memory window: last byte address (inclusive), bits 31:0", "byte address");
  b.whole_rw("WIN_LAST_HI", 0x084, 0xFFFFFFFF,
             "Allowed memory window: last byte address (inclusive), bits 63:32", "byte address");

  b.whole_ro("PERF_ACTIVE", 0x090, "Cycles busy in the last job");
  b.whole_ro("PERF_RD_STALL", 0x094, "Cycles the read path waited for memory");
  b.whole_ro("PERF_WR_STALL", 0x098, "Cycles the write path waited for memory");
  b.whole_ro("PERF_ELEMS_LO", 0x09C, "Elements processed, bits 31:0");
  b.whole_ro("PERF_ELEMS_HI", 0x0A0, "Elements processed, bits 63:32");
}

// The descriptor ring (cfg.ring): where it is, how many entries, the producer and consumer
// indices, control and status. The descriptor format is the "Descriptor ring" note.
void ring_registers(MapBuilder& b) {
  b.add("RING_BASE_LO", 0x0B0, "Descriptor ring address, bits 31:0 (64-byte aligned)",
        {rw("addr", 6, 26, 0, "address bits 31:6 of descriptor 0 (bits 5:0 are 0)")});
  b.whole_rw("RING_BASE_HI", 0x0B4, 0, "Descriptor ring address, bits 63:32", "byte address");
  b.add("RING_SIZE", 0x0B8, "Descriptor ring size",
        {rw("log2_entries", 0, 4, 0,
            "the ring holds 2^log2_entries descriptors of 64 bytes; index i is slot i mod 2^k")});
  b.add("RING_HEAD", 0x0BC, "Producer index (host writes)",
        {rw("index", 0, 16, 0,
            "free-running: one past the last descriptor written (HEAD - TAIL <= 2^log2_entries)")});
  b.add(
      "RING_TAIL", 0x0C0, "Consumer index (device advances)",
      {ro_in("index", 0, 16, "free-running: the next descriptor to run (or the one stopped at)")});
  b.add("RING_CTRL", 0x0C4, "Descriptor ring control",
        {rw("enable", 0, 1, 0, "run descriptors while TAIL != HEAD"),
         w1s_sc("resume", 1, "write 1: leave the stopped state and run the descriptor at TAIL"),
         w1s_sc("skip", 2, "write 1: leave the stopped state, TAIL + 1, and go on"),
         rw("coalesce", 8, 16, 0,
            "IRQ_STATUS.ring every N completed descriptors (0: only when the ring drains)")});
  b.add("RING_STATUS", 0x0C8, "Descriptor ring status",
        {ro_in("active", 0, 1, "a descriptor is being fetched, run or written back"),
         ro_in("stopped", 1, 1,
               "halted: after a failed descriptor (TAIL is it) or a soft reset (TAIL is 0)")});
}

std::string ring_note(const AccelConfig& cfg) {
  return "With `--ring` the accelerator also runs jobs from a ring of 64-byte descriptors at "
         "RING_BASE (2^RING_SIZE.log2_entries slots, descriptor i in slot i mod 2^k). The host "
         "writes descriptors, then RING_HEAD; while RING_CTRL.enable is set, the engine is idle "
         "and RING_TAIL != RING_HEAD, the device runs the descriptor at TAIL: every check of a "
         "START job (ERR_CODE values, WIN_BASE/WIN_LAST from the registers), the same DMA, then "
         "it writes the status back into bytes 48..63 of the descriptor and TAIL + 1. All "
         "fields are little endian; a field is taken as writing it to its register would take "
         "it (the register's bits only).\n\n"
         "| bytes | field | content |\n|---|---|---|\n"
         "| 0..7 | SRC | input address (as SRC_LO/HI) |\n"
         "| 8..15 | DST | output address (as DST_LO/HI) |\n"
         "| 16..23 | PARAM | parameter table address (as PARAM_LO/HI) |\n"
         "| 24..27 | CHANNELS | as CHANNELS |\n| 28..31 | INNER | as INNER |\n"
         "| 32..35 | OUTER | as OUTER |\n"
         "| 36..39 | MODE | bits 15:0 as MODE; bit 16 irq: IRQ_STATUS.ring when it completes; "
         "bit 17 same_params: the table of the previous descriptor may be kept when PARAM and "
         "CHANNELS equal its own (a hint: the result is the same either way) |\n"
         "| 40..43 | CLAMP_LO | as CLAMP_LO |\n| 44..47 | CLAMP_HI | as CLAMP_HI |\n"
         "| 48..51 | STATUS | written: bit 0 done, bit 1 error, bits 15:8 the error code |\n"
         "| 52..55 | ELEMS | written: elements output, bits 31:0 |\n"
         "| 56..63 | ERR_ADDR | written: the failing address (as ERR_ADDR_LO/HI), else 0 |\n\n"
         "A ring job sets STATUS.done / error, ERR_CODE, ERR_ADDR and the PERF counters like a "
         "START job, but not IRQ_STATUS.done: IRQ_STATUS.ring is set every RING_CTRL.coalesce "
         "completed descriptors (0: never by count), after a descriptor with its irq flag, and "
         "when TAIL reaches HEAD. A failed descriptor writes its status, sets IRQ_STATUS.error "
         "and stops the ring with TAIL at it (RING_STATUS.stopped): RING_CTRL.resume runs it "
         "again (after the host fixed it), RING_CTRL.skip goes on with the next. A status write "
         "that fails (an error response) stops the ring at its descriptor with ERR_CODE write "
         "and no status; the next descriptor's output write may have started before that "
         "response, so its DST may hold (part of) its output (not its status): resume or skip "
         "runs it again. CTRL.soft_reset "
         "aborts the running descriptor (no status written), sets TAIL to 0 and stops the ring; "
         "the host writes RING_HEAD (0) and RING_CTRL.resume to use it again. START while a "
         "descriptor runs is ignored (STATUS.start_ignored). The ring registers are read at "
         "each descriptor, so the host may append (write HEAD) while the ring runs. In " +
         cfg.core.name +
         "_ctrl a descriptor with same_params whose PARAM, CHANNELS, INNER and "
         "MODE/CLAMP settings equal the previous job's runs without reloading the table (no core "
         "set-up, no datapath flush). On a bus wider than 128 bits the status is written as one "
         "bus word: the bytes of the descriptor below byte 48 in that word are written back "
         "unchanged.\n";
}

}  // namespace

// The parameter table PARAM_LO/HI points at, beside the params.bin file it comes from.
std::string param_table_note(const AccelConfig& cfg) {
  const ArithSpec& a = cfg.core.arith;
  const int e = cfg.param_entry_bytes();
  const std::string sw = std::to_string(a.sw), bw = std::to_string(a.bw);
  return "PARAM_LO/HI hold the byte address of the channel table the job loads: C entries of " +
         std::to_string(e) + " bytes (CAPS3.param_entry_bytes), entry c at PARAM + " +
         std::to_string(e) + "*c, little endian, aligned to the " +
         std::to_string(cfg.bus_bytes()) + "-byte bus word like SRC and DST.\n\n" +
         "| bits of entry c | content |\n|---|---|\n| [" + std::to_string(a.sw - 1) +
         ":0] | scale s[c], " + sw + "-bit two's complement (CAPS3.scale_bits) |\n| [" +
         std::to_string(a.sw + a.bw - 1) + ":" + sw + "] | offset b[c], " + bw +
         "-bit two's complement (CAPS3.offset_bits) |\n" +
         (a.sw + a.bw < e * 8 ? "| [" + std::to_string(e * 8 - 1) + ":" +
                                    std::to_string(a.sw + a.bw) + "] | zero |\n"
                              : std::string()) +
         "\nThe shift R, the rounding and the clamp bounds are per job (MODE, CLAMP_LO/HI), not "
         "per channel. The runtime builds this table from a params.bin file (docs/contract.md, "
         "section 7: a 64-byte header with R, rounding, clamp and widths, then i64 s[C], then "
         "i64 b[C]): entry c = s[c] | b[c] << " +
         sw + ", each truncated to its width.\n";
}

RegisterMap accel_register_map(const AccelConfig& cfg) {
  const CoreConfig& c = cfg.core;
  const ArithSpec& a = c.arith;
  const auto elem = [](int bits, bool sgn) {
    return (sgn ? "int" : "uint") + std::to_string(bits);
  };
  RegisterMap m;
  m.block = c.name + "_regs";
  m.desc = "Registers of the " + c.name + " accelerator (" + std::to_string(c.lanes) + " lanes, " +
           elem(a.xw, a.x_signed) + " -> " + elem(a.yw, a.y_signed) + ", up to " +
           std::to_string(c.max_channels) + " channels, " + std::to_string(cfg.bus_bits) +
           "-bit AXI4 master)";
  m.data_bits = 32;
  m.addr_bits = cfg.axil_addr_bits;
  MapBuilder b{m};
  ident_and_caps(b, cfg);
  control_and_status(b, cfg.ring);
  job_settings(b, c);
  addresses_and_perf(b);
  if (cfg.ring) ring_registers(b);
  m.notes.emplace_back("Parameter table in memory", param_table_note(cfg));
  if (cfg.ring) m.notes.emplace_back("Descriptor ring", ring_note(cfg));
  return m;
}

std::span<const AccelErrorInfo> accel_error_codes() {
  static const AccelErrorInfo kCodes[] = {
      {"none", AccelError::none, "no error (after reset and after a successful job)"},
      {"bad_channels", AccelError::bad_channels, "CHANNELS is 0 or above MAX_CHANNELS"},
      {"zero_length", AccelError::zero_length, "INNER or OUTER is 0"},
      {"bad_shift", AccelError::bad_shift, "MODE.shift R is above the accumulator width"},
      {"misaligned", AccelError::misaligned,
       "SRC, DST or PARAM is not a multiple of the bus width in bytes"},
      {"window", AccelError::window,
       "the input, output or parameter region lies outside [WIN_BASE, WIN_LAST] or the "
       "address width"},
      {"overlap", AccelError::overlap,
       "DST overlaps SRC (in place is allowed when DST == SRC and out_bits <= in_bits)"},
      {"read", AccelError::read, "SLVERR or DECERR on a read burst (ERR_ADDR: the bus word)"},
      {"write", AccelError::write, "SLVERR or DECERR on a write burst (ERR_ADDR: the burst)"},
      {"core", AccelError::core, "the core refused its configuration (not expected)"},
      {"unsupported", AccelError::unsupported,
       "a job this specialised core is not built for: R, rounding, layout or C % LANES (CAPS4)"}};
  return kCodes;
}

}  // namespace normcore::gen
