#!/usr/bin/env python3
"""Logic depth of every register-to-register path in a synthesized netlist (no place and route).

nextpnr reports only the worst path of a clock; this lists the deepest paths into *every*
endpoint group at once, in seconds, so a whole class of slow paths can be fixed in one pass.

    yosys -p "read_verilog rtl/*.v; synth_ice40 -dsp -flatten -top normcore_core; \
              write_json core.json"
    scripts/ppa_depth.py core.json [--top N] [--filter REGEX] [--min LEVELS]

Depth model (a ranking, not a timing model): each LUT (SB_LUT4 / LUT4) is one level, a wide
mux cell (PFUMX, L6MUX21) 0.3, a carry cell (SB_CARRY; CCU2C carries two bits) 0.08 per bit.
Paths start at flip-flop outputs, RAM read data, registered DSP outputs and top-level inputs, and
end at flip-flop, RAM and registered-DSP inputs and top-level outputs. On UP5K a level costs about
one routed hop (2.5-3 ns), so 9 ns (111 MHz) allows about two levels plus a short carry chain.
Standard library only.
"""
import argparse
import json
import re
import sys
from collections import defaultdict

LUT = {"SB_LUT4": 1.0, "LUT4": 1.0, "$lut": 1.0}
MUX = {"PFUMX": 0.3, "L6MUX21": 0.3}
CARRY = {"SB_CARRY": 0.08, "CCU2C": 0.16}
FF_PREFIX = ("SB_DFF", "TRELLIS_FF", "FDRE", "FDSE", "FDCE", "FDPE", "$_DFF", "$_SDFF", "$dff")
RAM = ("SB_RAM40_4K", "DP16KD", "PDPW16KD", "TRELLIS_DPR16X4", "RAMB18E1", "RAMB36E1")
DSP = ("SB_MAC16", "MULT18X18D", "ALU54B", "DSP48E1")


def is_seq(ctype):
    return ctype.startswith(FF_PREFIX) or ctype in RAM


def dsp_registered_out(cell):
    p = cell.get("parameters", {})
    if cell["type"] == "SB_MAC16":
        return all(int(str(p.get(k, "0")), 2) == 1 for k in ("TOPOUTPUT_SELECT",
                                                            "BOTOUTPUT_SELECT"))
    if cell["type"] == "MULT18X18D":
        return str(p.get("REG_OUTPUT_CLK", "NONE")) != "NONE"
    return False


def analyse(mod):
    cells = mod["cells"]
    driver = {}
    for name, c in cells.items():
        for port, d in c.get("port_directions", {}).items():
            if d == "output":
                for b in c["connections"].get(port, []):
                    if isinstance(b, int):
                        driver[b] = (name, port)
    sources = set()
    for pname, p in mod.get("ports", {}).items():
        if p["direction"] in ("input", "inout"):
            sources.update(b for b in p["bits"] if isinstance(b, int))
    names = {}
    for nname, n in mod.get("netnames", {}).items():
        if n.get("hide_name"):
            continue
        for i, b in enumerate(n["bits"]):
            if isinstance(b, int) and (b not in names or len(nname) < len(names[b])):
                names[b] = nname if len(n["bits"]) == 1 else f"{nname}[{i}]"

    memo = {}

    def cell_source(c):
        t = c["type"]
        return is_seq(t) or (t in DSP and dsp_registered_out(c))

    def arrival(bit):
        # iterative DFS: returns (depth, previous bit, cell name)
        stack = [bit]
        while stack:
            b = stack[-1]
            if b in memo:
                stack.pop()
                continue
            if b in sources or b not in driver:
                memo[b] = (0.0, None, None)
                stack.pop()
                continue
            cname, _ = driver[b]
            c = cells[cname]
            if cell_source(c):
                memo[b] = (0.0, None, cname)
                stack.pop()
                continue
            ins = [x for port, d in c["port_directions"].items() if d == "input"
                   for x in c["connections"].get(port, []) if isinstance(x, int)]
            pending = [x for x in ins if x not in memo]
            if pending:
                if len(stack) > 200000:
                    raise RuntimeError("combinational loop")
                memo_guard = [x for x in pending if x in stack]
                if memo_guard:  # a loop: cut it
                    for x in memo_guard:
                        memo[x] = (0.0, None, None)
                stack.extend(x for x in pending if x not in memo)
                continue
            t = c["type"]
            w = LUT.get(t, MUX.get(t, CARRY.get(t, 1.0 if t in DSP else 0.5)))
            best = max(ins, key=lambda x: memo[x][0], default=None)
            d = (memo[best][0] if best is not None else 0.0) + w
            memo[b] = (d, best, cname)
            stack.pop()
        return memo[bit]

    ends = []
    for name, c in cells.items():
        t = c["type"]
        if not (is_seq(t) or (t in DSP)):
            continue
        for port, d in c.get("port_directions", {}).items():
            if d != "input" or port in ("C", "CLK", "RCLK", "WCLK", "CLKA", "CLKB", "CLK0"):
                continue
            for b in c["connections"].get(port, []):
                if isinstance(b, int):
                    ends.append((name, port, b))
    for pname, p in mod.get("ports", {}).items():
        if p["direction"] == "output":
            for i, b in enumerate(p["bits"]):
                if isinstance(b, int):
                    ends.append((f"<out {pname}[{i}]>", "", b))
    return cells, names, ends, arrival


