// A simulation model of the ECP5 MULT18X18D for the tests (tests/gen/ecp5_dsp.sh), written from
// Lattice's sysDSP description (TN1267): P = A * B, each operand signed when its SIGNEDx pin is
// high; the A and B input registers, the pipeline register (between the multiplier and P) and
// the output register, each on when its REG_*_CLK parameter is "CLK0" (clock CLK0, enable CE0,
// synchronous reset RST0, as RESETMODE "SYNC"), off when "NONE". Only the pins and modes that
// normcore's generator uses: the C port, the shift chain (SRO*, RO* are 0) and the other clocks
// are not modelled, and any other parameter value stops the simulation. Yosys 0.23 ships no
// MULT18X18D model (ecp5/cells_bb.v has a black box only); the test uses Yosys's own model
// instead when the installed Yosys has one.
`default_nettype none
// verilator lint_off UNUSEDSIGNAL
module MULT18X18D (
    input  wire A0, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13, A14, A15, A16, A17,
    input  wire B0, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13, B14, B15, B16, B17,
    input  wire C0, C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13, C14, C15, C16, C17,
    input  wire SIGNEDA, SIGNEDB, SOURCEA, SOURCEB, CLK0, CE0, RST0,
    output wire SROA0, SROA1, SROA2, SROA3, SROA4, SROA5, SROA6, SROA7, SROA8, SROA9, SROA10,
    output wire SROA11, SROA12, SROA13, SROA14, SROA15, SROA16, SROA17, SROB0, SROB1, SROB2,
    output wire SROB3, SROB4, SROB5, SROB6, SROB7, SROB8, SROB9, SROB10, SROB11, SROB12, SROB13,
    output wire SROB14, SROB15, SROB16, SROB17, ROA0, ROA1, ROA2, ROA3, ROA4, ROA5, ROA6, ROA7,
    output wire ROA8, ROA9, ROA10, ROA11, ROA12, ROA13, ROA14, ROA15, ROA16, ROA17, ROB0, ROB1,
    output wire ROB2, ROB3, ROB4, ROB5, ROB6, ROB7, ROB8, ROB9, ROB10, ROB11, ROB12, ROB13, ROB14,
    output wire ROB15, ROB16, ROB17, ROC0, ROC1, ROC2, ROC3, ROC4, ROC5, ROC6, ROC7, ROC8, ROC9,
    output wire ROC10, ROC11, ROC12, ROC13, ROC14, ROC15, ROC16, ROC17, P0, P1, P2, P3, P4, P5,
    output wire P6, P7, P8, P9, P10, P11, P12, P13, P14, P15, P16, P17, P18, P19, P20, P21, P22,
    output wire P23, P24, P25, P26, P27, P28, P29, P30, P31, P32, P33, P34, P35, SIGNEDP
);
  parameter REG_INPUTA_CLK = "NONE";
  parameter REG_INPUTB_CLK = "NONE";
  parameter REG_PIPELINE_CLK = "NONE";
  parameter REG_OUTPUT_CLK = "NONE";
  localparam RA = REG_INPUTA_CLK == "CLK0", RB = REG_INPUTB_CLK == "CLK0";
  localparam RP = REG_PIPELINE_CLK == "CLK0", RO = REG_OUTPUT_CLK == "CLK0";
  initial begin
    if (!(RA || REG_INPUTA_CLK == "NONE") || !(RB || REG_INPUTB_CLK == "NONE") ||
        !(RP || REG_PIPELINE_CLK == "NONE") || !(RO || REG_OUTPUT_CLK == "NONE")) begin
      $display("MULT18X18D model: only REG_*_CLK = \"NONE\" or \"CLK0\" are modelled");
      $finish;
    end
  end
  wire [17:0] a = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1,
                   A0};
  wire [17:0] b = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2, B1,
                   B0};
  reg [17:0] a_q, b_q;
  reg sa_q, sb_q;
  reg [35:0] p_pipe_q, p_out_q;
  wire [17:0] a_m = RA ? a_q : a;
  wire [17:0] b_m = RB ? b_q : b;
  wire sa = RA ? sa_q : SIGNEDA;
  wire sb = RB ? sb_q : SIGNEDB;
  wire signed [36:0] ax = {{19{sa & a_m[17]}}, a_m};
  wire signed [36:0] bx = {{19{sb & b_m[17]}}, b_m};
  wire signed [73:0] full = ax * bx;
  wire [35:0] prod = full[35:0];
  wire [35:0] p_m = RP ? p_pipe_q : prod;
  wire [35:0] p = RO ? p_out_q : p_m;
  always @(posedge CLK0) begin
    if (RST0) begin
      a_q <= 18'd0;
      b_q <= 18'd0;
      sa_q <= 1'b0;
      sb_q <= 1'b0;
      p_pipe_q <= 36'd0;
      p_out_q <= 36'd0;
    end else if (CE0) begin
      a_q <= a;
      b_q <= b;
      sa_q <= SIGNEDA;
      sb_q <= SIGNEDB;
      p_pipe_q <= prod;
      p_out_q <= p_m;
    end
  end
  assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21, P20, P19,
          P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4, P3, P2, P1,
          P0} = p;
  assign SIGNEDP = (sa & a_m[17]) ^ (sb & b_m[17]);
  assign {SROA0, SROA1, SROA2, SROA3, SROA4, SROA5, SROA6, SROA7, SROA8, SROA9, SROA10, SROA11,
          SROA12, SROA13, SROA14, SROA15, SROA16, SROA17, SROB0, SROB1, SROB2, SROB3, SROB4,
          SROB5, SROB6, SROB7, SROB8, SROB9, SROB10, SROB11, SROB12, SROB13, SROB14, SROB15,
          SROB16, SROB17, ROA0, ROA1, ROA2, ROA3, ROA4, ROA5, ROA6, ROA7, ROA8, ROA9, ROA10,
          ROA11, ROA12, ROA13, ROA14, ROA15, ROA16, ROA17, ROB0, ROB1, ROB2, ROB3, ROB4, ROB5,
          ROB6, ROB7, ROB8, ROB9, ROB10, ROB11, ROB12, ROB13, ROB14, ROB15, ROB16, ROB17, ROC0,
          ROC1, ROC2, ROC3, ROC4, ROC5, ROC6, ROC7, ROC8, ROC9, ROC10, ROC11, ROC12, ROC13,
          ROC14, ROC15, ROC16, ROC17} = 90'd0;
endmodule
// verilator lint_on UNUSEDSIGNAL
`default_nettype wire
