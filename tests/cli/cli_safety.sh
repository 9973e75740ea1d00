#!/usr/bin/env bash
# Issue 15 items 1-4, one ctest per case (cli.safety.<case>): outputs that never destroy what a
# user owns, strict inputs, the exit-code rule (0 success, 2 bad input, 1 device or tool failure)
# and bounded resources. Each case is named after the bug it guards against.
# Usage: cli_safety.sh <normcore binary> <devices dir> <case>   (no case: list the cases)
set -uo pipefail
bin=${1:?usage: cli_safety.sh <normcore> <devices dir> [case]}
devs=${2:?usage: cli_safety.sh <normcore> <devices dir> [case]}
case_name=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
chmod 755 "$work"
trap 'chmod -R u+w "$work" 2> /dev/null; rm -rf "$work"' EXIT
manifest=$devs/normcore/rtl/manifest.json
dev=ref:$manifest
bn=$here/../../examples/bn_layer.json
fail() { echo "FAIL: $*"; [ -f "$work/err.txt" ] && cat "$work/err.txt"; exit 1; }

# expect <exit code> <text stderr must contain> -- cmd...: runs cmd (stdout to out.txt).
expect() {
  local code=$1 text=$2
  shift 3
  "$@" > "$work/out.txt" 2> "$work/err.txt"
  local rc=$?
  [ "$rc" -eq "$code" ] || fail "exit $rc, want $code: $*"
  [ -z "$text" ] || grep -qF -- "$text" "$work/err.txt" || fail "stderr lacks '$text'"
}

# Inputs: a folded layer for the default device and int8 / int16 / float tensors (1,8,4,4).
setup_run() {
  "$bin" fold --params "$bn" --config "$manifest" -o "$work/p.bin" > /dev/null || fail "fold"
  python3 - "$work" <<'PY' || fail "fixtures"
import struct, sys
def npy(path, descr, fmt, vals):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': (1, 8, 4, 4), }" % descr
    h += " " * (63 - (len(h) + 10) % 64) + "\n"
    open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode()
                           + struct.pack("<%d%s" % (len(vals), fmt), *vals))
w = sys.argv[1]
npy(w + "/x.npy", "|i1", "b", [i % 100 for i in range(128)])
npy(w + "/x300.npy", "<i2", "h", [300] + [0] * 127)
npy(w + "/xnan.npy", "<f4", "f", [float("nan")] + [0.0] * 127)
npy(w + "/xf.npy", "<f4", "f", [0.5] * 128)
PY
}
run_x() { "$bin" run --device "$dev" --params "$work/p.bin" --input "$work/x.npy" -q "$@"; }

# As an unprivileged user (root ignores directory permissions), when possible.
as_user() {
  if [ "$(id -u)" -eq 0 ]; then setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; else "$@"; fi
}

