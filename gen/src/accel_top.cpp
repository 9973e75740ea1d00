// <n>_top: the register block, job control, read DMA -> read FIFO -> gearboxes -> core ->
// output gearbox -> write FIFO -> write DMA, wired together.
#include <stdexcept>

#include "accel_internal.hpp"
#include "normcore/gen/core.hpp"
#include "rtl_util.hpp"

namespace normcore::gen::accel_detail {

namespace {

using Conns = std::vector<std::pair<std::string, Expr>>;
using Names = std::vector<std::pair<std::string, std::string>>;

// Connections port -> the net of that name in m.
Conns by_name(const Module& m, const Names& names) {
  Conns out;
  for (const auto& [p, n] : names) out.emplace_back(p, m.ref(n));
  return out;
}
// m_axi_<ch><sig> -> the top port of the same name.
void axi_pass(const Module& m, Conns& out, const std::string& ch,
              std::initializer_list<const char*> sigs) {
  for (const char* s : sigs) out.emplace_back("m_axi_" + ch + s, m.ref("m_axi_" + ch + s));
}

void top_ports(Module& m, const AccelConfig& c, const Module& regs) {
  const int bus = c.bus_bits;
  m.in("clk_i", 1);
  m.in("rst_ni", 1, "synchronous, active low");
  for (const auto& p : regs.ports) {
    if (p.name.rfind("s_axil_", 0) == 0) m.port(p.name, p.output, p.width, "");
  }
  const char* addr_sig[] = {"id", "addr", "len", "size", "burst", "lock", "cache", "prot"};
  const int addr_w[] = {c.id_bits, c.addr_bits, 8, 3, 2, 1, 4, 3};
  auto addr_channel = [&](const std::string& s) {
    for (int i = 0; i < 8; ++i) m.out("m_axi_" + s + addr_sig[i], addr_w[i]);
    m.out("m_axi_" + s + "valid", 1);
    m.in("m_axi_" + s + "ready", 1);
  };
  addr_channel("aw");
  m.out("m_axi_wdata", bus);
  m.out("m_axi_wstrb", bus / 8);
  m.out("m_axi_wlast", 1);
  m.out("m_axi_wvalid", 1);
  m.in("m_axi_wready", 1);
  m.in("m_axi_bid", c.id_bits);
  m.in("m_axi_bresp", 2);
  m.in("m_axi_bvalid", 1);
  m.out("m_axi_bready", 1);
  addr_channel("ar");
  m.in("m_axi_rid", c.id_bits);
  m.in("m_axi_rdata", bus);
  m.in("m_axi_rresp", 2);
  m.in("m_axi_rlast", 1);
  m.in("m_axi_rvalid", 1);
  m.out("m_axi_rready", 1);
  m.out("irq_o", 1, "level: |(IRQ_STATUS & enables)");
}

// Every register-block field port becomes a wire r_<port>; status inputs from job control.
void regblock(Module& m, const Module& regs, bool ring) {
  m.section("Register block");
  Conns rconn;
  for (const auto& p : regs.ports) {
    if (p.name == "clk_i" || p.name == "rst_ni" || p.name.rfind("s_axil_", 0) == 0) {
      rconn.emplace_back(p.name, m.ref(p.name));
    } else {
      rconn.emplace_back(p.name, m.wire("r_" + p.name, p.width));
    }
  }
  m.instance(Instance{regs.name, "u_regs", rconn, {}});
  m.section("Job control");
  const std::pair<const char*, int> ctrl_out[] = {
      {"busy", 1},         {"done", 1},           {"error", 1},          {"start_ignored", 1},
      {"irq_done", 1},     {"irq_error", 1},      {"err_code", 8},       {"err_addr", 64},
      {"perf_active", 32}, {"perf_rd_stall", 32}, {"perf_wr_stall", 32}, {"perf_elems", 64}};
  for (const auto& [n, w] : ctrl_out) m.wire(std::string("c_") + n, w);
  const Names status = {{"status_busy_i", "c_busy"},
                        {"status_done_i", "c_done"},
                        {"status_error_i", "c_error"},
                        {"status_start_ignored_set_i", "c_start_ignored"},
                        {"irq_status_done_set_i", "c_irq_done"},
                        {"irq_status_error_set_i", "c_irq_error"},
                        {"err_code_code_i", "c_err_code"},
                        {"perf_active_value_i", "c_perf_active"},
                        {"perf_rd_stall_value_i", "c_perf_rd_stall"},
                        {"perf_wr_stall_value_i", "c_perf_wr_stall"}};
  for (const auto& [p, w] : status) m.assign(m.ref("r_" + p), m.ref(w));
  for (const std::string r : {"err_addr", "perf_elems"}) {
    const std::string lo = r == "err_addr" ? "err_addr_lo" : "perf_elems_lo";
    const std::string hi = r == "err_addr" ? "err_addr_hi" : "perf_elems_hi";
    m.assign(m.ref("r_" + lo + "_value_i"), ex::slice(m.ref("c_" + r), 0, 32));
    m.assign(m.ref("r_" + hi + "_value_i"), ex::slice(m.ref("c_" + r), 32, 32));
  }
  Expr irq = (m.ref("r_irq_status_done_o") & m.ref("r_ctrl_irq_en_done_o")) |
             (m.ref("r_irq_status_error_o") & m.ref("r_ctrl_irq_en_error_o"));
  if (ring) irq = irq | (m.ref("r_irq_status_ring_o") & m.ref("r_ctrl_irq_en_ring_o"));
  m.assign(m.ref("irq_o"), irq);
  rtl::sink(m, "unused_sticky", {m.ref("r_status_start_ignored_o")});
}

void datapath_wires(Module& m, const AccelConfig& c) {
  const auto& core = c.core;
  const auto& a = core.arith;
  const AccelSizes sz = accel_sizes(c);
  const int L = core.lanes, cw = core.chan_bits(), bus = c.bus_bits, aw = c.addr_bits;
  const int rcb = bits_for(rd_depth(c) + 1), wcb = bits_for(wr_depth(c) + 1);
  const std::pair<const char*, int> wires[] = {
      {"k_channels", cw},   {"k_inner", core.inner_bits},
      {"k_layout", 1},      {"k_shift", core.rshift_bits()},
      {"k_round", 2},       {"k_lo", a.yw},
      {"k_hi", a.yw},       {"k_start", 1},
      {"k_ready", 1},       {"k_configured", 1},
      {"k_cfg_error", 1},   {"k_prm_ready", 1},
      {"dp_rst_n", 1},      {"phase_param", 1},
      {"pg_start", 1},      {"ig_start", 1},
      {"total", sz.tw},     {"rd_start", 1},
      {"rd_addr", aw},      {"rd_words", sz.wb},
      {"rd_abort", 1},      {"rd_idle", 1},
      {"rd_done", 1},       {"rd_err", 1},
      {"rd_err_addr", aw},  {"wr_start", 1},
      {"wr_addr", aw},      {"wr_words", sz.wb},
      {"wr_strb", bus / 8}, {"wr_abort", 1},
      {"wr_idle", 1},       {"wr_done", 1},
      {"wr_err", 1},        {"wr_err_addr", aw},
      {"s_valid", 1},       {"s_ready", 1},
      {"s_data", L * a.xw}, {"s_keep", L},
      {"s_last", 1},        {"m_valid", 1},
      {"m_ready", 1},       {"m_data", L * a.yw},
      {"m_keep", L},        {"m_last", 1},
      {"pg_valid", 1},      {"pg_data", c.param_entry_bytes() * 8},
      {"pg_keep", 1},       {"pg_last", 1},
      {"rf_valid", 1},      {"rf_data", bus},
      {"rf_count", rcb},    {"rf_rd", 1},
      {"rf_wr", 1},         {"rf_wdata", bus},
      {"pg_in_ready", 1},   {"ig_in_ready", 1},
      {"og_valid", 1},      {"og_data", bus},
      {"wf_count", wcb},    {"wf_valid", 1},
      {"wf_data", bus},     {"wf_pop", 1},
      {"wf_space", 1}};
  for (const auto& [n, w] : wires) m.wire(n, w);
  if (c.ring) {
    for (const auto& [n, w] : {std::pair<const char*, int>{"desc_rd", 1},
                               {"wr_sent", 1},
                               {"wr_bok", 1},
                               {"rd_dv", 1},
                               {"phase_wb", 1},
                               {"wb_valid", 1},
                               {"wb_data", bus},
                               {"ig_open", 1},
                               {"ig_take", 1},
                               {"rd_next_ok", 1},
                               {"rd_rx_new", 1},
                               {"rd_err_new", 1}}) {
      m.wire(n, w);
    }
  }
}

// The descriptor ring's connections of <n>_ctrl (--ring).
void ring_conns(Module& m, Conns& cc) {
  const auto r = [&](const std::string& p) { return m.ref("r_" + p); };
  const Names from_regs = {
      {"ring_enable_i", "ring_ctrl_enable_o"},     {"ring_resume_i", "ring_ctrl_resume_o"},
      {"ring_skip_i", "ring_ctrl_skip_o"},         {"ring_coalesce_i", "ring_ctrl_coalesce_o"},
      {"ring_head_i", "ring_head_index_o"},        {"ring_log2_i", "ring_size_log2_entries_o"},
      {"ring_tail_o", "ring_tail_index_i"},        {"ring_active_o", "ring_status_active_i"},
      {"ring_stopped_o", "ring_status_stopped_i"}, {"irq_ring_o", "irq_status_ring_set_i"}};
  for (const auto& [p, w] : from_regs) cc.emplace_back(p, r(w));
  cc.emplace_back("ring_base_i",
                  ex::cat({r("ring_base_hi_value_o"), r("ring_base_lo_addr_o"), ex::lit(6, 0)}));
  for (const auto& x : by_name(m, {{"rd_valid_i", "rd_dv"},
                                   {"rd_data_i", "rf_wdata"},
                                   {"wf_space_i", "wf_space"},
                                   {"wr_sent_i", "wr_sent"},
                                   {"wr_bok_i", "wr_bok"},
                                   {"desc_rd_o", "desc_rd"},
                                   {"phase_wb_o", "phase_wb"},
                                   {"wb_valid_o", "wb_valid"},
                                   {"wb_data_o", "wb_data"},
                                   {"ig_take_i", "ig_take"},
                                   {"rd_next_ok_i", "rd_next_ok"},
                                   {"rd_rx_new_i", "rd_rx_new"},
                                   {"rd_err_new_i", "rd_err_new"},
                                   {"ig_open_o", "ig_open"}})) {
    cc.push_back(x);
  }
}

void ctrl_instance(Module& m, const std::string& n, bool ring) {
  const auto r = [&](const std::string& p) { return m.ref("r_" + p); };
  const auto reg64 = [&](const std::string& x) {
    return ex::cat({r(x + "_hi_value_o"), r(x + "_lo_value_o")});
  };
  Conns cc = by_name(m, {{"clk_i", "clk_i"}, {"rst_ni", "rst_ni"}});
  const Names from_regs = {
      {"start_i", "ctrl_start_o"},        {"soft_reset_i", "ctrl_soft_reset_o"},
      {"channels_i", "channels_value_o"}, {"inner_i", "inner_value_o"},
      {"outer_i", "outer_value_o"},       {"layout_i", "mode_layout_o"},
      {"round_i", "mode_rounding_o"},     {"shift_i", "mode_shift_o"},
      {"lo_i", "clamp_lo_value_o"},       {"hi_i", "clamp_hi_value_o"}};
  for (const auto& [p, w] : from_regs) cc.emplace_back(p, r(w));
  for (const std::string x : {"src", "dst", "param", "win_base", "win_last"}) {
    cc.emplace_back(x + "_i", reg64(x));
  }
  for (const std::string o :
       {"busy", "done", "error", "start_ignored", "irq_done", "irq_error", "err_code", "err_addr",
        "perf_active", "perf_rd_stall", "perf_wr_stall", "perf_elems"}) {
    cc.emplace_back(o + "_o", m.ref("c_" + o));
  }
  const Names core_side = {{"core_channels_o", "k_channels"},
                           {"core_inner_o", "k_inner"},
                           {"core_layout_o", "k_layout"},
                           {"core_shift_o", "k_shift"},
                           {"core_round_o", "k_round"},
                           {"core_lo_o", "k_lo"},
                           {"core_hi_o", "k_hi"},
                           {"core_start_o", "k_start"},
                           {"core_ready_i", "k_ready"},
                           {"core_configured_i", "k_configured"},
                           {"core_cfg_error_i", "k_cfg_error"}};
  for (const auto& c : by_name(m, core_side)) cc.push_back(c);
  cc.emplace_back("prm_fire_i", m.ref("pg_valid") & m.ref("k_prm_ready"));
  const Names dp = {{"s_valid_i", "s_valid"},         {"s_ready_i", "s_ready"},
                    {"m_valid_i", "m_valid"},         {"m_ready_i", "m_ready"},
                    {"m_keep_i", "m_keep"},           {"dp_rst_no", "dp_rst_n"},
                    {"phase_param_o", "phase_param"}, {"pg_start_o", "pg_start"},
                    {"ig_start_o", "ig_start"},       {"total_o", "total"},
                    {"rd_start_o", "rd_start"},       {"rd_addr_o", "rd_addr"},
                    {"rd_words_o", "rd_words"},       {"rd_abort_o", "rd_abort"},
                    {"rd_idle_i", "rd_idle"},         {"rd_done_i", "rd_done"},
                    {"rd_err_i", "rd_err"},           {"rd_err_addr_i", "rd_err_addr"},
                    {"wr_start_o", "wr_start"},       {"wr_addr_o", "wr_addr"},
                    {"wr_words_o", "wr_words"},       {"wr_last_strb_o", "wr_strb"},
                    {"wr_abort_o", "wr_abort"},       {"wr_idle_i", "wr_idle"},
                    {"wr_done_i", "wr_done"},         {"wr_err_i", "wr_err"},
                    {"wr_err_addr_i", "wr_err_addr"}};
  for (const auto& c : by_name(m, dp)) cc.push_back(c);
  if (ring) ring_conns(m, cc);
  m.instance(Instance{n + "_ctrl", "u_ctrl", cc, {}});
}

const Names rdma_ring_outs = {
    {"next_ok_o", "rd_next_ok"}, {"rx_new_o", "rd_rx_new"}, {"err_new_o", "rd_err_new"}};

void read_path(Module& m, const AccelConfig& c) {
  const auto& core = c.core;
  const std::string n = core.name;
  const int rd = rd_depth(c), rcb = bits_for(rd + 1);
  const int pbits = c.param_entry_bytes() * 8;
  const Expr phase = m.ref("phase_param");
  m.section("Read DMA -> read FIFO -> parameter / data gearboxes");
  Conns rc = by_name(m, {{"clk_i", "clk_i"},
                         {"rst_ni", "dp_rst_n"},
                         {"start_i", "rd_start"},
                         {"addr_i", "rd_addr"},
                         {"words_i", "rd_words"},
                         {"abort_i", "rd_abort"}});
  rc.emplace_back("credit_i", ex::lit(rcb, static_cast<std::uint64_t>(rd + 1)) - m.ref("rf_count"));
  axi_pass(m, rc, "ar",
           {"id", "addr", "len", "size", "burst", "lock", "cache", "prot", "valid", "ready"});
  axi_pass(m, rc, "r", {"id", "data", "resp", "last", "valid", "ready"});
  if (c.ring) {  // descriptor words go to the controller, not into the read FIFO
    m.assign(m.ref("rf_wr"), m.ref("rd_dv") & ~m.ref("desc_rd"));
  }
  for (const auto& x : by_name(m, {{"data_valid_o", c.ring ? "rd_dv" : "rf_wr"},
                                   {"data_o", "rf_wdata"},
                                   {"idle_o", "rd_idle"},
                                   {"done_o", "rd_done"},
                                   {"err_o", "rd_err"},
                                   {"err_addr_o", "rd_err_addr"}})) {
    rc.push_back(x);
  }
  if (c.ring) {  // overlapping requests (accel_dma.cpp, rdma_overlap)
    for (const auto& x : by_name(m, rdma_ring_outs)) rc.push_back(x);
  }
  m.instance(Instance{n + "_rdma", "u_rdma", rc, {}});
  m.instance(Instance{n + "_rfifo",
                      "u_rfifo",
                      by_name(m, {{"clk_i", "clk_i"},
                                  {"rst_ni", "dp_rst_n"},
                                  {"wr_i", "rf_wr"},
                                  {"wdata_i", "rf_wdata"},
                                  {"rd_i", "rf_rd"},
                                  {"rdata_o", "rf_data"},
                                  {"valid_o", "rf_valid"},
                                  {"count_o", "rf_count"}}),
                      {}});
  // With the ring the input gearbox takes only its job's words (ig_open): the next job's input
  // may already wait in the read FIFO behind them (the early read).
  const Expr ig_open = c.ring ? m.ref("ig_open") : ex::lit(1, 1);
  const Expr ig_ready = c.ring ? m.ref("ig_in_ready") & ig_open : m.ref("ig_in_ready");
  m.assign(m.ref("rf_rd"), m.ref("rf_valid") & ex::mux(phase, m.ref("pg_in_ready"), ig_ready));
  if (c.ring) m.assign(m.ref("ig_take"), m.ref("rf_rd") & ~phase);
  auto gear = [&](const char* g, const char* start, const char* total, const Expr& valid,
                  const char* pre, const std::string& cmt) {
    Conns gc = by_name(
        m, {{"clk_i", "clk_i"}, {"rst_ni", "dp_rst_n"}, {"start_i", start}, {"total_i", total}});
    gc.emplace_back("in_valid_i", valid);
    const std::string p(pre);
    const std::string ready = p == "pg" ? "pg_in_ready" : "ig_in_ready";
    const Names outs = {{"in_ready_o", ready},
                        {"in_data_i", "rf_data"},
                        {"out_valid_o", p == "pg" ? "pg_valid" : "s_valid"},
                        {"out_ready_i", p == "pg" ? "k_prm_ready" : "s_ready"},
                        {"out_data_o", p == "pg" ? "pg_data" : "s_data"},
                        {"out_keep_o", p == "pg" ? "pg_keep" : "s_keep"},
                        {"out_last_o", p == "pg" ? "pg_last" : "s_last"}};
    for (const auto& x : by_name(m, outs)) gc.push_back(x);
    m.instance(Instance{n + "_" + g, std::string("u_") + g, gc, cmt});
  };
  gear("pgear", "pg_start", "k_channels", m.ref("rf_valid") & phase, "pg",
       "parameter entries {shift, scale} -> core parameter port");
  std::vector<Expr> unused_pg = {m.ref("pg_keep"), m.ref("pg_last")};
  if (pbits > core.param_bits()) {
    unused_pg.push_back(ex::slice(m.ref("pg_data"), core.param_bits(), pbits - core.param_bits()));
  }
  rtl::sink(m, "unused_pg", unused_pg);
  gear("igear", "ig_start", "total",
       c.ring ? m.ref("rf_valid") & ~phase & ig_open : m.ref("rf_valid") & ~phase, "ig",
       "bus words -> beats of " + std::to_string(core.lanes) + " elements");
}

// The skid buffer between the input gearbox and the core: the core's s_axis_tready reaches the
// gearbox (and the read FIFO behind it) through a flop, not in the same cycle.
void input_slice(Module& m, const AccelConfig& c) {
  const int L = c.core.lanes, dw = L * c.core.arith.xw;
  const Expr payload = m.wire("ks_payload", dw + L + 1, "{last, keep, data} after the slice");
  m.wire("ks_valid", 1);
  m.wire("ks_ready", 1);
  Conns sc = by_name(m, {{"clk_i", "clk_i"},
                         {"rst_ni", "dp_rst_n"},
                         {"in_valid_i", "s_valid"},
                         {"in_ready_o", "s_ready"}});
  sc.emplace_back("in_data_i", ex::cat({m.ref("s_last"), m.ref("s_keep"), m.ref("s_data")}));
  for (const auto& x : by_name(m, {{"out_valid_o", "ks_valid"},
                                   {"out_ready_i", "ks_ready"},
                                   {"out_data_o", "ks_payload"}})) {
    sc.push_back(x);
  }
  m.instance(Instance{c.core.name + "_skid", "u_skid", sc, "register slice: gearbox -> core"});
  m.wire("ks_data", dw);
  m.wire("ks_keep", L);
  m.wire("ks_last", 1);
  m.assign(m.ref("ks_data"), ex::slice(payload, 0, dw));
  m.assign(m.ref("ks_keep"), ex::slice(payload, dw, L));
  m.assign(m.ref("ks_last"), ex::bit(payload, dw + L));
}

void core_instance(Module& m, const AccelConfig& c) {
  const auto& a = c.core.arith;
  input_slice(m, c);
  m.section("Streaming core");
  Conns cc = by_name(m, {{"clk_i", "clk_i"},
                         {"rst_ni", "dp_rst_n"},
                         {"cfg_channels_i", "k_channels"},
                         {"cfg_inner_i", "k_inner"},
                         {"cfg_layout_i", "k_layout"},
                         {"cfg_shift_i", "k_shift"},
                         {"cfg_round_i", "k_round"},
                         {"cfg_lo_i", "k_lo"},
                         {"cfg_hi_i", "k_hi"},
                         {"start_i", "k_start"},
                         {"ready_o", "k_ready"},
                         {"configured_o", "k_configured"},
                         {"cfg_error_o", "k_cfg_error"},
                         {"prm_valid_i", "pg_valid"},
                         {"prm_ready_o", "k_prm_ready"}});
  cc.emplace_back("prm_scale_i", ex::slice(m.ref("pg_data"), 0, a.sw));
  cc.emplace_back("prm_offset_i", ex::slice(m.ref("pg_data"), a.sw, a.bw));
  for (const std::string s : {"valid", "ready", "data", "keep", "last"}) {
    cc.emplace_back("s_axis_t" + s, m.ref("ks_" + s));
  }
  for (const std::string s : {"valid", "ready", "data", "keep", "last"}) {
    cc.emplace_back("m_axis_t" + s, m.ref("m_" + s));
  }
  m.instance(Instance{c.core.top_name(), "u_core", cc, {}});
}

void write_path(Module& m, const AccelConfig& c) {
  const std::string n = c.core.name;
  const int wd = wr_depth(c), wcb = bits_for(wd + 1);
  m.section("Output gearbox -> write FIFO -> write DMA");
  if (c.ring) {  // the status words of a descriptor take the write FIFO in WB
    m.assign(m.wire("og_ready", 1), m.ref("wf_space") & ~m.ref("phase_wb"));
  }
  m.instance(Instance{n + "_ogear",
                      "u_ogear",
                      by_name(m, {{"clk_i", "clk_i"},
                                  {"rst_ni", "dp_rst_n"},
                                  {"in_valid_i", "m_valid"},
                                  {"in_ready_o", "m_ready"},
                                  {"in_data_i", "m_data"},
                                  {"in_keep_i", "m_keep"},
                                  {"in_last_i", "m_last"},
                                  {"out_valid_o", "og_valid"},
                                  {"out_ready_i", c.ring ? "og_ready" : "wf_space"},
                                  {"out_data_o", "og_data"}}),
                      {}});
  m.assign(m.ref("wf_space"),
           ex::lt(m.ref("wf_count"), ex::lit(wcb, static_cast<std::uint64_t>(wd + 1))));
  Conns fc = by_name(m, {{"clk_i", "clk_i"}, {"rst_ni", "dp_rst_n"}});
  if (c.ring) {
    fc.emplace_back("wr_i", ex::mux(m.ref("phase_wb"), m.ref("wb_valid"),
                                    m.ref("og_valid") & m.ref("wf_space")));
    fc.emplace_back("wdata_i", ex::mux(m.ref("phase_wb"), m.ref("wb_data"), m.ref("og_data")));
  } else {
    fc.emplace_back("wr_i", m.ref("og_valid") & m.ref("wf_space"));
    fc.emplace_back("wdata_i", m.ref("og_data"));
  }
  for (const auto& x : by_name(m, {{"rd_i", "wf_pop"},
                                   {"rdata_o", "wf_data"},
                                   {"valid_o", "wf_valid"},
                                   {"count_o", "wf_count"}})) {
    fc.push_back(x);
  }
  m.instance(Instance{n + "_wfifo", "u_wfifo", fc, {}});
  Conns wc = by_name(m, {{"clk_i", "clk_i"},
                         {"rst_ni", "dp_rst_n"},
                         {"start_i", "wr_start"},
                         {"addr_i", "wr_addr"},
                         {"words_i", "wr_words"},
                         {"last_strb_i", "wr_strb"},
                         {"abort_i", "wr_abort"},
                         {"fifo_count_i", "wf_count"},
                         {"fifo_valid_i", "wf_valid"},
                         {"fifo_data_i", "wf_data"},
                         {"fifo_pop_o", "wf_pop"}});
  axi_pass(m, wc, "aw",
           {"id", "addr", "len", "size", "burst", "lock", "cache", "prot", "valid", "ready"});
  axi_pass(m, wc, "w", {"data", "strb", "last", "valid", "ready"});
  axi_pass(m, wc, "b", {"id", "resp", "valid", "ready"});
  for (const auto& x : by_name(m, {{"idle_o", "wr_idle"},
                                   {"done_o", "wr_done"},
                                   {"err_o", "wr_err"},
                                   {"err_addr_o", "wr_err_addr"}})) {
    wc.push_back(x);
  }
  if (c.ring) {
    wc.emplace_back("sent_o", m.ref("wr_sent"));
    wc.emplace_back("bok_o", m.ref("wr_bok"));
  }
  m.instance(Instance{n + "_wdma", "u_wdma", wc, {}});
}

}  // namespace

Module build_top(const AccelConfig& c, const Module& regs) {
  Module m;
  m.name = c.top_name();
  m.description = {
      "normcore accelerator: AXI4-Lite registers (s_axil_*), AXI4 DMA master (m_axi_*, " +
          std::to_string(c.bus_bits) + "-bit), irq_o.",
      "A job: START -> validate -> core set-up -> DMA C parameters from PARAM -> stream N*C*HW",
      "elements SRC -> core -> DST -> DONE + IRQ. See the register reference for the map."};
  top_ports(m, c, regs);
  regblock(m, regs, c.ring);
  datapath_wires(m, c);
  ctrl_instance(m, c.core.name, c.ring);
  read_path(m, c);
  core_instance(m, c);
  write_path(m, c);
  return m;
}

}  // namespace normcore::gen::accel_detail
