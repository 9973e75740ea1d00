// Expressions as layout documents, and the line printer.
#include "layout.hpp"

namespace normcore::gen::detail {

Doc text(std::string s) {
  return Doc{Doc::text, std::move(s), {}, {}, 0};
}
Doc cat(std::vector<Doc> kids) {
  return Doc{Doc::cat, {}, std::move(kids), {}, 0};
}
Doc nest(int indent, Doc d) {
  return Doc{Doc::nest, {}, {std::move(d)}, {}, indent};
}
Doc fill(std::vector<Doc> items, std::vector<std::string> seps) {
  return Doc{Doc::fill, {}, std::move(items), std::move(seps), 0};
}

namespace {

// Verilog precedence, higher binds tighter.
int prec(Op op) {
  if (is_unary(op)) return 12;
  switch (op) {
    case Op::mul:
      return 11;
    case Op::add:
    case Op::sub:
      return 10;
    case Op::shl:
    case Op::shr:
    case Op::sra:
      return 9;
    case Op::lt:
    case Op::le:
    case Op::gt:
    case Op::ge:
      return 8;
    case Op::eq:
    case Op::ne:
      return 7;
    case Op::band:
      return 6;
    case Op::bxor:
      return 5;
    case Op::bor:
      return 4;
    case Op::land:
      return 3;
    case Op::lor:
      return 2;
    case Op::cond:
      return 1;
    default:
      return 13;  // primaries
  }
}
bool bitwise_or_logic(Op op) {
  return op == Op::band || op == Op::bor || op == Op::bxor || op == Op::land || op == Op::lor;
}

Doc paren(Doc d) {
  return cat({text("("), nest(2, std::move(d)), text(")")});
}

// Whether operand `c` of binary `p` needs parentheses (`right`: the right operand).
bool needs_paren(Op p, const Expr& c, bool right) {
  const Op co = c.op();
  if (co == Op::cond) return true;
  if (!is_binary(co)) return false;
  if (prec(co) < prec(p)) return true;
  if (prec(co) == prec(p))
    return right ? !(co == p && bitwise_or_logic(p)) : prec(p) <= 9 && prec(p) >= 7;
  // Tighter-binding operands stay bare only for arithmetic under arithmetic or a compare
  // (a + b < c, a + b * c); otherwise parentheses make the grouping plain (a & (b == c)).
  const bool arith_child = co == Op::add || co == Op::sub || co == Op::mul;
  const bool arith_or_cmp_parent = p == Op::add || p == Op::sub || (prec(p) >= 7 && prec(p) <= 8);
  return !(arith_child && arith_or_cmp_parent);
}

// The left-nested chain of same-precedence operators under `e`: operands and the operators
// between them.
void chain(const Expr& e, std::vector<Doc>& items, std::vector<std::string>& seps) {
  const auto& n = e.node();
  const Expr& a = n.kids[0];
  if (is_binary(a.op()) && prec(a.op()) == prec(n.op) && !needs_paren(n.op, a, false)) {
    chain(a, items, seps);
  } else {
    items.push_back(needs_paren(n.op, a, false) ? paren(to_doc(a)) : to_doc(a));
  }
  seps.push_back(std::string(" ") + op_text(n.op));
  const Expr& b = n.kids[1];
  items.push_back(needs_paren(n.op, b, true) ? paren(to_doc(b)) : to_doc(b));
}

}  // namespace

Doc to_doc(const Expr& e) {
  const auto& n = e.node();
  switch (n.op) {
    case Op::ref:
    case Op::mem:
    case Op::lit:
    case Op::raw:
      return text(n.text);
    case Op::slice: {
      const std::string r =
          n.hi == n.lo ? std::to_string(n.lo) : std::to_string(n.hi) + ":" + std::to_string(n.lo);
      return cat({to_doc(n.kids[0]), text("[" + r + "]")});
    }
    case Op::index:
      return cat({to_doc(n.kids[0]), text("["), nest(2, to_doc(n.kids[1])), text("]")});
    case Op::concat: {
      std::vector<Doc> items;
      std::vector<std::string> seps;
      for (const auto& k : n.kids) {
        items.push_back(to_doc(k));
        seps.emplace_back(",");
      }
      seps.back().clear();
      return cat({text("{"), fill(std::move(items), std::move(seps)), text("}")});
    }
    case Op::repl:
      return cat(
          {text(std::string("{") + std::to_string(n.hi) + "{"), to_doc(n.kids[0]), text("}}")});
    case Op::cast_s:
      return cat({text("$signed("), nest(2, to_doc(n.kids[0])), text(")")});
    case Op::cast_u:
      return cat({text("$unsigned("), nest(2, to_doc(n.kids[0])), text(")")});
    case Op::cond: {
      // c1 ? t1 : c2 ? t2 : f — an else arm that is itself a ?: continues the chain.
      std::vector<Doc> items;
      std::vector<std::string> seps;
      const Expr* cur = &e;
      while (true) {
        const auto& cn = cur->node();
        const Expr& c = cn.kids[0];
        items.push_back(is_binary(c.op()) || c.op() == Op::cond ? paren(to_doc(c)) : to_doc(c));
        seps.emplace_back(" ?");
        const Expr& t = cn.kids[1];
        items.push_back(t.op() == Op::cond ? paren(to_doc(t)) : to_doc(t));
        seps.emplace_back(" :");
        if (cn.kids[2].op() != Op::cond) break;
        cur = &cn.kids[2];
      }
      items.push_back(to_doc(cur->node().kids[2]));
      seps.emplace_back();
      return fill(std::move(items), std::move(seps));
    }
    default:
      break;
  }
  if (is_unary(n.op)) {
    const Expr& k = n.kids[0];
    const bool bare = prec(k.op()) == 13;
    return cat({text(op_text(n.op)), bare ? to_doc(k) : paren(to_doc(k))});
  }
  std::vector<Doc> items;
  std::vector<std::string> seps;
  chain(e, items, seps);
  seps.emplace_back();
  return fill(std::move(items), std::move(seps));
}

namespace {

// Width of `d` printed on one line.
int flat_width(const Doc& d) {
  int w = static_cast<int>(d.s.size());
  for (const auto& k : d.kids) w += flat_width(k);
  if (d.kind == Doc::fill) {
    for (const auto& s : d.seps) w += static_cast<int>(s.size());
    w += static_cast<int>(d.kids.size()) - 1;  // the spaces after the separators
  }
  return w;
}

struct Printer {
  int limit;
  std::string out;
  int col = 0;