def group_of(cname, names, cells, port):
    c = cells.get(cname)
    if c is not None and c["type"].startswith(FF_PREFIX):
        for b in c["connections"].get("Q", []):
            if b in names:
                return re.sub(r"\[\d+\]$", "", names[b])
    return re.sub(r"(_SB_\w+|_TRELLIS\w+|\$.*)$", "", cname) + (f".{port}" if port else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json")
    ap.add_argument("--top", type=int, default=15, help="endpoint groups listed")
    ap.add_argument("--filter", default=None, help="only endpoint groups matching this regex")
    ap.add_argument("--min", type=float, default=0.0, help="only paths at least this deep")
    ap.add_argument("--module", default=None)
    a = ap.parse_args()
    design = json.load(open(a.json))
    mods = design["modules"]
    top = a.module or next((n for n, m in mods.items()
                            if int(str(m.get("attributes", {}).get("top", "0")), 2) == 1),
                           next(iter(mods)))
    cells, names, ends, arrival = analyse(mods[top])
    groups = defaultdict(lambda: (-1.0, None))
    for cname, port, b in ends:
        d = arrival(b)[0]
        g = group_of(cname, names, cells, port)
        if d > groups[g][0]:
            groups[g] = (d, b)
    rows = sorted(((d, g, b) for g, (d, b) in groups.items()), reverse=True)
    if a.filter:
        rows = [r for r in rows if re.search(a.filter, r[1])]
    rows = [r for r in rows if r[0] >= a.min]
    print(f"{top}: {len(ends)} endpoints in {len(groups)} groups; deepest first")
    per = defaultdict(lambda: [0.0, 0])
    for d, g, b in rows:
        inst = g.split(".")[0] if "." in g else "(top)"
        per[inst][0] = max(per[inst][0], d)
        per[inst][1] += d >= 2.5
    print("per instance: deepest, groups >= 2.5 levels: " + ", ".join(
        f"{k} {v[0]:.2f}/{v[1]}" for k, v in sorted(per.items(), key=lambda kv: -kv[1][0])))
    for d, g, b in rows[:a.top]:
        path, x = [], b
        while x is not None:
            dd, prev, cname = arrival(x)
            n = re.sub(r"(_SB_\w+|_TRELLIS\w+|_LUT4\w*|_CCU2C\w*)(\[\d+\])?$", "~",
                       names.get(x, f"${x}"))
            path.append(n + (f" ({cells[cname]['type']})" if cname else ""))
            x = prev
        luts = sum(1 for p in path if "LUT4)" in p)
        print(f"{d:5.2f}  {g}   [{luts} LUT]")
        print("       " + " <- ".join(path[:12]) + (" ..." if len(path) > 12 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
