#!/usr/bin/env python3
"""The import table of issue 16: every committed framework fixture through the CLI.

For each fixture file (tests/import/fixtures: StableHLO and HLO text from JAX/Flax with .npz or
Flax .msgpack bundles, TOSA from torch-mlir, torch.export .pt2 in its forms, Relay text bound
from the torch / Flax checkpoints, ONNX from torch.onnx.export) it runs

    normcore import FILE [--params BUNDLE] --config M -o PLAN --in-scale S --out-scale O
    normcore run --device ref:M --params PLAN/<layer>.params.bin --input x.npy --output y.npy

per BN layer, with x the framework's quantised BN input (<io>.npz `<layer>/x`), and compares y
with the framework's own float32 output of that BN (`<layer>/y`, divided by O, the fused relu
applied, clamped to the layer's output range). Prints a Markdown table: format, model, file,
layers found (of those the framework has), near misses, max error / fold bound in output LSBs.
Plain Python 3 (no numpy): the .npy members are read with struct.

    python3 scripts/import_table.py --normcore build/cli/normcore \\
        --manifest build/devices/normcore/rtl/manifest.json [--check]

--check: exit 1 unless every file has the expected layers in order, no near miss, and every
layer's error is within its bound (+1e-3 LSB for the framework's float32 rounding) and not 0.
"""
import argparse
import ast
import json
import os
import struct
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FX = os.path.join(ROOT, "tests", "import", "fixtures")
TYPES = {"<i4": "i", "<f4": "f", "|i1": "b", "<f8": "d", "<i8": "q", "|u1": "B"}


def npy(data):
    """(shape, list of values) of .npy bytes (C order, little-endian)."""
    if data[:6] != b"\x93NUMPY":
        raise ValueError("not a .npy")
    hlen = struct.unpack("<H", data[8:10])[0] if data[6] == 1 else struct.unpack(
        "<I", data[8:12])[0]
    start = 10 + hlen if data[6] == 1 else 12 + hlen
    head = ast.literal_eval(data[start - hlen:start].decode("latin1"))
    code = TYPES[head["descr"]]
    n = 1
    for d in head["shape"]:
        n *= d
    return head["shape"], list(struct.unpack("<%d%s" % (n, code),
                                             data[start:start + n * struct.calcsize(code)]))


class Npz:
    def __init__(self, path):
        self.z = zipfile.ZipFile(path)

    def raw(self, key):
        return self.z.read(key + ".npy")

    def get(self, key):
        return npy(self.raw(key))[1]


def flax_layers(m):
    return sorted(m["layers"])  # BatchNorm_0, BatchNorm_1, ... = graph order


def torch_layers(m):
    return [layer["module"] for layer in m["layers"]]


def fixtures():
    """(format, model, file, bundle or None, io.npz, expected layer keys, the framework's BN
    layers) of every fixture (they differ where an exporter folded a BN into a conv)."""
    out = []
    load = lambda fam: json.load(open(os.path.join(FX, fam, "manifest.json")))  # noqa: E731
    sh = load("stablehlo")
    for name, m in sorted(sh["models"].items()):
        d = os.path.join(FX, "stablehlo")
        io, lay = os.path.join(d, name + ".io.npz"), flax_layers(m)
        out.append(("StableHLO (Flax) + .npz", name, os.path.join(d, name + ".mlir"),
                    os.path.join(d, name + ".npz"), io, lay))
        out.append(("StableHLO (Flax) + .msgpack", name, os.path.join(d, name + ".mlir"),
                    os.path.join(d, name + ".msgpack"), io, lay))
        if m.get("const_variant"):
            out.append(("StableHLO (Flax), constants", name,
                        os.path.join(d, name + "_const.mlir"), None, io, lay))
        out.append(("HLO text (JAX) + .npz", name, os.path.join(d, name + ".hlo"),
                    os.path.join(d, name + ".npz"), io, lay))
    for name, m in sorted(load("tosa")["models"].items()):
        d = os.path.join(FX, "tosa")
        out.append(("TOSA (torch-mlir)", name, os.path.join(d, name + ".mlir"), None,
                    os.path.join(d, name + ".io.npz"), torch_layers(m)))
    te = load("torch_export")
    for name, m in sorted(te["models"].items()):
        d = os.path.join(FX, "torch_export")
        for v in te["variants"]:
            out.append(("torch.export" + (" " + v[1:] if v else ""), name,
                        os.path.join(d, name + v + ".pt2"), None,
                        os.path.join(d, name + ".io.npz"), torch_layers(m)))
    if "pickled" in te:
        pk, d = te["pickled"], os.path.join(FX, "torch_export")
        out.append(("torch.export pickled + .safetensors", pk["model"],
                    os.path.join(d, pk["archive"]), os.path.join(d, pk["bundle"]),
                    os.path.join(d, pk["model"] + ".io.npz"),
                    torch_layers(te["models"][pk["model"]])))
    for name, m in sorted(load("relay")["models"].items()):
        src = os.path.join(FX, m["family"])
        for v, label in (("", "Relay nn.batch_norm"), (".simplified", "Relay SimplifyInference")):
            out.append((label + " + " + os.path.splitext(m["bundle"])[1], name,
                        os.path.join(FX, "relay", name + v + ".relay"),
                        os.path.join(src, m["bundle"]), os.path.join(src, m["io"]),
                        [layer["io"] for layer in m["layers"]]))
    for name, m in sorted(load("onnx")["models"].items()):
        d = os.path.join(FX, "onnx")
        for f, info in sorted(m["files"].items()):
            label = "ONNX (torch, optimize=False)" if ".noopt" in f else "ONNX (torch default)"
            out.append((label, name, os.path.join(d, f), None, os.path.join(d, name + ".io.npz"),
                        info["bn_modules"], torch_layers(m)))
    return [f if len(f) == 7 else f + (f[5],) for f in out]


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d\n%s%s" % (" ".join(cmd), p.returncode, p.stdout,
                                                  p.stderr))
    return p.stdout


