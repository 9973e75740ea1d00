#include "normcore/gen/expr.hpp"

#include <stdexcept>

#include "layout.hpp"

namespace normcore::gen {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::logic_error("expr: " + what);
}

Expr make(Op op, int width, bool is_signed, std::string text, std::vector<Expr> kids, int hi = 0,
          int lo = 0) {
  auto n = std::make_shared<ExprNode>();
  n->op = op;
  n->width = width;
  n->is_signed = is_signed;
  n->text = std::move(text);
  n->kids = std::move(kids);
  n->hi = hi;
  n->lo = lo;
  return Expr(std::shared_ptr<const ExprNode>(std::move(n)));
}

// An operand: a typed expression (not a memory, not untyped raw text).
const Expr& operand(const Expr& e, const char* where) {
  if (!e.valid()) fail(std::string(where) + ": empty operand");
  if (e.op() == Op::mem) fail(std::string(where) + ": memory " + e.str() + " used without index");
  if (!e.typed()) fail(std::string(where) + ": untyped text '" + e.str() + "' as an operand");
  return e;
}

std::string desc(const Expr& e) {
  std::string s = "'";  // appends: GCC 12 warns falsely on "literal" + temporary (bug 105329)
  s += e.str();
  s += "' (";
  s += std::to_string(e.width());
  s += e.is_signed() ? " signed)" : ")";
  return s;
}

void same_width(const Expr& a, const Expr& b, const char* op) {
  if (a.width() != b.width()) {
    fail(std::string("WIDTH: operands of ") + op + " differ: " + desc(a) + " vs " + desc(b));
  }
}
void same_sign(const Expr& a, const Expr& b, const char* op) {
  if (a.is_signed() != b.is_signed()) {
    fail(std::string("signed and unsigned operands of ") + op + ": " + desc(a) + " vs " + desc(b));
  }
}
void one_bit(const Expr& a, const char* op) {
  if (a.width() != 1) fail(std::string("operand of ") + op + " must be 1 bit: " + desc(a));
}

// How an operator types its result: the operands it accepts and the result's width and sign.
enum class Typing {
  unary,    // the operand's type (reductions: 1 bit, unsigned)
  shift,    // unsigned amount; the left operand's type
  compare,  // operands of one width and sign; 1 bit
  logic,    // 1-bit operands; 1 bit
  arith,    // operands of one width and sign (no implicit extension); their type
};
struct OpRule {
  Op op;
  const char* text;
  Typing typing;
};
constexpr OpRule kRules[] = {
    {Op::bnot, "~", Typing::unary},   {Op::lnot, "!", Typing::unary},
    {Op::neg, "-", Typing::unary},    {Op::rand, "&", Typing::unary},
    {Op::ror, "|", Typing::unary},    {Op::rxor, "^", Typing::unary},
    {Op::rnand, "~&", Typing::unary}, {Op::rnor, "~|", Typing::unary},
    {Op::rxnor, "~^", Typing::unary}, {Op::add, "+", Typing::arith},
    {Op::sub, "-", Typing::arith},    {Op::mul, "*", Typing::arith},
    {Op::band, "&", Typing::arith},   {Op::bor, "|", Typing::arith},
    {Op::bxor, "^", Typing::arith},   {Op::shl, "<<", Typing::shift},
    {Op::shr, ">>", Typing::shift},   {Op::sra, ">>>", Typing::shift},
    {Op::eq, "==", Typing::compare},  {Op::ne, "!=", Typing::compare},
    {Op::lt, "<", Typing::compare},   {Op::le, "<=", Typing::compare},
    {Op::gt, ">", Typing::compare},   {Op::ge, ">=", Typing::compare},
    {Op::land, "&&", Typing::logic},  {Op::lor, "||", Typing::logic},
};
const OpRule* rule_of(Op op) {
  for (const auto& r : kRules) {
    if (r.op == op) return &r;
  }
  return nullptr;
}

using detail::op_text;

Expr unary(Op op, const Expr& e) {
  operand(e, op_text(op));
  if (op == Op::lnot) one_bit(e, "!");
  const bool reduce = op >= Op::rand;
  return make(op, reduce ? 1 : e.width(), reduce ? false : e.is_signed(), {}, {e});
}

}  // namespace

