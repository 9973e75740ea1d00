#!/usr/bin/env bash
# scripts/yosys_check.sh must fail on each defect it exists to find (a latch, an undriven net, a
# net with two drivers, a missing module) and pass a clean design.
set -uo pipefail
check=$(cd "$(dirname "$0")/../.." && pwd)/scripts/yosys_check.sh
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/clean.v" <<'V'
module clean (input wire clk_i, input wire en_i, input wire [3:0] d_i, output reg [3:0] q_o);
  reg [3:0] q_d;
  always @* begin
    q_d = q_o;
    if (en_i) q_d = d_i;
  end
  always @(posedge clk_i) q_o <= q_d;
endmodule
V
cat > "$work/latch.v" <<'V'
module latch (input wire en_i, input wire [3:0] d_i, output reg [3:0] q_o);
  always @* if (en_i) q_o = d_i;
endmodule
V
cat > "$work/undriven.v" <<'V'
module undriven (input wire [3:0] d_i, output wire [3:0] q_o);
  wire [3:0] t;
  assign q_o = d_i ^ t;
endmodule
V
cat > "$work/multi.v" <<'V'
module multi (input wire [3:0] a_i, input wire [3:0] b_i, output wire [3:0] q_o);
  assign q_o = a_i;
  assign q_o = b_i;
endmodule
V
cat > "$work/missing.v" <<'V'
module missing (input wire a_i, output wire q_o);
  nosuch u_x (.a(a_i), .q(q_o));
endmodule
V
fail=0
if bash "$check" clean "$work/clean.v" > "$work/out" 2>&1; then echo "ok: clean passes"
else cat "$work/out"; echo "FAIL: clean design rejected"; fail=1; fi
for bad in latch undriven multi missing; do
  if bash "$check" "$bad" "$work/$bad.v" > "$work/out" 2>&1; then
    cat "$work/out"; echo "FAIL: $bad not caught"; fail=1
  else
    echo "ok: $bad caught"
  fi
done
exit $fail
