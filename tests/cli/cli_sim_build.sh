#!/usr/bin/env bash
# `normcore sim-build DIR` (issue 15 items 7 and 8): a NON-default accelerator from
# `normcore gen --accel` (2 lanes, int12 -> uint8, 7 channels, 32-bit bus, 62.5 MHz) gets its sim:,
# FST sim: and tlm: plugins in one command; one tensor runs on sim:, tlm: and ref: with
# byte-identical outputs; the traces are opened: VCD timescale 1 ps, the window's first and last
# time (trace_from / trace_to at the 62.5 MHz period, 16000 ps), the FST header (block type,
# timescale exponent -12, start / end time of the window), the tlm: VCD (timescale, half-clock
# grid, window); a bad DIR, a bad window and a wrong trace format exit 2.
# Usage: cli_sim_build.sh <normcore binary> [<work dir, kept>]
set -uo pipefail
bin=${1:?usage: cli_sim_build.sh <normcore> [work dir]}
if [ -n "${2:-}" ]; then
  work=$2
  mkdir -p "$work"
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1

# expect_error <name> <exit code> <text> -- cmd...
expect_error() {
  local name=$1 code=$2 text=$3
  shift 4
  "$@" > "$work/out.txt" 2> "$work/err.txt"
  local rc=$?
  if [ "$rc" -ne "$code" ]; then bad "$name: exit $rc, want $code"; cat "$work/err.txt"; return; fi
  if ! grep -qF -- "$text" "$work/err.txt"; then bad "$name: stderr lacks '$text':"; cat "$work/err.txt"; return; fi
  ok
}

# --- bad DIR: exit 2 naming it, nothing built --------------------------------------------------
mkdir -p "$work/empty"
expect_error "missing dir" 2 "DIR: '$work/nope' is not a directory" -- "$bin" sim-build "$work/nope"
expect_error "no manifest" 2 "has no manifest.json" -- "$bin" sim-build "$work/empty"
"$bin" gen --name corex -o "$work/core_only" > /dev/null || bad "gen core"
expect_error "core manifest" 2 "manifest.json" -- "$bin" sim-build "$work/core_only"
[ ! -e "$work/empty/sim-build" ] || bad "bad DIR: a build tree was made"

# --- the user's design -------------------------------------------------------------------------
d=$work/myacc
"$bin" gen --accel --force --name myacc --lanes 2 --in-bits 12 --out-bits 8 --out-unsigned \
  --max-channels 7 --bus-bits 32 --clock-mhz 62.5 -o "$d" > /dev/null || bad "gen --accel"
expect_error "bad source" 2 "--source-dir: '$work' is not a normcore source tree" -- \
  "$bin" sim-build "$d" --source-dir "$work"
[ ! -e "$d/sim-build" ] || [ -e "$d/libnormcore_sim.so" ] || bad "bad source: a build tree was made"
if ! nice "$bin" sim-build "$d/" --fst > "$work/build.log" 2>&1; then
  bad "sim-build: exit $?"
  tail -n 30 "$work/build.log"
fi
for f in libnormcore_sim.so libnormcore_sim_fst.so libnormcore_tlm.so; do
  [ -f "$d/$f" ] && ok || bad "sim-build did not make $d/$f"
done
grep -q "normcore run --device sim:$d/manifest.json" "$work/build.log" && ok ||
  bad "sim-build: no run hint"

python3 - "$work" <<'PY'
import json, random, struct, sys
w = sys.argv[1]; c = 7; random.seed(c)
json.dump({"eps": 1e-3, "gamma": [random.uniform(0.2, 2) for _ in range(c)],
           "beta": [random.uniform(-1, 1) for _ in range(c)],
           "mean": [random.uniform(-2, 2) for _ in range(c)],
           "var": [random.uniform(0.1, 3) for _ in range(c)],
           "input": {"scale": 0.002, "zero_point": 0}, "output": {"scale": 0.03, "zero_point": 100}},
          open(w + "/bn.json", "w"))
