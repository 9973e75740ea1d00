#!/usr/bin/env bash
# The EDA artefacts of `normcore gen` (core and --accel): every one listed in manifest.json and
# identical on a second run; the plain C register header compiles as C99 (-pedantic -Werror) and
# as C++ and agrees with the C++ header value by value; SDC and XDC constrain the IR's clock port
# at --clock-mhz; filelist_env.f (-f, under $<NAME>_RTL_DIR) and filelist.f (-F) work from
# another directory with Verilator and Icarus.
# Usage: flow_files.sh <normcore> <source root>
set -euo pipefail
bin=$1
root=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" gen -o "$work/core" --clock-mhz 125 > /dev/null
"$bin" gen -o "$work/core2" --clock-mhz 125 > /dev/null
"$bin" gen --accel -o "$work/accel" > /dev/null
"$bin" gen --accel -o "$work/accel2" > /dev/null
diff -r "$work/core" "$work/core2" || fail "core output differs between two runs"
diff -r "$work/accel" "$work/accel2" || fail "accelerator output differs between two runs"
echo "ok: identical output on a second run"

# Every file of the directory is named by the manifest, and every name there exists.
for d in core accel; do
  python3 - "$work/$d" <<'PY' || fail "$d: manifest does not list the directory"
import json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.json")))
named = set(m["files"]) | {"manifest.json"}
named |= {v for k, v in m["flow_files"].items() if k not in ("filelist_env_variable", "fusesoc_vlnv")}
on_disk = set(os.listdir(d))
assert named == on_disk, f"manifest {sorted(named - on_disk)} missing; unlisted {sorted(on_disk - named)}"
print(f"ok: {d}: manifest lists all {len(on_disk)} files")
PY
done

# Clock constraints: the IR's clock port, the period of --clock-mhz (125 MHz: 8 ns), the default
# 100 MHz (10 ns).
want='create_clock -name clk_i -period 8.000 [get_ports clk_i]'
for f in "$work/core/normcore_core.sdc" "$work/core/normcore_core.xdc"; do
  grep -qxF "$want" "$f" || fail "$f lacks '$want'"
done
grep -qxF 'create_clock -name clk_i -period 10.000 [get_ports clk_i]' "$work/accel/normcore_top.sdc" \
  || fail "accel SDC lacks the 10 ns default"
grep -q '"period_ns": "8.000"' "$work/core/manifest.json" || fail "manifest clock period"
# Fractional MHz (issue 15): 62.5 MHz is 16 ns, 33.333 MHz 30.000 ns; the manifest keeps 62.5.
"$bin" gen -o "$work/frac" --clock-mhz 62.5 > /dev/null || fail "--clock-mhz 62.5 refused"
for f in "$work/frac/normcore_core.sdc" "$work/frac/normcore_core.xdc"; do
  grep -qxF 'create_clock -name clk_i -period 16.000 [get_ports clk_i]' "$f" || fail "$f: 16 ns"
  grep -qF 'port clk_i, 62.5 MHz' "$f" || fail "$f: the comment lacks 62.5 MHz"
done
grep -q '"mhz": 62.5,' "$work/frac/manifest.json" || fail "manifest clock.mhz 62.5"
grep -q '"clock_mhz": 62.5,' "$work/frac/manifest.json" || fail "manifest config.clock_mhz 62.5"
"$bin" gen -o "$work/frac3" --clock-mhz 33.333 > /dev/null || fail "--clock-mhz 33.333 refused"
grep -qxF 'create_clock -name clk_i -period 30.000 [get_ports clk_i]' \
  "$work/frac3/normcore_core.sdc" || fail "33.333 MHz: 30.000 ns"
"$bin" gen --config "$work/frac/manifest.json" --dry-run > "$work/frac.json"
grep -q '"clock_mhz": 62.5,' "$work/frac.json" || fail "--config of a 62.5 MHz manifest"
# Bad values: exit 2 naming the option (0, negative, NaN, infinite, huge, not a number).
for v in 0 -5 0.5 nan inf 1e9 1e400 abc; do
  rc=0
  "$bin" gen --dry-run --clock-mhz "$v" > /dev/null 2> "$work/err" || rc=$?
  [ $rc -eq 2 ] || fail "--clock-mhz $v: exit $rc, want 2"
  grep -q -- "^normcore gen: error: .*--clock-mhz" "$work/err" || {
    cat "$work/err"; fail "--clock-mhz $v: message does not name the option"; }
done
echo '{"clock_mhz": "fast"}' > "$work/bad_clock.json"
rc=0
"$bin" gen --dry-run --config "$work/bad_clock.json" > /dev/null 2> "$work/err" || rc=$?
[ $rc -eq 2 ] && grep -q "'clock_mhz' must be a number" "$work/err" || fail "config clock_mhz text"
echo "ok: SDC/XDC clock constraints"

# The plain C register header: C99, pedantic, no warnings; also C++; and the same values as the
# C++ header.
hdr=$work/accel
gcc -std=c99 -Wall -Wextra -pedantic -Werror -I "$hdr" -o "$work/c99" "$root/tests/gen/regs_c_check.c"
"$work/c99" || fail "C99 check program exit $?"
gcc -std=c11 -Wall -Wextra -pedantic -Werror -I "$hdr" -fsyntax-only "$root/tests/gen/regs_c_check.c"
g++ -std=c++17 -Wall -Wextra -pedantic -Werror -I "$hdr" -x c++ -o "$work/cxx" \
  "$root/tests/gen/regs_c_check.c"
"$work/cxx" || fail "C++ build of the C check program exit $?"
g++ -std=c++17 -Wall -Wextra -pedantic -Werror -I "$hdr" -o "$work/vs" \
  "$root/tests/gen/regs_c_vs_cpp.cpp"
"$work/vs" || fail "the C and C++ register headers differ"
echo "ok: normcore_regs.h compiles as C99, C11 and C++17 and matches normcore_regs.hpp"

# Filelists from another working directory.
mkdir "$work/elsewhere"
cd "$work/elsewhere"
for d in core accel; do
  top=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['top'])" "$work/$d/manifest.json")
  out=$(NORMCORE_RTL_DIR="$work/$d" verilator --lint-only -Wall --top-module "$top" \
          -f "$work/$d/filelist_env.f" 2>&1) || fail "$d: verilator -f filelist_env.f: $out"
  [ -z "$out" ] || fail "$d: verilator -f filelist_env.f warned: $out"
  out=$(verilator --lint-only -Wall --top-module "$top" -F "../../$(basename "$work")/$d/filelist.f" 2>&1) \
    || fail "$d: verilator -F filelist.f: $out"
  [ -z "$out" ] || fail "$d: verilator -F filelist.f warned: $out"
  NORMCORE_RTL_DIR="$work/$d" iverilog -g2005 -s "$top" -o "$work/$d.vvp" -f "$work/$d/filelist_env.f" \
    || fail "$d: iverilog -f filelist_env.f"
  # Without the variable the list must not silently resolve against the current directory.
  if env -u NORMCORE_RTL_DIR verilator --lint-only --top-module "$top" -f "$work/$d/filelist_env.f" \
       > /dev/null 2>&1; then
    fail "$d: filelist_env.f resolved without NORMCORE_RTL_DIR"
  fi
  echo "ok: $d: filelist_env.f (-f) with Verilator and Icarus, filelist.f (-F) with Verilator, from $PWD"
done
echo "PASS: flow files"
