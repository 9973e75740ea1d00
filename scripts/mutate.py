#!/usr/bin/env python3
"""Mutation testing of generated RTL against the Verilator co-simulation (issue 20, item 5).

Plants one fault at a time in the RTL of one swept configuration, rebuilds that configuration's
co-simulation harness against the mutated RTL and reports the fraction of mutants it catches.

The generator and harness commands are not re-derived here: they are read from the configured
build (`ninja -t commands <target>`), i.e. exactly what sim/cosim.cmake's normcore_cosim /
normcore_verilate_program (or sim/accel.cmake's normcore_accel_cosim) made for that target: the
`normcore gen` command, the sim/manifest_header.cmake step (nc_core_shape.h) and the verilator
--cc --exe --build command with its flags, -D defines and harness sources (test_core.cpp,
contract.cpp, float_contract.cpp, gtest_main.cpp). Only the paths change: a fresh RTL folder per
mutant, its own -Mdir, and -Wno-fatal (a mutant that only trips a -Wall warning is still judged by
the simulation; the warning is recorded in the "lint" column). OBJCACHE=ccache as in cmake, with
CCACHE_BASEDIR so the harness objects are shared between mutants.

Mutant kinds (deterministic enumeration in file, offset order; comments are never touched):
  op:+/-  op:&/|  op:&&/||  op:^  op:cmp (<,<=,>,>=)  op:==/!=   operator swaps
  const+1 / const-1                                            off-by-one integer constants
  drop                                                          x | y -> x (also &, ^, +, -)
  if-not                                                        if (c) -> if (!(c))
  stuck-1 / stuck-0                                             if (c) -> if (1'b1)/(1'b0) in a
                                                                clocked always (register enables)
  ternary-swap                                                  c ? a : b -> c ? b : a
  planted-equiv (--plant-equivalent)                            a comment edited: equivalent by
                                                                construction, must survive
Per mutant: `verilator --lint-only` without -Wall must pass (else "invalid", not a survivor);
then the harness is built and run with a timeout: nonzero exit = killed, timeout = "timeout"
(listed apart), exit 0 = survived. `ifdef FORMAL blocks (protocol properties, never simulated)
are not mutated. A survivor goes to --equiv-cmd CMD ORIG MUTANT MODULE (`--equiv-stage before`:
every valid mutant, before the simulation); exit 0 marks it "equivalent" (proven harmless), its
first output line is kept (e.g. "DIFFERENT contract": a real test gap). `--equiv` is
--equiv-cmd scripts/mutant_equiv.py (the lane's contract proof of scripts/prove.sh, Yosys
equivalence of the module and of the core) with `normcore gen --formal`.
Score = killed / (killed + survived).

Usage: scripts/mutate.py [--build-dir build] [--config l3_x4_y8_u | --target cosim_x]
         [--gen-extra "OPTS"] [--sample N --seed S] [--jobs J] [--timeout SEC]
         [--markdown FILE] [--json FILE] [--equiv | --equiv-cmd CMD [--equiv-stage before]]
         [--plant-equivalent] [--list] [--ids I,J,...]
"""
import argparse
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- commands from the build
def build_commands(build: Path, target: str):
    """(gen command, verilator command) of a cosim target, as ninja would run them."""
    out = subprocess.run(["ninja", "-C", str(build), "-t", "commands", target], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    gen = [c for c in out if re.search(r"\sgen\s", c) and " -o " in c and "verilator" not in c]
    ver = [c for c in out if "verilator" in c and "--cc" in c and "--build" in c]
    if not gen or not ver:
        sys.exit(f"mutate.py: no gen/verilator command for target {target} in {build}")
    return gen[-1], ver[-1]


def split_and(cmd: str):
    parts, cur = [], []
    for tok in shlex.split(cmd):
        if tok == "&&":
            parts.append(cur)
            cur = []
        else:
            cur.append(tok)
    parts.append(cur)
    return parts


class Recipe:
    """The target's gen, header and verilator steps, re-pointable at another folder."""

    def __init__(self, build: Path, target: str, gen_extra):
        gen_cmd, ver_cmd = build_commands(build, target)
        parts = split_and(gen_cmd)
        self.cwd = parts[0][1] if parts[0][0] == "cd" else str(build)
        self.gen = next(p for p in parts if len(p) > 1 and p[1] == "gen")
        self.hdr = next((p for p in parts if any("manifest_header" in t for t in p)), None)
        o = self.gen.index("-o")
        self.rtl_dir = self.gen[o + 1]
        self.gen = self.gen[:o] + list(gen_extra) + self.gen[o:]
        vparts = split_and(ver_cmd)
        self.ver = vparts[-1]
        self.vfiles = [t for t in self.ver if t.endswith(".v")]
        self.top = self.ver[self.ver.index("--top-module") + 1]
        self.exe_name = self.ver[self.ver.index("-o") + 1]
        self.gen_hdr_dir = None
        if self.hdr:
            out = next(t for t in self.hdr if t.startswith("-DOUT="))[len("-DOUT="):]
            self.gen_hdr_dir = str(Path(out).parent)

    def generate(self, dest: Path):
        """Runs normcore gen (+ the manifest header) into dest/rtl, dest/gen."""
        cmd = list(self.gen)
        cmd[cmd.index("-o") + 1] = str(dest / "rtl")
        subprocess.run(cmd, cwd=self.cwd, check=True, capture_output=True)
        if self.hdr:
            h = [t.replace(self.rtl_dir, str(dest / "rtl")) for t in self.hdr]
            h = [("-DOUT=" + str(dest / "gen" / Path(t[6:]).name)) if t.startswith("-DOUT=")
                 else t for t in h]
            subprocess.run(h, cwd=self.cwd, check=True, capture_output=True)

    def module_files(self, dest: Path):
        return [dest / "rtl" / Path(v).name for v in self.vfiles]

    def verilate_cmd(self, base: Path, rtl: Path, mdir: Path):
        """The verilator command for the RTL in rtl/, objects in mdir, headers from base/gen."""
        cmd = []
        for t in self.ver:
            if t in self.vfiles:
                t = str(rtl / Path(t).name)
            elif self.gen_hdr_dir and self.gen_hdr_dir in t:
                t = t.replace(self.gen_hdr_dir, str(base / "gen"))
            if self.rtl_dir in t and t not in self.vfiles:  # the accelerator's regs.hpp
                t = t.replace(self.rtl_dir, str(base / "rtl"))
            cmd.append(t)
        cmd[cmd.index("-Mdir") + 1] = str(mdir)
        cmd.insert(cmd.index("-Wall") + 1, "-Wno-fatal")
        return cmd

    def lint_cmd(self, rtl: Path, wall: bool):
        cmd = ["verilator", "--lint-only", "--top-module", self.top]
        cmd.append("-Wall" if wall else "-Wno-fatal")  # invalid = errors only
        return cmd + [str(rtl / Path(v).name) for v in self.vfiles]


# ---------------------------------------------------------------- mutant enumeration
def code_mask(text: str):
    """A copy of text with comments and strings blanked (same offsets) and the comment spans."""
    out, spans, i, n = list(text), [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif text.startswith("/*", i) or text.startswith("(*", i) and not text.startswith("(*)", i):
            j = text.find("*/" if text[i] == "/" else "*)", i + 2)
            j = n if j < 0 else j + 2
        elif text[i] == '"':
            j = text.find('"', i + 1) + 1 or n
        else:
            i += 1
            continue
        if text[i] == "/":
            spans.append((i, j))
        for k in range(i, j):
            if out[k] != "\n":
                out[k] = " "
        i = j
    return blank_formal("".join(out)), spans


def blank_formal(code: str):
    """code with every `ifdef FORMAL ... `endif block blanked (same offsets): the protocol
    properties are read by the proofs only (scripts/prove_props.py), never simulated, so a fault
    there is not a fault of the design."""
    out = list(code)
    for m in re.finditer(r"`ifdef\s+FORMAL\b", code):
        depth, k = 0, m.start()
        for d in re.finditer(r"`(ifdef|ifndef|endif)\b", code[m.start():]):
            depth += -1 if d.group(1) == "endif" else 1
            if depth == 0:
                k = m.start() + d.end()
                break
        else:
            k = len(code)
        for j in range(m.start(), k):
            if out[j] != "\n":
                out[j] = " "
    return "".join(out)


IDENT_END = re.compile(r"[\w\)\]\}']$")
NUMBER = re.compile(r"(\d+)?'([sS]?)([dDbBhH])([0-9a-fA-F_]+)|(?<![\w'$])(\d+)(?![\w'])")
DECL = re.compile(r"^\s*(wire|reg|input|output|inout|logic|integer|genvar)\b")
SWAPS = {"+": "-", "-": "+", "&": "|", "|": "&", "^": "|", "&&": "||", "||": "&&",
         "==": "!=", "!=": "==", "<": "<=", "<=": "<", ">": ">=", ">=": ">"}
KIND = {"+": "op:+/-", "-": "op:+/-", "&": "op:&/|", "|": "op:&/|", "^": "op:^",
        "&&": "op:&&/||", "||": "op:&&/||", "==": "op:==/!=", "!=": "op:==/!=",
        "<": "op:cmp", "<=": "op:cmp", ">": "op:cmp", ">=": "op:cmp"}
OPS = re.compile(r"===|!==|==|!=|<<<|>>>|<<|>>|<=|>=|&&|\|\||~&|~\||~\^|\^~|[-+&|^<>]")


def paren_depth(code: str):
    depth, d = [0] * (len(code) + 1), 0
    for i, c in enumerate(code):
        if c in "([{":
            d += 1
        elif c in ")]}":
            d -= 1
        depth[i + 1] = d
    return depth


def operand_end(code: str, i: int):
    """End of the primary that starts at or after i (identifier with selects, number, group)."""
    n = len(code)
    while i < n and code[i] in " \t\n":
        i += 1
    start = i
    while i < n and code[i] in "~!":
        i += 1
    if i < n and code[i] in "({":
        i = match_close(code, i)
    else:
        m = re.compile(r"\$?[\w']+").match(code, i)
        if not m:
            return None
        i = m.end()
        if i < n and code[i] == "(":  # $signed(...)
            i = match_close(code, i)
    while i < n and code[i] == "[":
        i = match_close(code, i)
    return (start, i) if i > start else None


def match_close(code: str, i: int):
    d = 0
    for k in range(i, len(code)):
        if code[k] in "([{":
            d += 1
        elif code[k] in ")]}":
            d -= 1
            if d == 0:
                return k + 1
    return len(code)


def line_of(text: str, off: int):
    return text.count("\n", 0, off) + 1


def op_mutants(text, code, depth):
    for m in OPS.finditer(code):
        op, s, e = m.group(), m.start(), m.end()
        if op not in SWAPS:
            continue
        before = code[:s].rstrip()
        if not IDENT_END.search(before) or before.endswith("~"):
            continue  # unary (reduction, negation) or ~&, ~|
        if code[e:e + 1] == ":" or code[e:e + 1] == "=" or (op in "<>" and code[s - 1:s] in "<>"):
            continue  # +: / -: part selects, compound tokens
        if op == "<=" and depth[s] == 0:
            continue  # a nonblocking assignment
        line_start = code.rfind("\n", 0, s) + 1
        if DECL.match(code[line_start:s]) and depth[s] > 0 and code[:s].count("=", line_start) == 0:
            continue  # a width in a declaration
        yield (s, e, SWAPS[op], KIND[op])
        if op in ("|", "&", "^", "+", "-"):
            r = operand_end(code, e)
            if r:
                yield (s, r[1], "", "drop")


def const_mutants(text, code, depth):
    for m in NUMBER.finditer(code):
        s, e = m.start(), m.end()
        line_start = code.rfind("\n", 0, s) + 1
        if DECL.match(code[line_start:s]) and depth[s] > 0:
            continue  # widths of declarations
        if code[s - 1:s] == "#" or code[line_start:s].strip().startswith("`"):
            continue
        if m.group(5) is not None:
            v, fmt = int(m.group(5)), lambda x: str(x)
        else:
            size, sg, base, digits = m.group(1), m.group(2), m.group(3).lower(), m.group(4)
            radix = {"d": 10, "b": 2, "h": 16}[base]
            try:
                v = int(digits.replace("_", ""), radix)
            except ValueError:
                continue
            width = int(size) if size else 32

            def fmt(x, size=size, sg=sg, base=base, width=width):
                if x < 0 or x >= (1 << width):
                    return None
                d = {"d": str(x), "b": format(x, "b"), "h": format(x, "x")}[base]
                return f"{size or ''}'{sg}{base}{d}"
        for delta, kind in ((1, "const+1"), (-1, "const-1")):
            rep = fmt(v + delta) if v + delta >= 0 else None
            if rep is not None:
                yield (s, e, rep, kind)


def cond_mutants(text, code, depth):
    for m in re.finditer(r"\bif\s*\(", code):
        o = m.end() - 1
        c = match_close(code, o)
        cond = text[o + 1:c - 1]
        yield (o, c, f"(!({cond}))", "if-not")
        al = code.rfind("always", 0, o)
        if al >= 0 and re.match(r"always\s*@\s*\(\s*(posedge|negedge)", code[al:]):
            yield (o, c, "(1'b1)", "stuck-1")
            yield (o, c, "(1'b0)", "stuck-0")
    for m in re.finditer(r"\?", code):
        q = m.start()
        a_end = ternary_scan(code, q + 1, colon=True)
        if a_end is None:
            continue
        b_end = ternary_scan(code, a_end + 1, colon=False)
        a, b = text[q + 1:a_end], text[a_end + 1:b_end]
        if a.strip() and b.strip():
            yield (q + 1, b_end, f" ({b.strip()}) : ({a.strip()})" + b[len(b.rstrip()):],
                   "ternary-swap")


def ternary_scan(code, i, colon):
    """From i, at bracket depth 0: the ':' of this ternary (colon=True; None when a ';' or ','
    or a closing bracket comes first; a nested '?' takes the next ':'), else the end of its
    else-arm (the first ';' or ',' or unmatched closing bracket, or the end of the text)."""
    d, nest = 0, 0
    for k in range(i, len(code)):
        c = code[k]
        if c in "([{":
            d += 1
        elif c in ")]}":
            d -= 1
            if d < 0:
                return None if colon else k
        elif d == 0 and c in ";,":
            return None if colon else k
        elif d == 0 and colon and c == "?":
            nest += 1
        elif d == 0 and colon and c == ":":
            if nest == 0:
                return k
            nest -= 1
    return None if colon else len(code)


def enumerate_mutants(files, plant_equivalent):
    muts = []
    for f in files:
        text = f.read_text()
        code, comments = code_mask(text)
        depth = paren_depth(code)
        found = set()
        for gen in (op_mutants, const_mutants, cond_mutants):
            for s, e, rep, kind in gen(text, code, depth):
                if (s, e, rep) in found or text[s:e] == rep:
                    continue
                found.add((s, e, rep))
                muts.append(dict(file=f.name, start=s, end=e, orig=text[s:e], new=rep, kind=kind,
                                 line=line_of(text, s)))
        if plant_equivalent and comments and not any(m["kind"] == "planted-equiv" for m in muts):
            s, e = comments[0]
            muts.append(dict(file=f.name, start=s, end=e, orig=text[s:e],
                             new=text[s:e].replace("//", "// mutated comment:", 1),
                             kind="planted-equiv",
                             line=line_of(text, s)))
    muts.sort(key=lambda m: (m["file"], m["start"], m["kind"], m["new"]))
    for i, m in enumerate(muts):
        m["id"] = i
    return muts


def sample(muts, n, seed):
    """n mutants spread over the module files (round robin over a seeded shuffle of each)."""
    if n is None or n >= len(muts):
        return muts
    rng = random.Random(seed)
    by_file = {}
    for m in muts:
        by_file.setdefault(m["file"], []).append(m)
    queues = [rng.sample(v, len(v)) for _, v in sorted(by_file.items())]
    planted = [m for m in muts if m["kind"] == "planted-equiv"]
    picked = planted[:1]
    while len(picked) < n and any(queues):
        for q in queues:
            while q and q[0] in picked:
                q.pop(0)
            if q and len(picked) < n:
                picked.append(q.pop(0))
    return sorted(picked, key=lambda m: m["id"])


# ---------------------------------------------------------------- running one mutant
def run(cmd, timeout=None, cwd=None, env=None):
    try:
        p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"") + (e.stderr or b"")
        return None, out.decode(errors="replace") if isinstance(out, bytes) else out


def judge(m, recipe, base, work, args, env):
    """Sets m['status']: invalid | equivalent | build-failed | killed | timeout | survived."""
    mdir = work / f"m{m['id']:04d}"
    shutil.rmtree(mdir, ignore_errors=True)
    (mdir / "rtl").mkdir(parents=True)
    for f in (base / "rtl").glob("*.v"):
        shutil.copy(f, mdir / "rtl" / f.name)
    orig = (base / "rtl" / m["file"]).read_text()
    mutated = orig[:m["start"]] + m["new"] + orig[m["end"]:]
    (mdir / "rtl" / m["file"]).write_text(mutated)
    t0 = time.time()
    rc, out = run(recipe.lint_cmd(mdir / "rtl", wall=False), timeout=120)
    if rc != 0:
        m["status"], m["detail"] = "invalid", first_error(out)
        return finish(m, mdir, t0, args)
    rc, _ = run(recipe.lint_cmd(mdir / "rtl", wall=True), timeout=120)
    m["lint_warns"] = rc != 0
    if args.equiv_cmd and args.equiv_stage == "before" and equiv(m, base, mdir, args):
        return finish(m, mdir, t0, args)
    rc, out = run(recipe.verilate_cmd(base, mdir / "rtl", mdir / "obj"), cwd=recipe.cwd, env=env)
    exe = mdir / "obj" / recipe.exe_name
    if rc != 0 or not exe.exists():
        m["status"], m["detail"] = "build-failed", first_error(out)
        return finish(m, mdir, t0, args)
    rc, out = run([str(exe)], timeout=args.timeout, cwd=mdir)
    if rc is None:
        m["status"] = "timeout"
    elif rc != 0:
        m["status"], m["detail"] = "killed", first_failure(out)
    else:
        m["status"] = "survived"
        if args.equiv_cmd and args.equiv_stage == "survivors":
            equiv(m, base, mdir, args)
    return finish(m, mdir, t0, args)


def equiv(m, base, mdir, args):
    """Runs --equiv-cmd ORIG MUTANT MODULE: exit 0 moves the mutant to "equivalent"; its first
    line of output (e.g. scripts/mutant_equiv.py's "DIFFERENT contract ...") is kept."""
    cmd = shlex.split(args.equiv_cmd) + [str(base / "rtl" / m["file"]),
                                         str(mdir / "rtl" / m["file"]), m["file"][:-2]]
    rc, out = run(cmd, timeout=args.equiv_timeout)
    lines = (out or "").strip().splitlines()
    m["equiv"] = lines[0][:120] if lines else f"exit {rc}"
    if rc == 0:
        m["status"] = "equivalent"
        return True
    if rc is None:
        m["equiv"] = f"UNPROVEN (timeout {args.equiv_timeout:.0f} s)"
    return False


def finish(m, mdir, t0, args):
    m["seconds"] = round(time.time() - t0, 1)
    print(f"mutate.py: m{m['id']:04d} {m['file']}:{m['line']} {m['kind']}: {m['status']} "
          f"({m['seconds']} s)", file=sys.stderr, flush=True)
    if not args.keep:
        shutil.rmtree(mdir, ignore_errors=True)
    return m


def first_error(out):
    lines = [x for x in out.splitlines() if "%Error" in x or "error" in x]
    return (lines[0] if lines else out.strip()[-200:])[:200]


def first_failure(out):
    lines = [x for x in out.splitlines() if "[  FAILED  ]" in x or "Failure" in x]
    return (lines[0] if lines else out.strip()[-160:])[:160]


# ---------------------------------------------------------------- report
COLS = ["mutants", "invalid", "equivalent", "killed", "timeout", "survived", "build-failed"]


def table(muts):
    rows = {}
    for m in muts:
        if m["kind"] == "planted-equiv":
            continue  # reported on its own line, not in the score
        r = rows.setdefault(m["file"][:-2], dict.fromkeys(COLS + ["lint"], 0))
        r["mutants"] += 1
        r[m["status"]] += 1
        r["lint"] += 1 if m.get("lint_warns") else 0
    total = dict.fromkeys(COLS + ["lint"], 0)
    for r in rows.values():
        for k in total:
            total[k] += r[k]
    rows["**total**"] = total
    head = ("| module | " + " | ".join(COLS)
            + " | -Wall warns | score without the filter | score |")
    lines = [head, "|" + "---|" * (len(COLS) + 4)]

    def pct(num, den):
        return f"{100.0 * num / den:.1f}%" if den else "n/a"
    for name, r in rows.items():
        raw = pct(r["killed"], r["killed"] + r["survived"] + r["equivalent"])
        lines.append(f"| {name} | " + " | ".join(str(r[c]) for c in COLS)
                     + f" | {r['lint']} | {raw} | {pct(r['killed'], r['killed'] + r['survived'])} |")
    return "\n".join(lines), total


def report(muts, args, header):
    tab, total = table(muts)
    planted = [m for m in muts if m["kind"] == "planted-equiv"]
    if planted:
        tab += ("\n\nPlanted equivalent mutant (a comment edited; not in the table): "
                + ", ".join(m["status"] for m in planted)
                + " (must be: survived; equivalent when the filter ran on it)")
    out = [header, "", tab, "", "score = killed / (killed + survived); without the filter = "
           "killed / (killed + survived + equivalent); timeouts (hangs) are "
           "listed apart, not in the score; invalid = verilator cannot parse/elaborate the mutant; "
           "-Wall warns = mutants that also trip verilator -Wall (the rtl.* lint gate).", ""]
    muts = [m for m in muts if m["kind"] != "planted-equiv"]
    for title, st in (("Survivors", "survived"), ("Proven equivalent", "equivalent"),
                      ("Timeouts", "timeout"),
                      ("Build failures", "build-failed")):
        sel = [m for m in muts if m["status"] == st]
        if not sel:
            continue
        out.append(f"{title} ({len(sel)}):")
        out.append("")
        for m in sel:
            o = " ".join(m["orig"].split())[:70]
            n = " ".join(m["new"].split())[:70]
            why = f" — {m['equiv']}" if m.get("equiv") else ""
            out.append(f"- `{m['file']}:{m['line']}` {m['kind']}: `{o}` -> `{n}`{why}")
        out.append("")
    if not args.equiv_cmd:
        out.append("Equivalent mutants are not filtered (no --equiv / --equiv-cmd): some "
                   "survivors may be harmless.")
    text = "\n".join(out)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(dict(total=total, mutants=muts + planted),
                                              indent=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--config", default="l3_x4_y8_u", help="a normcore_cosim name (sweep.cmake)")
    ap.add_argument("--target", help="the cmake target (default cosim_<config>; an accelerator's "
                    "cosim target from sim/accel.cmake works the same way)")
    ap.add_argument("--gen-extra", default="", help="more normcore gen options (quoted)")
    ap.add_argument("--sample", type=int, help="N mutants spread over the modules")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120, help="seconds per simulation run")
    ap.add_argument("--equiv-cmd", help="CMD ORIG MUTANT MODULE; exit 0 = proven equivalent")
    ap.add_argument("--equiv", action="store_true",
                    help="--equiv-cmd scripts/mutant_equiv.py (the lane's contract proof, Yosys "
                    "equivalence of the module and of the core), with gen --formal")
    ap.add_argument("--equiv-stage", choices=("survivors", "before"), default="survivors",
                    help="run the equivalence check on the survivors of the simulation (default) "
                    "or on every valid mutant before it")
    ap.add_argument("--equiv-timeout", type=float, default=300)
    ap.add_argument("--plant-equivalent", action="store_true",
                    help="add a comment-only mutant (equivalent: must survive)")
    ap.add_argument("--work", help="scratch folder (default <build>/mutate/<config>)")
    ap.add_argument("--keep", action="store_true", help="keep each mutant's folder")
    ap.add_argument("--list", action="store_true", help="list the mutants and stop")
    ap.add_argument("--ids", help="only these mutant ids (comma separated; the ids of --list, "
                    "which count the planted mutant only with --plant-equivalent: give the "
                    "same flag)")
    ap.add_argument("--skip-baseline", action="store_true",
                    help="do not build and run the unmutated RTL first (tests of the hook only)")
    ap.add_argument("--markdown")
    ap.add_argument("--json")
    args = ap.parse_args()
    build = Path(args.build_dir).resolve()
    target = args.target or f"cosim_{args.config}"
    gen_extra = shlex.split(args.gen_extra)
    if args.equiv:
        args.equiv_cmd = f"{shlex.quote(sys.executable)} {ROOT / 'scripts' / 'mutant_equiv.py'}"
        gen_extra.append("--formal")  # formal/<n>_lane_ref.v, _lane_fv.v: the contract proof
    recipe = Recipe(build, target, gen_extra)
    work = Path(args.work or build / "mutate" / target).resolve()
    base = work / "base"
    shutil.rmtree(work, ignore_errors=True)
    base.mkdir(parents=True)
    recipe.generate(base)
    muts = sample(enumerate_mutants(recipe.module_files(base), args.plant_equivalent),
                  args.sample, args.seed)
    if args.ids:
        want = {int(i) for i in args.ids.split(",")}
        muts = [m for m in muts if m["id"] in want]
    if args.list:
        for m in muts:
            print(f"{m['id']:4d} {m['file']}:{m['line']} {m['kind']}: "
                  f"{m['orig']!r} -> {m['new']!r}")
        return 0
    env = dict(os.environ, OBJCACHE="ccache", CCACHE_BASEDIR=str(work), CCACHE_NOHASHDIR="1")
    # The unmutated RTL must build and pass, else nothing below means anything.
    if not args.skip_baseline:
        rc, out = run(recipe.verilate_cmd(base, base / "rtl", base / "obj"), cwd=recipe.cwd,
                      env=env)
        exe = base / "obj" / recipe.exe_name
        if rc != 0 or run([str(exe)], timeout=args.timeout, cwd=base)[0] != 0:
            sys.exit(f"mutate.py: the unmutated {target} does not build or pass:\n{out[-2000:]}")
    t0 = time.time()
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        done = list(pool.map(lambda m: judge(m, recipe, base, work, args, env), muts))
    header = (f"Mutation testing of {target} ({len(done)} mutants, seed {args.seed}, "
              f"{time.time() - t0:.0f} s)")
    report(done, args, header)
    return 0


if __name__ == "__main__":
    sys.exit(main())
