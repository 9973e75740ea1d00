// Typed expression IR and emitter: golden strings per node kind, the width checks, line breaking.
#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>

#include "normcore/gen/ir.hpp"

namespace normcore::gen {
namespace {

using ex::lit;
using ex::ref;

const Expr a = ref("a", 8);
const Expr b = ref("b", 8);
const Expr c = ref("c", 1);
const Expr s = ref("s", 8, true);

TEST(Expr, RefAndLiteral) {
  EXPECT_EQ(a.str(), "a");
  EXPECT_EQ(a.width(), 8);
  EXPECT_FALSE(a.is_signed());
  EXPECT_TRUE(s.is_signed());
  EXPECT_EQ(lit(8, 5).str(), "8'd5");
  EXPECT_EQ(lit(1, 1).str(), "1'b1");
  EXPECT_EQ(lit(1, 0).str(), "1'b0");
  EXPECT_EQ(lit(64, ~0ULL).str(), "64'd18446744073709551615");
  EXPECT_EQ(ex::ones(4).str(), "{4{1'b1}}");
  EXPECT_EQ(ex::ones(1).str(), "1'b1");
}

TEST(Expr, LiteralMustFit) {
  EXPECT_THROW(lit(3, 8), std::logic_error);
  EXPECT_THROW(lit(1, 2), std::logic_error);
  EXPECT_THROW(lit(0, 0), std::logic_error);
  EXPECT_NO_THROW(lit(3, 7));
}

TEST(Expr, SliceAndIndex) {
  EXPECT_EQ(ex::bit(a, 3).str(), "a[3]");
  EXPECT_EQ(ex::slice(a, 2, 4).str(), "a[5:2]");
  EXPECT_EQ(ex::slice(a, 2, 4).width(), 4);
  EXPECT_EQ(ex::slice(a, 0, 8).str(), "a");  // all of it
  EXPECT_EQ(ex::bit(c, 0).str(), "c");
  EXPECT_THROW(ex::slice(a, 5, 4), std::logic_error);
  EXPECT_THROW(ex::bit(a, 8), std::logic_error);
  EXPECT_THROW(ex::bit(a + b, 0), std::logic_error);  // only names are sliced
  const Expr m = ex::mem("mem_q", 16, 4);
  EXPECT_EQ(ex::index(m, ref("p", 2)).str(), "mem_q[p]");
  EXPECT_EQ(ex::index(m, ref("p", 2)).width(), 16);
  EXPECT_THROW(m + m, std::logic_error);  // a memory needs an index
}

TEST(Expr, ConcatReplicationAndExtension) {
  EXPECT_EQ(ex::cat({a, c, b}).str(), "{a, c, b}");
  EXPECT_EQ(ex::cat({a, c, b}).width(), 17);
  EXPECT_EQ(ex::repl(3, c).str(), "{3{c}}");
  EXPECT_EQ(ex::repl(3, a).width(), 24);
  EXPECT_EQ(ex::zext(a, 10).str(), "{2'd0, a}");
  EXPECT_EQ(ex::zext(a, 8).str(), "a");
  EXPECT_EQ(ex::sext(a, 11).str(), "{{3{a[7]}}, a}");
  EXPECT_EQ(ex::sext(c, 3).str(), "{{2{c}}, c}");
  EXPECT_EQ(ex::trunc(a, 3).str(), "a[2:0]");
  EXPECT_EQ(ex::fit(a, 3).str(), "a[2:0]");
  EXPECT_EQ(ex::fit(a, 9).str(), "{1'b0, a}");
  EXPECT_THROW(ex::zext(a, 7), std::logic_error);
  EXPECT_THROW(ex::sext(a, 7), std::logic_error);
  EXPECT_THROW(ex::trunc(a, 9), std::logic_error);
}

TEST(Expr, Unary) {
  EXPECT_EQ((~a).str(), "~a");
  EXPECT_EQ((~a).width(), 8);
  EXPECT_EQ(ex::lnot(c).str(), "!c");
  EXPECT_EQ(ex::neg(s).str(), "-s");
  EXPECT_TRUE(ex::neg(s).is_signed());
  EXPECT_EQ(ex::red_and(a).str(), "&a");
  EXPECT_EQ(ex::red_or(a).str(), "|a");
  EXPECT_EQ(ex::red_xor(a).str(), "^a");
  EXPECT_EQ(ex::red_nand(a).str(), "~&a");
  EXPECT_EQ(ex::red_nor(a & b).str(), "~|(a & b)");
  EXPECT_EQ(ex::red_xnor(a).width(), 1);
  EXPECT_EQ((~(a + b)).str(), "~(a + b)");
  EXPECT_THROW(ex::lnot(a), std::logic_error);  // ! of a vector: use a compare
}

TEST(Expr, BinaryWidthsAndSigns) {
  EXPECT_EQ((a + b).str(), "a + b");
  EXPECT_EQ((a + b).width(), 8);
  EXPECT_EQ((a - b).str(), "a - b");
  EXPECT_EQ((s * s).str(), "s * s");
  EXPECT_TRUE((s * s).is_signed());
  EXPECT_EQ((a & b).str(), "a & b");
  EXPECT_EQ((a | b).str(), "a | b");
  EXPECT_EQ((a ^ b).str(), "a ^ b");
  EXPECT_EQ(ex::shl(a, ref("n", 3)).str(), "a << n");
  EXPECT_EQ(ex::shr(a, ref("n", 3)).width(), 8);
  EXPECT_EQ(ex::sra(s, ref("n", 3)).str(), "s >>> n");
  EXPECT_TRUE(ex::sra(s, ref("n", 3)).is_signed());
  EXPECT_EQ(ex::eq(a, b).str(), "a == b");
  EXPECT_EQ(ex::ne(a, b).width(), 1);
  EXPECT_EQ(ex::lt(a, b).str(), "a < b");
  EXPECT_EQ(ex::le(a, b).str(), "a <= b");
  EXPECT_EQ(ex::gt(a, b).str(), "a > b");
  EXPECT_EQ(ex::ge(a, b).str(), "a >= b");
  EXPECT_EQ(ex::land(c, c).str(), "c && c");
  EXPECT_EQ(ex::lor(c, c).str(), "c || c");
  EXPECT_EQ(ex::as_signed(a).str(), "$signed(a)");
  EXPECT_TRUE(ex::as_signed(a).is_signed());
  EXPECT_EQ(ex::as_unsigned(s).str(), "$unsigned(s)");
  EXPECT_FALSE(ex::as_unsigned(s).is_signed());
}

TEST(Expr, WidthMismatchesAreRejected) {
  const Expr n = ref("n", 4);
  EXPECT_THROW(a + n, std::logic_error);
  EXPECT_THROW(a & n, std::logic_error);
  EXPECT_THROW(a * n, std::logic_error);
  EXPECT_THROW(ex::eq(a, n), std::logic_error);
  EXPECT_THROW(ex::lt(a, lit(4, 1)), std::logic_error);
  EXPECT_THROW(ex::mux(c, a, n), std::logic_error);
  EXPECT_THROW(ex::mux(a, a, b), std::logic_error);  // condition must be 1 bit
  EXPECT_THROW(ex::land(a, c), std::logic_error);
  EXPECT_THROW(a + s, std::logic_error);  // signed and unsigned mixed
  EXPECT_THROW(ex::lt(a, s), std::logic_error);
  EXPECT_THROW(ex::shl(a, s), std::logic_error);  // signed shift amount
  EXPECT_THROW(Expr("x") + a, std::logic_error);  // untyped text is no operand
  EXPECT_NO_THROW(ex::zext(n, 8) + a);
}

TEST(Expr, Mux) {
  EXPECT_EQ(ex::mux(c, a, b).str(), "c ? a : b");
  EXPECT_EQ(ex::mux(ex::eq(a, b), a, b).str(), "(a == b) ? a : b");
  EXPECT_EQ(ex::mux(c, a, ex::mux(c, b, a)).str(), "c ? a : c ? b : a");
  EXPECT_EQ(ex::mux(c, ex::mux(c, b, a), a).str(), "c ? (c ? b : a) : a");
  EXPECT_EQ((ex::mux(c, a, b) + a).str(), "(c ? a : b) + a");
}

TEST(Expr, Parentheses) {
  const Expr x = ref("x", 1), y = ref("y", 1);
  EXPECT_EQ((a + b - a).str(), "a + b - a");
  EXPECT_EQ((a - (b - a)).str(), "a - (b - a)");
  EXPECT_EQ((a + b * a).str(), "a + b * a");
  EXPECT_EQ(((a + b) * a).str(), "(a + b) * a");
  EXPECT_EQ((x & y & c).str(), "x & y & c");
  EXPECT_EQ((x & (y & c)).str(), "x & y & c");
  EXPECT_EQ((x & ex::eq(a, b)).str(), "x & (a == b)");
  EXPECT_EQ((x | (y & c)).str(), "x | (y & c)");
  EXPECT_EQ(((x | y) & c).str(), "(x | y) & c");
  EXPECT_EQ(ex::lt(a + b, a).str(), "a + b < a");
  EXPECT_EQ(ex::eq(ex::lt(a, b), x).str(), "(a < b) == x");
  EXPECT_EQ(ex::shl(a + b, ref("n", 2)).str(), "(a + b) << n");
  EXPECT_EQ((ex::shl(a, ref("n", 2)) + b).str(), "(a << n) + b");
}

TEST(Expr, UntypedTextIsTransitional) {
  const Expr t = "foo[3]";
  EXPECT_EQ(t.width(), 0);
  EXPECT_FALSE(t.typed());
  EXPECT_EQ(t.str(), "foo[3]");
  const Expr r = ex::raw("foo", 3);
  EXPECT_EQ((r + lit(3, 1)).str(), "foo + 3'd1");
  EXPECT_THROW(ex::raw("x", 0), std::logic_error);
}

// ---------------------------------------------------------------------------------------------
Module small() {
  Module m;
  m.name = "m";
  m.in("clk_i", 1);
  m.in("rst_ni", 1);
  return m;
}
// The module body between ");\n" and "endmodule".
std::string body(const Module& m, const EmitOptions& o = {}) {
  const std::string v = emit_module(m, {}, o);
  const auto from = v.find(");\n") + 3;
  return v.substr(from, v.find("endmodule") - from);
}

TEST(Emit, ContinuousAssignAndComment) {
  Module m = small();
  const Expr x = m.in("x_i", 4);
  const Expr y = m.wire("y", 4, "sum");
  m.assign(y, x + lit(4, 1), "plus one");
  EXPECT_EQ(body(m), "  wire [3:0] y;  // sum\n  assign y = x_i + 4'd1;  // plus one\n");
}

TEST(Emit, AssignWidthsAreChecked) {
  Module m = small();
  const Expr x = m.in("x_i", 4);
  const Expr y = m.wire("y", 5);
  EXPECT_THROW(m.assign(y, x), std::logic_error);
  EXPECT_THROW(assign(y, x), std::logic_error);
  EXPECT_THROW(if_(x, {}), std::logic_error);  // a 4-bit condition
  EXPECT_THROW(case_(x, {CaseArm{{lit(3, 0)}, {}}}), std::logic_error);
  EXPECT_NO_THROW(m.assign(y, ex::zext(x, 5)));
}

TEST(Emit, IfElseChainAndCase) {
  Module m = small();
  const Expr sel = m.in("s_i", 2);
  const Expr y = m.reg("y", 1);
  m.always_comb({if_(ex::eq(sel, lit(2, 0)), {assign(y, lit(1, 1))},
                     {if_(ex::eq(sel, lit(2, 1)), {assign(y, lit(1, 0))}, {assign(y, c)})}),
                 case_(sel, {CaseArm{{lit(2, 0), lit(2, 1)}, {assign(y, lit(1, 0))}},
                             CaseArm{{}, {assign(y, lit(1, 1)), note("two")}}})});
  EXPECT_EQ(body(m),
            "  reg y;\n"
            "  always @* begin\n"
            "    if (s_i == 2'd0) begin\n"
            "      y = 1'b1;\n"
            "    end else if (s_i == 2'd1) begin\n"
            "      y = 1'b0;\n"
            "    end else begin\n"
            "      y = c;\n"
            "    end\n"
            "    case (s_i)\n"
            "      2'd0, 2'd1: y = 1'b0;\n"
            "      default: begin\n"
            "        y = 1'b1;\n"
            "        // two\n"
            "      end\n"
            "    endcase\n"
            "  end\n");
}

TEST(Emit, FlopsAreQGetsD) {
  Module m = small();
  const Expr d = m.wire("cnt_d", 3);
  const Expr q = m.reg("cnt_q", 3);
  const Expr e = m.wire("e_d", 1);
  const Expr eq = m.reg("e_q", 1);
  m.flops({{q, d, lit(3, 0)}, {eq, e, {}}}, "state");
  EXPECT_EQ(body(m),
            "  wire [2:0] cnt_d;\n"
            "  reg [2:0] cnt_q;\n"
            "  wire e_d;\n"
            "  reg e_q;\n"
            "  // state\n"
            "  always @(posedge clk_i) begin\n"
            "    if (!rst_ni) begin\n"
            "      cnt_q <= 3'd0;\n"
            "    end else begin\n"
            "      cnt_q <= cnt_d;\n"
            "    end\n"
            "    e_q <= e_d;\n"
            "  end\n");
}

TEST(Emit, SeqSplitsNextStateLogicFromFlops) {
  Module m = small();
  const Expr go = m.in("go_i", 1);
  const Expr x = m.in("x_i", 4);
  const Expr run = m.reg("run_q", 1);
  const Expr cnt = m.reg("cnt_q", 4);
  const Expr xq = m.reg("x_q", 4);
  const Expr sum = m.reg("sum_q", 4);
  m.seq({if_(ex::lnot(m.ref("rst_ni")), {assign(run, lit(1, 0))},
             {if_(go, {assign(run, lit(1, 1))})}),
         if_(run, {assign(cnt, cnt + lit(4, 1))}), assign(xq, x), assign(sum, x + xq)},
        "counter");
  EXPECT_EQ(body(m).substr(body(m).find("  reg run_d;")),
            "  reg run_d;\n"
            "  reg [3:0] cnt_d;\n"
            "  reg [3:0] sum_d;\n"
            "  // counter: next state\n"
            "  always @* begin\n"
            "    run_d = run_q;\n"
            "    cnt_d = cnt_q;\n"
            "    if (go_i) begin\n"
            "      run_d = 1'b1;\n"
            "    end\n"
            "    if (run_q) begin\n"
            "      cnt_d = cnt_q + 4'd1;\n"
            "    end\n"
            "    sum_d = x_i + x_q;\n"
            "  end\n"
            "  // counter\n"
            "  always @(posedge clk_i) begin\n"
            "    if (!rst_ni) begin\n"
            "      run_q <= 1'b0;\n"
            "    end else begin\n"
            "      run_q <= run_d;\n"
            "    end\n"
            "    cnt_q <= cnt_d;\n"
            "    x_q <= x_i;\n"
            "    sum_q <= sum_d;\n"
            "  end\n");
}

TEST(Emit, SeqRejectsMixedResets) {
  Module m = small();
  const Expr ra = m.reg("a_q", 1), rb = m.reg("b_q", 1);
  // b_q is updated under the reset's else branch but has no reset value.
  EXPECT_THROW(m.seq({if_(ex::lnot(m.ref("rst_ni")), {assign(ra, lit(1, 0))},
                          {assign(ra, rb), assign(rb, ra)})}),
               std::logic_error);
  // a_q has a reset and is also assigned after it.
  EXPECT_THROW(m.seq({if_(ex::lnot(m.ref("rst_ni")), {assign(ra, lit(1, 0))}, {assign(ra, rb)}),
                      assign(ra, rb)}),
               std::logic_error);
  EXPECT_THROW(m.seq({assign("raw_q", rb)}), std::logic_error);  // untyped target
}

TEST(Emit, LocalparamsAndStates) {
  Module m = small();
  const Expr k = m.localparam("K", 4, 9, "a constant");
  EXPECT_EQ(k.width(), 4);
  const auto st = m.states({"S_IDLE", "S_RUN", "S_DONE"}, "states");
  ASSERT_EQ(st.size(), 3U);
  EXPECT_EQ(st[2].str(), "S_DONE");
  EXPECT_EQ(st[2].width(), 2);
  const Expr q = m.reg("st_q", 2);
  m.always_comb({case_(q, {CaseArm{{st[0]}, {note("idle")}}})});
  EXPECT_EQ(body(m),
            "  // a constant\n"
            "  localparam [3:0] K = 4'd9;\n"
            "  // states\n"
            "  localparam [1:0] S_IDLE = 2'd0,\n"
            "                   S_RUN = 2'd1,\n"
            "                   S_DONE = 2'd2;\n"
            "  reg [1:0] st_q;\n"
            "  always @* begin\n"
            "    case (st_q)\n"
            "      S_IDLE: begin\n"
            "        // idle\n"
            "      end\n"
            "    endcase\n"
            "  end\n");
  EXPECT_EQ(m.ref("S_RUN").width(), 2);
  EXPECT_EQ(m.ref("st_q").str(), "st_q");
  EXPECT_THROW((void)m.ref("nope"), std::logic_error);
  EXPECT_THROW(m.localparam("BIG", 2, 4), std::logic_error);
  EXPECT_NO_THROW(m.validate());
}

TEST(Emit, DuplicateLocalparamIsRejected) {
  Module m = small();
  m.localparam("K", 2, 1);
  m.wire("K", 1);
  EXPECT_THROW(m.validate(), std::logic_error);
}

TEST(Emit, InstanceConnections) {
  Module m = small();
  const Expr x = m.in("x_i", 8);
  m.instance(Instance{"sub", "u_sub", {{"clk_i", m.ref("clk_i")}, {"a_i", ex::slice(x, 4, 4)}}});
  EXPECT_EQ(body(m),
            "  sub u_sub (\n"
            "    .clk_i(clk_i),\n"
            "    .a_i(x_i[7:4])\n"
            "  );\n");
}

TEST(Emit, LongLinesBreakAtOperatorsAndCommas) {
  Module m = small();
  std::vector<Expr> parts;
  for (int i = 0; i < 12; ++i)
    parts.push_back(m.in(std::string("in_") + std::to_string(i) + "_i", 8));
  const Expr y = m.wire("y", 96);
  m.assign(y, ex::cat(parts));
  const Expr z = m.wire("z", 8);
  Expr sum = parts[0];
  for (int i = 1; i < 12; ++i) sum = sum + parts[static_cast<std::size_t>(i)];
  m.assign(z, sum);
  const std::string v = body(m);
  EXPECT_EQ(v.substr(v.find("  assign y")),
            "  assign y = {in_0_i, in_1_i, in_2_i, in_3_i, in_4_i, in_5_i, in_6_i, in_7_i, in_8_i,"
            " in_9_i,\n"
            "      in_10_i, in_11_i};\n"
            "  wire [7:0] z;\n"
            "  assign z = in_0_i + in_1_i + in_2_i + in_3_i + in_4_i + in_5_i + in_6_i + in_7_i +"
            " in_8_i +\n"
            "      in_9_i + in_10_i + in_11_i;\n");
  // Every line within the limit, also for a narrow one.
  EmitOptions narrow;
  narrow.line_limit = 40;
  std::istringstream lines(body(m, narrow));
  for (std::string l; std::getline(lines, l);) {
    if (l.find("assign") != std::string::npos || l.rfind("      ", 0) == 0) {
      EXPECT_LE(l.size(), 40U) << l;
    }
  }
}

TEST(Emit, LongCommentMovesAboveTheAssignment) {
  Module m = small();
  const Expr x = m.in("x_i", 1);
  const Expr y = m.wire("y", 1);
  m.assign(y, x, std::string(90, 'c'));
  EXPECT_EQ(body(m).substr(body(m).find("  //")),
            std::string("  // ") + std::string(90, 'c') + "\n  assign y = x_i;\n");
}

TEST(Emit, FormalBlockOfChecks) {
  Module m = small();
  const Expr v = m.in("v_i", 1);
  m.formal_begin();
  const Expr p = m.reg("f_past_q", 1);
  std::get<Net>(m.items.back()).init = "1'b0";
  m.always_ff({if_(p, {assume(v), assert_(~v | p), cover(v)})});
  m.formal_end();
  EXPECT_EQ(body(m),
            "`ifdef FORMAL\n"
            "  reg f_past_q = 1'b0;\n"
            "  always @(posedge clk_i) begin\n"
            "    if (f_past_q) begin\n"
            "      assume (v_i);\n"
            "      assert (~v_i | f_past_q);\n"
            "      cover (v_i);\n"
            "    end\n"
            "  end\n"
            "`endif\n");
}

TEST(Emit, ChecksOnlyInsideFormal) {
  Module m = small();
  const Expr v = m.in("v_i", 1);
  m.always_ff({assert_(v)});
  EXPECT_THROW(m.validate(), std::logic_error);
  Module n = small();
  n.ifdef("SYNTHESIS");
  n.always_ff({assert_(n.in("w_i", 1))});
  n.endif();
  EXPECT_THROW(n.validate(), std::logic_error);
  Module k = small();
  k.reg("r_q", 1);
  std::get<Net>(k.items.back()).init = "1'b0";
  EXPECT_THROW(k.validate(), std::logic_error);
  EXPECT_THROW(assert_(ref("w", 2)), std::logic_error);
}

TEST(Emit, IsDeterministic) {
  auto build = [] {
    Module m = small();
    const Expr x = m.in("x_i", 8);
    const Expr y = m.out("y_o", 8);
    m.assign(y, ex::mux(ex::bit(x, 0), x + lit(8, 3), ~x));
    return emit_module(m, {"h"});
  };
  EXPECT_EQ(build(), build());
}

}  // namespace
}  // namespace normcore::gen
