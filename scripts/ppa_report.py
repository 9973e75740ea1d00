"""Report of the PPA harness (scripts/ppa.py): ratios, the targets of issue 14, docs/ppa.md
(from docs/ppa.md.in), docs/ppa.json and the gnuplot plots. Standard library only."""
import json
import os
import shutil
from pathlib import Path

from ppa_jobs import NEXTPNR_FREQ, run

ROOT = Path(__file__).resolve().parent.parent
# Core id -> the decomposed-core measured with the same options.
DCORE_OF = {"core_l4": "dcore_l4", "core_l4_ice40": "dcore_l4_ice40",
            "core_l4_ice40_cp": "dcore_l4_ice40_cp"}
# Issue 14's targets (the numbers are the issue's; every measured value is computed from the run).
T_ICE40_RATIO, T_ECP5_RATIO, T_LUT4, T_SPEC_LUT4, T_SPEC_MHZ, T_AREA = 0.8, 0.6, 1300, 470, 3 * 34.9, 0.5
Z_ICE = {"lut4": None, "carry": None, "mac16": None, "ram40": None, "ff": None}
Z_X = {"lut": None, "ff": None, "dsp48e1": None, "bram": None, "carry4": None, "lutram": None}
Z_E = {"lut4": None, "ff": None, "mult18": None, "dp16kd": None, "ccu2c": None, "lutram": None}


def label(r):
    return r["design"] + (" (" + " ".join(r["options"]) + ")" if r.get("options") else "")


def fmt(x):
    return "-" if x is None else str(x)


def area_sum(counts, lut, dsp):
    """LUTs + DSPs of one family's counts; None when the design was not synthesized for it."""
    if counts.get(lut) is None or counts.get(dsp) is None:
        return None
    return counts[lut] + counts[dsp]


def pool_note(args):
    """How the run ran its tool jobs (its --jobs / --ray-address; for --docs-only ppa.py puts the
    recorded run's options there)."""
    if getattr(args, "ray_address", None):
        return f"as Ray tasks (`--ray-address {args.ray_address}`)"
    return f"in a local pool of {args.jobs} process{'es' if args.jobs != 1 else ''}"


