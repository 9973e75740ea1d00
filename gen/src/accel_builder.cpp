// The memory-mapped accelerator: the module list of <n>_top (build_accel) and its design
// directory (render_accel). The modules' builders: job control accel_ctrl.cpp, the top
// accel_top.cpp, DMA engines accel_dma.cpp, FIFOs accel_parts.cpp, gearboxes and the burst issuer
// prim_axi.cpp. See docs/architecture.md ("The accelerator").
#include <stdexcept>

#include "accel_internal.hpp"
#include "accel_parts.hpp"
#include "normcore/gen/accel.hpp"
#include "normcore/gen/core.hpp"
#include "normcore/gen/eda.hpp"
#include "normcore/gen/regs.hpp"
#include "prim_axi.hpp"
#include "primitives.hpp"

namespace normcore::gen {

std::vector<Module> build_accel(const AccelConfig& c) {
  if (auto err = c.check(); !err.empty()) throw std::invalid_argument(err);
  const auto& core = c.core;
  const accel_detail::AccelSizes sz = accel_detail::accel_sizes(c);
  const std::string n = core.name;
  std::vector<Module> mods = build_core(core);
  const RegisterMap map = accel_register_map(c);
  Module regs = build_regblock(map, n + "_regs");
  const int rd = accel_detail::rd_depth(c), wd = accel_detail::wr_depth(c);
  mods.push_back(build_ram_fifo(n + "_rfifo", c.bus_bits, rd));
  mods.push_back(build_ram_fifo(n + "_wfifo", c.bus_bits, wd));
  mods.push_back(prim::build_gear_in(n + "_pgear", c.bus_bits, c.param_entry_bytes() * 8, 1,
                                     core.chan_bits()));
  mods.push_back(prim::build_gear_in(n + "_igear", c.bus_bits, core.arith.xw, core.lanes, sz.tw));
  const int sbits = core.lanes * core.arith.xw + core.lanes + 1;
  mods.push_back(skid_module(
      {n + "_skid",
       sbits,
       {"Register slice between the input gearbox and the core: {last, keep, data}."}}));
  mods.push_back(prim::build_gear_out(n + "_ogear", c.bus_bits, core.arith.yw, core.lanes));
  mods.push_back(build_rdma(c, n + "_rdma", sz.wb, bits_for(rd + 1)));
  mods.push_back(build_flop_fifo(n + "_wdma_lenq", 8, std::max(2, c.outstanding)));
  mods.push_back(build_flop_fifo(n + "_wdma_adrq", c.addr_bits, std::max(2, c.outstanding)));
  mods.push_back(build_wdma(c, n + "_wdma", sz.wb, bits_for(wd + 1)));
  mods.push_back(accel_detail::build_ctrl(c, n + "_ctrl"));
  Module top = accel_detail::build_top(c, regs);
  mods.push_back(std::move(regs));
  mods.push_back(std::move(top));
  return mods;
}

}  // namespace normcore::gen

namespace normcore::gen {

std::vector<GeneratedFile> render_accel(const AccelConfig& cfg) {
  if (auto err = cfg.check(); !err.empty()) throw std::invalid_argument(err);
  const auto modules = build_accel(cfg);
  const auto map = accel_register_map(cfg);
  const auto cj = cfg.to_json();
  std::vector<GeneratedFile> out;
  nlohmann::json files = nlohmann::json::array();
  for (const auto& m : modules) {
    const std::string fname = m.name + ".v";
    out.push_back({fname, emit_module(m, generated_header(cj, fname))});
    files.push_back(fname);
  }
  const std::string n = cfg.core.name;
  auto commented = [&](const std::string& text, const std::string& fname, const char* lead) {
    std::string h;
    for (const auto& line : generated_header(cj, fname)) h += std::string(lead) + line + "\n";
    return h + text;
  };
  out.push_back({n + "_regs.h", commented(emit_plain_c_header(map), n + "_regs.h", "// ")});
  out.push_back({n + "_regs.hpp", commented(emit_c_header(map), n + "_regs.hpp", "// ")});
  out.push_back({n + "_regs.rdl", commented(emit_systemrdl(map), n + "_regs.rdl", "// ")});
  out.push_back({n + "_registers.md", emit_markdown(map)});
  const FlowDesign flow{cfg.core, modules, cj, {n + "_regs.h"}, {n + "_regs.hpp"}};
  for (auto& f : flow_files(flow)) out.push_back(std::move(f));
  nlohmann::json ports = nlohmann::json::array();
  for (const auto& p : modules.back().ports) {
    ports.push_back({{"name", p.name}, {"dir", p.output ? "output" : "input"}, {"width", p.width}});
  }
  nlohmann::json errors = nlohmann::json::object();
  for (const auto& e : accel_error_codes()) errors[e.name] = static_cast<int>(e.code);
  nlohmann::json man{
      {"generator", "normcore-gen"},
      {"generator_version", kGeneratorVersion},
      {"contract_version", kContractVersion},
      {"kind", "accelerator"},
      {"top", cfg.top_name()},
      {"core_top", cfg.core.top_name()},
      {"config", cj},
      {"latency", cfg.core.latency()},
      {"param_entry",
       {{"bytes", cfg.param_entry_bytes()},
        {"layout", "little endian; scale s in bits [" + std::to_string(cfg.core.arith.sw - 1) +
                       ":0], offset b in bits [" +
                       std::to_string(cfg.core.arith.sw + cfg.core.arith.bw - 1) + ":" +
                       std::to_string(cfg.core.arith.sw) + "], both two's complement"}}},
      {"tensor_packing", "elements packed LSB first at in_bits (input) / out_bits (output)"},
      {"alignment_bytes", cfg.bus_bytes()},
      {"error_codes", errors},
      {"registers", regs_json(map)},
      {"files", files},
      {"ports", ports},
  };
  man.update(flow_manifest(flow));
  man["flow_files"]["systemrdl"] = n + "_regs.rdl";
  man["flow_files"]["register_doc"] = n + "_registers.md";
  out.push_back({"manifest.json", man.dump(2) + "\n"});
  return out;
}

}  // namespace normcore::gen
