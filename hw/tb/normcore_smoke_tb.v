// Smoke test bench for a generated normcore streaming core, for Icarus Verilog (or any
// Verilog-2005 simulator). Reads vectors written by `smoke_vectors` (golden model) from the
// current directory, runs one job with stalls on both stream sides and compares every beat.
// Define DUT to the core's module name; set the parameters to the core's configuration.
// Prints "SMOKE PASS <beats>" or "SMOKE FAIL ..." and finishes.
`timescale 1ns / 1ps
`default_nettype none
`ifndef DUT
`define DUT normcore_core
`endif

module normcore_smoke_tb;
  parameter integer LANES = 8;
  parameter integer XW = 8;
  parameter integer YW = 8;
  parameter integer SW = 16;
  parameter integer BW = 32;
  parameter integer CW = 11;
  parameter integer HWW = 24;
  parameter integer RW = 6;
  parameter integer MAXB = 4096;  // beats
  parameter integer MAXC = 4096;  // channels

  reg clk = 1'b0;
  reg rst_n = 1'b0;
  always #5 clk = ~clk;

  reg [63:0] cfg [0:15];
  reg [SW+BW-1:0] prm [0:MAXC-1];
  reg [LANES*XW+LANES:0] inb [0:MAXB-1];
  reg [LANES*YW+LANES:0] outb [0:MAXB-1];

  reg [CW-1:0] cfg_channels;
  reg [HWW-1:0] cfg_inner;
  reg cfg_layout;
  reg [RW-1:0] cfg_shift;
  reg [1:0] cfg_round;
  reg [YW-1:0] cfg_lo, cfg_hi;
  reg start;
  wire ready, configured, cfg_error;
  reg prm_valid;
  wire prm_ready;
  reg [SW-1:0] prm_scale;
  reg [BW-1:0] prm_offset;
  reg s_valid;
  wire s_ready;
  reg [LANES*XW-1:0] s_data;
  reg [LANES-1:0] s_keep;
  reg s_last;
  wire m_valid;
  reg m_ready;
  wire [LANES*YW-1:0] m_data;
  wire [LANES-1:0] m_keep;
  wire m_last;

  `DUT dut (
    .clk_i(clk), .rst_ni(rst_n),
    .cfg_channels_i(cfg_channels), .cfg_inner_i(cfg_inner), .cfg_layout_i(cfg_layout),
    .cfg_shift_i(cfg_shift), .cfg_round_i(cfg_round), .cfg_lo_i(cfg_lo), .cfg_hi_i(cfg_hi),
    .start_i(start), .ready_o(ready), .configured_o(configured), .cfg_error_o(cfg_error),
    .prm_valid_i(prm_valid), .prm_ready_o(prm_ready),
    .prm_scale_i(prm_scale), .prm_offset_i(prm_offset),
    .s_axis_tvalid(s_valid), .s_axis_tready(s_ready), .s_axis_tdata(s_data),
    .s_axis_tkeep(s_keep), .s_axis_tlast(s_last),
    .m_axis_tvalid(m_valid), .m_axis_tready(m_ready), .m_axis_tdata(m_data),
    .m_axis_tkeep(m_keep), .m_axis_tlast(m_last)
  );

  integer nchan, nbeats, i, sent, got, errors, cycle;

  // Output side: tready low one cycle in four; compare every accepted beat.
  always @(posedge clk) begin
    cycle <= cycle + 1;
    if (rst_n && m_valid && m_ready) begin
      if ({m_last, m_keep, m_data} !== outb[got]) begin
        errors = errors + 1;
        if (errors < 5) $display("SMOKE FAIL beat %0d: got %h want %h", got,
                                 {m_last, m_keep, m_data}, outb[got]);
      end
      got = got + 1;
    end
  end
  always @(negedge clk) m_ready <= (cycle % 4) != 3;

  initial begin
    cycle = 0;
    errors = 0;
    got = 0;
    sent = 0;
    start = 1'b0;
    prm_valid = 1'b0;
    s_valid = 1'b0;
    s_data = 0;
    s_keep = 0;
    s_last = 1'b0;
    m_ready = 1'b0;
    $readmemh("cfg.hex", cfg);
    $readmemh("prm.hex", prm);
    $readmemh("in.hex", inb);
    $readmemh("out.hex", outb);
    cfg_channels = cfg[0][CW-1:0];
    cfg_inner = cfg[1][HWW-1:0];
    cfg_layout = cfg[2][0];
    cfg_shift = cfg[3][RW-1:0];
    cfg_round = cfg[4][1:0];
    cfg_lo = cfg[5][YW-1:0];
    cfg_hi = cfg[6][YW-1:0];
    nchan = cfg[0];
    nbeats = cfg[7];
    repeat (3) @(posedge clk);
    #1 rst_n = 1'b1;
    while (!ready) @(posedge clk);
    #1 start = 1'b1;
    @(posedge clk);
    #1 start = 1'b0;
    while (!configured) begin
      if (cfg_error) begin
        $display("SMOKE FAIL: cfg_error_o");
        $finish;
      end
      @(posedge clk);
      #1;
    end
    for (i = 0; i < nchan; i = i + 1) begin
      prm_valid = 1'b1;
      {prm_offset, prm_scale} = prm[i];
      #0;
      while (!prm_ready) begin
        @(posedge clk);
        #1;
      end
      @(posedge clk);
      #1 prm_valid = 1'b0;
    end
    // Input side (s_axis_tready rises once the table is complete): a beat presented two cycles out of three.
    while (sent < nbeats) begin
      if ((cycle % 3) == 2 && !s_valid) begin
        @(posedge clk);
        #1;
      end else begin
        s_valid = 1'b1;
        {s_last, s_keep, s_data} = inb[sent];
        @(posedge clk);
        if (s_ready) sent = sent + 1;
        #1 s_valid = 1'b0;
      end
    end
    i = 0;
    while (got < nbeats && i < 1000) begin
      @(posedge clk);
      i = i + 1;
    end
    if (got != nbeats) $display("SMOKE FAIL: %0d of %0d beats came out", got, nbeats);
    else if (errors != 0) $display("SMOKE FAIL: %0d beats differ", errors);
    else $display("SMOKE PASS %0d beats", nbeats);
    $finish;
  end

  initial begin
    #(10 * 200000);
    $display("SMOKE FAIL: time-out");
    $finish;
  end
endmodule

`default_nettype wire