namespace detail {

const char* op_text(Op op) {
  const OpRule* r = rule_of(op);
  return r != nullptr ? r->text : "?";
}

bool is_binary(Op op) {
  return op >= Op::add;
}
bool is_unary(Op op) {
  return op >= Op::bnot && op <= Op::rxnor;
}

}  // namespace detail

Expr::Expr(const char* text) : Expr(std::string(text)) {}
Expr::Expr(std::string text) : n_(make(Op::raw, 0, false, std::move(text), {}).n_) {}

const ExprNode& Expr::node() const {
  if (!n_) fail("empty expression");
  return *n_;
}
Op Expr::op() const {
  return node().op;
}
int Expr::width() const {
  return node().width;
}
bool Expr::is_signed() const {
  return node().is_signed;
}
std::string Expr::str() const {
  return detail::layout(detail::to_doc(*this), 0, 0, 1 << 30);
}

namespace ex {

Expr ref(std::string name, int width, bool is_signed) {
  if (width < 1) fail("ref " + name + ": width < 1");
  return make(Op::ref, width, is_signed, std::move(name), {});
}
Expr mem(std::string name, int width, int depth) {
  if (width < 1 || depth < 1) fail("mem " + name + ": width or depth < 1");
  return make(Op::mem, width, false, std::move(name), {}, depth);
}
Expr lit(int width, std::uint64_t value) {
  if (width < 1) fail("literal of width < 1");
  if (width < 64 && (value >> width) != 0) {
    fail("literal " + std::to_string(value) + " does not fit " + std::to_string(width) + " bits");
  }
  const std::string t = width == 1 ? std::string("1'b") + (value != 0 ? "1" : "0")
                                   : std::to_string(width) + "'d" + std::to_string(value);
  return make(Op::lit, width, false, t, {});
}
Expr ones(int width) {
  return width == 1 ? lit(1, 1) : make(Op::repl, width, false, {}, {lit(1, 1)}, width);
}
Expr raw(std::string text, int width, bool is_signed) {
  if (width < 1) fail("raw '" + text + "': width < 1");
  return make(Op::raw, width, is_signed, std::move(text), {});
}

Expr bit(const Expr& e, int i) {
  return slice(e, i, 1);
}
Expr slice(const Expr& e, int lo, int n) {
  operand(e, "slice");
  if (lo < 0 || n < 1 || lo + n > e.width()) {
    fail("slice [" + std::to_string(lo + n - 1) + ":" + std::to_string(lo) + "] of " + desc(e));
  }
  if (lo == 0 && n == e.width()) return e;
  if (e.op() != Op::ref && e.op() != Op::raw) fail("slice of a non-name " + desc(e));
  return make(Op::slice, n, false, {}, {e}, lo + n - 1, lo);
}
Expr index(const Expr& memory, const Expr& addr) {
  if (!memory.valid() || memory.op() != Op::mem) fail("index of a non-memory");
  operand(addr, "index");
  return make(Op::index, memory.width(), false, {}, {memory, addr});
}
Expr cat(std::vector<Expr> parts) {
  if (parts.empty()) fail("empty concatenation");
  if (parts.size() == 1) return operand(parts[0], "concatenation");
  int w = 0;
  for (const auto& p : parts) w += operand(p, "concatenation").width();
  return make(Op::concat, w, false, {}, std::move(parts));
}
Expr repl(int count, const Expr& e) {
  operand(e, "replication");
  if (count < 1) fail("replication count < 1");
  if (count == 1) return e;
  return make(Op::repl, count * e.width(), false, {}, {e}, count);
}

Expr zext(const Expr& e, int to) {
  operand(e, "zext");
  if (to < e.width()) fail("zext of " + desc(e) + " to " + std::to_string(to) + " bits");
  if (to == e.width()) return e;
  return cat({lit(to - e.width(), 0), e});
}
Expr sext(const Expr& e, int to) {
  operand(e, "sext");
  if (to < e.width()) fail("sext of " + desc(e) + " to " + std::to_string(to) + " bits");
  if (to == e.width()) return e;
  return cat({repl(to - e.width(), bit(e, e.width() - 1)), e});
}
Expr trunc(const Expr& e, int to) {
  operand(e, "trunc");
  if (to > e.width() || to < 1) fail("trunc of " + desc(e) + " to " + std::to_string(to) + " bits");
  return slice(e, 0, to);
}
Expr fit(const Expr& e, int to) {
  return to >= operand(e, "fit").width() ? zext(e, to) : trunc(e, to);
}
Expr as_signed(const Expr& e) {
  return make(Op::cast_s, operand(e, "$signed").width(), true, {}, {e});
}
Expr as_unsigned(const Expr& e) {
  return make(Op::cast_u, operand(e, "$unsigned").width(), false, {}, {e});
}

Expr bnot(const Expr& e) {
  return unary(Op::bnot, e);
}
Expr lnot(const Expr& e) {
  return unary(Op::lnot, e);
}
Expr neg(const Expr& e) {
  return unary(Op::neg, e);
}
Expr red_and(const Expr& e) {
  return unary(Op::rand, e);
}
Expr red_or(const Expr& e) {
  return unary(Op::ror, e);
}
Expr red_xor(const Expr& e) {
  return unary(Op::rxor, e);
}
Expr red_nand(const Expr& e) {
  return unary(Op::rnand, e);
}
Expr red_nor(const Expr& e) {
  return unary(Op::rnor, e);
}
Expr red_xnor(const Expr& e) {
  return unary(Op::rxnor, e);
}

Expr binary(Op op, const Expr& a, const Expr& b) {
  const OpRule* r = rule_of(op);
  if (r == nullptr || r->typing == Typing::unary) fail("not a binary operator");
  operand(a, r->text);
  operand(b, r->text);
  switch (r->typing) {
    case Typing::shift:  // the amount is self-determined
      if (b.is_signed()) fail(std::string("signed shift amount of ") + r->text + ": " + desc(b));
      return make(op, a.width(), a.is_signed(), {}, {a, b});
    case Typing::logic:
      one_bit(a, r->text);
      one_bit(b, r->text);
      return make(op, 1, false, {}, {a, b});
    default:
      same_width(a, b, r->text);
      same_sign(a, b, r->text);
      if (r->typing == Typing::compare) return make(op, 1, false, {}, {a, b});
      return make(op, a.width(), a.is_signed(), {}, {a, b});
  }
}
Expr mux(const Expr& c, const Expr& t, const Expr& f) {
  operand(c, "?:");
  operand(t, "?:");
  operand(f, "?:");
  one_bit(c, "?: (condition)");
  same_width(t, f, "?:");
  same_sign(t, f, "?:");
  return make(Op::cond, t.width(), t.is_signed(), {}, {c, t, f});
}
Expr smul(const Expr& a, const Expr& b, int width) {
  operand(a, "smul");
  operand(b, "smul");
  if (!a.is_signed() || !b.is_signed()) {
    fail("smul: operands must be signed: " + desc(a) + ", " + desc(b));
  }
  if (a.width() + b.width() > width + 1 || a.width() > width || b.width() > width) {
    fail("smul: the product of " + desc(a) + " and " + desc(b) + " does not fit " +
         std::to_string(width) + " bits");
  }
  return make(Op::mul, width, true, {}, {a, b});
}
Expr all_and(const std::vector<Expr>& es) {
  if (es.empty()) fail("all_and of nothing");
  Expr r = es[0];
  for (std::size_t i = 1; i < es.size(); ++i) r = r & es[i];
  return operand(r, "&");
}
Expr all_or(const std::vector<Expr>& es) {
  if (es.empty()) fail("all_or of nothing");
  Expr r = es[0];
  for (std::size_t i = 1; i < es.size(); ++i) r = r | es[i];
  return operand(r, "|");
}

}  // namespace ex

Expr operator+(const Expr& a, const Expr& b) {
  return ex::binary(Op::add, a, b);
}
Expr operator-(const Expr& a, const Expr& b) {
  return ex::binary(Op::sub, a, b);
}
Expr operator*(const Expr& a, const Expr& b) {
  return ex::binary(Op::mul, a, b);
}
Expr operator&(const Expr& a, const Expr& b) {
  return ex::binary(Op::band, a, b);
}
Expr operator|(const Expr& a, const Expr& b) {
  return ex::binary(Op::bor, a, b);
}
Expr operator^(const Expr& a, const Expr& b) {
  return ex::binary(Op::bxor, a, b);
}
Expr operator~(const Expr& a) {
  return ex::bnot(a);
}

}  // namespace normcore::gen
