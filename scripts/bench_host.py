#!/usr/bin/env python3
"""Host-path benchmark (prints figures, asserts nothing): every target of issue 17 with its
ratio, measured side by side in one run on this machine.

  ref: zero-copy device buffers, 64 MiB int8, NCHW and NHWC (C = 64; NHWC also C = 3 and
  1000), all threads and one thread, vs memcpy of the same bytes (target 0.8x / 0.5x)
  Python Accelerator.run on numpy arrays vs the zero-copy run at 1, 4 and 64 MiB (target 0.8x),
  vs numpy x*s+b with rounding and clamp, vs torch's quantized batch_norm (target 10x; when
  torch can be imported here or in --torch-python, else "skipped")
  `normcore run` on a 16 MiB .npy: wall time vs `cp` of the same file (target 3x) and peak RSS
  vs the tensor (target 3x); `normcore run --plan` (one 16 MiB layer, .npy input): peak RSS

Every ratio is measured `--repeat` times as back-to-back pairs (reference, then the run), and
printed as the median [min-max] of the pairs, so a loaded machine shows as spread, not as a
bias. Usage: .venv/bin/python scripts/bench_host.py [--build build] [--mib 64] [--repeat 7]
       [--torch-python /tmp/torchvenv/bin/python] [--tail] [--rows int,float]
(after scripts/test_python.sh has installed the package into .venv).
"""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import tempfile
import time

import numpy as np

import normcore

ROOT = pathlib.Path(__file__).resolve().parents[1]


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def best(repeat, fn):
    return min(timed(fn) for _ in range(repeat))


def pairs(repeat, ref, run):
    """Ratios t(ref) / t(run) of `repeat` back-to-back pairs (one warm-up pair first), and the
    run's best time."""
    ref(), run()
    r, t = [], []
    for _ in range(repeat):
        a = timed(ref)
        b = timed(run)
        r.append(a / b)
        t.append(b)
    return r, min(t)


def spread(r):
    return f"{statistics.median(r):.2f}x [{min(r):.2f}-{max(r):.2f}]"


def verdict(r, target):
    return f"(target {target}x: {'met' if statistics.median(r) >= target else 'NOT met'})"