# --- 1. output safety --------------------------------------------------------------------------
case_gen_out_refuses_user_dir_names_force() {
  mkdir "$work/mine" && echo mine > "$work/mine/notes.txt"
  expect 2 "give --force" -- "$bin" gen -o "$work/mine"
  grep -q mine "$work/mine/notes.txt" || fail "the user's file was touched"
  expect 0 "" -- "$bin" gen --force -o "$work/mine"
  [ -f "$work/mine/manifest.json" ] && [ ! -e "$work/mine/notes.txt" ] || fail "--force"
}
case_gen_out_trailing_slash_and_dot() {
  expect 0 "" -- "$bin" gen -o "$work/rtl/"
  expect 0 "" -- "$bin" gen -o "$work/rtl/"
  mkdir "$work/d" && (cd "$work/d" && expect 0 "" -- "$bin" gen -o .)
  [ -f "$work/rtl/manifest.json" ] && [ -f "$work/d/manifest.json" ] || fail "no output"
}
case_gen_out_failure_half_way_leaves_old_state() {
  command -v setpriv > /dev/null || { echo "setpriv missing: skipped"; exit 0; }
  chmod 777 "$work"
  as_user "$bin" gen -o "$work/out" > /dev/null || fail "first gen"
  as_user mkdir "$work/out/sub" && as_user sh -c "echo keep > '$work/out/sub/f'"
  chmod 555 "$work/out/sub"
  (cd "$work" && find . | sort) > "$work/../safety_before.$$"
  expect 2 "is not writable" -- as_user "$bin" gen --lanes 4 -o "$work/out"
  (cd "$work" && find . | sort) | grep -v 'txt$' > "$work/../safety_after.$$"
  grep -v 'txt$' "$work/../safety_before.$$" | diff - "$work/../safety_after.$$" ||
    { rm -f "$work"/../safety_*.$$; fail "the tree changed"; }
  rm -f "$work"/../safety_*.$$
  grep -q '"lanes": 8' "$work/out/manifest.json" || fail "old output replaced"
}
case_run_output_symlink_stays_a_link() {
  setup_run
  ln -s target.npy "$work/link.npy"
  expect 0 "" -- run_x --output "$work/link.npy"
  [ -L "$work/link.npy" ] && [ -f "$work/target.npy" ] || fail "the link was replaced"
}
case_fold_out_symlink_stays_a_link() {
  mkdir "$work/keep" && ln -s keep/params.bin "$work/p.lnk"
  expect 0 "" -- "$bin" fold --params "$bn" --config "$manifest" -o "$work/p.lnk"
  [ -L "$work/p.lnk" ] && [ -s "$work/keep/params.bin" ] || fail "the link was replaced"
}
case_fold_out_char_device_written_in_place() {
  local devnode=/dev/null
  mknod "$work/null" c 1 3 2> /dev/null && devnode=$work/null
  expect 0 "" -- "$bin" fold --params "$bn" --config "$manifest" -o "$devnode" --report "$devnode"
  [ -c "$devnode" ] || fail "$devnode is no longer a character device"
}
case_fold_out_fifo_written_in_place() {
  mkfifo "$work/fifo"
  (cat "$work/fifo" > "$work/got.bin") &
  expect 0 "" -- "$bin" fold --params "$bn" --config "$manifest" -o "$work/fifo"
  wait
  [ -p "$work/fifo" ] && [ -s "$work/got.bin" ] || fail "the pipe was replaced or not written"
}
# `run --output /dev/stdout` as root turned the system's /dev/stdout link into a plain file: the
# same kind of link (to /proc/self/fd/1), here in the test's own directory, with stdout a pipe.
case_run_output_link_to_proc_fd_written_in_place() {
  setup_run
  ln -s /proc/self/fd/1 "$work/stdout"
  run_x --output "$work/stdout" | cat > "$work/y.npy" || fail "run --output link to fd 1"
  [ -L "$work/stdout" ] || fail "the link was replaced"
  head -c 6 "$work/y.npy" | grep -q NUMPY || fail "nothing written to the pipe"
}
case_run_output_dash_is_stdout() {
  setup_run
  (cd "$work" && run_x --output - > "$work/y.npy") || fail "run --output -"
  [ ! -e "$work/-" ] && head -c 6 "$work/y.npy" | grep -q NUMPY || fail "no .npy on stdout"
}