  void newline(int indent) {
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
    out.append(static_cast<std::size_t>(indent), ' ');
    col = indent;
  }
  void put(const std::string& s) {
    out += s;
    col += static_cast<int>(s.size());
  }
  // `trail`: the width of what must follow `d` on its last line before the next break.
  void print(const Doc& d, int indent, int trail) {
    switch (d.kind) {
      case Doc::text:
        put(d.s);
        return;
      case Doc::nest:
        print(d.kids[0], indent + d.indent, trail);
        return;
      case Doc::cat: {
        for (std::size_t i = 0; i < d.kids.size(); ++i) {
          int t = trail;
          // Conservative: everything after this part up to the end of the cat.
          for (std::size_t j = i + 1; j < d.kids.size(); ++j) t += flat_width(d.kids[j]);
          print(d.kids[i], indent, t);
        }
        return;
      }
      case Doc::fill: {
        if (col + flat_width(d) + trail <= limit) {
          print_flat(d);
          return;
        }
        for (std::size_t i = 0; i < d.kids.size(); ++i) {
          const bool last = i + 1 == d.kids.size();
          const int after = static_cast<int>(d.seps[i].size()) + (last ? trail : 0);
          if (i > 0) {
            const int need = 1 + flat_width(d.kids[i]) + after;
            if (col + need <= limit) {
              put(" ");
            } else {
              newline(indent);
            }
          }
          print(d.kids[i], indent, after);
          put(d.seps[i]);
        }
        return;
      }
    }
  }
  void print_flat(const Doc& d) {
    if (d.kind == Doc::text) {
      put(d.s);
      return;
    }
    for (std::size_t i = 0; i < d.kids.size(); ++i) {
      print_flat(d.kids[i]);
      if (d.kind == Doc::fill) {
        put(d.seps[i]);
        if (i + 1 < d.kids.size()) put(" ");
      }
    }
  }
};

}  // namespace

std::string layout(const Doc& d, int indent, int col, int limit) {
  Printer p{limit, {}, col};
  p.print(d, indent, 0);
  return p.out;
}

std::vector<std::string> wrap_words(const std::string& text, int width) {
  if (static_cast<int>(text.size()) <= width) return {text};
  std::vector<std::string> out;
  std::string cur;
  std::size_t i = 0;
  while (i < text.size()) {
    const std::size_t sp = text.find(' ', i);
    const std::string word = text.substr(i, sp == std::string::npos ? sp : sp - i);
    i = sp == std::string::npos ? text.size() : sp + 1;
    if (!cur.empty() && static_cast<int>(cur.size() + 1 + word.size()) > width) {
      out.push_back(cur);
      cur.clear();
    }
    cur += (cur.empty() ? "" : " ") + word;
  }
  out.push_back(cur);
  return out;
}

}  // namespace normcore::gen::detail
