"""Jobs of the PPA harness (scripts/ppa.py) and where they run.

Every job is a module-level function of plain arguments (paths as strings) that runs one tool
(Yosys, nextpnr-ice40, nextpnr-ecp5) and returns plain data, so it can run in a local process
pool (default, --jobs N) or on a Ray cluster (--ray-address ADDR: the convention of OpenROAD's
AutoTuner; the workers must see the same file system paths and tools). Ray is imported only
then; without it the harness stops with a clear message (exit 2). Standard library only.
"""
import concurrent.futures as cf
import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path


# MHz target given to nextpnr per family (fmax is reported whatever the target; ppa.py
# --pnr-freq overrides it)
NEXTPNR_FREQ = {"ice40": 100, "ecp5": 150}


def run(cmd, cwd=None, timeout=None):
    t0 = time.time()
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, time.time() - t0


def read_stat_json(path):
    text = Path(path).read_text()
    try:
        return json.loads(text)
    except json.JSONDecodeError:  # Yosys 0.23 prints hierarchy lines into `stat -json`
        text = re.sub(r"(?m)^\s+[\\$\w.]+\s+\d+\s*$\n?", "", text)  # stray hierarchy lines
        return json.loads(re.sub(r",(\s*[}\]])", r"\1", text))


def yosys_stat(files, script, workdir, tag, netlist=None):
    """Runs yosys with `script` (ending in a synthesis command); returns (cells, cells by type,
    seconds). With `netlist`, also writes the synthesized netlist there (JSON)."""
    workdir = Path(workdir)
    out = workdir / f"stat_{tag}.json"
    wj = f"; write_json {netlist}" if netlist else ""
    cmd = ["yosys", "-q", "-l", str(workdir / f"yosys_{tag}.log"), "-p",
           f"read_verilog {' '.join(str(f) for f in files)}; {script}{wj}; tee -q -o {out} stat -json"]
    rc, log, secs = run(cmd)
    if rc != 0:
        raise RuntimeError(f"yosys {tag} failed ({workdir}):\n{log[-3000:]}")
    d = read_stat_json(out)
    design = d.get("design") or next(iter(d["modules"].values()))
    return design["num_cells"], design.get("num_cells_by_type", {}), round(secs, 1)


def yosys_modules(files, top, workdir):
    """(module -> cells by type) of `synth_ice40 -dsp -noflatten`: where the area goes."""
    workdir = Path(workdir)
    out = workdir / "stat_ice40_modules.json"
    cmd = ["yosys", "-q", "-l", str(workdir / "yosys_ice40_modules.log"), "-p",
           f"read_verilog {' '.join(str(f) for f in files)}; synth_ice40 -dsp -noflatten -top {top}; "
           f"tee -q -o {out} stat -json"]
    rc, log, _ = run(cmd)
    if rc != 0:
        raise RuntimeError(f"yosys module breakdown failed ({workdir}):\n{log[-3000:]}")
    d = read_stat_json(out)
    return {k.lstrip("\\"): v.get("num_cells_by_type", {}) for k, v in d["modules"].items()}


def read_cmd(files):
    """Yosys read commands: read_json for synthesized netlists (.json), read_verilog otherwise."""
    js = [str(f) for f in files if str(f).endswith(".json")]
    vs = [str(f) for f in files if not str(f).endswith(".json")]
    cmds = [f"read_json {j}" for j in js] + ([f"read_verilog {' '.join(vs)}"] if vs else [])
    return "; ".join(cmds)


def yosys_netlist(files, synth, netlist, log):
    """Synthesis of the wrapped design for place and route; returns seconds."""
    rc, out, secs = run(["yosys", "-q", "-l", str(log), "-p",
                         f"{read_cmd(files)}; {synth} -json {netlist}"])
    if rc != 0:
        raise RuntimeError(f"yosys for place and route failed ({log}):\n{out[-2000:]}")
    return round(secs, 1)


def yosys_stat_wrap(files, script, workdir, tag, netlist, wrap_files, wrap_synth, wrapped, wrap_log):
    """yosys_stat writing the design's netlist, then the wrapped design for place and route from
    that netlist (the design is not synthesized twice): returns (yosys_stat's result, seconds of
    the wrapper's synthesis)."""
    stat = yosys_stat(files, script, workdir, tag, netlist)
    return stat, yosys_netlist([netlist, *wrap_files], wrap_synth, wrapped, wrap_log)


