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
  if "$bin" --help | grep -q import; then
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
  "$bin" --help | grep -q import || { echo "built without import: skipped"; exit 0; }
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

cases=$(declare -F | awk '{print $3}' | grep '^case_' | sed 's/^case_//')
if [ -z "$case_name" ]; then echo "$cases"; exit 0; fi
declare -F "case_$case_name" > /dev/null || { echo "no case '$case_name'"; exit 2; }
"case_$case_name"
echo "PASS: $case_name"