# --- 2. strict inputs --------------------------------------------------------------------------
case_config_unknown_key_rejected() {
  echo '{"lanse": 8}' > "$work/c.json"
  expect 2 "unknown key 'lanse'" -- "$bin" gen --config "$work/c.json" -o "$work/g"
  expect 2 "unknown key 'lanse'" -- "$bin" fold --params "$bn" --config "$work/c.json" -o "$work/p"
}
case_bn_json_as_config_rejected() {
  expect 2 "unknown key" -- "$bin" fold --params "$bn" --config "$bn" -o "$work/p.bin"
  [ ! -e "$work/p.bin" ] || fail "written"
}
case_fold_shift_negative() {
  expect 2 "--shift: -1 is out of range 0..33" -- \
    "$bin" fold --params "$bn" --config "$manifest" -o "$work/p.bin" --shift -1
  [ ! -e "$work/p.bin" ] || fail "written"
}
case_run_timeout_negative() {
  setup_run
  expect 2 "--timeout: -5 must be > 0" -- run_x --output "$work/y.npy" --timeout -5
}
case_run_tile_and_seed_negative() {
  setup_run
  expect 2 "--tile: -5 must be > 0" -- run_x --output "$work/y.npy" --tile -5
  expect 2 "--tile: 0 must be > 0" -- run_x --output "$work/y.npy" --tile 0
  expect 2 "--seed: -1 must be >= 0" -- run_x --output "$work/y.npy" --seed -1
  [ ! -e "$work/y.npy" ] || fail "written"
}
case_run_shape_negative() {
  setup_run
  expect 2 "--shape '1,8,-4,-4': '-4' is not a positive integer" -- \
    run_x --output "$work/y.npy" --shape 1,8,-4,-4
  expect 2 "overflows" -- run_x --output "$work/y.npy" --shape 4294967296,4294967296,8
  [ ! -e "$work/y.npy" ] || fail "written"
}
case_run_in_scale_zero() {
  setup_run
  expect 2 "--in-scale: 0 must be a finite number > 0" -- "$bin" run --device "$dev" \
    --params "$work/p.bin" --input "$work/xf.npy" --output "$work/y.npy" --in-scale 0
}
case_gen_name_checked_for_derived_names() {
  expect 2 "--name: '_x' must start with a letter" -- "$bin" gen --accel --name _x -o "$work/g"
  expect 2 "--name: 'a__b' may not hold" -- "$bin" gen --accel --name a__b -o "$work/g"
  [ ! -e "$work/g" ] || fail "written"
}
case_unknown_command_prefixed_with_suggestion() {
  expect 2 "normcore: error: unknown command 'gne'; did you mean 'gen'?" -- "$bin" gne
  expect 2 "normcore: error: unknown command 'bogus'" -- "$bin" bogus
  expect 2 "normcore: error: a command is required" -- "$bin"
}
case_cli11_errors_prefixed_with_suggestion() {
  expect 2 "normcore gen: error: " -- "$bin" gen --lanez 4
  grep -qF "did you mean --lanes" "$work/err.txt" || fail "no suggestion"
  expect 2 "normcore fold: error: --params" -- "$bin" fold --config "$manifest"
  expect 2 "normcore run: error: " -- "$bin" run --device "$dev" --timeout abc
}

# --- 3. one exit-code rule ---------------------------------------------------------------------
case_run_input_out_of_range_exit_2() {
  setup_run
  expect 2 "outside the device's input range" -- "$bin" run --device "$dev" \
    --params "$work/p.bin" --input "$work/x300.npy" --output "$work/y.npy"
}
case_run_input_nan_exit_2() {
  setup_run
  expect 2 "input element 0 is NaN" -- "$bin" run --device "$dev" --params "$work/p.bin" \
    --input "$work/xnan.npy" --output "$work/y.npy" --in-scale 0.1
}
case_run_output_missing_dir_exit_2() {
  setup_run
  expect 2 "directory $work/none does not exist" -- run_x --output "$work/none/y.npy"
}
case_run_device_failure_exit_1() {
  setup_run
  expect 1 "" -- "$bin" run --device "$dev,fail_job=1" --params "$work/p.bin" \
    --input "$work/x.npy" --output "$work/y.npy"
  [ ! -e "$work/y.npy" ] || fail "written"
}

