// Writes the outputs of the register description for the register-block tests:
//   <dir>/<name>_regs.{v,h,md,rdl,json}  for the default AccelConfig (name "normcore")
//   <dir>/lint/*.v                        register blocks of edge configurations and of a map with
//                                         gaps, multi-bit w1c fields and fields across byte lanes
//                                         (lint / synthesis / Icarus only)
// Usage: regs_gen <dir>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "gen/accel_configs.hpp"
#include "normcore/gen/regs.hpp"

namespace {

using namespace normcore::gen;

void write(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream os(p, std::ios::binary);
  os << text;
  os.close();
  if (!os) throw std::runtime_error("cannot write " + p.string());
}

void write_block(const std::filesystem::path& dir, const RegisterMap& map) {
  write(dir / (map.block + ".v"), emit_regblock(map, map.block));
}

RegisterMap odd_map() {
  RegisterMap m;
  m.block = "odd_regs";
  m.desc = "Edge cases: gaps, multi-bit w1c and w1s_sc fields, fields across byte lanes";
  m.addr_bits = 4;
  m.regs = {
      Register{"A",
               0x0,
               "mixed",
               {Field{"lo", 4, 7, Access::rw, 0x55, "rw across byte lanes 0 and 1", false},
                Field{"flags", 12, 3, Access::w1c, 0, "three sticky bits", false},
                Field{"go", 20, 2, Access::w1s_sc, 0, "two pulse bits", false},
                Field{"k", 28, 3, Access::ro, 5, "constant", true}}},
      Register{"B", 0x8, "inputs only", {Field{"v", 3, 9, Access::ro, 0, "hw value", false}}},
  };
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: regs_gen <dir>\n");
    return 2;
  }
  try {
    const std::filesystem::path dir = argv[1];
    const AccelConfig def;
    const RegisterMap map = accel_register_map(def);
    if (auto err = map.check(); !err.empty()) throw std::runtime_error(err);
    write(dir / (map.block + ".v"), emit_regblock(map, map.block));
    write(dir / (map.block + ".h"), emit_c_header(map));
    write(dir / (map.block + ".md"), emit_markdown(map));
    write(dir / (map.block + ".rdl"), emit_systemrdl(map));
    write(dir / (map.block + ".json"), regs_json(map).dump(2) + "\n");

    // The generator tests' smallest and widest accelerators, under the lint file names.
    AccelConfig small = normcore::gen::test_configs::small_config();
    small.core.name = "ncsmall";
    AccelConfig big = normcore::gen::test_configs::big_config();
    big.core.name = "ncbig";
    for (const AccelConfig* c : {&small, &big}) {
      if (auto err = c->check(); !err.empty()) throw std::runtime_error(err);
      write_block(dir / "lint", accel_register_map(*c));
    }
    write_block(dir / "lint", odd_map());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "regs_gen: %s\n", e.what());
    return 1;
  }
  return 0;
}
