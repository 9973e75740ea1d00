#include "rtl_util.hpp"

#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "normcore/gen/config.hpp"

namespace normcore::gen::rtl {

namespace {

Expr based_lit(int width, std::uint64_t value, char base) {
  ex::lit(width, value);  // the width and fit checks
  if (width == 1) return ex::lit(1, value);
  std::ostringstream os;
  os << width << "'" << base;
  if (base == 'h') {
    os << std::hex << value;
  } else {
    std::string digits;
    for (int i = width - 1; i >= 0; --i) digits += ((value >> i) & 1U) != 0 ? '1' : '0';
    os << digits;
  }
  auto n = std::make_shared<ExprNode>();
  n->op = Op::lit;
  n->width = width;
  n->text = os.str();
  return Expr(std::shared_ptr<const ExprNode>(std::move(n)));
}

// The register a statement's left side names (a <x>_q), or throws.
const Expr& target(const Expr& lhs) {
  if (lhs.op() != Op::ref || lhs.node().text.size() < 3 ||
      lhs.node().text.compare(lhs.node().text.size() - 2, 2, "_q") != 0) {
    throw std::logic_error("process: left side '" + lhs.str() + "' is not a <x>_q register");
  }
  return lhs;
}

struct Renamer {
  std::map<std::string, Expr> d;  // <x>_q -> <x>_d
  std::vector<Expr> order;        // the <x>_q in first-assignment order

  void note(const Expr& q) {
    const std::string& n = target(q).node().text;
    if (d.count(n) != 0) return;
    d.emplace(n, ex::ref(n.substr(0, n.size() - 2) + "_d", q.width(), q.is_signed()));
    order.push_back(q);
  }
  Block rename(const Block& b) {
    Block out;
    for (const auto& s : b) out.push_back(rename(s));
    return out;
  }
  Stmt rename(const Stmt& s) {
    if (const auto* a = std::get_if<Assign>(&s.node)) {
      note(a->lhs);
      return assign(d.at(a->lhs.node().text), a->rhs);
    }
    if (const auto* i = std::get_if<If>(&s.node)) {
      return if_(i->cond, rename(i->then_body), rename(i->else_body));
    }
    if (const auto* c = std::get_if<Case>(&s.node)) {
      std::vector<CaseArm> arms;
      for (const auto& arm : c->arms) arms.push_back({arm.labels, rename(arm.body)});
      return case_(c->subject, std::move(arms));
    }
    return s;
  }
};

}  // namespace

namespace {

// Names of the registers that a top-level assignment of `b` sets (so every path sets them).
std::set<std::string> always_set(const Block& b) {
  std::set<std::string> out;
  for (const auto& s : b) {
    if (const auto* a = std::get_if<Assign>(&s.node)) out.insert(a->lhs.node().text);
  }
  return out;
}

}  // namespace

void process(Module& m, const Process& p) {
  Renamer r;
  for (const auto& [q, v] : p.resets) r.note(q);
  Block body = r.rename(p.body);
  std::set<std::string> in_body;
  for (const auto& [n, d] : r.d) in_body.insert(n);
  Renamer only_always;
  only_always.rename(p.always);
  for (const auto& q : only_always.order) {
    if (in_body.count(q.node().text) != 0) {
      throw std::logic_error("process: " + q.str() + " in both the body and the always part");
    }
  }
  const Block always = r.rename(p.always);
  std::set<std::string> no_default = always_set(p.always);
  if (!p.clear.valid()) no_default.merge(always_set(p.body));
  Block comb;
  for (const auto& q : r.order) {
    if (no_default.count(q.node().text) == 0) comb.push_back(assign(r.d.at(q.node().text), q));
  }
  if (p.clear.valid()) {
    Block cleared;
    for (const auto& [q, v] : p.resets) cleared.push_back(assign(r.d.at(q.node().text), v));
    comb.push_back(if_(p.clear, std::move(cleared), std::move(body)));
  } else {
    for (auto& s : body) comb.push_back(std::move(s));
  }
  for (const auto& s : always) comb.push_back(s);
  for (const auto& q : r.order) {
    m.reg(r.d.at(q.node().text).node().text, q.width(), {}, q.is_signed());
  }
  m.always_comb(std::move(comb), p.comment);
  // Flops: under reset the reset values (the body's other registers hold), else q <= d; the
  // always part's registers q <= d every cycle.
  Block rst, run, plain;
  for (const auto& [q, v] : p.resets) rst.push_back(assign(q, v));
  for (const auto& q : r.order) {
    const Stmt s = assign(q, r.d.at(q.node().text));
    (only_always.d.count(q.node().text) != 0 ? plain : run).push_back(s);
  }
  Block ff;
  if (!rst.empty()) {
    ff.push_back(if_(ex::lnot(m.ref("rst_ni")), std::move(rst), std::move(run)));
  } else if (!run.empty()) {
    ff.push_back(if_(m.ref("rst_ni"), std::move(run)));
  }
  for (auto& s : plain) ff.push_back(std::move(s));
  m.always_ff(std::move(ff));
}

Expr hex_lit(int width, std::uint64_t value) {
  return based_lit(width, value, 'h');
}
Expr bin_lit(int width, std::uint64_t value) {
  return based_lit(width, value, 'b');
}

RegPair reg_pair(Module& m, const std::string& stem, int width, const std::string& comment) {
  RegPair r;
  r.q = m.reg(stem + "_q", width, comment);
  r.d = m.reg(stem + "_d", width);
  return r;
}

Expr shl_by(const Expr& e, int n) {
  if (n < 1) throw std::logic_error("shl_by: amount < 1");
  return ex::shl(e, ex::lit(bits_for(n), static_cast<std::uint64_t>(n)));
}
Expr shr_by(const Expr& e, int n) {
  if (n < 1) throw std::logic_error("shr_by: amount < 1");
  return ex::shr(e, ex::lit(bits_for(n), static_cast<std::uint64_t>(n)));
}

Expr xor_all(const std::vector<Expr>& parts) {
  if (parts.size() == 1) return parts[0].width() == 1 ? parts[0] : ex::red_xor(parts[0]);
  return ex::red_xor(ex::cat(parts));
}

void sink(Module& m, const std::string& name, const std::vector<Expr>& parts) {
  m.assign(m.wire(name, 1), xor_all(parts));
}

Expr popcount(Module& m, const std::string& prefix, const Expr& e, int out_bits) {
  std::vector<Expr> terms;
  for (int i = 0; i < e.width(); ++i) terms.push_back(ex::zext(ex::bit(e, i), out_bits));
  int level = 0;
  while (terms.size() > 1) {
    std::vector<Expr> next;
    for (std::size_t i = 0; i < terms.size(); i += 2) {
      if (i + 1 == terms.size()) {
        next.push_back(terms[i]);
        continue;
      }
      const std::string w = prefix + "_" + std::to_string(level) + "_" + std::to_string(i / 2);
      const Expr wire = m.wire(w, out_bits);
      m.assign(wire, terms[i] + terms[i + 1]);
      next.push_back(wire);
    }
    terms = std::move(next);
    ++level;
  }
  return terms[0];
}

}  // namespace normcore::gen::rtl