# The README's exit-code table, one row per command: 0 success, 2 bad input, 1 device failure.
case_exit_code_table_every_command() {
  setup_run
  expect 0 "" -- "$bin" gen -o "$work/g"
  expect 2 "normcore gen: error: --lanes" -- "$bin" gen --lanes 0 -o "$work/g2"
  expect 0 "" -- "$bin" fold --params "$bn" --config "$manifest" -o "$work/p2.bin"
  expect 2 "normcore fold: error: " -- "$bin" fold --params "$work/none.json" --config "$manifest"
  expect 0 "" -- run_x --output "$work/y.npy"
  expect 2 "normcore run: error: " -- run_x --output "$work/y2.npy" --layout chw
  expect 1 "normcore run: error: " -- "$bin" run --device "$dev,hang_job=1" \
    --params "$work/p.bin" --input "$work/x.npy" --output "$work/y3.npy" --timeout 200
  expect 0 "" -- "$bin" info --device "$dev"
  expect 2 "normcore info: error: " -- "$bin" info --device "ref:$work/none.json"
  if grep -q sim-build <<<"$("$bin" --help)"; then  # exit 0 and 1 (a build) are in cli.sim_build
    expect 2 "normcore sim-build: error: " -- "$bin" sim-build "$work/none"
    expect 2 "normcore sim-build: error: " -- "$bin" sim-build "$work/g"  # a core, no --accel
  fi
  if grep -q import <<<"$("$bin" --help)"; then
    expect 2 "normcore import: error: " -- "$bin" import "$work/none.onnx" --config "$manifest" \
      -o "$work/plan"
  fi
}

