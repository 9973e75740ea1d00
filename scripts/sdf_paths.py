#!/usr/bin/env python3
"""Every timing endpoint above a threshold, from the SDF that nextpnr writes after routing.

nextpnr-ice40 reports only the worst path per clock; fixing one path at a time needs a
place-and-route run per path. `nextpnr-ice40 ... --sdf routed.sdf` writes every cell arc
(IOPATH), every routed connection (INTERCONNECT) and the set-up checks (SETUP), which is
enough for a single-clock static timing analysis: arrival times propagate from the clocked
outputs (an IOPATH from `posedge CLK`) through the combinational arcs; each input with a SETUP
check is an endpoint, its path delay = arrival + set-up. Prints, worst first, each endpoint
group above the threshold (endpoints whose worst path has the same source register and the
same cells but for the last net: one line each) with its path.

    scripts/sdf_paths.py routed.sdf [--ns 9.5] [--max 40] [--full]

Delays: the SDF's max corner (the last of min:typ:max). Standard library only.
"""
import argparse
import re
import sys
from collections import defaultdict


CLOCKS = {"CLK", "RCLK", "WCLK"}


def tokens(text):
    for m in re.finditer(r'\(|\)|"(?:[^"\\]|\\.)*"|[^\s()]+', text):
        yield m.group(0)


def parse(text):
    """S-expression tree: lists of strings / lists."""
    stack, cur = [], []
    for t in tokens(text):
        if t == "(":
            stack.append(cur)
            cur = []
        elif t == ")":
            done = cur
            cur = stack.pop()
            cur.append(done)
        else:
            cur.append(t)
    return cur


def dval(x):
    """The max of an SDF delay triple '(a:b:c)' given as a list ['a:b:c'] or a number."""
    if isinstance(x, list):
        if not x:
            return 0.0
        x = x[0]
    parts = [p for p in str(x).split(":") if p != ""]
    return max(float(p) for p in parts) if parts else 0.0


def unq(s):
    return s[1:-1] if s.startswith('"') else s


def pin(ref, inst):
    """'inst/port' of an INTERCONNECT reference, or (inst, port) for an IOPATH port."""
    ref = unq(ref).replace("\\", "")
    if "/" in ref:
        i, p = ref.rsplit("/", 1)
        return i, p
    return inst, ref


def build(tree):
    comb = defaultdict(list)   # (inst, in_port) -> [((inst, out_port), delay)]
    clocked = {}               # (inst, out_port) -> clock-to-out
    setup = {}                 # (inst, in_port) -> set-up time
    wires = defaultdict(list)  # (inst, out_port) -> [((inst, in_port), delay)]
    celltype = {}
    for top in tree:
        if not isinstance(top, list) or not top or top[0] != "DELAYFILE":
            continue
        for cell in top[1:]:
            if not isinstance(cell, list) or not cell or cell[0] != "CELL":
                continue
            ctype = inst = ""
            for item in cell[1:]:
                if not isinstance(item, list):
                    continue
                if item[0] == "CELLTYPE":
                    ctype = unq(item[1])
                elif item[0] == "INSTANCE":
                    inst = unq(item[1]).replace("\\", "") if len(item) > 1 else ""
                    celltype[inst] = ctype
                elif item[0] == "DELAY":
                    for ab in item[1:]:
                        for arc in ab[1:] if isinstance(ab, list) else []:
                            if not isinstance(arc, list):
                                continue
                            if arc[0] == "IOPATH":
                                src, dst = arc[1], arc[2]
                                d = max(dval(v) for v in arc[3:] if isinstance(v, list)) if len(arc) > 3 else 0.0
                                if isinstance(src, list) or src in CLOCKS:  # clock-to-out
                                    clocked[(inst, unq(dst))] = max(d, clocked.get((inst, unq(dst)), 0.0))
                                else:
                                    comb[(inst, unq(src))].append(((inst, unq(dst)), d))
                            elif arc[0] == "INTERCONNECT":
                                a, b = pin(arc[1], inst), pin(arc[2], inst)
                                d = max(dval(v) for v in arc[3:] if isinstance(v, list)) if len(arc) > 3 else 0.0
                                wires[a].append((b, d))
                elif item[0] == "TIMINGCHECK":
                    for chk in item[1:]:
                        if isinstance(chk, list) and chk[0] in ("SETUP", "SETUPHOLD"):
                            port = unq(chk[1] if not isinstance(chk[1], list) else chk[1][-1])
                            v = [x for x in chk[3:] if isinstance(x, list)]
                            su = dval(v[0]) if v else 0.0
                            setup[(inst, port)] = max(su, setup.get((inst, port), 0.0))
    return comb, clocked, setup, wires, celltype


