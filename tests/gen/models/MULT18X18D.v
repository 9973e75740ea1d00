// Behavioural model of the ECP5 MULT18X18D for the tests of the hard-mac-ecp5 reference
// (Yosys ships only a blackbox for it: ecp5/cells_bb.v). Written for this project from the
// primitive's documented function; it models only what the reference uses: P = A * B (18 x 18,
// SIGNEDA / SIGNEDB), the input A / B, pipeline and output registers on CLK0 when their
// REG_*_CLK parameter is "CLK0" (combinational when "NONE"), CE0 as their enable. It has only
// the pins the reference connects (no CLK1..3, CE1..3, RST1..3, SRIA / SRIB: left unconnected
// there, as Yosys's own mapping does); C, RST0, SOURCEA / SOURCEB are ignored; ROA / ROB / ROC /
// SROA / SROB drive 0.
// Not a model of the silicon beyond that subset: do not use it for anything else.
`default_nettype none
/* verilator lint_off DECLFILENAME */
/* verilator lint_off UNUSEDSIGNAL */
module MULT18X18D (
  input wire A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17,
  input wire B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13, B14, B15, B16, B17,
  input wire C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13, C14, C15, C16, C17,
  input wire SIGNEDA, SIGNEDB, SOURCEA, SOURCEB,
  input wire CLK0, CE0, RST0,
  output wire SROA0, SROA1, SROA2, SROA3, SROA4, SROA5, SROA6, SROA7, SROA8, SROA9, SROA10,
  output wire SROA11, SROA12, SROA13, SROA14, SROA15, SROA16, SROA17,
  output wire SROB0, SROB1, SROB2, SROB3, SROB4, SROB5, SROB6, SROB7, SROB8, SROB9, SROB10,
  output wire SROB11, SROB12, SROB13, SROB14, SROB15, SROB16, SROB17,
  output wire ROA0, ROA1, ROA2, ROA3, ROA4, ROA5, ROA6, ROA7, ROA8, ROA9, ROA10,
  output wire ROA11, ROA12, ROA13, ROA14, ROA15, ROA16, ROA17,
  output wire ROB0, ROB1, ROB2, ROB3, ROB4, ROB5, ROB6, ROB7, ROB8, ROB9, ROB10,
  output wire ROB11, ROB12, ROB13, ROB14, ROB15, ROB16, ROB17,
  output wire ROC0, ROC1, ROC2, ROC3, ROC4, ROC5, ROC6, ROC7, ROC8, ROC9, ROC10,
  output wire ROC11, ROC12, ROC13, ROC14, ROC15, ROC16, ROC17,
  output wire P0, P1, P2, P3, P4, P5, P6, P7, P8, P9, P10, P11, P12, P13, P14, P15, P16, P17,
  output wire P18, P19, P20, P21, P22, P23, P24, P25, P26, P27, P28, P29, P30, P31, P32, P33,
  output wire P34, P35,
  output wire SIGNEDP
);
  parameter REG_INPUTA_CLK = "NONE";
  parameter REG_INPUTB_CLK = "NONE";
  parameter REG_PIPELINE_CLK = "NONE";
  parameter REG_OUTPUT_CLK = "NONE";
  wire [17:0] a = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1, A0};
  wire [17:0] b = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1, B0};
  reg [17:0] a_q = 18'd0, b_q = 18'd0;
  reg sa_q = 1'b0, sb_q = 1'b0;
  always @(posedge CLK0) if (CE0) begin a_q <= a; b_q <= b; sa_q <= SIGNEDA; sb_q <= SIGNEDB; end
  wire [17:0] ai = REG_INPUTA_CLK == "CLK0" ? a_q : a;
  wire [17:0] bi = REG_INPUTB_CLK == "CLK0" ? b_q : b;
  wire sai = REG_INPUTA_CLK == "CLK0" ? sa_q : SIGNEDA;
  wire sbi = REG_INPUTB_CLK == "CLK0" ? sb_q : SIGNEDB;
  wire [35:0] ae = {{18{sai & ai[17]}}, ai};
  wire [35:0] be = {{18{sbi & bi[17]}}, bi};
  wire [35:0] prod = ae * be;
  reg [35:0] m_q = 36'd0, p_q = 36'd0;
  always @(posedge CLK0) if (CE0) m_q <= prod;
  wire [35:0] mi = REG_PIPELINE_CLK == "CLK0" ? m_q : prod;
  always @(posedge CLK0) if (CE0) p_q <= mi;
  wire [35:0] po = REG_OUTPUT_CLK == "CLK0" ? p_q : mi;
  assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19,
          P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1, P0} = po;
  assign SIGNEDP = (sai & ai[17]) ^ (sbi & bi[17]);
  assign {SROA0, SROA1, SROA2, SROA3, SROA4, SROA5, SROA6, SROA7, SROA8, SROA9, SROA10, SROA11,
          SROA12, SROA13, SROA14, SROA15, SROA16, SROA17} = 18'd0;
  assign {SROB0, SROB1, SROB2, SROB3, SROB4, SROB5, SROB6, SROB7, SROB8, SROB9, SROB10, SROB11,
          SROB12, SROB13, SROB14, SROB15, SROB16, SROB17} = 18'd0;
  assign {ROA0, ROA1, ROA2, ROA3, ROA4, ROA5, ROA6, ROA7, ROA8, ROA9, ROA10, ROA11, ROA12,
          ROA13, ROA14, ROA15, ROA16, ROA17} = 18'd0;
  assign {ROB0, ROB1, ROB2, ROB3, ROB4, ROB5, ROB6, ROB7, ROB8, ROB9, ROB10, ROB11, ROB12,
          ROB13, ROB14, ROB15, ROB16, ROB17} = 18'd0;
  assign {ROC0, ROC1, ROC2, ROC3, ROC4, ROC5, ROC6, ROC7, ROC8, ROC9, ROC10, ROC11, ROC12,
          ROC13, ROC14, ROC15, ROC16, ROC17} = 18'd0;
endmodule
/* verilator lint_on UNUSEDSIGNAL */
/* verilator lint_on DECLFILENAME */
`default_nettype wire