def one(args, tmp, fmt, model, path, bundle, io_path, want, every):
    """Imports one fixture, runs each layer on ref: against the framework; the table row and
    (ok, [(error, bound)], near misses)."""
    io = Npz(io_path)
    ymax = max((abs(v) for k in want for v in io.get(k + "/y")), default=1.0)
    in_scale = io.get(want[0] + "/in_scale")[0] if want else 0.0625
    out_scale = ymax / 100.0
    plan = os.path.join(tmp, "plan")
    subprocess.run(["rm", "-rf", plan], check=True)
    cmd = [args.normcore, "import", path, "--config", args.manifest, "-o", plan, "--in-scale",
           repr(in_scale), "--out-scale", repr(out_scale)]
    said = run(cmd + (["--params", bundle] if bundle else []))
    pj = json.load(open(os.path.join(plan, "plan.json")))
    layers, errs, measured = pj["layers"], [], []
    ok = len(layers) == len(want) and not pj["near_misses"]
    if len(want) < len(every):  # the exporter folded some: import must say where they went
        ok = ok and (len(want) > 0 or "may already include it" in said)
    for layer, key in zip(layers, want):
        x = os.path.join(tmp, "x.npy")
        open(x, "wb").write(io.raw(key + "/x"))
        y = os.path.join(tmp, "y.npy")
        run([args.normcore, "run", "--device", "ref:" + args.manifest, "--params",
             os.path.join(plan, layer["params_file"]), "--input", x, "--layout", layer["layout"],
             "--output", y, "-q"])
        got = npy(open(y, "rb").read())[1]
        err = 0.0
        for g, f in zip(got, io.get(key + "/y")):
            if layer["activation"] == "relu":
                f = max(f, 0.0)
            ref = min(max(f / out_scale, layer["lo"]), layer["hi"])
            err = max(err, abs(g - ref))
        bound = layer["worst_error_lsb"]
        ok = ok and 0 < err <= bound + 1e-3
        errs.append("%s %.4f / %.4f" % (key, err, bound))
        measured.append((err, bound))
    found = "%d of %d" % (len(layers), len(every))
    if len(want) < len(every):
        found += " (%d folded into a conv by the exporter%s)" % (
            len(every) - len(want), "; the note says so" if not want else "")
    row = "| %s | %s | `%s` | %s | %d | %s |" % (
        fmt, model, os.path.relpath(path, FX), found, len(pj["near_misses"]),
        "; ".join(errs) if errs else "-")
    return row, ok, measured, len(pj["near_misses"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--normcore", required=True)
    ap.add_argument("--manifest", required=True, help="device manifest for ref:")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    rows, bad, family = [], 0, {}
    with tempfile.TemporaryDirectory() as tmp:
        for fx in fixtures():
            try:
                row, ok, measured, near = one(args, tmp, *fx)
            except RuntimeError as e:
                row, ok, measured, near = "| %s | %s | `%s` | error | - | %s |" % (
                    fx[0], fx[1], os.path.relpath(fx[2], FX), str(e).splitlines()[0]), False, [], 0
            rows.append(row)
            bad += not ok
            if not ok:
                print("NOT OK: " + row, file=sys.stderr)
            f = family.setdefault(fx[0].split(" (")[0].split(" +")[0], [0, 0, 0, [], 0])
            f[0] += 1
            f[1] += len(fx[6])
            f[2] += not ok
            f[3] += measured
            f[4] += near
    print("| format | files | BN layers (framework) | found and run on ref: | near misses | "
          "max error (LSB) | bounds (LSB) | max error / bound | not ok |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, (files, nbn, nbad, m, near) in family.items():
        print("| %s | %d | %d | %d | %d | %.4f | %.4f-%.4f | %.4f | %d |" % (
            name, files, nbn, len(m), near, max(e for e, _ in m), min(b for _, b in m),
            max(b for _, b in m), max(e / b for e, b in m), nbad))
    print()
    print("| format | model | file | BN layers found | near misses | max error / bound "
          "(output LSB) per layer |")
    print("| --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    print("\n%d files, %d not ok" % (len(rows), bad))
    return 1 if args.check and bad else 0


if __name__ == "__main__":
    sys.exit(main())
