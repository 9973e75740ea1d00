#!/usr/bin/env python3
"""Host-path benchmark (prints figures, asserts nothing): the ratios of issue 17, side by side
in one run on this machine.

  ref: zero-copy device buffers, NCHW and NHWC, all threads and one thread, vs memcpy
  Python Accelerator.run on numpy arrays vs the zero-copy run, vs numpy x*s+b with rounding and
  clamp, vs torch's quantized batch_norm (when torch can be imported)
  `normcore run` on a 16 MiB .npy: wall time and peak RSS vs `cp` of the same file

Usage: .venv/bin/python scripts/bench_host.py [--build build] [--mib 64] [--repeat 5]
       [--torch-python /tmp/torchvenv/bin/python]
(after scripts/test_python.sh has installed the package into .venv).
"""

import argparse
import json
import os
import pathlib
import subprocess
import tempfile
import time

import numpy as np

import normcore

ROOT = pathlib.Path(__file__).resolve().parents[1]


def best(repeat, fn):
    t = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def child(cmd):
    """(wall seconds, peak RSS MiB) of one command; the RSS from /usr/bin/time (a fork of this
    process would count this interpreter's pages), NaN without it."""
    with tempfile.NamedTemporaryFile("r") as rss:
        timed = ["/usr/bin/time", "-q", "-f", "%M", "-o", rss.name] if os.path.exists(
            "/usr/bin/time") else []
        t0 = time.perf_counter()
        subprocess.run(timed + [str(c) for c in cmd], check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        text = rss.read().strip().splitlines()
    return wall, (float(text[-1]) / 1024.0 if timed and text else float("nan"))


def layer(acc, c, rng):
    bn = {"gamma": rng.uniform(0.5, 2, c), "beta": rng.normal(0, 4, c),
          "mean": rng.normal(0, 8, c), "var": rng.uniform(0.5, 4, c), "quant": "integer"}
    f = normcore.fold(bn, spec=acc)
    return f.params, acc.upload(f)


def numpy_bn(x, img):
    """numpy x*s+b with rounding (half up) and clamp, int32 accumulators: the baseline."""
    s = img.scale.astype(np.int32).reshape(1, -1, 1)
    b = img.bias.astype(np.int64).reshape(1, -1, 1)
    r = img.shift
    acc = x.astype(np.int32) * s + (b + (1 << (r - 1) if r else 0)).astype(np.int32)
    return np.clip(acc >> r, *img.clamp).astype(np.int8)


def bench_device(manifest, mib, repeat, rng, torch_python=None):
    nbytes = mib << 20
    c = 64
    hw = nbytes // c
    a, b = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
    t_mem = best(repeat, lambda: np.copyto(b, a))
    print(f"memcpy {mib} MiB: {t_mem * 1e3:.2f} ms, {nbytes / t_mem / 1e9:.2f} GB/s")
    x = rng.integers(-128, 128, size=(1, c, hw), dtype=np.int8)
    for threads in ("", ",threads=1"):
        with normcore.Accelerator.open(f"ref:{manifest}{threads}") as acc:
            img, p = layer(acc, c, rng)
            bi, bo = acc.alloc(nbytes), acc.alloc(nbytes)
            np.frombuffer(bi, np.int8)[:] = x.ravel()
            who = "1 thread" if threads else "all threads"
            t_zc = {}
            for lay in ("nchw", "nhwc"):
                t_zc[lay] = best(repeat, lambda: acc.run_buffers(p, bi, bo, (1, c, hw), lay))
                print(f"ref: zero-copy {lay}, {mib} MiB int8, {who}: {t_zc[lay] * 1e3:.2f} ms, "
                      f"{nbytes / t_zc[lay] / 1e9:.2f} Gelem/s = {t_mem / t_zc[lay]:.2f}x memcpy")
            if threads:
                continue
            xe, ye = acc.empty(x.shape), acc.empty(x.shape, output=True)
            xe[...] = x
            t_dev = best(repeat, lambda: acc.run(p, xe, out=ye))
            print(f"Python Accelerator.run on Accelerator.empty arrays (zero copy), {mib} MiB: "
                  f"{t_dev * 1e3:.2f} ms = {t_zc['nchw'] / t_dev:.2f}x the zero-copy run")
            y = np.empty_like(x)
            t_run = best(repeat, lambda: acc.run(p, x, out=y))
            print(f"Python Accelerator.run (numpy in/out, NCHW), {mib} MiB: {t_run * 1e3:.2f} ms"
                  f" = {t_zc['nchw'] / t_run:.2f}x the zero-copy run")
            xh = np.ascontiguousarray(x.transpose(0, 2, 1))
            yh = np.empty_like(xh)
            t_runh = best(repeat, lambda: acc.run(p, xh, layout="nhwc", out=yh))
            print(f"Python Accelerator.run (numpy in/out, NHWC), {mib} MiB: {t_runh * 1e3:.2f} ms"
                  f" = {t_zc['nhwc'] / t_runh:.2f}x the zero-copy run")
            t_np = best(max(1, repeat // 2), lambda: numpy_bn(x, img))
            print(f"numpy x*s+b, round, clamp (int32), {mib} MiB: {t_np * 1e3:.2f} ms; "
                  f"Accelerator.run is {t_np / t_run:.2f}x numpy")
            bench_torch(x, img, t_run, repeat, torch_python)
            for tmb in (1, 4):
                xs = x.ravel()[: (tmb << 20)].reshape(1, c, -1)
                bs, bso = acc.alloc(xs.nbytes), acc.alloc(xs.nbytes)
                np.frombuffer(bs, np.int8)[:] = xs.ravel()
                t_b = best(repeat, lambda: acc.run_buffers(p, bs, bso, xs.shape))
                xse, yse = acc.empty(xs.shape), acc.empty(xs.shape, output=True)
                xse[...] = xs
                t_e = best(repeat, lambda: acc.run(p, xse, out=yse))
                ys = np.empty_like(xs)
                t_s = best(repeat, lambda: acc.run(p, xs, out=ys))
                print(f"{tmb} MiB: zero-copy {t_b * 1e3:.3f} ms; Accelerator.run on empty() "
                      f"arrays {t_e * 1e3:.3f} ms ({t_b / t_e:.2f}x), on numpy arrays "
                      f"{t_s * 1e3:.3f} ms ({t_b / t_s:.2f}x)")


TORCH_TIMER = """
import sys, time, numpy as np, torch
c, hw, repeat = (int(v) for v in sys.argv[1:4])
x = np.random.default_rng(0).integers(-128, 128, size=(1, c, hw, 1), dtype=np.int8)
xt = torch.quantize_per_tensor(torch.from_numpy(x.astype(np.float32)), 1.0, 0, torch.qint8)
w, b, m, v = torch.ones(c), torch.zeros(c), torch.zeros(c), torch.ones(c)
best = float("inf")
for _ in range(repeat):
    t0 = time.perf_counter()
    torch.ops.quantized.batch_norm2d(xt, w, b, m, v, 1e-5, 1.0, 0)
    best = min(best, time.perf_counter() - t0)
print(best, torch.get_num_threads(), torch.__version__)
"""


def bench_torch(x, img, t_run, repeat, torch_python):
    """torch's quantized batch_norm2d on a tensor of the same shape: in this interpreter when it
    imports torch, else in `torch_python` (e.g. a throwaway venv: torch is no dependency)."""
    c = x.shape[1]
    try:
        import torch  # noqa: F401 (optional: not in the test venv)
    except ImportError:
        if not torch_python:
            print("torch quantized batch_norm: torch cannot be imported here and no "
                  "--torch-python; skipped")
            return
        out = subprocess.run([torch_python, "-c", TORCH_TIMER, str(c), str(x.size // c),
                              str(max(1, repeat // 2))], check=True, capture_output=True,
                             text=True).stdout.split()
        t, threads, ver = float(out[0]), out[1], out[2]
        print(f"torch {ver} quantized.batch_norm2d ({threads} threads, {torch_python}): "
              f"{t * 1e3:.2f} ms; Accelerator.run is {t / t_run:.2f}x torch")
        return
    xt = torch.quantize_per_tensor(torch.from_numpy(x.astype(np.float32)).reshape(1, c, -1, 1),
                                   1.0, 0, torch.qint8)
    w, b = torch.ones(c), torch.zeros(c)
    m, v = torch.zeros(c), torch.ones(c)
    fn = lambda: torch.ops.quantized.batch_norm2d(xt, w, b, m, v, 1e-5, 1.0, 0)  # noqa: E731
    t = best(max(1, repeat // 2), fn)
    print(f"torch quantized.batch_norm2d ({torch.get_num_threads()} threads): {t * 1e3:.2f} ms;"
          f" Accelerator.run is {t / t_run:.2f}x torch")


def bench_cli(cli, manifest, repeat, rng):
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        c = 64
        np.save(d / "x.npy", rng.integers(-128, 128, size=(16, c, 128, 128), dtype=np.int8))
        bn = {"gamma": [1.5] * c, "beta": [0.5] * c, "mean": [0.0] * c, "var": [1.0] * c,
              "quant": "integer"}
        (d / "bn.json").write_text(json.dumps(bn))
        subprocess.run([cli, "fold", "--params", d / "bn.json", "--config", manifest, "-o",
                        d / "p.bin"], check=True, stdout=subprocess.DEVNULL)
        run = [cli, "run", "--device", f"ref:{manifest}", "--params", d / "p.bin", "--input",
               d / "x.npy", "--output", d / "y.npy", "-q"]
        cp = ["cp", d / "x.npy", d / "xc.npy"]
        child(cp)  # warm the page cache
        t_run = min(child(run) for _ in range(repeat))
        t_cp = min(child(cp) for _ in range(repeat))
        tensor = (d / "x.npy").stat().st_size / 2**20
        print(f"normcore run, 16 MiB int8 .npy (16x64x128x128, ref:): wall {t_run[0]:.3f} s, "
              f"peak RSS {t_run[1]:.0f} MiB ({t_run[1] / tensor:.1f}x the tensor)")
        print(f"cp of the same file: wall {t_cp[0]:.3f} s; normcore run = "
              f"{t_run[0] / t_cp[0]:.1f}x cp")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--torch-python", default=None,
                    help="an interpreter that imports torch, for the torch figure when this one "
                         "cannot (e.g. /tmp/torchvenv/bin/python)")
    a = ap.parse_args()
    build = pathlib.Path(a.build)
    manifest = build / "devices" / "normcore" / "rtl" / "manifest.json"
    cli = build / "cli" / "normcore"
    for f in (manifest, cli):
        if not f.exists():
            raise SystemExit(f"bench_host: {f} is missing (build the normcore and "
                             "device_normcore targets)")
    rng = np.random.default_rng(0)
    print(f"bench_host: {os.cpu_count()} cores, numpy {np.__version__}, load average "
          f"{os.getloadavg()[0]:.1f}")
    bench_device(str(manifest), a.mib, a.repeat, rng, a.torch_python)
    bench_cli(str(cli), str(manifest), a.repeat, rng)


if __name__ == "__main__":
    main()
