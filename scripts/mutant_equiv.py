#!/usr/bin/env python3
"""The equivalence filter of scripts/mutate.py (`--equiv-cmd`; issue 20, item 5).

Usage: scripts/mutant_equiv.py ORIG.v MUTANT.v MODULE

ORIG.v and MUTANT.v are one generated module before and after a planted fault; the other modules
of the design are the *.v files beside each (mutate.py copies the whole RTL folder per mutant).
Prints one line, `EQUIVALENT <method>`, `DIFFERENT <method>` or `UNPROVEN <methods tried>`, and
exits 0, 1 or 2 (3: a tool error). "EQUIVALENT" only when a proof says so:

1. contract (MODULE ends in `_lane` and ORIG's folder has formal/<prefix>_lane_fv.v, i.e. the
   design was generated with `normcore gen --formal`): the lane proof of scripts/prove.sh run on
   the mutated lane: yosys-smtbmc with the pinned Yices (scripts/venv.sh "" formal), BMC to
   latency + 2 (an assertion failure = DIFFERENT: a job and inputs on which the mutated lane
   breaks the contract), then k-induction with k = latency + 1 (PASS = EQUIVALENT: the mutant
   equals the contract for every input, job and cycle, as the generated lane does).
2. module: Yosys equivalence of the original and the mutated module alone: each side `prep;
   flatten; opt_clean -purge` (logic that reaches no output is dropped: an unread signal),
   `equiv_make` (outputs and same-named signals, registers included, paired), `equiv_simple
   -seq N`, `equiv_induct -seq N`, `equiv_status -assert`: every output equal in every cycle from
   any common register state (a reset change that shows in a register is not proven).
3. context (any module but the core, instantiated in one parent): the mutated module beside the
   original in the original core (a shadow instance of the renamed mutant next to each instance,
   on the same input nets), one output that is 1 when a shadow's output differs from its
   original's, ABC `pdr` on it from the all-zero register state (memories: any start value) with
   free inputs, resets included: "Property proved" = the mutant gives the original's outputs in
   every reachable state of the core, so the core (whose other logic is the same) cannot tell
   them apart. PDR finds the invariants of the core's job registers (S, C, what the set-up
   derives from them, held from a start on) that the pairing of 2. lacks. A counterexample is
   only UNPROVEN (the differing output may be unread). x bits left by techmap (out-of-range
   selects) read as 0, as in Verilator. MUTANT_EQUIV_PDR_TIME: PDR's limit in s (default 60).
4. core: the same as 2. for the whole flattened `<prefix>_core` with the original vs the mutated
   module: also proves faults in outputs or cases the core never reads or reaches through
   same-named state.
5. core-pdr (after 4. fails): the pairing 4.'s blacklist loop reached, proven by ABC `pdr`
   instead of equiv_induct (pair_pdr): every remaining pair, the outputs included, equal in
   every cycle from the all-zero state with free inputs.
`ifdef FORMAL blocks are not read (read_verilog without -formal). Env: NORMCORE_VENV (default
.venv in the repository), MUTANT_EQUIV_SEQ (N, default 4), MUTANT_EQUIV_KEEP (a folder: keep the
scripts and logs there), MUTANT_EQUIV_METHODS (default "contract,module,context,core,core-pdr":
which to try), MUTANT_EQUIV_PDR_TIME (ABC pdr's limit in s, default 60).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(cmd, cwd, timeout=600):
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        return None, "timeout"


def lane_contract(orig: Path, mutant: Path, module: str, work: Path):
    """'EQUIVALENT' / 'DIFFERENT' / None (no harness, or the proof did not decide)."""
    prefix = module[:-len("_lane")]
    fv = orig.parent / "formal" / f"{prefix}_lane_fv.v"
    ref = orig.parent / "formal" / f"{prefix}_lane_ref.v"
    manifest = orig.parent / "manifest.json"
    if not fv.exists() or not ref.exists() or not manifest.exists():
        return None
    lat = json.loads(manifest.read_text())["formal"]["lane"]["latency"]
    if not solver_path():
        return None
    smt = work / "lane.smt2"
    rc, out = run(["yosys", "-q", "-p",
                   f"read_verilog -formal {ref} {fv} {mutant}; prep -top {prefix}_lane_fv; "
                   f"flatten; async2sync; dffunmap; opt_clean; write_smt2 -wires {smt}"], work)
    if rc != 0:
        return None
    rc, out = run(["yosys-smtbmc", "-s", "yices", "-t", str(lat + 2), str(smt)], work)
    (work / "bmc.log").write_text(out)
    if rc is None:
        return None
    if rc != 0:
        return "DIFFERENT" if "Assert failed" in out or "BMC failed" in out else None
    rc, out = run(["yosys-smtbmc", "-s", "yices", "-i", "-t", str(lat + 1), str(smt)], work)
    (work / "ind.log").write_text(out)
    return "EQUIVALENT" if rc == 0 else None


def side(files, top, name, mapmem=False):
    reads = "\n".join(f"read_verilog {f}" for f in files)
    mem = "memory_map\n" if mapmem else ""
    return (f"{reads}\nhierarchy -top {top}\nprep -top {top}\nflatten\n{mem}opt_clean -purge\n"
            f"rename {top} {name}\ndesign -stash {name}\n")


def equiv_script(gold_files, gate_files, top, blacklist: Path, mapmem=False):
    return (side(gold_files, top, "gold", mapmem) + side(gate_files, top, "gate", mapmem)
            + "design -copy-from gold -as gold gold\ndesign -copy-from gate -as gate gate\n"
            f"equiv_make -blacklist {blacklist} gold gate equiv\nhierarchy -top equiv\n")


def yosys_equiv(gold_files, gate_files, top, work: Path, tag: str, pdr=False):
    """"induct" when Yosys proves every output of `top` equal (see the file comment), "pdr" when
    (pdr=True) ABC pdr proves the pairing the loop reached (pair_pdr), else False.

    Step: equiv_make pairs the same-named signals (outputs, registers, wires) of the two sides;
    equiv_simple + equiv_induct prove the pairs for any state in which they held the previous N
    cycles. A pair that does not hold (the mutated signal itself, a register it feeds that the
    outputs never see) is put on the blacklist (no longer assumed equal) and the step is run
    again, until every remaining pair is proven or an output is not. Base: equiv_induct alone
    does not check the first N cycles, so a BMC (yosys-smtbmc) of every remaining pair runs from
    the all-zero register state (the co-simulation's start) of both sides, N + 1 cycles with free
    inputs (resets included)."""
    seq = int(os.environ.get("MUTANT_EQUIV_SEQ", "4"))
    bl = work / f"{tag}.blacklist"
    bl.write_text("")
    for it in range(8):
        ys = work / f"{tag}_{it}.ys"
        ys.write_text(equiv_script(gold_files, gate_files, top, bl) + "async2sync\n"
                      f"equiv_simple -seq {seq}\nequiv_induct -seq {seq}\nequiv_status\n")
        rc, out = run(["yosys", "-q", "-l", str(work / f"{tag}_{it}.log"), str(ys)], work)
        log = (work / f"{tag}_{it}.log").read_text() if (work / f"{tag}_{it}.log").exists() else ""
        if rc != 0:
            return False
        bad = set(re.findall(r"Unproven \$equiv \S+ \\(\S+)_gold ", log))
        if not bad:
            proven = base_case(gold_files, gate_files, top, bl, seq, work, tag)
            return "induct" if proven else False
        outputs = set(re.findall(r"output\s+(?:wire\s+|reg\s+)?(?:\[[^]]*\]\s*)?(\w+)",
                                 "\n".join(Path(f).read_text() for f in gold_files
                                           if Path(f).stem == top)))
        known = set(bl.read_text().split())
        if bad & outputs or bad <= known:
            break
        bl.write_text("\n".join(sorted(known | bad)) + "\n")
    return "pdr" if pdr and pair_pdr(gold_files, gate_files, top, bl, work, tag) else False


def abc_pdr(aig: Path, work: Path, tag: str):
    """ABC pdr on a one-output AIG (output 1 = failure): True when it says "Property proved"."""
    limit = int(os.environ.get("MUTANT_EQUIV_PDR_TIME", "60"))
    rc, out = run(["yosys-abc", "-c", f"read_aiger {aig}; print_stats; pdr -T {limit}"], work,
                  timeout=limit + 30)
    (work / f"{tag}.abc.log").write_text(out or "")
    return (rc == 0 and out is not None and "Property proved" in out
            and re.search(r"i/o =\s*\d+/\s*1\s", out) is not None)


AIG_FLOW = ("async2sync\ndffunmap\nsetundef -zero -init\nmemory_map\nopt_clean -purge\n"
            "techmap\nopt -fast\ndffunmap\naigmap\nopt_clean -purge\n"
            # x bits (out-of-range selects and memory reads) read as 0, as in Verilator
            "setundef -zero\n")


def pair_pdr(gold_files, gate_files, top, bl: Path, work: Path, tag: str):
    """The pairing of yosys_equiv with its final blacklist, proven by ABC pdr instead of
    equiv_induct: `equiv_miter -trigger` (no pair proven before, so every pair, the outputs
    included, is in the trigger) with the gate's readers of a paired signal reading the gold
    one (`equiv_remove -gold`), from the all-zero state with free inputs. Proved = every pair
    equal in every cycle (by induction over time: while the pairs held, the gate's unpaired
    logic computed from the gold values is the real gate's), so the outputs are."""
    aig = work / f"{tag}_pdr.aig"
    ys = work / f"{tag}_pdr.ys"
    ys.write_text(equiv_script(gold_files, gate_files, top, bl, mapmem=True)
                  + "equiv_miter -trigger mit\nhierarchy -top mit\n"
                  + "delete -port o:* w:trigger %d\n"
                  + "equiv_remove -gold\n" + AIG_FLOW + f"write_aiger -zinit {aig}\n")
    rc, _ = run(["yosys", "-q", "-l", str(work / f"{tag}_pdr.log"), str(ys)], work)
    return rc == 0 and abc_pdr(aig, work, f"{tag}_pdr")


def base_case(gold_files, gate_files, top, bl: Path, seq: int, work: Path, tag: str):
    smt = work / f"{tag}_base.smt2"
    ys = work / f"{tag}_base.ys"
    ys.write_text(equiv_script(gold_files, gate_files, top, bl)
                  + "equiv_miter -assert mit\nhierarchy -top mit\nequiv_remove -gold\n"
                  "async2sync\nsetundef -zero -init\ndffunmap\nopt_clean\n"
                  f"write_smt2 -wires {smt}\n")
    rc, _ = run(["yosys", "-q", "-l", str(work / f"{tag}_base.log"), str(ys)], work)
    if rc != 0 or not solver_path():
        return False
    rc, out = run(["yosys-smtbmc", "-s", "yices", "-t", str(seq + 1), str(smt)], work)
    (work / f"{tag}_base.bmc.log").write_text(out or "")
    return rc == 0 and "PASSED" in out


def ports(text):
    return re.findall(r"^\s*(input|output)\s+(?:wire\s+|reg\s+)?(\[[^]]*\]\s*)?(\w+)", text, re.M)


def shadow_design(orig: Path, mutant: Path, module: str, work: Path):
    """The design of `orig`'s folder with the mutant module beside the original in its parent:
    each instance of `module` gets a shadow instance of the renamed mutant (`<module>_mut`) on
    the same inputs, and `shadow_bad_w` (kept) is 1 when any output of a shadow differs from its
    original's. Returns (files, parent) or None (no instance, or instances in several modules)."""
    files = sorted(orig.parent.glob("*.v"))
    mt = re.sub(rf"\bmodule\s+{module}\b", f"module {module}_mut", mutant.read_text(), count=1)
    outs = {n: w.strip() for d, w, n in ports(mt) if d == "output"}
    inst_re = re.compile(rf"^\s*{module}\s+(\w+)\s*\((.*?)\);", re.M | re.S)
    parents = [f for f in files if f != orig and inst_re.search(f.read_text())]
    if len(parents) != 1 or not outs:
        return None
    text = parents[0].read_text()
    add, bads = [], []
    for k, inst in enumerate(inst_re.finditer(text)):
        body = inst.group(2)
        conns = dict(re.findall(r"\.(\w+)\s*\(([^()]*)\)", body))
        if not all(p in conns for p in outs):
            return None
        for p, w in outs.items():
            add.append(f"  wire {w} shadow{k}_{p};")
            body = re.sub(rf"\.{p}\s*\([^()]*\)", f".{p}(shadow{k}_{p})", body)
            if conns[p].strip():
                bads.append(f"(shadow{k}_{p} != {conns[p].strip()})")
        add.append(f"  {module}_mut {inst.group(1)}_shadow ({body});")
    add.append("  (* keep *) wire shadow_bad_w;")
    add.append("  assign shadow_bad_w = " + (" | ".join(bads) or "1'b0") + ";")
    end = text.rindex("endmodule")
    (work / "ctx").mkdir(exist_ok=True)
    (work / "ctx" / parents[0].name).write_text(text[:end] + "\n".join(add) + "\n" + text[end:])
    (work / "ctx" / f"{module}_mut.v").write_text(mt)
    return ([f for f in files if f != parents[0]] + [work / "ctx" / parents[0].name,
                                                     work / "ctx" / f"{module}_mut.v"])


def context_proof(orig: Path, mutant: Path, module: str, core: str, work: Path):
    """True when ABC's PDR proves that the mutated module, in the original core (a shadow
    instance beside each original instance, same inputs), gives the original's outputs in every
    cycle from the all-zero register state with free inputs (resets included): the core then
    cannot tell the mutant apart. PDR finds the inductive invariants of the core's registers
    (the job registers and what the set-up derives from them) that the module-level proofs
    lack."""
    files = shadow_design(orig, mutant, module, work)
    if not files:
        return False
    aig = work / "ctx.aig"
    reads = "\n".join(f"read_verilog {f}" for f in files)
    (work / "ctx.ys").write_text(
        f"{reads}\nhierarchy -top {core}\nprep -top {core}\nflatten\n"
        "delete -port o:*\nselect -assert-count 1 w:*shadow_bad_w\nexpose w:*shadow_bad_w\n"
        + AIG_FLOW + f"write_aiger -zinit {aig}\n")
    rc, _ = run(["yosys", "-q", "-l", str(work / "ctx.log"), str(work / "ctx.ys")], work)
    return rc == 0 and abc_pdr(aig, work, "ctx")


def solver_path():
    """Puts the project venv (yices-smt2) on PATH; False when the solver is missing."""
    venv = Path(os.environ.get("NORMCORE_VENV", ROOT / ".venv"))
    os.environ["PATH"] = f"{venv / 'bin'}:{os.environ.get('PATH', '')}"
    return shutil.which("yices-smt2") is not None


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__.split("\n\n")[1])
    orig, mutant, module = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve(), sys.argv[3]
    keep = os.environ.get("MUTANT_EQUIV_KEEP")
    work = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="mutant_equiv_"))
    work.mkdir(parents=True, exist_ok=True)
    tried = []
    methods = os.environ.get("MUTANT_EQUIV_METHODS",
                             "contract,module,context,core,core-pdr").split(",")
    try:
        if module.endswith("_lane") and "contract" in methods:
            r = lane_contract(orig, mutant, module, work)
            if r:
                print(f"{r} contract (lane == contract: BMC + k-induction)")
                return 0 if r == "EQUIVALENT" else 1
            tried.append("contract")
        # (the core alone cannot be read without its sub-modules: the core method does it)
        if "module" in methods and not module.endswith("_core"):
            if yosys_equiv([orig], [mutant], module, work, "module"):
                print("EQUIVALENT module (yosys equiv_simple + equiv_induct)")
                return 0
            tried.append("module")
        if not {"context", "core"} & set(methods):
            print("UNPROVEN " + ", ".join(tried))
            return 2
        m = re.match(r"(.*)_[a-z]+$", module)
        core = f"{m.group(1)}_core" if m else None
        core_v = orig.parent / f"{core}.v"
        if core and core_v.exists() and module != core and "context" in methods:
            if context_proof(orig, mutant, module, core, work):
                print(f"EQUIVALENT context (ABC pdr: the mutated {module} in {core} gives "
                      "the original's outputs)")
                return 0
            tried.append("context")
        if core and core_v.exists() and "core" in methods:
            gold = sorted(orig.parent.glob("*.v"))
            gate = [mutant if f.name == orig.name else f for f in gold]
            how = yosys_equiv(gold, gate, core, work, "core", pdr="core-pdr" in methods)
            if how == "induct":
                print(f"EQUIVALENT core (yosys equiv of {core})")
                return 0
            if how == "pdr":
                print(f"EQUIVALENT core-pdr (the pairs of {core}'s equiv, ABC pdr)")
                return 0
            tried += ["core", "core-pdr"] if "core-pdr" in methods else ["core"]
        print("UNPROVEN " + ", ".join(tried))
        return 2
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
