// Typed Verilog expressions: an immutable tree of value-type `Expr` handles. Every node knows its
// width and signedness; the constructors below compute them the way Verilog does and reject the
// mixes Verilator -Wall reports (WIDTH: operands of different widths where Verilog would extend
// one implicitly; an explicit ex::zext / ex::sext / ex::trunc is required instead). Errors are
// generator bugs, so they throw std::logic_error.
//
// The emitter (ir.cpp) only prints the tree: parentheses from precedence, line breaks at
// operators and commas when a line would exceed the column limit.
//
// Transitional: an Expr converts implicitly from text (an *untyped* raw node, width 0 = unknown)
// so that builders not yet ported keep compiling; untyped nodes can only be used whole (as the
// side of an assignment, a condition, a connection), never as an operand.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

namespace normcore::gen {

enum class Op {
  // nodes
  ref,     // a net, port or localparam: text = name
  mem,     // a memory (unpacked array): only usable through ex::index
  lit,     // text = the literal as printed
  raw,     // text = verbatim Verilog (transitional); width 0 = untyped
  slice,   // kids[0] (a ref) bits [hi:lo]; hi == lo prints one bit
  index,   // kids[0] (a mem) [kids[1]]
  concat,  // {kids...}, kids[0] the high bits
  repl,    // {count{kids[0]}}
  cond,    // kids[0] ? kids[1] : kids[2]
  cast_s,  // $signed(kids[0])
  cast_u,  // $unsigned(kids[0])
  // unary
  bnot,   // ~
  lnot,   // !
  neg,    // -
  rand,   // &  (reduction)
  ror,    // |
  rxor,   // ^
  rnand,  // ~&
  rnor,   // ~|
  rxnor,  // ~^
  // binary
  add,
  sub,
  mul,
  band,
  bor,
  bxor,
  shl,
  shr,
  sra,
  eq,
  ne,
  lt,
  le,
  gt,
  ge,
  land,
  lor,
};

struct ExprNode;

class Expr {
 public:
  Expr() = default;  // empty: not an expression (Expr::valid() is false)
  // Transitional: untyped verbatim text (see the file comment).
  Expr(const char* text);  // NOLINT(google-explicit-constructor)
  Expr(std::string text);  // NOLINT(google-explicit-constructor)
  explicit Expr(std::shared_ptr<const ExprNode> n) : n_(std::move(n)) {}

  [[nodiscard]] bool valid() const { return n_ != nullptr; }
  [[nodiscard]] const ExprNode& node() const;
  [[nodiscard]] Op op() const;
  [[nodiscard]] int width() const;  // 0: untyped (transitional raw text)
  [[nodiscard]] bool is_signed() const;
  [[nodiscard]] bool typed() const { return width() > 0; }
  // The expression on one line, as the emitter prints it without a column limit.
  [[nodiscard]] std::string str() const;

 private:
  std::shared_ptr<const ExprNode> n_;
};

struct ExprNode {
  Op op = Op::raw;
  int width = 0;
  bool is_signed = false;
  std::string text;        // ref / mem name, literal, raw text
  std::vector<Expr> kids;  // operands
  int hi = 0, lo = 0;      // slice range; repl count in hi; mem depth in hi
};

// Constructors (in `ex`, apart from the statement helpers of ir.hpp).
namespace ex {

Expr ref(std::string name, int width, bool is_signed = false);
Expr mem(std::string name, int width, int depth);
// `width`-bit unsigned literal; throws std::logic_error when value does not fit.
Expr lit(int width, std::uint64_t value);
Expr ones(int width);  // {width{1'b1}} (any width)
// Transitional verbatim text of a known width (see the file comment).
Expr raw(std::string text, int width, bool is_signed = false);

Expr bit(const Expr& e, int i);            // e[i]; a 1-bit e is itself (i == 0)
Expr slice(const Expr& e, int lo, int n);  // e[lo + n - 1:lo]; e itself when that is all of it
Expr index(const Expr& memory, const Expr& addr);
Expr cat(std::vector<Expr> parts);    // parts[0] the high bits; one part is itself
Expr repl(int count, const Expr& e);  // {count{e}}; count 1 is e

Expr zext(const Expr& e, int to);   // {(to-w)'d0, e}; to >= w
Expr sext(const Expr& e, int to);   // {{to-w{e[w-1]}}, e}; to >= w
Expr trunc(const Expr& e, int to);  // e[to-1:0]; to <= w
Expr fit(const Expr& e, int to);    // zext or trunc
Expr as_signed(const Expr& e);      // $signed(e)
Expr as_unsigned(const Expr& e);    // $unsigned(e)

Expr bnot(const Expr& e);
Expr lnot(const Expr& e);  // 1-bit operand
Expr neg(const Expr& e);
Expr red_and(const Expr& e);
Expr red_or(const Expr& e);
Expr red_xor(const Expr& e);
Expr red_nand(const Expr& e);
Expr red_nor(const Expr& e);
Expr red_xnor(const Expr& e);

// Any binary Op (add .. lor) with the checks of that operator (one rule table in expr.cpp).
Expr binary(Op op, const Expr& a, const Expr& b);
// A binary operator as a callable: ex::eq(a, b) is ex::binary(Op::eq, a, b).
template <Op O>
struct BinaryOp {
  Expr operator()(const Expr& a, const Expr& b) const { return binary(O, a, b); }
};
inline constexpr BinaryOp<Op::shl> shl{};  // (a, amount): unsigned amount
inline constexpr BinaryOp<Op::shr> shr{};
inline constexpr BinaryOp<Op::sra> sra{};
inline constexpr BinaryOp<Op::eq> eq{};
inline constexpr BinaryOp<Op::ne> ne{};
inline constexpr BinaryOp<Op::lt> lt{};
inline constexpr BinaryOp<Op::le> le{};
inline constexpr BinaryOp<Op::gt> gt{};
inline constexpr BinaryOp<Op::ge> ge{};
inline constexpr BinaryOp<Op::land> land{};             // 1-bit operands
inline constexpr BinaryOp<Op::lor> lor{};               // 1-bit operands
Expr mux(const Expr& c, const Expr& t, const Expr& f);  // c ? t : f
// The signed product `a * b` at `width` bits (Verilog's context width: a and b are extended to
// it implicitly, the one place the IR allows that; assign it to a `width`-bit signed net). Both
// signed, a.width() + b.width() <= width + 1. Written this way (not with explicit sign
// extensions) Yosys 0.23 sees an a.width() x b.width() multiplier that fits SB_MAC16 / DSP48, and
// Verilator -Wall accepts it (docs/architecture.md, "Multiply-add inside the DSP").
Expr smul(const Expr& a, const Expr& b, int width);

// a & b & c ... / a | b | c ... (at least one operand).
Expr all_and(const std::vector<Expr>& es);
Expr all_or(const std::vector<Expr>& es);

}  // namespace ex

// Operators for the bitwise and arithmetic operators (same checks as ex::binary).
Expr operator+(const Expr& a, const Expr& b);
Expr operator-(const Expr& a, const Expr& b);
Expr operator*(const Expr& a, const Expr& b);
Expr operator&(const Expr& a, const Expr& b);
Expr operator|(const Expr& a, const Expr& b);
Expr operator^(const Expr& a, const Expr& b);
Expr operator~(const Expr& a);

}  // namespace normcore::gen
