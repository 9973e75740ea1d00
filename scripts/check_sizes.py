#!/usr/bin/env python3
"""Size limits of the source tree: no file over 600 lines and no function over 80 lines in model/,
gen/, runtime/, import/ and cli/ (tests, sim harnesses and generated RTL are not counted).

Usage: scripts/check_sizes.py [--max-file N] [--max-function N] [--report] [paths...]
Exit 1 when a limit is exceeded (names each file / function), 0 otherwise. A function is a brace
block opened by a line that looks like a definition (a parenthesised parameter list, not a control
statement, not an initializer); lambdas count as part of the function that holds them.
"""
import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DIRS = ["model", "gen", "runtime", "import", "cli", "python"]
CONTROL = re.compile(r"^\s*(if|for|while|switch|catch|do|else|return|case)\b")
NOT_FUNC = re.compile(r"^\s*(namespace|struct|class|enum|union|extern)\b|=\s*\{?\s*$|=\s*[^=]*\{\s*$")


def strip(line: str) -> str:
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//", 1)[0]


def functions(lines):
    """(name, first line, length) of each top-level function body (depth counted by braces)."""
    depth = 0
    in_func = None  # (start index, depth at open, signature)
    sig = []
    out = []
    in_comment = False
    for i, raw in enumerate(lines):
        line = raw
        if in_comment:
            if "*/" not in line:
                continue
            line = line.split("*/", 1)[1]
            in_comment = False
        if "/*" in line and "*/" not in line.split("/*", 1)[1]:
            line = line.split("/*", 1)[0]
            in_comment = True
        line = strip(line)
        if in_func is None:
            stripped = line.strip()
            if stripped:
                sig.append(stripped)
                sig = sig[-4:]
        for ch in line:
            if ch == "{":
                if in_func is None:
                    text = " ".join(sig)
                    head = text.split("{", 1)[0]
                    if ("(" in head and ")" in head and not CONTROL.match(head)
                            and not NOT_FUNC.match(head) and not head.rstrip().endswith("=")
                            and not re.search(r"\b(struct|class|enum|namespace)\b", head)):
                        name = re.findall(r"([~\w:<>]+)\s*\(", head)
                        in_func = (i, depth, name[0] if name else head[:40])
                depth += 1
            elif ch == "}":
                depth -= 1
                if in_func is not None and depth == in_func[1]:
                    out.append((in_func[2], in_func[0] + 1, i - in_func[0] + 1))
                    in_func = None
                    sig = []
        if in_func is None and line.strip().endswith((";", "}")):
            sig = []
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-file", type=int, default=600)
    ap.add_argument("--max-function", type=int, default=80)
    ap.add_argument("--report", action="store_true", help="list every file and long function")
    ap.add_argument("paths", nargs="*")
    a = ap.parse_args()
    paths = [Path(p) for p in a.paths] or [ROOT / d for d in DIRS]
    files = []
    for p in paths:
        files += sorted(p.rglob("*.[ch]pp")) if p.is_dir() else [p]
    bad = 0
    for f in files:
        lines = f.read_text(errors="replace").splitlines()
        rel = f.resolve().relative_to(ROOT) if f.resolve().is_relative_to(ROOT) else f
        if len(lines) > a.max_file:
            print(f"{rel}: {len(lines)} lines (limit {a.max_file})")
            bad += 1
        for name, start, n in functions(lines):
            if n > a.max_function:
                print(f"{rel}:{start}: {name}: {n} lines (limit {a.max_function})")
                bad += 1
    print(f"check_sizes: {len(files)} files, {bad} over the limits")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