def analyse(comb, clocked, setup, wires):
    """Longest arrival per pin (a DAG: clocked outputs are the sources)."""
    arr, prev = {}, {}
    order = []
    # Kahn over the pin graph reachable from the clocked outputs.
    succ = defaultdict(list)
    for a, lst in wires.items():
        succ[a].extend(lst)
    for a, lst in comb.items():
        succ[a].extend(lst)
    indeg = defaultdict(int)
    seen = set()
    stack = list(clocked)
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        for b, _ in succ.get(n, ()):
            indeg[b] += 1
            stack.append(b)
    ready = [n for n in clocked]
    for n in clocked:
        arr[n] = clocked[n]
    while ready:
        n = ready.pop()
        order.append(n)
        for b, d in succ.get(n, ()):
            t = arr[n] + d
            if t > arr.get(b, -1.0):
                arr[b], prev[b] = t, n
            indeg[b] -= 1
            if indeg[b] == 0:
                ready.append(b)
    return arr, prev


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sdf")
    ap.add_argument("--ns", type=float, default=9.5, help="report endpoints whose path exceeds this")
    ap.add_argument("--max", type=int, default=40, help="at most this many groups")
    ap.add_argument("--full", action="store_true", help="print every pin of each path")
    a = ap.parse_args()
    text = open(a.sdf).read()
    comb, clocked, setup, wires, celltype = build(parse(text))
    ts = re.search(r"\(TIMESCALE\s+1?(\w+)\)", text)
    k = {"ps": 1e-3, "ns": 1.0}.get(ts.group(1) if ts else "ns", 1.0)
    clocked = {p: v * k for p, v in clocked.items()}
    setup = {p: v * k for p, v in setup.items()}
    comb = {p: [(b, d * k) for b, d in lst] for p, lst in comb.items()}
    wires = {p: [(b, d * k) for b, d in lst] for p, lst in wires.items()}
    arr, prev = analyse(comb, clocked, setup, wires)
    ends = []
    for p, su in setup.items():
        if p in arr:
            ends.append((arr[p] + su, p))
    ends.sort(reverse=True)
    print(f"sdf_paths: {len(ends)} endpoints, worst {ends[0][0]:.2f} ns" if ends else "no endpoints")
    groups = {}
    for t, p in ends:
        if t < a.ns:
            break
        path = [p]
        while path[-1] in prev:
            path.append(prev[path[-1]])
        path.reverse()
        cells = [n[0] for n in path]
        key = (path[0][0], tuple(re.sub(r"\[\d+\]|_\d+", "#", c) for c in cells[1:-1]))
        if key in groups:
            groups[key][2] += 1
            continue
        groups[key] = [t, path, 1]
    for k, (t, path, n) in enumerate(sorted(groups.values(), key=lambda g: -g[0])[: a.max]):
        src, dst = path[0], path[-1]
        luts = sum(1 for x in path if x[1] == "O" and x[0] != src[0])
        carries = sum(1 for x in path if x[1] == "COUT")
        print(f"{t:6.2f} ns  x{n:<3d} {src[0]}.{src[1]} -> {dst[0]}.{dst[1]}  "
              f"({luts} LUT, {carries} carry)")
        if a.full:
            for x in path:
                print(f"           {arr[x]:6.2f}  {x[0]}.{x[1]}")
        else:
            mids = [x[0] for x in path[1:-1] if x[1] == "O"]
            if mids:
                print("           via " + ", ".join(mids))
    return 0


if __name__ == "__main__":
    sys.exit(main())
