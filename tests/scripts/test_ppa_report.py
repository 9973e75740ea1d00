#!/usr/bin/env python3
"""docs/ppa.md's run facts (scripts/ppa_report.py, scripts/ppa_jobs.py):
* pool_note: how the run ran its tool jobs, from its options as ppa.py's parser reads them back
  from the recorded command line (--jobs N / --jobs=N, --ray-address, or the default of two local
  processes); the page template names no fixed pool size;
* critical_path: the worst path of the reported clock from a nextpnr --report JSON, in the two
  layouts met here (nextpnr-ice40 0.4 gives the clk-to-q step's cells the wrong way round,
  nextpnr-ecp5 0.11 the right way), a cross-domain path ignored, an unreadable report None;
  rtl_name strips the packer's suffixes.
Usage: test_ppa_report.py"""
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import ppa  # noqa: E402
import ppa_jobs  # noqa: E402
import ppa_report  # noqa: E402

bad = []


def check(what, got, want):
    if got != want:
        bad.append(what)
        print(f"FAIL: {what}: {got!r}, expected {want!r}")


# The page's pool note: from the run's options, read back from its recorded command line by
# ppa.py's own parser (as --docs-only does).
POOL = {
    "python3 scripts/ppa.py --build build": "in a local pool of 2 processes",
    "python3 scripts/ppa.py --build build --jobs 1 --progress": "in a local pool of 1 process",
    "python3 scripts/ppa.py --jobs=4 --no-sim": "in a local pool of 4 processes",
    "python3 scripts/ppa.py --ray-address auto --jobs 3": "as Ray tasks (`--ray-address auto`)",
    "python3 scripts/ppa.py --ray-address=ray://h:10001":
        "as Ray tasks (`--ray-address ray://h:10001`)",
}
for cmd, want in POOL.items():
    run = ppa.parser().parse_args(cmd.split()[2:])
    check(f"pool_note({cmd!r})", ppa_report.pool_note(run), want)
tmpl = (ROOT / "docs" / "ppa.md.in").read_text()
check("ppa.md.in names the pool through @POOL@", "@POOL@" in tmpl and "pool of two" not in tmpl,
      True)
check("ppa.md.in has the path table", "@PATH_TABLE@" in tmpl, True)


def step(kind, delay, frm, to):
    return {"type": kind, "delay": delay, "from": {"cell": frm[0], "port": frm[1]},
            "to": {"cell": to[0], "port": to[1]}}


CLK = "posedge clk$SB_IO_IN_$glb_clk"
ff, lut = "dut.u_chan.c_q_SB_DFFE_Q_3_DFFLC", "dut.u_chan.tp_q_SB_DFFE_Q_4_D_SB_LUT4_O_LC"
h2, mac = "dut.u_chan.h_2_q_SB_DFFE_Q_D_SB_LUT4_O_LC", "dut.u_lane_2.lo_q_SB_MAC16_O_DSP"
ice40 = {"fmax": {"clk$SB_IO_IN_$glb_clk": {"achieved": 68.16, "constraint": 100}},
         "critical_paths": [
             {"from": "posedge $PACKER_GND_NET_$glb_clk", "to": CLK,  # a cross-domain path first
              "path": [step("clk-to-q", 0.1, ("x", "CLK"), (mac, "O"))]},
             {"from": CLK, "to": CLK, "path": [
                 step("clk-to-q", 1.39, (lut, "CLK"), (ff, "O")),  # nextpnr-ice40 0.4's order
                 step("routing", 4.2, (ff, "O"), (lut, "I3")),
                 step("logic", 0.9, (lut, "I3"), (lut, "O")),
                 step("routing", 3.0, (lut, "O"), (h2, "I2")),
                 step("setup", 1.15, (h2, "I2"), (h2, "I2"))]}]}
e5 = "$glbnet$clk$TRELLIS_IO_IN"
d1, ra = "dut.u_ptable.d_1_q_TRELLIS_FF_Q", "dut.u_ptable.ra_1_q_TRELLIS_FF_Q_4"
c0, c1 = "dut.u_ptable.dif_CCU2C_S0$CCU2_COMB0", "dut.u_ptable.dif_CCU2C_S0$CCU2_COMB1"
ecp5 = {"fmax": {e5: {"achieved": 200.48}}, "critical_paths": [
    {"from": "posedge " + e5, "to": "posedge " + e5, "path": [
        step("clk-to-q", 0.52, (d1, "Q"), (d1, "Q")),  # nextpnr-ecp5 0.11's order
        step("routing", 1.3, (d1, "Q"), (c0, "B")),
        step("logic", 0.45, (c0, "B"), (c0, "FCO")),
        step("logic", 0.07, (c1, "FCI"), (c1, "F")),
        step("routing", 1.0, (c1, "F"), (ra, "LSR")),
        step("setup", 0.4, (ra, "LSR"), (ra, "LSR"))]}]}
with tempfile.TemporaryDirectory() as d:
    for name, rep in (("ice40", ice40), ("ecp5", ecp5)):
        (Path(d) / f"{name}.json").write_text(json.dumps(rep))
    check("ice40 path", ppa_jobs.critical_path(Path(d) / "ice40.json"),
          {"ns": 10.64, "route_ns": 7.2, "logic_ns": 3.44, "from": "u_chan.c_q",
           "to": "u_chan.h_2_q", "cells": 2})
    check("ecp5 path", ppa_jobs.critical_path(Path(d) / "ecp5.json"),
          {"ns": 3.74, "route_ns": 2.3, "logic_ns": 1.44, "from": "u_ptable.d_1_q",
           "to": "u_ptable.ra_1_q", "cells": 3})
    (Path(d) / "bad.json").write_text("{")
    check("unreadable report", ppa_jobs.critical_path(Path(d) / "bad.json"), None)
    check("missing report", ppa_jobs.critical_path(Path(d) / "none.json"), None)
check("rtl_name", ppa_jobs.rtl_name("dut.u_lane_0.u_mult18"), "u_lane_0.u_mult18")
print("ok" if not bad else f"{len(bad)} failure(s)")
sys.exit(1 if bad else 0)
