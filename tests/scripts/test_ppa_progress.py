#!/usr/bin/env python3
"""ppa.py phase progress (issue 15 item 9): per-job lines on stderr automatically when stderr is a
terminal (checked through a pty), off otherwise; --progress / --no-progress force it either way;
the phase header and its closing time are printed in every mode. Usage: test_ppa_progress.py"""
import os
import pty
import subprocess
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
# A child that runs one 3-job phase with Runner(progress=<argv[1]>) and reports what it printed.
CHILD = r"""
import sys
sys.path.insert(0, sys.argv[2])
import ppa_jobs
flag = {"on": True, "off": False, "auto": None}[sys.argv[1]]
r = ppa_jobs.Runner(1, None, flag)
out = r.map("demo", [(1, "k%d" % i, abs, (-i,)) for i in range(3)])
assert out == {"k0": 0, "k1": 1, "k2": 2}, out
"""


def run_child(mode, tty):
    """stdout and stderr of the child; with tty, stderr is a pseudo-terminal."""
    if not tty:
        p = subprocess.run([sys.executable, "-c", CHILD, mode, str(SCRIPTS)], capture_output=True,
                           text=True, timeout=60, check=True)
        return p.stdout, p.stderr
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-c", CHILD, mode, str(SCRIPTS)], stdout=subprocess.PIPE,
                         stderr=slave, text=True)
    os.close(slave)
    err = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the pty
            break
        if not chunk:
            break
        err += chunk
    out = p.stdout.read()
    assert p.wait(timeout=60) == 0, "child failed"
    os.close(master)
    return out, err.decode().replace("\r\n", "\n")


def main():
    fails = []
    for mode, tty, want in [("auto", False, False), ("auto", True, True), ("on", False, True),
                            ("off", True, False)]:
        out, err = run_child(mode, tty)
        got = "[ppa] demo: 3/3 done" in err
        if got != want:
            fails.append(f"{mode}, stderr {'a tty' if tty else 'a pipe'}: per-job progress "
                         f"{'shown' if got else 'missing'} (stderr: {err!r})")
        if "[ppa] demo: 3 jobs on 1 local processes" not in out or "3 jobs done in" not in out:
            fails.append(f"{mode}: phase header or closing line missing from stdout: {out!r}")
        if want and err.count("[ppa] demo:") != 3:
            fails.append(f"{mode}: want one line per job, got {err!r}")
    # ppa.py takes the two flags, not both at once (argparse: exit 2 naming them).
    ppa = str(SCRIPTS / "ppa.py")
    h = subprocess.run([sys.executable, ppa, "--help"], capture_output=True, text=True, timeout=60)
    if "--progress" not in h.stdout or "--no-progress" not in h.stdout:
        fails.append("ppa.py --help lacks --progress / --no-progress")
    b = subprocess.run([sys.executable, ppa, "--progress", "--no-progress", "--docs-only"],
                       capture_output=True, text=True, timeout=60)
    if b.returncode != 2 or "not allowed with argument" not in b.stderr:
        fails.append(f"--progress --no-progress: exit {b.returncode}: {b.stderr!r}")
    for f in fails:
        print("FAIL:", f)
    print("ok" if not fails else f"{len(fails)} failure(s)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
