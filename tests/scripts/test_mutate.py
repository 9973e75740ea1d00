#!/usr/bin/env python3
"""scripts/mutate.py's accounting on a few mutants of l3_x4_y8_u (ctest scripts.mutation).

  test_mutate.py <build dir> <scratch dir>
Asserts: the enumeration is deterministic (two --list runs agree, every mutant kind appears); a
--sample 4 --plant-equivalent run judges every mutant exactly once, kills at least one, and keeps
the planted comment-only mutant as a survivor (a harness that "killed" it would be broken); the
per-module table adds up to the totals; --equiv-cmd true moves every valid mutant to "equivalent".
"""
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
