#!/usr/bin/env python3
"""Checks that a synthesized hard-mac reference really uses the DSP's own registers.

`normcore gen --design hard-mac-<family>` instantiates one DSP primitive per lane with its input,
pipeline and output registers. Synthesis may rewrite such an instance (Yosys 0.23's
`synth_ice40 -dsp` turns the registers off: see shared TOOLCHAIN facts), so the harness checks the
netlist, not the source: every lane's primitive with the register parameters below, and no fabric
flip-flop or LUT anywhere in the design (so no path into or out of the DSP is registered, or
computed, outside it).

Library: check_netlist(json_path, family, lanes) -> list of problems ([] = ok).
CLI:     ppa_hard.py <netlist.json> <family> <lanes>   (exit 1 and the problems when it fails)
"""
import json
import sys

# family -> (primitive, {parameter: required value}, fabric cell-type prefixes that must not occur)
REQUIRED = {
    "ice40": ("SB_MAC16", {
        "A_REG": 1, "B_REG": 1, "C_REG": 1, "D_REG": 1,           # input registers
        "TOP_8x8_MULT_REG": 1, "BOT_8x8_MULT_REG": 1,             # partial products
        "PIPELINE_16x16_MULT_REG1": 1, "PIPELINE_16x16_MULT_REG2": 1,  # 16x16 pipeline
        "TOPOUTPUT_SELECT": 1, "BOTOUTPUT_SELECT": 1,             # output (accumulator) registers
        "TOPADDSUB_UPPERINPUT": 1, "BOTADDSUB_UPPERINPUT": 1,     # the add of C:D in the DSP
        "TOPADDSUB_LOWERINPUT": 2, "BOTADDSUB_LOWERINPUT": 2,     # ... to the 16x16 product
        "TOPADDSUB_CARRYSELECT": 2,                               # 32-bit: carry from the bottom
        "MODE_8x8": 0,
    }, ("SB_DFF", "SB_LUT4", "SB_CARRY")),
    "ecp5": ("MULT18X18D", {
        "REG_INPUTA_CLK": "CLK0", "REG_INPUTB_CLK": "CLK0",
        "REG_PIPELINE_CLK": "CLK0", "REG_OUTPUT_CLK": "CLK0",
    }, ("TRELLIS_FF", "LUT4", "CCU2C", "TRELLIS_COMB", "PFUMX", "L6MUX21")),
    # The lane of a `--target ecp5` core (gen/src/core_mac.cpp, tests/gen/ecp5_dsp.sh): the
    # product in MULT18X18D with its input and output registers; the add after it (and the
    # rest of the lane) is fabric logic.
    "ecp5-core": ("MULT18X18D", {
        "REG_INPUTA_CLK": "CLK0", "REG_INPUTB_CLK": "CLK0", "REG_OUTPUT_CLK": "CLK0",
    }, ()),
    "xilinx": ("DSP48E1", {
        "AREG": 1, "BREG": 1, "CREG": 1, "MREG": 1, "PREG": 1, "USE_MULT": "MULTIPLY",
    }, ("FD", "LUT", "CARRY4", "MUXF", "SRL")),
}


def _value(v):
    """A Yosys JSON parameter: a binary string for numbers, text (maybe with a trailing space)."""
    if isinstance(v, int):
        return v
    s = str(v)
    if s and set(s) <= {"0", "1"}:
        return int(s, 2)
    return s.rstrip()


def check_netlist(path, family, lanes, fabric=True):
    """fabric=False: the DSP cells only (a netlist with the harness's wrapper around them)."""
    if family not in REQUIRED:
        return [f"unknown family '{family}' (expected one of {', '.join(REQUIRED)})"]
    prim, params, fabric_types = REQUIRED[family]
    d = json.loads(open(path).read())
    cells = []
    for mod in d["modules"].values():
        if mod.get("attributes", {}).get("blackbox"):
            continue
        cells += list(mod.get("cells", {}).items())
    problems = []
    dsps = [(n, c) for n, c in cells if c["type"] == prim]
    if len(dsps) != lanes:
        problems.append(f"{len(dsps)} {prim} cells, expected {lanes} (one per lane)")
    for name, c in dsps:
        got = {k: _value(v) for k, v in c.get("parameters", {}).items()}
        for k, want in params.items():
            if got.get(k) != want:
                problems.append(f"{prim} {name}: {k} = {got.get(k)!r}, expected {want!r}")
    for name, c in cells if fabric else []:
        if any(c["type"].startswith(p) for p in fabric_types):
            problems.append(f"fabric cell {c['type']} {name}: the design must be the DSPs alone")
    return problems


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    problems = check_netlist(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    for p in problems[:20]:
        print("FAIL hard-block check: " + p)
    if problems:
        sys.exit(1)
    print(f"hard-block check ok: {sys.argv[3]} {REQUIRED[sys.argv[2]][0]} with their registers"
          + (", no fabric cells" if REQUIRED[sys.argv[2]][2] else ""))


if __name__ == "__main__":
    main()
