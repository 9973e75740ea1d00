#!/usr/bin/env python3
"""scripts/mutate.py's accounting on a few mutants of l3_x4_y8_u (ctest scripts.mutation).

  test_mutate.py <build dir> <scratch dir>
Asserts: the enumeration is deterministic (two --list runs agree, every mutant kind appears); a
--sample 4 --plant-equivalent run judges every mutant exactly once, kills at least one, and keeps
the planted comment-only mutant as a survivor (a harness that "killed" it would be broken); the
per-module table adds up to the totals; --equiv-cmd true moves every valid mutant to "equivalent";
no mutant inside an `ifdef FORMAL block; scripts/mutant_equiv.py proves an unread-signal mutant
of the lane equal to the contract and finds a rounding fault (yices from the project venv; skipped
without it), proves an unread-signal mutant of the step divider equal to the original module and
does not prove a real fault there; the context proof (ABC pdr, the mutated module in the core)
proves a chan mutant that is equal only under the core's job-register invariants and does not
prove a chan fault that the co-simulation kills; core-pdr (ABC pdr of a pairing of the core's
equivalence) proves a core set-up mutant and does not prove a core fault the co-simulation kills.
"""
import os
import re
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
build, scratch = Path(sys.argv[1]), Path(sys.argv[2])
mutate = [sys.executable, str(ROOT / "scripts" / "mutate.py"), "--build-dir", str(build),
          "--config", "l3_x4_y8_u", "--timeout", "60"]


def check(cond, msg):
    if not cond:
        sys.exit(f"FAIL: {msg}")
    print(f"ok: {msg}")


lists = [subprocess.run(mutate + ["--list", "--work", str(scratch / "list")], check=True,
                        capture_output=True, text=True).stdout for _ in range(2)]
check(lists[0] == lists[1] and lists[0].count("\n") > 100, "deterministic enumeration")
for kind in ("op:+/-", "op:&/|", "const+1", "const-1", "drop", "if-not", "stuck-1", "stuck-0",
             "ternary-swap"):
    check(f" {kind}: " in lists[0], f"kind {kind} enumerated")

out = scratch / "run.json"
subprocess.run(mutate + ["--sample", "4", "--seed", "1", "--plant-equivalent", "--work",
                         str(scratch / "run"), "--json", str(out)], check=True)
res = json.loads(out.read_text())
muts, total = res["mutants"], res["total"]
check(len(muts) == 4 and total["mutants"] == 3, "4 mutants judged, 3 in the table")
check(sum(total[k] for k in ("invalid", "equivalent", "killed", "timeout", "survived",
                             "build-failed")) == 3, "every mutant has exactly one verdict")
check(total["build-failed"] == 0, "no mutant failed to build after a clean lint")
check(total["killed"] >= 1, "at least one mutant killed by the co-simulation")
planted = [m for m in muts if m["kind"] == "planted-equiv"]
check(len(planted) == 1 and planted[0]["status"] == "survived",
      "the planted equivalent (comment) mutant survives")

out2 = scratch / "equiv.json"
subprocess.run(mutate + ["--sample", "2", "--seed", "1", "--equiv-cmd", "true",
                         "--equiv-stage", "before", "--skip-baseline", "--work",
                         str(scratch / "equiv"), "--json", str(out2)], check=True)
res2 = json.loads(out2.read_text())["total"]
check(res2["equivalent"] + res2["invalid"] == 2 and res2["killed"] == 0,
      "--equiv-cmd exiting 0 filters the mutants before simulation")

# No mutant in the protocol properties (`ifdef FORMAL ... `endif: never simulated).
base = scratch / "list" / "base" / "rtl"
spans = {}
for f in base.glob("*.v"):
    lines = f.read_text().splitlines()
    inside, rows = False, set()
    for i, line in enumerate(lines, 1):
        if line.startswith("`ifdef FORMAL"):
            inside = True
        if inside:
            rows.add(i)
        if line.startswith("`endif"):
            inside = False
    spans[f.name] = rows
hits = [ln for ln in lists[0].splitlines()
        if int(ln.split()[1].split(":")[1]) in spans.get(ln.split()[1].split(":")[0], set())]
check(sum(len(r) for r in spans.values()) > 20 and not hits,
      "no mutant inside an `ifdef FORMAL block")

# The equivalence filter itself (scripts/mutant_equiv.py) on hand-made mutants.
fv = scratch / "fv"
subprocess.run(mutate + ["--list", "--equiv", "--work", str(fv)], check=True, capture_output=True)
rtl = fv / "base" / "rtl"
equiv = [sys.executable, str(ROOT / "scripts" / "mutant_equiv.py")]


def plant(module, old, new, d):
    """Writes <module>.v of the base RTL with its first `old` replaced by `new` into scratch dir d."""
    d.mkdir(parents=True, exist_ok=True)
    text = (rtl / f"{module}.v").read_text()
    check(old in text, f"{module}: the text to mutate is there")
    (d / f"{module}.v").write_text(text.replace(old, new, 1))
    return d


