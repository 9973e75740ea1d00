#!/usr/bin/env python3
"""Merged Verilator coverage of co-simulation runs, per module, with a floor (issue 20, item 4).

Each coverage-instrumented co-simulation (sim/cosim.cmake `COVERAGE`, or every one with
-DNORMCORE_COVERAGE_ALL=ON: Verilator --coverage-line --coverage-toggle) writes one counter file
per harness into its configuration's coverage directory (sim/vharness.hpp: $NC_COVERAGE_DIR). This
script merges the files of each directory (a point's counts summed over the files; Verilator has
already merged a module's instances), and reports per configuration and module:

  * lines: Verilator's line coverage points (`v_line`: a statement block, `v_branch`: each arm of
    an if / case) hit at least once, of those that are not excluded;
  * toggles: `v_toggle` points (each bit of each signal, 0 -> 1 and 1 -> 0 counted together by
    Verilator 5.006) hit, reported only (the floor is on lines).

A module's name is `<prefix><kind>` (the generator's `--name` prefix, found as the longest common
prefix of a configuration's module names); the table also gives each kind summed over the
configurations. Exclusions (--exclusions FILE): lines `<kind> <regex> <reason>`, tab- or
two-space separated; a line point of that module kind whose `<comment>: <source text>` (Verilator's
point comment — block, if, else, elsif, case — and the point's first source line) matches the
regex is excluded and listed with the reason. Exit status 1 when a module's line
coverage, merged over the configurations, is below --floor (percent; a configuration's own rows
below it are marked, not failed), 2 on bad input.

    scripts/coverage.py [--floor 90] [--exclusions scripts/coverage_exclusions.txt]
                        [--markdown out.md] [--uncovered N] DIR [DIR...]
Standard library only.
"""
import argparse
import os
import re
import sys
from collections import defaultdict
from pathlib import Path


def parse_point(key):
    fields = {}
    for part in key.split("\x01"):
        if "\x02" in part:
            k, v = part.split("\x02", 1)
            fields[k] = v
    return fields


def read_dir(d):
    """{(page, file, line, col, comment): count} summed over the directory's .dat files."""
    files = sorted(Path(d).glob("*.dat"))
    if not files:
        raise ValueError(f"{d}: no coverage files (*.dat); run the coverage.run tests first")
    pts = defaultdict(int)
    for f in files:
        with open(f, encoding="latin-1") as fh:
            for ln in fh:
                if not ln.startswith("C '"):
                    continue
                end = ln.rindex("'")
                p = parse_point(ln[3:end])
                key = (p.get("page", ""), p.get("f", ""), int(p.get("l", "0")), p.get("n", ""),
                       p.get("o", ""))
                pts[key] += int(ln[end + 1:])
    return pts


def common_prefix(names):
    if len(names) < 2:
        return ""
    p = os.path.commonprefix(sorted(names))
    return p[: p.rfind("_") + 1]


def load_exclusions(path):
    ex = []
    if not path:
        return ex
    for n, ln in enumerate(Path(path).read_text().splitlines(), 1):
        if not ln.strip() or ln.lstrip().startswith("#"):
            continue
        parts = re.split(r"\t+| {2,}", ln.strip(), maxsplit=2)
        if len(parts) != 3:
            raise ValueError(f"{path}:{n}: want '<kind>  <regex>  <reason>', got: {ln}")
        try:
            ex.append((parts[0], re.compile(parts[1]), parts[2]))
        except re.error as e:
            raise ValueError(f"{path}:{n}: bad regex {parts[1]!r}: {e}") from None
    return ex


class Source:
    """The text of the generated RTL files (for exclusions and the uncovered list)."""

    def __init__(self):
        self.cache = {}

    def line(self, f, n):
        if f not in self.cache:
            try:
                self.cache[f] = Path(f).read_text(errors="replace").splitlines()
            except OSError:
                self.cache[f] = []
        lines = self.cache[f]
        return lines[n - 1].strip() if 0 < n <= len(lines) else ""


