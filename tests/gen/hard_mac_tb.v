// Testbench of the hard-mac references (tests/gen/ref_lint.sh): random a, b, c every cycle into
// `DUT (the generated <name>_hard_mac, simulated with the vendor primitive models), checks
// p(t) = a(t - LAT) * b(t - LAT) + c(t - CLAT) per lane, signed, modulo 2^PW, for N cycles.
// Defines: DUT (module name), HAS_C (the design has c_i). Parameters: see below.
`timescale 1ns / 1ps
module hard_mac_tb;
  parameter integer L = 4, AW = 16, BW = 16, CW = 32, PW = 32, LAT = 4, CLAT = 2, N = 400;
  localparam integer CWX = CW > 0 ? CW : 1;
  reg clk = 1'b0;
  reg [L*AW-1:0] a = 0;
  reg [L*BW-1:0] b = 0;
  reg [L*CWX-1:0] c = 0;
  wire [L*PW-1:0] p;
  reg [L*AW-1:0] ah [0:N];
  reg [L*BW-1:0] bh [0:N];
  reg [L*CWX-1:0] ch [0:N];
`ifdef HAS_C
  `DUT dut (.clk_i(clk), .a_i(a), .b_i(b), .c_i(c), .p_o(p));
`else
  `DUT dut (.clk_i(clk), .a_i(a), .b_i(b), .p_o(p));
`endif
  integer t, i, k, errors = 0, checked = 0;
  reg signed [AW-1:0] ai;
  reg signed [BW-1:0] bi;
  reg signed [CWX-1:0] ci;
  reg [PW-1:0] want, got;
  always #5 clk = ~clk;
  initial begin
    for (t = 0; t < N; t = t + 1) begin
      for (k = 0; k < L * AW; k = k + 1) a[k] = $random;
      for (k = 0; k < L * BW; k = k + 1) b[k] = $random;
      for (k = 0; k < L * CWX; k = k + 1) c[k] = $random;
      ah[t] = a; bh[t] = b; ch[t] = c;
      @(posedge clk);
      #1;
      // p now shows the result of the inputs LAT edges back (inputs of cycle t - LAT + 1).
      if (t + 1 >= LAT) begin
        for (i = 0; i < L; i = i + 1) begin
          ai = ah[t + 1 - LAT][i*AW +: AW];
          bi = bh[t + 1 - LAT][i*BW +: BW];
          ci = CW > 0 ? ch[t + 1 - CLAT][i*CWX +: CWX] : 0;
          want = $signed(ai) * $signed(bi) + (CW > 0 ? $signed(ci) : 0);
          got = p[i*PW +: PW];
          checked = checked + 1;
          if (got !== want) begin
            errors = errors + 1;
            if (errors < 5) $display("MISMATCH t=%0d lane %0d: got %h want %h", t, i, got, want);
          end
        end
      end
    end
    if (errors == 0 && checked > 0) $display("HARD_MAC PASS (%0d lane results)", checked);
    else $display("HARD_MAC FAIL (%0d of %0d wrong)", errors, checked);
    $finish;
  end
endmodule