def verdict(module, old, new, methods):
    d = plant(module, old, new, scratch / "fvm" / module)
    p = subprocess.run(equiv + [str(rtl / f"{module}.v"), str(d / f"{module}.v"), module],
                       capture_output=True, text=True,
                       env=dict(os.environ, MUTANT_EQUIV_METHODS=methods))
    print(f"  {module}: {old!r} -> {new!r}: exit {p.returncode}: {p.stdout.strip()}")
    return p.returncode, p.stdout


step = "nc_l3_x4_y8_u_step"
m = re.search(r"assign (unused_\w+) = \^(\w+)\[(\d+):0\];", (rtl / f"{step}.v").read_text())
rc, _ = verdict(step, m.group(0), m.group(0).replace(":0]", ":1]"), "module")
check(rc == 0, "an unread-signal mutant of the step divider is proven equivalent (module)")
rc, _ = verdict(step, "q_q + 2'd1", "q_q + 2'd2", "module")
check(rc == 2, "a quotient fault in the step divider is not proven equivalent")
# The context proof (ABC pdr of the mutated module beside the original in the core): a survivor
# that needs the core's job-register invariants (S >= 8 never meets s2l) is proven; a fault the
# co-simulation kills (the same line, i + L + 1 - S off by one) is not.
chan = "nc_l3_x4_y8_u_chan"
xs2 = "assign xs_2 = 4'd6 - {1'b0, stride_i[2:0]};"
rc, out = verdict(chan, xs2, xs2.replace("[2:0]", "[3:0]"), "module,context")
check(rc == 0 and out.startswith("EQUIVALENT context"),
      "a chan mutant equal only under the core's job-register invariants is proven (context)")
rc, out = verdict(chan, xs2, xs2.replace("4'd6", "4'd5"), "module,context")
check(rc == 2, "a chan fault that the co-simulation kills is not proven equivalent (context)")
# core-pdr (ABC pdr of the pairing that the core's blacklist loop reaches), called with fixed
# blacklists: a survivor of the core's set-up (krsk < 0 only at S = 1, where nskr's carry is 0
# either way) is proven with the pairs its loop keeps; a fault the co-simulation kills (the
# compare of S's bits 6..3 with 0 losing bit 6) is not, with its own signals off the pairing.
sys.path.insert(0, str(ROOT / "scripts"))
import mutant_equiv  # noqa: E402

core = "nc_l3_x4_y8_u_core"


def pair_pdr(old, new, blacklist, tag):
    d = plant(core, old, new, scratch / "pdr" / tag)
    (d / "bl").write_text("\n".join(blacklist) + "\n")
    gold = sorted(rtl.glob("*.v"))
    gate = [d / f"{core}.v" if f.name == f"{core}.v" else f for f in gold]
    return mutant_equiv.pair_pdr(gold, gate, core, d / "bl", d, tag)


nskr = "nskr_d = krsk_q[3] ? krsk_q[2:0] - 3'd1"
chan_regs = ["c_add", "c_nx", "c_sub", "cy0", "cy0_b", "cy0_nx", "cy_0_d", "cy_0_q", "cyc_d",
             "g_1_d", "g_2_d", "ga_1", "ga_2", "gb_1", "gb_2", "nskr_i", "u_0_d", "u_nx_0"]
check(pair_pdr(nskr, nskr.replace("[2:0]", "[1:0]"),
               ["nskr_d"] + [f"u_chan.{r}" for r in chan_regs], "nskr"),
      "core-pdr proves a core mutant equal only under the job registers' invariants")
shz = "stride_q[6:3] == 4'd0"
check(not pair_pdr(shz, shz.replace("[6:3]", "[5:3]"), ["shz_d", "shz_q"], "shz"),
      "core-pdr does not prove a core fault that the co-simulation kills")
venv = os.environ.get("NORMCORE_VENV", str(ROOT / ".venv"))
if subprocess.run(["bash", str(ROOT / "scripts" / "venv.sh"), venv, "formal"],
                  capture_output=True).returncode != 0:
    print("note: no project venv with yices: the lane contract checks are skipped")
    sys.exit(0)
lane = "nc_l3_x4_y8_u_lane"
rc, out = verdict(lane, "assign unused_qf = ^qf[20:8];", "assign unused_qf = ^qf[20:7];",
                  "contract")
check(rc == 0 and out.startswith("EQUIVALENT contract"),
      "an unread-signal mutant of the lane is proven equal to the contract")
rc, out = verdict(lane, "assign h = z_q[0];", "assign h = z_q[1];", "contract")
check(rc == 1 and out.startswith("DIFFERENT contract"),
      "a rounding fault in the lane is shown different from the contract")