def summarise(dirs, exclusions):
    src = Source()
    rows, excluded, uncovered = [], [], []
    for d in dirs:
        cfg = Path(d).parent.name
        pts = read_dir(d)
        mods = {page.split("/", 1)[1] for (page, *_rest) in pts if "/" in page}
        prefix = common_prefix(mods)
        stat = defaultdict(lambda: [0, 0, 0, 0])  # lines hit, lines, toggles hit, toggles
        for (page, f, line, col, comment), count in sorted(pts.items()):
            kind_page, _, mod = page.partition("/")
            kind = mod[len(prefix):] if mod.startswith(prefix) else mod
            s = stat[kind]
            if kind_page in ("v_line", "v_branch"):
                text = src.line(f, line)
                hit = [e for e in exclusions if e[0] == kind and e[1].search(f"{comment}: {text}")]
                if hit:
                    excluded.append((cfg, kind, f"{Path(f).name}:{line}", comment, text, hit[0][2],
                                     count))
                    continue
                s[1] += 1
                if count > 0:
                    s[0] += 1
                else:
                    uncovered.append((cfg, kind, f"{Path(f).name}:{line}", comment, text))
            elif kind_page == "v_toggle":
                s[3] += 1
                if count > 0:
                    s[2] += 1
        for kind, s in sorted(stat.items()):
            rows.append((cfg, kind, *s))
    return rows, excluded, uncovered


def pct(a, b):
    return 100.0 * a / b if b else 100.0


def table(rows, floor):
    out = ["| configuration | module | lines hit / points | lines % | toggles hit / points | "
           "toggles % | vs floor |", "|---|---|---|---|---|---|---|"]
    for cfg, kind, lh, lt, th, tt in rows:
        ok = pct(lh, lt) >= floor
        out.append(f"| {cfg} | {kind} | {lh} / {lt} | {pct(lh, lt):.1f} | {th} / {tt} | "
                   f"{pct(th, tt):.1f} | {'ok' if ok else 'below'} |")
    tot = defaultdict(lambda: [0, 0, 0, 0])
    for _cfg, kind, *s in rows:
        for i in range(4):
            tot[kind][i] += s[i]
    # The floor applies to each module merged over the configurations (points summed).
    out += ["", "| module (merged over the configurations) | lines % | toggles % | floor |",
            "|---|---|---|---|"]
    low = []
    for kind, (lh, lt, th, tt) in sorted(tot.items()):
        ok = pct(lh, lt) >= floor
        if not ok:
            low.append(("all", kind, pct(lh, lt)))
        out.append(f"| {kind} | {pct(lh, lt):.1f} ({lh} / {lt}) | {pct(th, tt):.1f} ({th} / {tt}) | "
                   f"{'ok' if ok else '**below**'} |")
    return out, low


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+", help="coverage directories (one per configuration)")
    ap.add_argument("--floor", type=float, default=90.0, help="line coverage floor per module, %%")
    ap.add_argument("--exclusions", help="exclusion list: <kind>  <regex>  <reason> per line")
    ap.add_argument("--markdown", help="also write the tables to this Markdown file")
    ap.add_argument("--uncovered", type=int, default=20, help="uncovered line points to list")
    args = ap.parse_args()
    try:
        exclusions = load_exclusions(args.exclusions)
        rows, excluded, uncovered = summarise(args.dirs, exclusions)
    except (OSError, ValueError) as e:
        print(f"coverage: {e}", file=sys.stderr)
        sys.exit(2)
    out, low = table(rows, args.floor)
    out += ["", f"Excluded line points: {len(excluded)}"]
    for cfg, kind, where, comment, text, reason, count in excluded[:50]:
        out.append(f"* {cfg} {kind} {where} ({comment}, hit {count}): `{text[:60]}` — {reason}")
    out += ["", f"Uncovered line points: {len(uncovered)}"]
    for cfg, kind, where, comment, text in uncovered[: args.uncovered]:
        out.append(f"* {cfg} {kind} {where} ({comment}): `{text[:80]}`")
    print("\n".join(out))
    if args.markdown:
        Path(args.markdown).write_text("\n".join(out) + "\n")
    if low:
        print("\ncoverage: below the floor of {:.0f}% lines: ".format(args.floor)
              + ", ".join(f"{c}/{k} {p:.1f}%" for c, k, p in low), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
