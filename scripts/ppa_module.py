#!/usr/bin/env python3
"""Place and route one module of a generated core alone: the fast loop for issue 14's timing work.

ppa.py measures whole designs (about 20 minutes for one core in both families here); a part's
own fmax (a lane, the position tracker, the table) comes out of this in 10-30 s, so a change can
be measured per step. The module is wrapped like ppa.py's designs (make_wrapper: every input from
one serial shift register, every output into a registered XOR tree), so its inputs are registers
and only its own paths, and its ports' hops to the wrapper, are timed.

    scripts/ppa_module.py --build build [--module lane] [--family ice40,ecp5] [--seeds 1]
                          [--work DIR] -- <normcore gen options, e.g. --lanes 4 --target ice40>

Prints per family: fmax (median over seeds), the module's cells (LUT4, carry, DSP, FF), and the
worst path of the last seed (its cells, logic and routing share). Families: ice40 (Yosys
`synth_ice40 -dsp`, nextpnr-ice40 --up5k --package sg48), ecp5 (`synth_ecp5`, the pinned YoWASP
nextpnr-ecp5 of $NORMCORE_VENV or .venv, --25k --package CABGA256). The module's name is
`<name>_<module>` (--name, default normcore). Standard library only.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ppa import PNR_DEVICE, ROOT, make_wrapper, nextpnr_ecp5  # noqa: E402
from ppa_jobs import nextpnr  # noqa: E402

SYNTH = {"ice40": "synth_ice40 -dsp -top ppa_wrap", "ecp5": "synth_ecp5 -top ppa_wrap"}
CELLS = {"ice40": ("SB_LUT4", "SB_CARRY", "SB_MAC16", "SB_DFF"),
         "ecp5": ("LUT4", "CCU2C", "MULT18X18D", "TRELLIS_FF")}


def sh(cmd, what):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        sys.exit(f"ppa_module: {what} failed:\n{r.stdout[-3000:]}")
    return r.stdout


def module_ports(files, top, work):
    """Ports of `top` as make_wrapper takes them (name, dir, width)."""
    pj = work / "ports.json"
    sh(["yosys", "-q", "-p", f"{reads(files, 'ice40')}; hierarchy -top {top}; proc; "
        f"write_json {pj}"], "yosys (ports)")
    mod = json.loads(pj.read_text())["modules"][top]
    return [{"name": n, "dir": p["direction"], "width": len(p["bits"])}
            for n, p in mod["ports"].items()]


def reads(files, fam):
    """read_verilog of the design: a --target ecp5 core instantiates MULT18X18D under `ifdef
    SYNTHESIS (gen/src/core_mac.cpp), which other families read with -nosynthesis (as ppa.py)."""
    ecp5_core = any("MULT18X18D" in Path(f).read_text() for f in files)
    flag = "-nosynthesis " if ecp5_core and fam != "ecp5" else ""
    return f"read_verilog {flag}{' '.join(map(str, files))}"


def cell_counts(files, top, fam, stat):
    """Cells of the module synthesized alone (flattened; no wrapper)."""
    synth = SYNTH[fam].replace("ppa_wrap", top)
    sh(["yosys", "-q", "-p", f"{reads(files, fam)}; {synth}; "
        f"tee -q -o {stat} stat -json"], f"yosys ({fam}, module alone)")
    d = json.loads(stat.read_text())
    by = (d.get("design") or next(iter(d["modules"].values()))).get("num_cells_by_type", {})
    return {c: sum(v for k, v in by.items() if k.startswith(c)) for c in CELLS[fam]}


def worst_path(log):
    """The first critical path of a nextpnr log: its Source / Sink lines and the logic/routing
    summary."""
    i = log.find("Critical path report for clock")
    if i < 0:
        return "(no critical path report)"
    lines = []
    for ln in log[i:].splitlines()[1:]:
        if re.search(r"ns logic, .* ns routing", ln):
            lines.append(ln.strip())
            break
        if "Source" in ln or "Sink" in ln:
            lines.append(ln.strip())
    if len(lines) > 24:  # a long carry chain: its ends
        lines = lines[:12] + [f"... ({len(lines) - 20} lines)"] + lines[-8:]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--module", default="lane", help="module suffix: lane, chan, ptable, ...")
    ap.add_argument("--name", default="normcore", help="the core's --name")
    ap.add_argument("--family", default="ice40,ecp5")
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--work", default=None)
    ap.add_argument("gen", nargs=argparse.REMAINDER, help="-- then normcore gen options")
    a = ap.parse_args()
    gen = a.gen[1:] if a.gen[:1] == ["--"] else a.gen
    fams = [f for f in a.family.split(",") if f]
    for f in fams:
        if f not in SYNTH:
            sys.exit(f"ppa_module: --family: unknown family '{f}' (ice40, ecp5)")
    work = Path(a.work or Path(os.environ.get("TMPDIR", "/tmp")) / f"ppa_module_{a.module}")
    work.mkdir(parents=True, exist_ok=True)
    rtl = work / "rtl"
    sh([str(Path(a.build) / "cli" / "normcore"), "gen", "-o", str(rtl), "--force",
        "--name", a.name, *gen], "normcore gen")
    top = f"{a.name}_{a.module}"
    files = sorted(rtl.glob("*.v"))
    if not (rtl / f"{top}.v").exists():
        sys.exit(f"ppa_module: --module: no module {top} in {rtl}")
    make_wrapper(top, module_ports(files, top, work), work / "ppa_wrap.v")
    for fam in fams:
        fw = work / fam
        fw.mkdir(exist_ok=True)
        net = fw / "net.json"
        sh(["yosys", "-q", "-p", f"{reads(files + [work / 'ppa_wrap.v'], fam)}; {SYNTH[fam]}; "
            f"write_json {net}"], f"yosys ({fam})")
        cells = cell_counts(files, top, fam, fw / "stat.json")
        tool = "nextpnr-ice40" if fam == "ice40" else nextpnr_ecp5("ppa_module", "or --family ice40")
        freq = 150 if fam == "ice40" else 300
        fm = []
        for seed in range(1, a.seeds + 1):
            f, secs, util = nextpnr(tool, PNR_DEVICE[fam], net, seed, fw, freq)
            if f is None:
                sys.exit(f"ppa_module: nextpnr ({fam}, seed {seed}) failed:\n{util}")
            fm.append(f)
        log = (fw / f"nextpnr_{fam}_s{a.seeds}.log").read_text()
        print(f"{top} {fam}: fmax {statistics.median(fm):.2f} MHz (seeds {fm}); "
              f"cells {cells}")
        print(worst_path(log))


if __name__ == "__main__":
    main()