n = 3 * c * 5 * 3
data = [random.randint(-2048, 2047) for _ in range(n)]
hdr = "{'descr': '<i2', 'fortran_order': False, 'shape': (3, 7, 5, 3), }"
hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
with open(w + "/x.npy", "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode())
    f.write(struct.pack("<%dh" % n, *data))
PY
m=$d/manifest.json
"$bin" fold --params "$work/bn.json" --config "$m" -o "$work/p.bin" > /dev/null || bad "fold"
run() { "$bin" run -q --params "$work/p.bin" --input "$work/x.npy" "$@"; }
run --device "ref:$m" --output "$work/y_ref.npy" || bad "run ref"
run --device "sim:$m,trace=$work/t.vcd,trace_from=40,trace_to=90" --output "$work/y_sim.npy" ||
  bad "run sim"
run --device "sim:$m,trace=$work/t.fst,trace_from=40,trace_to=90" --output "$work/y_fst.npy" ||
  bad "run sim fst"
run --device "tlm:$m,trace=$work/t_tlm.vcd,trace_from=40,trace_to=90" \
  --output "$work/y_tlm.npy" || bad "run tlm"
for b in sim fst tlm; do
  cmp -s "$work/y_ref.npy" "$work/y_$b.npy" && ok || bad "$b output differs from ref"
done
# The output is not trivially constant (the comparison above means something).
python3 - "$work/y_ref.npy" <<'PY' && ok || bad "ref output has fewer than 10 distinct values"
import sys
b = open(sys.argv[1], "rb").read()
n = int.from_bytes(b[8:10], "little")
sys.exit(0 if len(set(b[10 + n:])) >= 10 else 1)
PY

# --- traces ------------------------------------------------------------------------------------
# VCD: timescale 1 ps; clock k dumped at k*P and k*P + P/2, P = 10^6 / 62.5 MHz = 16000 ps (a
# fractional --clock-mhz).
grep -q '^\$timescale 1ps \$end' "$work/t.vcd" && ok || bad "vcd timescale is not 1ps"
first=$(grep -m1 '^#' "$work/t.vcd")
last=$(grep '^#' "$work/t.vcd" | tail -n 1)
[ "$first" = "#640000" ] && ok || bad "vcd first time $first, want #640000 (clock 40)"
[ "$last" = "#1448000" ] && ok || bad "vcd last time $last, want #1448000 (clock 90 + P/2)"
n_times=$(grep -c '^#' "$work/t.vcd")
[ "$n_times" -le 102 ] && ok || bad "vcd has $n_times time steps, want <= 102 (51 clocks)"
# FST: header block (type 0, length 329), start / end time (big endian u64 at 9 / 17),
# timescale exponent (s8 at 73).
python3 - "$work/t.fst" <<'PY' && ok || bad "fst header"
import struct, sys
b = open(sys.argv[1], "rb").read()
assert b[0] == 0, "block type %d" % b[0]
assert struct.unpack(">Q", b[1:9])[0] == 329, "header length"
start, end = struct.unpack(">QQ", b[9:25])
assert (start, end) == (640000, 1448000), (start, end)
assert struct.unpack("b", b[73:74])[0] == -12, "timescale"
PY

# tlm: VCD of the RTL, timescale 1 ps, the same 16000 ps clock (the manifest's 62.5 MHz), one dump a
# half clock, only clocks 40..90 (k = time / P, counted since the model elaborated).
python3 - "$work/t_tlm.vcd" <<'PY' && ok || bad "tlm vcd"
import sys
text = open(sys.argv[1]).read()
assert "$timescale 1ps $end" in text, "timescale"
assert "irq_o" in text and "$enddefinitions" in text, "signals"
times = [int(l[1:]) for l in text.splitlines() if l.startswith("#")]
assert len(times) >= 20, "only %d time steps" % len(times)
assert all(t % 8000 == 0 for t in times), "a time off the half-clock grid"
assert 640000 <= times[0] and times[-1] <= 1448000, (times[0], times[-1])
assert len(times) <= 102, len(times)
PY
expect_error "tlm fst" 2 "the tlm plugin writes VCD only" -- \
  run --device "tlm:$m,trace=$work/u.fst" --output "$work/z.npy"

# --- wrong trace format / window: exit 2 naming the option ---------------------------------------
expect_error "vcd from fst build" 2 "writes FST" -- \
  run --device "sim:$m,lib=$d/libnormcore_sim_fst.so,trace=$work/u.vcd" --output "$work/z.npy"
expect_error "fst from vcd build" 2 "FST needs the FST build" -- \
  run --device "sim:$m,lib=$d/libnormcore_sim.so,trace=$work/u.fst" --output "$work/z.npy"
expect_error "window" 2 "trace_to=5 is before trace_from=9" -- \
  run --device "sim:$m,trace=$work/u.vcd,trace_from=9,trace_to=5" --output "$work/z.npy"
[ ! -e "$work/z.npy" ] && ok || bad "an output was written by a failing run"

echo "cli_sim_build: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
