// Clocked processes: Module::process (the one implementation) and Module::seq (statements with a
// leading reset branch, turned into a ClockedProcess).
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "normcore/gen/ir.hpp"

namespace normcore::gen {
namespace {

[[noreturn]] void bad(const std::string& what) {
  throw std::logic_error("process: " + what);
}

const std::string& name_of(const Expr& e) {
  if (!e.valid() || e.op() != Op::ref) bad("assignment to " + e.str() + ", not a typed name");
  return e.node().text;
}

// The names a block assigns (at any depth), in first-assignment order.
void assigned(const Block& b, std::vector<Expr>& out) {
  for (const auto& s : b) {
    if (const auto* a = std::get_if<Assign>(&s.node)) {
      const std::string& n = name_of(a->lhs);
      const auto same = [&](const Expr& e) { return e.node().text == n; };
      if (std::none_of(out.begin(), out.end(), same)) out.push_back(a->lhs);
    } else if (const auto* i = std::get_if<If>(&s.node)) {
      assigned(i->then_body, out);
      assigned(i->else_body, out);
    } else if (const auto* c = std::get_if<Case>(&s.node)) {
      for (const auto& arm : c->arms) assigned(arm.body, out);
    }
  }
}

std::set<std::string> names(const std::vector<Expr>& es) {
  std::set<std::string> out;
  for (const auto& e : es) out.insert(e.node().text);
  return out;
}

// Top-level assignments (count and last right side) and names assigned inside statements.
struct Uses {
  std::map<std::string, int> top;
  std::map<std::string, Expr> rhs;
  std::set<std::string> nested;
};
Uses uses(const Block& b) {
  Uses u;
  for (const auto& s : b) {
    if (const auto* a = std::get_if<Assign>(&s.node)) {
      ++u.top[name_of(a->lhs)];
      u.rhs[name_of(a->lhs)] = a->rhs;
    } else {
      std::vector<Expr> in;
      assigned(Block{s}, in);
      for (const auto& e : in) u.nested.insert(e.node().text);
    }
  }
  return u;
}

// `b` with the assignments to the names of `d` made to their d, those to `drop` left out.
Block renamed(const Block& b, const std::map<std::string, Expr>& d,
              const std::set<std::string>& drop) {
  Block out;
  for (const auto& s : b) {
    if (const auto* a = std::get_if<Assign>(&s.node)) {
      const std::string& n = name_of(a->lhs);
      if (drop.count(n) != 0) continue;
      const auto it = d.find(n);
      out.push_back(gen::assign(it != d.end() ? it->second : a->lhs, a->rhs));
    } else if (const auto* i = std::get_if<If>(&s.node)) {
      out.push_back(if_(i->cond, renamed(i->then_body, d, drop), renamed(i->else_body, d, drop)));
    } else if (const auto* c = std::get_if<Case>(&s.node)) {
      std::vector<CaseArm> arms;
      for (const auto& arm : c->arms) arms.push_back({arm.labels, renamed(arm.body, d, drop)});
      out.push_back(case_(c->subject, std::move(arms)));
    } else {
      out.push_back(s);
    }
  }
  return out;
}

std::string d_name(const std::string& q) {
  const bool qq = q.size() > 2 && q.compare(q.size() - 2, 2, "_q") == 0;
  return (qq ? q.substr(0, q.size() - 2) : q) + "_d";
}

}  // namespace

void Module::process(const ClockedProcess& p) {
  std::vector<Expr> order, in_always;
  assigned(p.body, order);
  assigned(p.always, in_always);
  const std::set<std::string> always_names = names(in_always);
  for (const auto& q : in_always) {
    if (names(order).count(q.node().text) != 0) bad(q.str() + " in both the body and always");
  }
  order.insert(order.end(), in_always.begin(), in_always.end());
  std::map<std::string, Expr> reset;
  for (const auto& [q, v] : p.resets) {
    if (always_names.count(name_of(q)) != 0) bad(q.str() + " has a reset and is in always");
    if (names(order).count(q.node().text) == 0) order.push_back(q);  // held out of reset
    reset[q.node().text] = v;
  }
  const Uses ub = uses(p.body), ua = uses(p.always);
  std::map<std::string, Expr> d;
  std::set<std::string> direct;
  Block comb;
  for (const auto& q : order) {
    const std::string& n = q.node().text;
    const Uses& u = always_names.count(n) != 0 ? ua : ub;
    const bool cleared = p.clear.valid() && reset.count(n) != 0;
    if (!cleared && u.top.count(n) != 0 && u.top.at(n) == 1 && u.nested.count(n) == 0 &&
        u.rhs.at(n).op() == Op::ref) {
      direct.insert(n);  // q <= <name>: no next-state reg
      continue;
    }
    d[n] = reg(d_name(n), q.width(), {}, q.is_signed());
    if (u.top.count(n) == 0 || (&u == &ub && p.clear.valid())) comb.push_back(gen::assign(d[n], q));
  }
  Block body = renamed(p.body, d, direct);
  if (p.clear.valid()) {
    Block cleared;
    for (const auto& [q, v] : p.resets) cleared.push_back(gen::assign(d.at(q.node().text), v));
    comb.push_back(if_(p.clear, std::move(cleared), std::move(body)));
  } else {
    for (auto& s : body) comb.push_back(std::move(s));
  }
  for (auto& s : renamed(p.always, d, direct)) comb.push_back(std::move(s));
  if (!comb.empty()) always_comb(std::move(comb), p.comment);
  // Flops: under reset the reset values (the body's other registers hold), else q <= d; the
  // always part's registers q <= d every cycle.
  Block rst, run, plain;
  for (const auto& q : order) {
    const std::string& n = q.node().text;
    const Expr src =
        direct.count(n) != 0 ? (always_names.count(n) != 0 ? ua : ub).rhs.at(n) : d.at(n);
    if (reset.count(n) != 0) rst.push_back(gen::assign(q, reset.at(n)));
    (always_names.count(n) != 0 ? plain : run).push_back(gen::assign(q, src));
  }
  Block ff;
  if (!rst.empty()) {
    ff.push_back(if_(ex::lnot(ref("rst_ni")), std::move(rst), std::move(run)));
  } else if (!run.empty()) {
    ff.push_back(if_(ref("rst_ni"), std::move(run)));
  }
  for (auto& s : plain) ff.push_back(std::move(s));
  always_ff(std::move(ff), p.flops_comment);
}

void Module::seq(const Block& body, std::string comment) {
  ClockedProcess p;
  std::size_t first = 0;
  const auto* i = body.empty() ? nullptr : std::get_if<If>(&body[0].node);
  if (i != nullptr && i->cond.str() == "!rst_ni") {
    for (const auto& s : i->then_body) {
      const auto* a = std::get_if<Assign>(&s.node);
      if (a == nullptr) bad("seq: a reset branch of more than assignments");
      p.resets.emplace_back(a->lhs, a->rhs);
    }
    p.body = i->else_body;
    first = 1;
  }
  p.always.assign(body.begin() + static_cast<std::ptrdiff_t>(first), body.end());
  std::vector<Expr> run;
  assigned(p.body, run);
  std::set<std::string> with_reset;
  for (const auto& [q, v] : p.resets) with_reset.insert(name_of(q));
  for (const auto& r : run) {
    if (with_reset.count(r.node().text) == 0) bad("seq: " + r.str() + " has no reset value");
  }
  p.comment = comment.empty() ? "" : comment + ": next state";
  p.flops_comment = std::move(comment);
  process(p);
}

}  // namespace normcore::gen
