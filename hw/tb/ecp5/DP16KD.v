// A simulation model of the ECP5 DP16KD block RAM for the tests (tests/gen/ecp5_dsp.sh), written
// from Lattice's sysMEM description (TN1264) for the one mode normcore's generator uses: the
// pseudo dual-port 512 x 36 mode (DATA_WIDTH_A = DATA_WIDTH_B = 36; port A writes, port B
// reads; the word on {DIB, DIA} / {DOB, DOA}; address bits AD*13..AD*5, ADA3..ADA0 the byte
// enables of the write). A write happens on CLKA when CEA and WEA are high. The read register
// loads mem[ADB] on CLKB when CEB is high; with REGMODE "OUTREG" the output register after it
// loads on CLKB when OCEB is high (a word two cycles after its address), with "NOREG" the read
// register drives DO (one cycle). Chip selects, resets, write-through modes and the other
// widths are not modelled: any other parameter value stops the simulation. Yosys 0.23 ships no
// DP16KD model (ecp5/cells_sim.v has a black box only).
`default_nettype none
// verilator lint_off UNUSEDSIGNAL
module DP16KD (
    input  wire DIA0, DIA1, DIA2, DIA3, DIA4, DIA5, DIA6, DIA7, DIA8, DIA9, DIA10, DIA11, DIA12,
    input  wire DIA13, DIA14, DIA15, DIA16, DIA17,
    input  wire ADA0, ADA1, ADA2, ADA3, ADA4, ADA5, ADA6, ADA7, ADA8, ADA9, ADA10, ADA11, ADA12,
    input  wire ADA13,
    input  wire CEA, OCEA, CLKA, WEA, RSTA, CSA0, CSA1, CSA2,
    output wire DOA0, DOA1, DOA2, DOA3, DOA4, DOA5, DOA6, DOA7, DOA8, DOA9, DOA10, DOA11, DOA12,
    output wire DOA13, DOA14, DOA15, DOA16, DOA17,
    input  wire DIB0, DIB1, DIB2, DIB3, DIB4, DIB5, DIB6, DIB7, DIB8, DIB9, DIB10, DIB11, DIB12,
    input  wire DIB13, DIB14, DIB15, DIB16, DIB17,
    input  wire ADB0, ADB1, ADB2, ADB3, ADB4, ADB5, ADB6, ADB7, ADB8, ADB9, ADB10, ADB11, ADB12,
    input  wire ADB13,
    input  wire CEB, OCEB, CLKB, WEB, RSTB, CSB0, CSB1, CSB2,
    output wire DOB0, DOB1, DOB2, DOB3, DOB4, DOB5, DOB6, DOB7, DOB8, DOB9, DOB10, DOB11, DOB12,
    output wire DOB13, DOB14, DOB15, DOB16, DOB17
);
  parameter DATA_WIDTH_A = 18;
  parameter DATA_WIDTH_B = 18;
  parameter REGMODE_A = "NOREG";
  parameter REGMODE_B = "NOREG";
  parameter RESETMODE = "SYNC";
  parameter ASYNC_RESET_RELEASE = "SYNC";
  parameter CSDECODE_A = "0b000";
  parameter CSDECODE_B = "0b000";
  parameter WRITEMODE_A = "NORMAL";
  parameter WRITEMODE_B = "NORMAL";
  parameter GSR = "ENABLED";
  localparam OUTREG = REGMODE_B == "OUTREG";
  initial begin
    if (DATA_WIDTH_A != 36 || DATA_WIDTH_B != 36 || REGMODE_A != REGMODE_B ||
        !(OUTREG || REGMODE_B == "NOREG")) begin
      $display("DP16KD model: only the 512 x 36 mode, REGMODE_A = REGMODE_B, is modelled");
      $finish;
    end
  end
  wire [35:0] di = {DIB17, DIB16, DIB15, DIB14, DIB13, DIB12, DIB11, DIB10, DIB9, DIB8, DIB7,
                    DIB6, DIB5, DIB4, DIB3, DIB2, DIB1, DIB0, DIA17, DIA16, DIA15, DIA14,
                    DIA13, DIA12, DIA11, DIA10, DIA9, DIA8, DIA7, DIA6, DIA5, DIA4, DIA3, DIA2,
                    DIA1, DIA0};
  wire [8:0] wa = {ADA13, ADA12, ADA11, ADA10, ADA9, ADA8, ADA7, ADA6, ADA5};
  wire [8:0] ra = {ADB13, ADB12, ADB11, ADB10, ADB9, ADB8, ADB7, ADB6, ADB5};
  wire [3:0] be = {ADA3, ADA2, ADA1, ADA0};
  reg [35:0] mem [0:511];
  reg [35:0] rd_q, out_q;
  integer k;
  always @(posedge CLKA) begin
    if (CEA && WEA) begin
      for (k = 0; k < 4; k = k + 1) begin
        if (be[k]) mem[wa][k*9 +: 9] <= di[k*9 +: 9];
      end
    end
  end
  always @(posedge CLKB) begin
    if (CEB) rd_q <= mem[ra];
    if (OCEB) out_q <= rd_q;
  end
  wire [35:0] dout = OUTREG ? out_q : rd_q;
  assign {DOB17, DOB16, DOB15, DOB14, DOB13, DOB12, DOB11, DOB10, DOB9, DOB8, DOB7, DOB6, DOB5,
          DOB4, DOB3, DOB2, DOB1, DOB0, DOA17, DOA16, DOA15, DOA14, DOA13, DOA12, DOA11, DOA10,
          DOA9, DOA8, DOA7, DOA6, DOA5, DOA4, DOA3, DOA2, DOA1, DOA0} = dout;
endmodule