def path_table(results):
    """One row per placed design, family and seed: its worst path (ppa_jobs.critical_path)."""
    L = ["| design | family | seed | MHz | path ns | logic ns | routing ns | steps | from | to |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for fam, key in (("UP5K", "fmax_mhz_paths"), ("ECP5", "ecp5_fmax_mhz_paths")):
            for p in r.get(key, []):
                L.append(f"| `{r['id']}` | {fam} | {p['seed']} | {p['mhz']} | {p['ns']} | {p['logic_ns']} | "
                         f"{p['route_ns']} | {p['cells']} | `{p['from']}` | `{p['to']}` |")
    if len(L) == 2:
        return "(not recorded in this run's docs/ppa.json: it predates the path record)"
    return "\n".join(L)


def write_docs(results, sim, args, elapsed, tools=None, extra_md=None):
    for r in results:  # designs measured in one family only (hard-mac) show "-" elsewhere
        r.setdefault("ice40", dict(Z_ICE))
        r.setdefault("xilinx", dict(Z_X))
        r.setdefault("ecp5", dict(Z_E))
        r.setdefault("generic_cells", None)
        r.setdefault("fmax_mhz", None)
        r.setdefault("fmax_mhz_seeds", [])
        r.setdefault("ecp5_fmax_mhz", None)
        r.setdefault("ecp5_fmax_mhz_seeds", [])
    by = {r["id"]: r for r in results}
    core4, mac4, dec4 = by.get("core_l4"), by.get("bare_mac_l4"), by.get("decomposed_l4")
    mac16 = by.get("bare_mac_c16_l4")
    ratios = {}
    cores4 = [r["id"] for r in results if r["design"] == "core" and r["lanes"] == 4
              and not r.get("spec")]
    for cid in cores4:
        c = by.get(cid)
        for mid, m in (("bare_mac_l4", mac4), ("bare_mac_c16_l4", mac16)):
            if c and m and c["fmax_mhz"] and m["fmax_mhz"]:
                ratios[f"fmax_{cid}_over_{mid}"] = round(c["fmax_mhz"] / m["fmax_mhz"], 3)
    for cid in cores4 if dec4 else []:
        c = by[cid]
        suffix = "" if cid == "core_l4" else "_" + cid
        for tgt, l, d in (("ice40", "lut4", "mac16"), ("xilinx", "lut", "dsp48e1"), ("ecp5", "lut4", "mult18")):
            a, b = area_sum(c[tgt], l, d), area_sum(dec4[tgt], l, d)
            if a is None or b is None:  # a family this design was not synthesized for
                continue
            ratios[f"lut_plus_dsp_core_over_decomposed_l4_{tgt}{suffix}"] = round(a / b, 3) if b else None
            ratios[f"lut_plus_dsp_l4_{tgt}{suffix}"] = {"core": a, "decomposed": b}
    for cid in cores4 if dec4 and "ice40_lane" in dec4 else []:
        c = by[cid]
        if "ice40_lane" not in c:
            continue
        suffix = "" if cid == "core_l4" else "_" + cid
        a = c["ice40_lane"]["lut4"] + c["ice40_lane"]["mac16"]
        b = dec4["ice40_lane"]["lut4"] + dec4["ice40_lane"]["mac16"]
        ratios["lut_plus_dsp_lane_core_over_decomposed_ice40" + suffix] = round(a / b, 3) if b else None
    # Like for like: the core against the decomposed-core generated with the same options.
    for cid, did in DCORE_OF.items():
        c, d = by.get(cid), by.get(did)
        if not (c and d):
            continue
        for tgt, l, m in (("ice40", "lut4", "mac16"), ("xilinx", "lut", "dsp48e1"), ("ecp5", "lut4", "mult18")):
            a, b = area_sum(c[tgt], l, m), area_sum(d[tgt], l, m)
            if a is None or b is None:
                continue
            ratios[f"lut_plus_dsp_{cid}_over_{did}_{tgt}"] = round(a / b, 3) if b else None
            ratios[f"lut_plus_dsp_{cid}_{did}_{tgt}"] = {"core": a, "decomposed_core": b}
        if "ice40_lane" in c and "ice40_lane" in d:
            a = c["ice40_lane"]["lut4"] + c["ice40_lane"]["mac16"]
            b = d["ice40_lane"]["lut4"] + d["ice40_lane"]["mac16"]
            ratios[f"lut_plus_dsp_lane_{cid}_over_{did}_ice40"] = round(a / b, 3) if b else None
    ratios["dsp_per_lane_ice40"] = {r["id"]: round(r["ice40"]["mac16"] / r["lanes"], 2) for r in results
                                    if r["design"] != "trivial" and r["ice40"]["mac16"] is not None}
    ratios["lut4_per_lane_ice40"] = {r["id"]: round(r["ice40"]["lut4"] / r["lanes"], 1) for r in results
                                     if r["design"] != "trivial" and r["ice40"]["lut4"] is not None}
    hard = hard_ratios(results, ratios)
    targets = target_rows(results, ratios)
    cmd = "python3 scripts/ppa.py " + " ".join(getattr(args, "argv", []))
    doc = {"generated_by": cmd.strip(), "seconds": round(elapsed), "seeds": args.seeds,
           "common_options": args.common, "results": results, "ratios": ratios, "targets": targets,
           "sim_speed": sim, "tools": tools or tool_versions(getattr(args, "ecp5_tool", None)),
           "extra_md": extra_md or {}}
    (ROOT / "docs" / "ppa.json").write_text(json.dumps(doc, indent=2) + "\n")

    L = []
    L.append("| design | lanes | generic cells | iCE40 LUT4 | SB_CARRY | SB_MAC16 | SB_RAM40_4K | iCE40 FF | "
             "UP5K fmax MHz (median) | seeds |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        i = r["ice40"]
        if i["lut4"] is None:
            continue
        L.append(f"| {label(r)} | {r['lanes']} | {fmt(r['generic_cells'])} | {i['lut4']} | {i['carry']} | "
                 f"{i['mac16']} | {i['ram40']} | {i['ff']} | {fmt(r['fmax_mhz'])} | "
                 f"{', '.join(str(x) for x in r['fmax_mhz_seeds'])} |")
    t_ice = "\n".join(L)
    L = ["| design | lane module | iCE40 LUT4 | SB_CARRY | SB_MAC16 | FF |", "|---|---|---|---|---|---|"]
    for r in results:
        if "ice40_lane" in r:
            q = r["ice40_lane"]
            L.append(f"| {r['id']} | `{q['module']}` | {q['lut4']} | {q['carry']} | {q['mac16']} | {q['ff']} |")
    for r in results:
        if "ice40_modules" not in r:
            continue
        tot = sum(q["lut4"] * q["instances"] for q in r["ice40_modules"]) or 1
        M = ["| module | instances | LUT4 each | LUT4 total | share | SB_CARRY each | FF each |",
             "|---|---|---|---|---|---|---|"]
        for q in r["ice40_modules"]:
            M.append(f"| `{q['module']}` | {q['instances']} | {q['lut4']} | {q['lut4'] * q['instances']} | "
                     f"{100 * q['lut4'] * q['instances'] / tot:.0f}% | {q['carry']} | {q['ff']} |")
        t_mod = (f"\n\nWhere the LUTs of `{r['id']}` ({label(r)}) go, `synth_ice40 -dsp -noflatten` "
                 f"(the flattened count above differs a little: no optimisation across modules):\n\n" + "\n".join(M))
        t_ice += t_mod
    t_ice += "\n\nOne lane synthesised alone (`synth_ice40 -dsp -top <lane module>`):\n\n" + "\n".join(L)
    L = ["| design | lanes | Xilinx LUT | FF | DSP48E1 | RAMB | CARRY4 | LUTRAM | ECP5 LUT4 | FF | MULT18X18D | "
         "DP16KD | CCU2C | LUTRAM |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        x, e = r["xilinx"], r["ecp5"]
        if x["lut"] is None and e["lut4"] is None:
            continue
        vals = [x[k] for k in ("lut", "ff", "dsp48e1", "bram", "carry4", "lutram")]
        vals += [e[k] for k in ("lut4", "ff", "mult18", "dp16kd", "ccu2c", "lutram")]
        L.append(f"| {label(r)} | {r['lanes']} | " + " | ".join(fmt(v) for v in vals) + " |")
    t_other = "\n".join(L)
    L = ["| design | wrapper shift-register FFs | wrapper XOR-tree FFs | UP5K LCs used (wrapped) | DSP | RAM | "
         "ECP5 TRELLIS_COMB (wrapped) | TRELLIS_FF | MULT18X18D |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        w, u = r["wrapper"], r.get("up5k_utilization_wrapped", {})
        e = r.get("ecp5_utilization_wrapped", {})
        L.append(f"| {r['id']} | {w['shift_register_bits']} | {w['xor_tree_regs']} | {fmt(u.get('ICESTORM_LC'))} | "
                 f"{fmt(u.get('ICESTORM_DSP'))} | {fmt(u.get('ICESTORM_RAM'))} | {fmt(e.get('TRELLIS_COMB'))} | "
                 f"{fmt(e.get('TRELLIS_FF'))} | {fmt(e.get('MULT18X18D'))} |")
    t_wrap = "\n".join(L)
    L = ["| ratio | value | target (issue 6) |", "|---|---|---|"]
    for cid in cores4:
        cl = label(by[cid]) + (" (pipeline 3)" if not by[cid]["options"] else "")
        L.append(f"| fmax {cl} / bare MAC at core widths (UP5K, LANES 4) | "
                 f"{fmt(ratios.get(f'fmax_{cid}_over_bare_mac_l4'))} | >= 0.9 |")
        L.append(f"| fmax {cl} / bare MAC, 16-bit c inside SB_MAC16 (UP5K, LANES 4) | "
                 f"{fmt(ratios.get(f'fmax_{cid}_over_bare_mac_c16_l4'))} | >= 0.9 |")
    for cid in cores4 if dec4 else []:
        cl = label(by[cid]) + (" (pipeline 3)" if not by[cid]["options"] else "")
        suffix = "" if cid == "core_l4" else "_" + cid
        for tgt in ("ice40", "xilinx", "ecp5"):
            L.append(f"| LUT+DSP {cl} / decomposed ({tgt}, LANES 4) | "
                     f"{fmt(ratios.get('lut_plus_dsp_core_over_decomposed_l4_' + tgt + suffix))} | <= 0.5 |")
    for cid, did in DCORE_OF.items():
        if cid not in by or did not in by:
            continue
        cl = label(by[cid]) + (" (pipeline 3)" if not by[cid]["options"] else "")
        for tgt in ("ice40", "xilinx", "ecp5"):
            L.append(f"| LUT+DSP {cl} / {label(by[did])} ({tgt}, LANES 4; same features) | "
                     f"{fmt(ratios.get(f'lut_plus_dsp_{cid}_over_{did}_{tgt}'))} | <= 0.5 |")
        L.append(f"| LUT+DSP one lane of {cl} / one lane of {label(by[did])} (ice40) | "
                 f"{fmt(ratios.get(f'lut_plus_dsp_lane_{cid}_over_{did}_ice40'))} | <= 0.5 (per lane) |")
    for cid in cores4:
        cl = label(by[cid]) + (" (pipeline 3)" if not by[cid]["options"] else "")
        suffix = "" if cid == "core_l4" else "_" + cid
        L.append(f"| LUT+DSP one lane of {cl} / one decomposed lane (ice40) | "
                 f"{fmt(ratios.get('lut_plus_dsp_lane_core_over_decomposed_ice40' + suffix))} | <= 0.5 (per lane) |")
    L.append("| SB_MAC16 per lane (core) | " + ", ".join(
        f"{k}: {v}" for k, v in ratios["dsp_per_lane_ice40"].items() if k.startswith("core")) + " | 1 |")
    L.append("| iCE40 LUT4 per lane (core) | " + ", ".join(
        f"{k}: {v}" for k, v in ratios["lut4_per_lane_ice40"].items() if k.startswith("core")) + " | - |")
    t_ratio = "\n".join(L)
    if "ratio" in sim:
        v, i = sim["verilator"], sim["icarus"]
        t_sim = ("| simulator | what ran | cycles | seconds | cycles/s |\n|---|---|---|---|---|\n"
                 f"| Verilator 5.006 | `{v['binary']}` ({v['jobs']} random jobs, stalls, golden-model checks, "
                 f"{v['mismatches']} mismatches) | {v['cycles']} | {v['seconds']} | {v['cycles_per_s']} |\n"
                 f"| Icarus 11 | `{i['bench']}`, {i['beats']} beats ({'SMOKE PASS' if i['smoke_pass'] else 'FAIL'}) | "
                 f"{i['cycles']} | {i['seconds']} | {i['cycles_per_s']} |\n\n"
                 f"Verilator / Icarus cycles per second: **{sim['ratio']}x** (target >= 100x).")
    else:
        t_sim = "Not measured: " + sim.get("error", "skipped")
    # Pipeline depths: the LANES-4 cores of this run plus docs/ppa_pipeline.json (a --json-out run).
    pipe = {r["id"]: r for r in results if r["design"] == "core" and r["lanes"] == 4 and not r.get("spec")}
    pj = ROOT / "docs" / "ppa_pipeline.json"
    pipe_src = ""
    if pj.exists():
        extra = json.loads(pj.read_text())
        pipe_src = extra.get("generated_by", "")
        for r in extra["results"]:
            pipe.setdefault(r["id"], r)
    here = {}  # one row per depth, this run's measurement first

    def depth(r):  # the pipeline of the generated config (its manifest)
        return r["pipeline"]
    L = ["| pipeline | latency (cycles) | iCE40 LUT4 | SB_CARRY | FF | UP5K fmax MHz (median) | seeds | "
         "fmax / bare MAC | from |", "|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(pipe.values(), key=lambda r: (depth(r), r["id"] not in by)):
        if depth(r) in here:
            continue
        here[depth(r)] = r["id"]
        i = r["ice40"]
        ratio = round(r["fmax_mhz"] / mac4["fmax_mhz"], 3) if mac4 and r.get("fmax_mhz") and mac4.get("fmax_mhz") else None
        src = "this run" if r["id"] in by else "`docs/ppa_pipeline.json`"
        L.append(f"| {depth(r)}{' (`--target ice40`)' if '--target' in r.get('options', []) else ''} | "
                 f"{depth(r) + 1} | {i['lut4']} | {i['carry']} | {i['ff']} | {fmt(r.get('fmax_mhz'))} | "
                 f"{', '.join(str(x) for x in r.get('fmax_mhz_seeds', []))} | {fmt(ratio)} | {src} |")
    t_pipe = "\n".join(L)
    if pipe_src:
        t_pipe += (f"\n\nRows from `docs/ppa_pipeline.json` were measured by `{pipe_src}` (same tools, "
                   "bare MAC of this run); refresh them with that command.")
    md = (ROOT / "docs" / "ppa.md.in").read_text()
    md = (md.replace("@ICE40_TABLE@", t_ice).replace("@OTHER_TABLE@", t_other).replace("@WRAP_TABLE@", t_wrap)
            .replace("@RATIO_TABLE@", t_ratio).replace("@HARD_TABLE@", hard_table(results))
            .replace("@HEADLINE_TABLE@", hard).replace("@TARGET_TABLE@", target_table(targets))
            .replace("@ECP5_TABLE@", ecp5_table(results)).replace("@PARETO_TABLE@", pareto_table(results)).replace("@PIPE_TABLE@", t_pipe).replace("@SIM_TABLE@", t_sim)
            .replace("@PATH_TABLE@", path_table(results))
            .replace("@RUN_CMD@", doc["generated_by"]).replace("@POOL@", pool_note(args)).replace("@SECONDS@", str(round(elapsed))).replace("@SEEDS@", str(args.seeds))
            .replace("@TOOLS@", ", ".join(f"{k} {v}" for k, v in doc["tools"].items())))
    for k, v in (extra_md or {}).items():
        md = md.replace(k, v)
    fails = [f"* `{r['id']}` " + " ".join(str(e).split()) for r in results
             for e in r.get("pnr_errors", [])]
    if fails:  # a seed without a result (a router stopped at --pnr-timeout, a tool error)
        md += ("\n## Place-and-route runs without a result\n\nThe medians above are over the "
               "other seeds of these designs:\n\n" + "\n".join(f[:300] for f in fails) + "\n")
    md = md.replace("@CPU_NOTE@ ", "")  # a ppa.json from before the CPU accounting
    for fam, mhz in NEXTPNR_FREQ.items():  # a ppa.json from before --pnr-freq: the defaults
        md = md.replace(f"@FREQ_{fam.upper()}@", str(mhz))
    (ROOT / "docs" / "ppa.md").write_text(md)
    print("\n" + hard + "\n\n" + target_table(targets) + "\n\n" + t_ice + "\n\n" + t_other + "\n\n" + t_wrap + "\n\n" + t_ratio + "\n\n" + t_sim)


def tool_versions(ecp5_tool=None):
    v = {}
    tools = [("yosys", ["yosys", "-V"]), ("nextpnr-ice40", ["nextpnr-ice40", "--version"]),
             ("verilator", ["verilator", "--version"]), ("iverilog", ["iverilog", "-V"])]
    if ecp5_tool:
        tools.append(("nextpnr-ecp5", [ecp5_tool, "--version"]))
    for name, cmd in tools:
        try:
            rc, log, _ = run(cmd)
            v[name] = log.strip().splitlines()[0] if log.strip() else "?"
        except OSError:
            v[name] = "missing"
    return v


def plot(results):
    cores = sorted((r for r in results if r["design"] == "core" and not r.get("options")
                    and r["ice40"]["lut4"] is not None),
                   key=lambda r: r["lanes"])
    if not cores or not shutil.which("gnuplot"):
        print("[ppa] no plot (gnuplot missing or no core results)")
        return
    dat = Path(os_tmp()) / "ppa_lanes.dat"
    dat.write_text("".join(f"{r['lanes']} {r['ice40']['lut4']} {fmt(r['fmax_mhz'])} {r['xilinx']['lut']} "
                           f"{r['ecp5']['lut4']}\n" for r in cores))
    refs = {r["id"]: r for r in results}
    extra = ""
    if "bare_mac_l4" in refs and refs["bare_mac_l4"]["fmax_mhz"]:
        extra += f"set label 1 'bare MAC L4: {refs['bare_mac_l4']['fmax_mhz']} MHz' at graph 0.02, graph 0.06\n"
    png = ROOT / "docs" / "ppa_lanes.png"
    gp = f"""set terminal pngcairo size 900,520 noenhanced
set output '{png}'
set title 'normcore core (8-bit in/out, 16-bit scale, 32-bit shift, 512 channels): area and UP5K fmax vs LANES'
set xlabel 'LANES'
set logscale x 2
set xtics (1,2,4,8)
set xrange [0.8:10]
set ylabel 'LUTs (Yosys)'
set y2label 'fmax MHz (nextpnr-ice40 --up5k, median)'
set ytics nomirror
set y2tics
set y2range [0:*]
set yrange [0:*]
set key at graph 0.02, graph 0.82 left top
set grid
{extra}plot '{dat}' using 1:2 with linespoints lw 2 title 'iCE40 LUT4', \\
     '' using 1:4 with linespoints lw 2 title 'Xilinx LUT', \\
     '' using 1:5 with linespoints lw 2 title 'ECP5 LUT4', \\
     '' using 1:3 axes x1y2 with linespoints lw 2 dt 2 title 'UP5K fmax (right axis)'
"""
    gpf = Path(os_tmp()) / "ppa_lanes.gp"
    gpf.write_text(gp)
    rc, log, _ = run(["gnuplot", str(gpf)])
    if rc != 0:  # no cairo in this gnuplot build: fall back to the gd png terminal
        gpf.write_text(gp.replace("pngcairo", "png"))
        rc, log, _ = run(["gnuplot", str(gpf)])
    print(f"[ppa] plot: {png} ({'ok' if rc == 0 else 'FAILED: ' + log[-500:]})")


def os_tmp():
    return os.environ.get("TMPDIR", "/tmp")




# ------------------------------------------------------------------------------------------------
# Issue 14: the hard block per family, headline ratios, targets, ECP5, Pareto front.
def hard_ref(by, fam, lanes):
    """The hard-mac reference of the family at these lanes (else at LANES 4), or None."""
    return by.get(f"hard_{fam}_l{lanes}") or by.get(f"hard_{fam}_l4")


def ratio(a, b):
    return round(a / b, 3) if a and b else None


def hard_ratios(results, ratios):
    """Core fmax / hard-block fmax per family (UP5K: hard_ice40, ECP5: hard_ecp5), one row per
    core configuration; the MAC at the core's widths and the wrapper alone for context."""
    by = {r["id"]: r for r in results}
    out = ratios.setdefault("fmax_over_hard_block", {"ice40": {}, "ecp5": {}})
    L = ["| design | lanes | pipeline | UP5K fmax MHz | / SB_MAC16 hard block (UP5K) | ECP5 fmax MHz | "
         "/ MULT18X18D hard block (ECP5) |", "|---|---|---|---|---|---|---|"]
    for r in results:
        if r["design"] not in ("core", "bare-mac", "trivial"):
            continue
        hi, he = hard_ref(by, "ice40", r["lanes"]), hard_ref(by, "ecp5", r["lanes"])
        ri = ratio(r["fmax_mhz"], hi and hi["fmax_mhz"])
        re_ = ratio(r["ecp5_fmax_mhz"], he and he["ecp5_fmax_mhz"])
        out["ice40"][r["id"]], out["ecp5"][r["id"]] = ri, re_
        hname = f" ({he['id']})" if he and re_ is not None else ""
        L.append(f"| {label(r)} | {r['lanes']} | {fmt(r.get('pipeline') if r['design'] == 'core' else None)} | "
                 f"{fmt(r['fmax_mhz'])} | {fmt(ri)} | "
                 f"{fmt(r['ecp5_fmax_mhz'])} | {fmt(re_)}{hname} |")
    return "\n".join(L)


def hard_table(results):
    L = ["| reference | primitive | lanes | a x b + c (bits) | latency | cells (own family) | fabric cells | "
         "netlist check | UP5K fmax MHz (seeds) | ECP5 fmax MHz (seeds) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        h = r.get("hard_block")
        if not h:
            continue
        fam = h["family"]
        cells = {"ice40": r["ice40"]["mac16"], "ecp5": r["ecp5"]["mult18"], "xilinx": r["xilinx"]["dsp48e1"]}[fam]
        fabric = {"ice40": (r["ice40"]["lut4"] or 0) + (r["ice40"]["ff"] or 0) + (r["ice40"]["carry"] or 0),
                  "ecp5": (r["ecp5"]["lut4"] or 0) + (r["ecp5"]["ff"] or 0) + (r["ecp5"]["ccu2c"] or 0),
                  "xilinx": (r["xilinx"]["lut"] or 0) + (r["xilinx"]["ff"] or 0)}[fam]
        widths = f"{h['a_bits']} x {h['b_bits']}" + (f" + {h['c_bits']}" if h["c_bits"] else "") + f" -> {h['p_bits']}"
        seeds_i = ", ".join(str(x) for x in r["fmax_mhz_seeds"])
        seeds_e = ", ".join(str(x) for x in r["ecp5_fmax_mhz_seeds"])
        L.append(f"| `{r['id']}` | {h['primitive']} | {r['lanes']} | {widths} | {h['latency']} | {cells} | {fabric} | "
                 f"{'ok' if r.get('hard_block_checked') else 'NOT CHECKED'} | "
                 f"{fmt(r['fmax_mhz'])}{f' ({seeds_i})' if seeds_i else ''} | "
                 f"{fmt(r['ecp5_fmax_mhz'])}{f' ({seeds_e})' if seeds_e else ''} |")
    return "\n".join(L)


def ecp5_table(results):
    L = ["| design | lanes | ECP5 LUT4 | TRELLIS_FF | CCU2C | MULT18X18D | DP16KD | ECP5 fmax MHz (median) | seeds |",
         "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        e = r["ecp5"]
        if e["lut4"] is None:
            continue
        L.append(f"| {label(r)} | {r['lanes']} | {e['lut4']} | {e['ff']} | {e['ccu2c']} | {e['mult18']} | "
                 f"{e['dp16kd']} | {fmt(r['ecp5_fmax_mhz'])} | {', '.join(str(x) for x in r['ecp5_fmax_mhz_seeds'])} |")
    return "\n".join(L)


def best(rows, key):
    rows = [r for r in rows if r.get(key)]
    return max(rows, key=lambda r: r[key]) if rows else None


def met(ok):
    return "not measured" if ok is None else ("met" if ok else "not met")


def target_rows(results, ratios):
    """Issue 14's targets, each with the configuration it was measured on, the value and met."""
    by = {r["id"]: r for r in results}
    general = [r for r in results if r["design"] == "core" and not r.get("spec")]
    rows = []
    hi, he4, he8 = by.get("hard_ice40_l4"), by.get("hard_ecp5_l4"), by.get("hard_ecp5_l8")
    c = best([r for r in general if r["lanes"] == 4], "fmax_mhz")
    v = ratio(c and c["fmax_mhz"], hi and hi["fmax_mhz"])
    rows.append({"target": f"iCE40 UP5K, LANES 4, full generality: fmax >= {T_ICE40_RATIO} x SB_MAC16 hard block",
                 "config": c and c["id"], "value": v, "met": met(None if v is None else v >= T_ICE40_RATIO),
                 "detail": c and hi and f"{c['fmax_mhz']} / {hi['fmax_mhz']} MHz"})
    v = c and c["ice40"]["lut4"]
    rows.append({"target": f"the same core: iCE40 LUT4 <= {T_LUT4}", "config": c and c["id"], "value": v,
                 "met": met(None if v is None else v <= T_LUT4), "detail": None})
    small = min([r for r in general if r["lanes"] == 4 and r["ice40"]["lut4"]], key=lambda r: r["ice40"]["lut4"],
                default=None)
    if small and small is not c:
        v = small["ice40"]["lut4"]
        rows.append({"target": f"smallest LANES 4 core of full generality: iCE40 LUT4 <= {T_LUT4}",
                     "config": small["id"], "value": v, "met": met(v <= T_LUT4),
                     "detail": f"{small['ice40']['ram40']} SB_RAM40_4K, {fmt(small['fmax_mhz'])} MHz"})
    for lanes, he in ((4, he4), (8, he8)):
        c = best([r for r in general if r["lanes"] == lanes], "ecp5_fmax_mhz")
        v = ratio(c and c["ecp5_fmax_mhz"], he and he["ecp5_fmax_mhz"])
        rows.append({"target": f"ECP5 25k, LANES {lanes}: fmax >= {T_ECP5_RATIO} x MULT18X18D hard block",
                     "config": c and c["id"], "value": v, "met": met(None if v is None else v >= T_ECP5_RATIO),
                     "detail": c and he and f"{c['ecp5_fmax_mhz']} / {he['ecp5_fmax_mhz']} MHz"})
    spec = [r for r in results if r.get("spec") == "full" and r["lanes"] == 4]
    s = best(spec, "fmax_mhz") or (spec[0] if spec else None)
    ok = None if not s or s["fmax_mhz"] is None else (s["ice40"]["lut4"] <= T_SPEC_LUT4 and s["fmax_mhz"] >= T_SPEC_MHZ)
    rows.append({"target": f"specialised core, LANES 4, UP5K: <= {T_SPEC_LUT4} LUT4 at >= {T_SPEC_MHZ:.1f} MHz",
                 "config": s and s["id"], "value": s and f"{s['ice40']['lut4']} LUT4, {fmt(s['fmax_mhz'])} MHz",
                 "met": met(ok), "detail": None if s else "the generator has no specialisation flags yet"})
    dpl = {r["id"]: r["ice40"]["mac16"] / r["lanes"] for r in general if r["ice40"]["mac16"] is not None}
    rows.append({"target": "one DSP per lane (SB_MAC16 / LANES, every core configuration)",
                 "config": "all cores", "value": ", ".join(f"{k}: {v:g}" for k, v in dpl.items()),
                 "met": met(all(v == 1 for v in dpl.values()) if dpl else None), "detail": None})
    for cid, did in DCORE_OF.items():
        v = ratios.get(f"lut_plus_dsp_{cid}_over_{did}_ice40")
        rows.append({"target": f"whole design LUT+DSP <= {T_AREA} x decomposed-core (iCE40, same options)",
                     "config": f"{cid} / {did}", "value": v, "met": met(None if v is None else v <= T_AREA),
                     "detail": None})
    return rows


def target_table(rows):
    L = ["| target (issue 14) | measured on | value | met? |", "|---|---|---|---|"]
    for t in rows:
        val = fmt(t["value"]) + (f" ({t['detail']})" if t.get("detail") else "")
        L.append(f"| {t['target']} | {fmt(t['config'])} | {val} | **{t['met']}** |")
    return "\n".join(L)


def pareto_points(results, fam):
    """(id, LUT+DSP, fmax) of every core of the run in the family, and the Pareto front (no other
    point has fewer LUT+DSP and a higher fmax)."""
    lut, dsp, fk = {"ice40": ("lut4", "mac16", "fmax_mhz"), "ecp5": ("lut4", "mult18", "ecp5_fmax_mhz")}[fam]
    pts = sorted(((r["id"], r[fam][lut] + r[fam][dsp], r[fk]) for r in results
                  if r["design"] == "core" and r.get(fk) and r[fam][lut] is not None), key=lambda p: (p[1], -p[2]))
    front, top = [], 0.0
    for p in pts:
        if p[2] > top:
            front.append(p)
            top = p[2]
    return pts, front


def pareto_table(results):
    L = ["| family | design | LUT+DSP | fmax MHz | on the Pareto front |", "|---|---|---|---|---|"]
    for fam in ("ice40", "ecp5"):
        pts, front = pareto_points(results, fam)
        for p in pts:
            L.append(f"| {'UP5K' if fam == 'ice40' else 'ECP5'} | {p[0]} | {p[1]} | {p[2]} | "
                     f"{'**yes**' if p in front else 'no'} |")
    return "\n".join(L)


def pareto_plot(results, png, title):
    """gnuplot PNG: LUT+DSP against fmax for every core of the run, the Pareto front joined, and
    the hard blocks' fmax as horizontal lines (UP5K and ECP5)."""
    if not shutil.which("gnuplot"):
        print("[ppa] no Pareto plot (gnuplot missing)")
        return
    by = {r["id"]: r for r in results}
    tmp = Path(os.environ.get("TMPDIR", "/tmp"))
    series, arrows, k, ymax = [], [], 0, 10.0
    for fam, name, color, hkey in (("ice40", "UP5K", "#1f77b4", "fmax_mhz"),
                                   ("ecp5", "ECP5", "#d62728", "ecp5_fmax_mhz")):
        pts, front = pareto_points(results, fam)
        if not pts:
            continue
        ymax = max([ymax] + [p[2] for p in pts])
        d_all, d_front = tmp / f"ppa_pareto_{fam}.dat", tmp / f"ppa_pareto_{fam}_front.dat"
        d_all.write_text("".join(f"{p[1]} {p[2]} {p[0]}\n" for p in pts))
        d_front.write_text("".join(f"{p[1]} {p[2]}\n" for p in front))
        series.append(f"'{d_all}' using 1:2 with points pt 7 ps 1.3 lc rgb '{color}' title '{name} cores'")
        series.append(f"'{d_all}' using 1:2:3 with labels offset 0,0.9 font ',7' tc rgb '{color}' notitle")
        series.append(f"'{d_front}' using 1:2 with lines lw 2 lc rgb '{color}' title '{name} Pareto front'")
        h = hard_ref(by, fam, 4)
        if h and h.get(hkey):
            k += 1
            ymax = max(ymax, h[hkey])
            arrows.append(f"set arrow {k} from graph 0, first {h[hkey]} to graph 1, first {h[hkey]} nohead "
                          f"dt 2 lw 2 lc rgb '{color}'\nset label {k} '{name} hard block ({h['hard_block']['primitive']}"
                          f", {h['id']}): {h[hkey]} MHz' at graph 0.02, first {h[hkey]} offset 0,0.7 "
                          f"tc rgb '{color}' font ',8'")
    if not series:
        print("[ppa] no Pareto plot (no placed and routed core)")
        return
    gp = (f"set terminal pngcairo size 1000,600 noenhanced\nset output '{png}'\nset title '{title}'\n"
          "set xlabel 'LUT4 + DSP blocks (Yosys: synth_ice40 -dsp / synth_ecp5)'\n"
          "set ylabel 'fmax MHz (nextpnr, median of seeds)'\nset grid\nset key outside right top\n"
          f"set yrange [0:{ymax * 1.12:.0f}]\nset xrange [0:*]\n" + "\n".join(arrows) + "\nplot " + ", \\\n     ".join(series) + "\n")
    gpf = tmp / "ppa_pareto.gp"
    gpf.write_text(gp)
    rc, log, _ = run(["gnuplot", str(gpf)])
    if rc != 0:
        gpf.write_text(gp.replace("pngcairo", "png"))
        rc, log, _ = run(["gnuplot", str(gpf)])
    print(f"[ppa] plot: {png} ({'ok' if rc == 0 else 'FAILED: ' + log[-500:]})")