# --- 4. bounded resources ----------------------------------------------------------------------
# A .npz whose gamma/beta/mean/var are fine and whose member 'junk.npy' claims 1 GiB of corrupt
# deflate data: it is not asked for, so it must never be inflated (or allocated).
case_npz_unrelated_member_not_decompressed() {
  python3 - "$work/bn.npz" <<'PY' || fail "fixture"
import os, struct, sys, zipfile, zlib
def npy(vals):
    h = "{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }" % len(vals)
    h += " " * (63 - (len(h) + 10) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack(
        "<%dd" % len(vals), *vals)
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for k, v in (("gamma", 1.0), ("beta", 0.0), ("mean", 0.0), ("var", 1.0)):
        z.writestr(k + ".npy", npy([v] * 8))
    z.writestr("junk.npy", os.urandom(1 << 20), compress_type=zipfile.ZIP_DEFLATED)
data = bytearray(open(sys.argv[1], "rb").read())
p = data.find(b"PK\x01\x02")
while p >= 0:  # the directory entry of junk.npy: uncompressed size 1 GiB, data left as it is
    n = struct.unpack_from("<H", data, p + 28)[0]
    if data[p + 46:p + 46 + n] == b"junk.npy":
        struct.pack_into("<I", data, p + 24, 1 << 30)
    p = data.find(b"PK\x01\x02", p + 4)
open(sys.argv[1], "wb").write(data)
PY
  expect 0 "" -- "$bin" fold --params "$bn" --npz "$work/bn.npz" --config "$manifest" \
    -o "$work/p.bin"
}
case_fold_max_error() {
  expect 2 "--max-error: the worst-case error" -- \
    "$bin" fold --params "$bn" --config "$manifest" -o "$work/p.bin" --max-error 0.01
  [ ! -e "$work/p.bin" ] || fail "written"
  expect 0 "" -- "$bin" fold --params "$bn" --config "$manifest" -o "$work/p.bin" --max-error 1
  expect 2 "--max-error: -1 must be a number >= 0" -- \
    "$bin" fold --params "$bn" --config "$manifest" -o "$work/p.bin" --max-error -1
}
case_import_max_error() {
  grep -q import <<<"$("$bin" --help)" || { echo "built without import: skipped"; exit 0; }
  cat > "$work/bn.hlo" << 'EOF'
HloModule bn

ENTRY %main (x: f32[1,3,2,2]) -> f32[1,3,2,2] {
  %x = f32[1,3,2,2] parameter(0)
  %scale = f32[3] constant({1.5, -0.75, 2})
  %offset = f32[3] constant({0.25, 0, -1})
  %mean = f32[3] constant({0.1, 0.2, 0.3})
  %var = f32[3] constant({1, 2, 0.5})
  ROOT %bn = f32[1,3,2,2] batch-norm-inference(%x, %scale, %offset, %mean, %var), epsilon=0.001, feature_index=1
}
EOF
  expect 2 "--max-error: the worst-case error" -- "$bin" import "$work/bn.hlo" \
    --config "$manifest" -o "$work/plan" --max-error 0.0001
  [ ! -e "$work/plan" ] || fail "written"
  expect 0 "" -- "$bin" import "$work/bn.hlo" --config "$manifest" -o "$work/plan" --max-error 2
}

# An HLO batch norm whose scale/offset/mean/var are parameters (filled from a --params bundle).
write_param_hlo() {
  cat > "$1" << 'EOF'
HloModule bn

ENTRY %main (x: f32[1,3,2,2], scale: f32[3], offset: f32[3], mean: f32[3], var: f32[3]) -> f32[1,3,2,2] {
  %x = f32[1,3,2,2] parameter(0)
  %scale = f32[3] parameter(1)
  %offset = f32[3] parameter(2)
  %mean = f32[3] parameter(3)
  %var = f32[3] parameter(4)
  ROOT %bn = f32[1,3,2,2] batch-norm-inference(%x, %scale, %offset, %mean, %var), epsilon=0.001, feature_index=1
}
EOF
}
# write_param_npz <out.npz> <junk MiB> [<member> <fake size>]: scale/offset/mean/var, plus
# (junk > 0) 'junk.npy', a valid uint8 array of that many MiB of zeros, deflated (a few hundred
# KiB); with <member>, that member's directory entry claims <fake size> bytes.
write_param_npz() {
  python3 - "$@" <<'PY' || fail "fixture"
import struct, sys, zipfile
def npy(descr, shape, body):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, shape)
    h += " " * (63 - (len(h) + 10) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + body
vals = {"scale": [1.5, -0.75, 2], "offset": [0.25, 0, -1], "mean": [0.1, 0.2, 0.3],
        "var": [1, 2, 0.5]}
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
    for k, v in vals.items():
        z.writestr(k + ".npy", npy("<f8", 3, struct.pack("<3d", *v)))
    mib = int(sys.argv[2])
    if mib:
        with z.open("junk.npy", "w", force_zip64=False) as f:
            f.write(npy("|u1", mib << 20, b""))
            for _ in range(mib):
                f.write(bytes(1 << 20))
if len(sys.argv) > 3:
    data = bytearray(open(sys.argv[1], "rb").read())
    name = sys.argv[3].encode()
    p = data.find(b"PK\x01\x02")
    while p >= 0:
        n = struct.unpack_from("<H", data, p + 28)[0]
        if data[p + 46:p + 46 + n] == name:
            struct.pack_into("<I", data, p + 24, int(sys.argv[4]))
        p = data.find(b"PK\x01\x02", p + 4)
    open(sys.argv[1], "wb").write(data)
PY
}
# `import --params` with an .npz holding an unrelated 300 MiB member (deflated to ~0.3 MiB):
# only the asked members are inflated (max RSS stays far below the member's size, seconds), and
# the plan equals the one made from the same values without the junk member (but for the
# bundle file name it records).
case_import_params_npz_unrelated_member_not_decompressed() {
  grep -q import <<<"$("$bin" --help)" || { echo "built without import: skipped"; exit 0; }
  write_param_hlo "$work/bn.hlo"
  write_param_npz "$work/small.npz" 0
  write_param_npz "$work/big.npz" 300
  [ "$(stat -c %s "$work/big.npz")" -lt 4000000 ] || fail "fixture: big.npz is not small"
  expect 0 "" -- "$bin" import "$work/bn.hlo" --params "$work/small.npz" --config "$manifest" \
    -o "$work/plan_small"
  local t0 t1 rss_kb ms
  t0=$(date +%s%N)
  expect 0 "" -- /usr/bin/time -f "%M" -o "$work/rss.txt" "$bin" import "$work/bn.hlo" \
    --params "$work/big.npz" --config "$manifest" -o "$work/plan_big"
  t1=$(date +%s%N)
  rss_kb=$(tail -n 1 "$work/rss.txt")
  ms=$(((t1 - t0) / 1000000))
  echo "import with a 300 MiB unrelated member: ${ms} ms, max RSS ${rss_kb} KiB"
  [ "$rss_kb" -lt 153600 ] || fail "max RSS ${rss_kb} KiB: the unrelated member was inflated"
  [ "$ms" -lt 20000 ] || fail "${ms} ms"
  diff -r -I '"bundle": ' "$work/plan_small" "$work/plan_big" || fail "the plans differ"
}
# A member that is asked for and whose directory entry lies about its size: exit 2 naming it
# (1 GiB claimed for a few compressed bytes: refused before its buffer is allocated), no plan.
case_import_params_member_lies_about_size() {
  grep -q import <<<"$("$bin" --help)" || { echo "built without import: skipped"; exit 0; }
  write_param_hlo "$work/bn.hlo"
  write_param_npz "$work/lie.npz" 0 var.npy $((1 << 30))
  expect 2 "member 'var.npy': corrupt: " -- "$bin" import "$work/bn.hlo" \
    --params "$work/lie.npz" --config "$manifest" -o "$work/plan"
  grep -qF "normcore import: error: " "$work/err.txt" || fail "no 'normcore import: error:' prefix"
  [ ! -e "$work/plan" ] || fail "a plan was written"
  write_param_npz "$work/lie2.npz" 0 mean.npy 100
  expect 2 "member 'mean.npy': corrupt: inflates to more than the 100 bytes" -- "$bin" import \
    "$work/bn.hlo" --params "$work/lie2.npz" --config "$manifest" -o "$work/plan"
  [ ! -e "$work/plan" ] || fail "a plan was written"
}

# --- 9. progress -------------------------------------------------------------------------------
# `fold` on many channels was silent (25 s for 10^6): on a terminal (a pty from script(1)) it
# reports its phases without being asked; through a pipe it does not; --no-progress wins.
case_fold_progress_automatic_on_a_terminal() {
  command -v script > /dev/null || { echo "script(1) missing: skipped"; exit 0; }
  python3 - "$work/bn.json" <<'PY' || fail "fixture"
import json, sys
n = 65536
json.dump({"eps": 1e-5, "gamma": [1.0 + (i % 7) / 8 for i in range(n)], "beta": [0.1] * n,
           "mean": [(i % 5) / 10 for i in range(n)], "var": [1.0] * n,
           "input": {"scale": 0.02, "zero_point": 0}, "output": {"scale": 0.03, "zero_point": 0}},
          open(sys.argv[1], "w"))
PY
  echo '{"max_channels": 65536}' > "$work/c.json"
  local cmd="'$bin' fold --params '$work/bn.json' --config '$work/c.json' -o '$work/p.bin'"
  # stdout (the report) to /dev/null inside the pty: only stderr is the terminal.
  script -qec "$cmd > /dev/null" /dev/null > "$work/tty.txt" 2>&1 < /dev/null || fail "fold on a pty"
  grep -q "normcore fold: report .*100% (65536 / 65536)" "$work/tty.txt" ||
    { cat "$work/tty.txt"; fail "no progress on a terminal"; }
  script -qec "$cmd --no-progress > /dev/null" /dev/null > "$work/tty2.txt" 2>&1 < /dev/null ||
    fail "fold --no-progress on a pty"
  grep -q "%" "$work/tty2.txt" && fail "--no-progress on a terminal printed progress"
  expect 0 "" -- "$bin" fold --params "$work/bn.json" --config "$work/c.json" -o "$work/p.bin"
  [ ! -s "$work/err.txt" ] || fail "progress through a pipe: $(cat "$work/err.txt")"
}

# --- 10. "shift" means R only: b's width is --offset-bits / offset_bits ----------------------
# The old spellings still work as deprecated aliases, with a warning naming the new one; both
# at once is an error (exit 2); the output says offset_bits only.
case_gen_shift_bits_alias_warns() {
  expect 0 "normcore gen: warning: --shift-bits is deprecated, use --offset-bits" -- \
    "$bin" gen --shift-bits 24 --dry-run
  grep -q '"offset_bits": 24,' "$work/out.txt" || fail "--shift-bits 24 did not set offset_bits"
  grep -q '"shift_bits"' "$work/out.txt" && fail "the manifest still says shift_bits"
  expect 0 "" -- "$bin" gen --offset-bits 24 --dry-run
  [ ! -s "$work/err.txt" ] || fail "--offset-bits warned"
  expect 2 "normcore gen: error: --shift-bits is the deprecated spelling of --offset-bits" -- \
    "$bin" gen --shift-bits 24 --offset-bits 24 --dry-run
  grep -q -- "--offset-bits" <<<"$("$bin" gen --help)" || fail "--help lacks --offset-bits"
  grep -q -- "--shift-bits" <<<"$("$bin" gen --help)" && fail "--help still lists --shift-bits"
  echo '{"shift_bits": 20}' > "$work/old.json"
  expect 0 "normcore: warning: config: 'shift_bits' is deprecated, use 'offset_bits'" -- \
    "$bin" gen --config "$work/old.json" --dry-run
  grep -q '"offset_bits": 20,' "$work/out.txt" || fail "config shift_bits 20 not read"
  echo '{"shift_bits": 20, "offset_bits": 20}' > "$work/both.json"
  expect 2 "'shift_bits' is the deprecated name of 'offset_bits'" -- \
    "$bin" gen --config "$work/both.json" --dry-run
  expect 2 "--offset-bits: 63 is out of range 2..62" -- "$bin" gen --shift-bits 63 --dry-run
}
# The register docs, the C header and the manifest's register map name CAPS3.offset_bits; a
# manifest written before the rename (CAPS3.shift_bits, config shift_bits) still opens on ref:.
case_caps3_offset_bits_and_old_manifest() {
  expect 0 "" -- "$bin" gen --accel -o "$work/a"
  grep -q "_CAPS3_OFFSET_BITS_MASK" "$work/a/normcore_regs.h" || fail "C header"
  grep -q "| offset_bits |" "$work/a/normcore_registers.md" || fail "register docs"
  grep -qiw "shift_bits" "$work/a"/* && fail "generated files still say shift_bits"
  python3 - "$work/a/manifest.json" "$work/old.json" <<'PY' || fail "fixture"
import json, sys
m = json.load(open(sys.argv[1]))
m["config"]["shift_bits"] = m["config"].pop("offset_bits")
for r in m["registers"]["registers"]:
    for f in r.get("fields", []):
        if f["name"] == "offset_bits":
            f["name"] = "shift_bits"
json.dump(m, open(sys.argv[2], "w"), indent=2)
PY
  grep -q '"shift_bits"' "$work/old.json" || fail "fixture: no shift_bits"
  cp "$work/old.json" "$work/a/manifest.json"
  expect 0 "normcore: warning: config: 'shift_bits' is deprecated, use 'offset_bits'" -- \
    "$bin" info --device "ref:$work/a/manifest.json"
  grep -q "b 32 bits" "$work/out.txt" || fail "info: b's width"
}

cases=$(declare -F | awk '{print $3}' | grep '^case_' | sed 's/^case_//')
if [ -z "$case_name" ]; then echo "$cases"; exit 0; fi
declare -F "case_$case_name" > /dev/null || { echo "no case '$case_name'"; exit 2; }
"case_$case_name"
echo "PASS: $case_name"