def timed(fn, args):
    """Runs fn(*args) and returns (its result, CPU seconds of the tools it ran). The worker runs
    one job at a time, so the change in its children's rusage is this job's tools alone."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = fn(*args)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 1)


def nextpnr(tool, device_args, netlist, seed, workdir, freq, timeout=1800):
    """One place-and-route run; returns (fmax MHz or None, seconds, utilisation or error text).
    A run longer than `timeout` seconds is stopped and reported as an error (the other seeds and
    designs go on: one router that does not converge must not lose the whole run)."""
    workdir = Path(workdir)
    fam = "ecp5" if "ecp5" in Path(tool).name else "ice40"
    rep = workdir / f"nextpnr_{fam}_s{seed}.json"
    # Paths relative to the work directory, the tool run there: the YoWASP (WebAssembly) build
    # sees only its current directory.
    net = Path(netlist).resolve().relative_to(workdir.resolve())
    cmd = [tool, *device_args, "--json", str(net), "--freq", str(freq), "--timing-allow-fail",
           "--seed", str(seed), "--report", rep.name, "-q", "--log", f"nextpnr_{fam}_s{seed}.log"]
    try:
        rc, log, secs = run(cmd, cwd=workdir, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, float(timeout), f"timed out after {timeout} s (stopped)"
    if rc != 0 or not rep.exists():
        return None, round(secs, 1), log[-2000:]
    r = json.loads(rep.read_text())
    fm = [v["achieved"] for v in r.get("fmax", {}).values()]
    util = {k: v["used"] for k, v in r.get("utilization", {}).items() if v.get("used")}
    return (min(fm) if fm else None), round(secs, 1), util


# Yosys / nextpnr suffixes of a packed cell's name: what is left names the RTL signal.
_CELL_SUFFIX = re.compile(r"(_(SB_|TRELLIS_|CCU2C|DFF|LUT4|MULT18|DP16KD|PFUMX|L6MUX)|\$).*$")


def rtl_name(cell):
    """The RTL name of a placed cell ('dut.u_chan.tp_q_SB_DFFE_Q_4_D_SB_LUT4_O_LC' ->
    'u_chan.tp_q'): the wrapper's instance prefix and the packer's suffixes taken off."""
    name = cell[4:] if cell.startswith("dut.") else cell
    return _CELL_SUFFIX.sub("", name) or name


def critical_path(report):
    """The worst register-to-register path of the clock whose fmax nextpnr reports, from its
    --report JSON (the file path `report`): {"ns", "logic_ns", "route_ns", "from", "to", "cells"}
    ("from" / "to" the RTL names of the start and end cells, "cells" how many cells the path
    passes, its start included), or None when the report has none. nextpnr-ice40 0.4 gives a
    clk-to-q step's cells the wrong way round (its "from" is the clock pin), so the start is
    whichever end is not a CLK pin."""
    try:
        rep = json.loads(Path(report).read_text())
    except (OSError, ValueError):
        return None
    clocks = set(rep.get("fmax", {}))
    same = [c for c in rep.get("critical_paths", []) if c.get("from") == c.get("to")
            and any(k in c["from"] for k in clocks) and c.get("path")]
    if not same:
        return None
    steps = same[0]["path"]
    first = steps[0]
    start = first["to"] if first["from"].get("port") == "CLK" else first["from"]
    delay = {t: sum(s["delay"] for s in steps if s["type"] == t)
             for t in ("routing", "logic", "clk-to-q", "setup")}
    return {"ns": round(sum(delay.values()), 2), "route_ns": round(delay["routing"], 2),
            "logic_ns": round(delay["logic"] + delay["clk-to-q"] + delay["setup"], 2),
            "from": rtl_name(start["cell"]), "to": rtl_name(steps[-1]["to"]["cell"]),
            "cells": len({s["to"]["cell"] for s in steps if s["type"] == "logic"}) + 1}


def progress_wanted(flag, stream=None):
    """--progress (True) / --no-progress (False) / neither (None: on when stderr is a terminal)."""
    if flag is not None:
        return bool(flag)
    stream = sys.stderr if stream is None else stream
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Runner:
    """Runs jobs (fn, args) locally in a process pool or on Ray. Every phase prints its job count
    and, at the end, its time on stdout; with progress (progress_wanted) every finished job is
    also reported on stderr ("[ppa] synthesis: 3/12 done, 41 s (key)")."""

    def __init__(self, jobs, ray_address=None, progress=None):
        self.jobs = max(1, jobs)
        self.progress = progress_wanted(progress)
        self.ray = None
        self.cpu = {}  # phase -> CPU seconds of its tools (all jobs)
        if ray_address:
            try:
                import ray  # noqa: PLC0415 (optional: only with --ray-address)
            except ImportError:
                print("ppa: error: --ray-address: the 'ray' package is not installed in this "
                      "Python (pip install ray; it is not part of scripts/requirements-ppa.txt)",
                      file=sys.stderr)
                sys.exit(2)
            # The workers import this module (shipped with the job) and need the same paths.
            ray.init(address=ray_address, runtime_env={"py_modules": [sys.modules[__name__]]})
            self.ray = ray
            self.remote = {}

    def map(self, phase, tasks):
        """tasks: [(weight, key, fn, args)]; runs heaviest first; returns {key: result}."""
        tasks = sorted(tasks, key=lambda t: -t[0])
        total, done, t0 = len(tasks), 0, time.time()
        out = {}
        self.cpu.setdefault(phase, 0.0)

        def tick(key):
            nonlocal done
            done += 1
            if self.progress:
                print(f"[ppa] {phase}: {done}/{total} done, {time.time() - t0:.0f} s ({key})",
                      file=sys.stderr, flush=True)
            if done == total:
                print(f"[ppa] {phase}: {total} jobs done in {time.time() - t0:.0f} s", flush=True)
        if total == 0:
            return out
        print(f"[ppa] {phase}: {total} jobs on "
              f"{'Ray' if self.ray else f'{self.jobs} local processes'}", flush=True)
        if self.ray:
            refs = {}
            if timed not in self.remote:
                self.remote[timed] = self.ray.remote(timed)
            for _, key, fn, args in tasks:
                refs[self.remote[timed].remote(fn, args)] = key
            pending = list(refs)
            while pending:
                ready, pending = self.ray.wait(pending, num_returns=1)
                out[refs[ready[0]]], cpu = self.ray.get(ready[0])
                self.cpu[phase] += cpu
                tick(refs[ready[0]])
            return out
        with cf.ProcessPoolExecutor(max_workers=self.jobs) as ex:
            futs = {ex.submit(timed, fn, args): key for _, key, fn, args in tasks}
            for f in cf.as_completed(futs):
                out[futs[f]], cpu = f.result()
                self.cpu[phase] += cpu
                tick(futs[f])
        return out