def child(cmd):
    """(wall seconds, peak RSS MiB) of one command; the RSS from /usr/bin/time (a fork of this
    process would count this interpreter's pages), NaN without it."""
    with tempfile.NamedTemporaryFile("r") as rss:
        timed_cmd = ["/usr/bin/time", "-q", "-f", "%M", "-o", rss.name] if os.path.exists(
            "/usr/bin/time") else []
        t0 = time.perf_counter()
        subprocess.run(timed_cmd + [str(c) for c in cmd], check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        text = rss.read().strip().splitlines()
    return wall, (float(text[-1]) / 1024.0 if timed_cmd and text else float("nan"))


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
    mem = lambda: np.copyto(b, a)  # noqa: E731
    t_mem = best(repeat, mem)
    print(f"memcpy {mib} MiB: best {t_mem * 1e3:.2f} ms, {nbytes / t_mem / 1e9:.2f} GB/s")
    x = rng.integers(-128, 128, size=(1, c, hw), dtype=np.int8)
    for threads in ("", ",threads=1"):
        with normcore.Accelerator.open(f"ref:{manifest}{threads}") as acc:
            who = "1 thread" if threads else "all threads"
            target = 0.5 if threads else 0.8
            bi, bo = acc.alloc(nbytes), acc.alloc(nbytes)
            np.frombuffer(bi, np.int8)[:] = x.ravel()
            zc = {}
            # C = 4096 exceeds the default device's 1024 channels (tests/runtime covers it)
            for lay, cc in (("nchw", 64), ("nhwc", 64), ("nhwc", 3), ("nhwc", 1000)):
                img, p = layer(acc, cc, rng)
                shape = (1, cc, nbytes // cc)  # (N, C, HW); nhwc: [N][HW][C]
                n_el = shape[0] * shape[1] * shape[2]
                r, t = pairs(repeat, mem,
                             lambda: acc.run_buffers(p, bi, bo, shape, lay))  # noqa: B023
                zc[(lay, cc)] = t
                main = cc == 64
                print(f"ref: zero-copy {lay}, C={cc}, {mib} MiB int8, {who}: best "
                      f"{t * 1e3:.2f} ms, {n_el / t / 1e9:.2f} Gelem/s = {spread(r)} memcpy"
                      + (f" {verdict(r, target)}" if main else ""))
            if threads:
                continue
            img, p = layer(acc, c, rng)
            xe, ye = acc.empty(x.shape), acc.empty(x.shape, output=True)
            xe[...] = x
            zero = lambda: acc.run_buffers(p, bi, bo, x.shape)  # noqa: E731
            r, _ = pairs(repeat, zero, lambda: acc.run(p, xe, out=ye))
            print(f"Python Accelerator.run on Accelerator.empty arrays (zero copy), {mib} MiB: "
                  f"{spread(r)} the zero-copy run")
            y = np.empty_like(x)
            r, t_run = pairs(repeat, zero, lambda: acc.run(p, x, out=y))
            print(f"Python Accelerator.run (numpy in/out, NCHW), {mib} MiB: best "
                  f"{t_run * 1e3:.2f} ms = {spread(r)} the zero-copy run {verdict(r, 0.8)}")
            xh = np.ascontiguousarray(x.transpose(0, 2, 1))
            yh = np.empty_like(xh)
            r, _ = pairs(repeat, lambda: acc.run_buffers(p, bi, bo, x.shape, "nhwc"),
                         lambda: acc.run(p, xh, layout="nhwc", out=yh))
            print(f"Python Accelerator.run (numpy in/out, NHWC), {mib} MiB: {spread(r)} the "
                  f"zero-copy run {verdict(r, 0.8)}")
            t_np = best(max(1, repeat // 3), lambda: numpy_bn(x, img))
            print(f"numpy x*s+b, round, clamp (int32), {mib} MiB: {t_np * 1e3:.2f} ms; "
                  f"Accelerator.run is {t_np / t_run:.2f}x numpy")
            bench_torch(x, img, t_run, repeat, torch_python)
            for tmb in (1, 4):
                xs = x.ravel()[: (tmb << 20)].reshape(1, c, -1)
                bs, bso = acc.alloc(xs.nbytes), acc.alloc(xs.nbytes)
                np.frombuffer(bs, np.int8)[:] = xs.ravel()
                small = lambda: acc.run_buffers(p, bs, bso, xs.shape)  # noqa: E731,B023
                xse, yse = acc.empty(xs.shape), acc.empty(xs.shape, output=True)
                xse[...] = xs
                re, _ = pairs(repeat, small, lambda: acc.run(p, xse, out=yse))  # noqa: B023
                ys = np.empty_like(xs)
                rs, t_s = pairs(repeat, small, lambda: acc.run(p, xs, out=ys))  # noqa: B023
                print(f"{tmb} MiB: Accelerator.run on empty() arrays {spread(re)}, on numpy "
                      f"arrays {spread(rs)} the zero-copy run (best {t_s * 1e3:.3f} ms) "
                      f"{verdict(rs, 0.8)}")


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
                  "--torch-python; skipped (target 10x: not measured)")
            return
        out = subprocess.run([torch_python, "-c", TORCH_TIMER, str(c), str(x.size // c),
                              str(max(1, repeat // 2))], check=True, capture_output=True,
                             text=True).stdout.split()
        t, threads, ver = float(out[0]), out[1], out[2]
        print(f"torch {ver} quantized.batch_norm2d ({threads} threads, {torch_python}): "
              f"{t * 1e3:.2f} ms; Accelerator.run is {t / t_run:.2f}x torch "
              f"(target 10x: {'met' if t / t_run >= 10 else 'NOT met'})")
        return
    xt = torch.quantize_per_tensor(torch.from_numpy(x.astype(np.float32)).reshape(1, c, -1, 1),
                                   1.0, 0, torch.qint8)
    w, b = torch.ones(c), torch.zeros(c)
    m, v = torch.zeros(c), torch.ones(c)
    fn = lambda: torch.ops.quantized.batch_norm2d(xt, w, b, m, v, 1e-5, 1.0, 0)  # noqa: E731
    t = best(max(1, repeat // 2), fn)
    print(f"torch quantized.batch_norm2d ({torch.get_num_threads()} threads): {t * 1e3:.2f} ms;"
          f" Accelerator.run is {t / t_run:.2f}x torch "
          f"(target 10x: {'met' if t / t_run >= 10 else 'NOT met'})")


HLO = ("HloModule bench_bn\n\n"
       "ENTRY %main (x: f32[16,64,128,128]) -> f32[16,64,128,128] {\n"
       "  %x = f32[16,64,128,128] parameter(0)\n"
       "  %scale = f32[64] constant({@SCALE@})\n"
       "  %offset = f32[64] constant({@OFFSET@})\n"
       "  %mean = f32[64] constant({@MEAN@})\n"
       "  %var = f32[64] constant({@VAR@})\n"
       "  ROOT %bn = f32[16,64,128,128] batch-norm-inference(%x, %scale, %offset, %mean, %var), "
       "epsilon=0.001, feature_index=1\n}\n")


def bench_tail(manifest, rng, n=60):
    """Single-run times at 1 and 4 MiB (p10 / median / p90 of n runs): zero-copy with all
    threads and with one, and Python on numpy arrays. On a loaded machine every variant, the C++
    zero-copy run included, has the same multi-millisecond tail (a job preempted for a time
    slice, or its second thread waiting for a core), so a best-of or a single pair at these sizes
    measures the scheduler; p10 is the cost of the work."""
    for mib in (1, 4):
        for opts in ("", ",threads=1"):
            with normcore.Accelerator.open(f"ref:{manifest}{opts}") as acc:
                img, p = layer(acc, 64, rng)
                x = rng.integers(-128, 128, size=(1, 64, (mib << 20) // 64), dtype=np.int8)
                bi, bo = acc.alloc(x.nbytes), acc.alloc(x.nbytes)
                np.frombuffer(bi, np.int8)[:] = x.ravel()
                y = np.empty_like(x)
                for name, fn in (("zero-copy", lambda: acc.run_buffers(p, bi, bo, x.shape)),
                                 ("numpy arrays", lambda: acc.run(p, x, out=y))):
                    t = sorted(timed(fn) * 1e3 for _ in range(n))  # noqa: B023
                    print(f"tail {mib} MiB, {'1 thread' if opts else 'all threads'}, {name}: "
                          f"p10 {t[n // 10]:.3f} ms, median {statistics.median(t):.3f}, "
                          f"p90 {t[9 * n // 10]:.3f}, max {t[-1]:.2f}")


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
        child(run)
        r, rss = [], []
        for _ in range(repeat):
            t_cp = child(cp)[0]
            t_run, m = child(run)
            r.append(t_cp / t_run)
            rss.append(m)
        tensor = (d / "x.npy").stat().st_size / 2**20
        ratio = [1 / v for v in r]  # run / cp: lower is better
        print(f"normcore run, 16 MiB int8 .npy (16x64x128x128, ref:): wall = "
              f"{statistics.median(ratio):.2f}x [{min(ratio):.2f}-{max(ratio):.2f}] cp "
              f"(target <= 3x: {'met' if statistics.median(ratio) <= 3 else 'NOT met'})")
        m = statistics.median(rss)
        print(f"normcore run peak RSS {m:.0f} MiB [{min(rss):.0f}-{max(rss):.0f}] = "
              f"{m / tensor:.2f}x the tensor "
              f"(target <= 3x: {'met' if m / tensor <= 3 else 'NOT met'})")
        fill = lambda v: ", ".join(f"{x:.4f}" for x in v)  # noqa: E731
        (d / "m.hlo").write_text(HLO.replace("@SCALE@", fill(rng.uniform(0.5, 2, c)))
                                 .replace("@OFFSET@", fill(rng.normal(0, 1, c)))
                                 .replace("@MEAN@", fill(rng.normal(0, 4, c)))
                                 .replace("@VAR@", fill(rng.uniform(0.5, 4, c))))
        subprocess.run([cli, "import", d / "m.hlo", "--config", manifest, "-o", d / "plan"],
                       check=True, stdout=subprocess.DEVNULL)
        plan = [cli, "run", "--device", f"ref:{manifest}", "--plan", d / "plan", "--input",
                d / "x.npy", "-q"]
        prss = [child(plan)[1] for _ in range(max(1, repeat // 2))]
        base = [child([cli, "--version"])[1] for _ in range(3)]
        m = statistics.median(prss)
        print(f"normcore run --plan (one 16x64x128x128 int8 layer, .npy input) peak RSS "
              f"{m:.0f} MiB [{min(prss):.0f}-{max(prss):.0f}] = {m / tensor:.2f}x the tensor "
              f"(target <= 3x: {'met' if m / tensor <= 3 else 'NOT met'}; `normcore --version` "
              f"alone: {min(base):.0f} MiB)")


def float_bn(rng, c):
    return {"gamma": list(rng.uniform(0.5, 2, c)), "beta": list(rng.normal(0, 1, c)),
            "mean": list(rng.normal(0, 1, c)), "var": list(rng.uniform(0.5, 4, c)),
            "quant": "float"}


def bench_float(cli, mib, repeat, rng):
    """Float rows: an fp16 -> fp16 device (gen --accel --manifest-only) on ref:."""
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        subprocess.run([cli, "gen", "--accel", "--manifest-only", "--in-type", "fp16",
                        "--out-type", "fp16", "-o", d / "dev"], check=True,
                       stdout=subprocess.DEVNULL)
        manifest = str(d / "dev" / "manifest.json")
        nbytes = mib << 20
        c = 64
        n_el = nbytes // 2
        a, b = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
        mem = lambda: np.copyto(b, a)  # noqa: E731
        t_mem = best(repeat, mem)
        print(f"memcpy {mib} MiB: best {t_mem * 1e3:.2f} ms, {nbytes / t_mem / 1e9:.2f} GB/s")
        x = rng.normal(0, 3, size=(1, c, n_el // c)).astype(np.float16)
        for threads in ("", ",threads=1"):
            with normcore.Accelerator.open(f"ref:{manifest}{threads}") as acc:
                who = "1 thread" if threads else "all threads"
                p = acc.upload(normcore.fold(float_bn(rng, c), spec=acc))
                xe, ye = acc.empty(x.shape), acc.empty(x.shape, output=True)
                xe[...] = x
                for lay in ("nchw", "nhwc"):
                    shape = (1, c, n_el // c)
                    r, t = pairs(repeat, mem, lambda: acc.submit_buffers(  # noqa: B023
                        p, _buf(xe), _buf(ye), shape, lay).result())
                    print(f"ref: zero-copy fp16 -> fp16 {lay}, C={c}, {mib} MiB, {who}: best "
                          f"{t * 1e3:.2f} ms, {n_el / t / 1e9:.2f} Gelem/s = {spread(r)} memcpy "
                          f"of {mib} MiB")
        bench_cli_float(cli, manifest, d, repeat, rng)


def _buf(a):
    """The device Buffer behind an Accelerator.empty array."""
    base = a
    while isinstance(base, np.ndarray):
        base = base.base
    return base.obj


def bench_cli_float(cli, manifest, d, repeat, rng):
    c = 64
    np.save(d / "x.npy", rng.normal(0, 3, size=(8, c, 128, 128)).astype(np.float16))
    (d / "bn.json").write_text(json.dumps(float_bn(rng, c)))
    subprocess.run([cli, "fold", "--params", d / "bn.json", "--config", manifest, "-o",
                    d / "p.bin"], check=True, stdout=subprocess.DEVNULL)
    run = [cli, "run", "--device", f"ref:{manifest}", "--params", d / "p.bin", "--input",
           d / "x.npy", "--output", d / "y.npy", "-q"]
    cp = ["cp", d / "x.npy", d / "xc.npy"]
    child(cp)
    child(run)
    ratio, rss = [], []
    for _ in range(repeat):
        t_cp = child(cp)[0]
        t_run, m = child(run)
        ratio.append(t_run / t_cp)
        rss.append(m)
    tensor = (d / "x.npy").stat().st_size / 2**20
    m = statistics.median(rss)
    print(f"normcore run, 16 MiB fp16 .npy (8x64x128x128, ref: fp16 -> fp16): wall = "
          f"{statistics.median(ratio):.2f}x [{min(ratio):.2f}-{max(ratio):.2f}] cp; peak RSS "
          f"{m:.0f} MiB = {m / tensor:.2f}x the tensor")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--tail", action="store_true",
                    help="also the 1 / 4 MiB single-run time distributions (bench_tail)")
    ap.add_argument("--rows", default="int,float",
                    help="which rows: int (issue 17's), float (issue 18's), or both")
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
    rows = set(a.rows.split(","))
    if "int" in rows:
        bench_device(str(manifest), a.mib, a.repeat, rng, a.torch_python)
        bench_cli(str(cli), str(manifest), a.repeat, rng)
        if a.tail:
            bench_tail(str(manifest), rng)
    if "float" in rows:
        bench_float(str(cli), a.mib, a.repeat, rng)


if __name__ == "__main__":
    main()
