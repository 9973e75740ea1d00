#!/usr/bin/env python3
"""scripts/coverage.py on hand-made Verilator counter files (issue 20, item 4): counts merged over
files, module kinds from the common prefix, exclusions by comment and source text, the floor's exit
status (0 / 1) and bad input (2). Usage: test_coverage.py"""
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "coverage.py"


def point(f, line, page, comment, count):
    key = f"\x01f\x02{f}\x01l\x02{line}\x01n\x023\x01page\x02{page}\x01o\x02{comment}\x01h\x02TOP.x"
    return f"C '{key}' {count}\n"


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=60)


def main():
    with tempfile.TemporaryDirectory() as t:
        cfg = Path(t) / "cfg_a"
        cov = cfg / "coverage"
        cov.mkdir(parents=True)
        src = cfg / "nc_a_ctrl.v"
        src.write_text("module m;\n  if (x) begin\n  end\n  default: st_d = ST_IDLE;\nendmodule\n")
        other = cfg / "nc_a_lane.v"
        other.write_text("module l;\nendmodule\n")
        head = "# SystemC::Coverage-3\n"
        # Two runs: line 2's if-arm hit only in the second; its else-arm never; the default never.
        (cov / "cov_1_0.dat").write_text(
            head + point(src, 2, "v_branch/nc_a_ctrl", "if", 0)
            + point(src, 2, "v_branch/nc_a_ctrl", "else", 0)
            + point(src, 4, "v_line/nc_a_ctrl", "case", 0)
            + point(other, 1, "v_line/nc_a_lane", "block", 5)
            + point(other, 1, "v_toggle/nc_a_lane", "x[0]", 0)
            + point(other, 1, "v_toggle/nc_a_lane", "x[1]", 2))
        (cov / "cov_1_1.dat").write_text(head + point(src, 2, "v_branch/nc_a_ctrl", "if", 3))
        ex = Path(t) / "ex.txt"
        ex.write_text("# comment\nctrl  ^case: default:  unreachable default\n")
        r = run("--floor", "40", "--exclusions", str(ex), str(cov))
        assert r.returncode == 0, r.stdout + r.stderr
        assert "| cfg_a | ctrl | 1 / 2 | 50.0 |" in r.stdout, r.stdout
        assert "| cfg_a | lane | 1 / 1 | 100.0 | 1 / 2 | 50.0 |" in r.stdout, r.stdout
        assert "Excluded line points: 1" in r.stdout and "unreachable default" in r.stdout
        assert "nc_a_ctrl.v:2 (else)" in r.stdout, r.stdout
        r = run("--floor", "60", "--exclusions", str(ex), str(cov))  # 50% < 60%: fails
        assert r.returncode == 1 and "all/ctrl 50.0%" in r.stderr, r.stdout + r.stderr
        r = run("--floor", "60", str(cov))  # without the exclusion: 1 / 3
        assert r.returncode == 1 and "| cfg_a | ctrl | 1 / 3 |" in r.stdout, r.stdout
        ex.write_text("ctrl  (unclosed  reason\n")
        r = run("--exclusions", str(ex), str(cov))
        assert r.returncode == 2 and "bad regex" in r.stderr, r.stderr
        r = run(str(Path(t) / "empty"))
        assert r.returncode == 2 and "no coverage files" in r.stderr, r.stderr
    print("coverage.py: ok")


if __name__ == "__main__":
    main()
