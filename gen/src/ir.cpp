#include "normcore/gen/ir.hpp"

#include <algorithm>
#include <set>
#include <sstream>
#include <stdexcept>

#include "layout.hpp"

namespace normcore::gen {

Expr Module::port(std::string pname, bool output, int width, std::string comment) {
  Expr r = ex::ref(pname, width);
  ports.push_back(Port{std::move(pname), output, width, std::move(comment)});
  return r;
}
Expr Module::wire(std::string n, int width, std::string comment, bool is_signed) {
  Expr r = ex::ref(n, width, is_signed);
  items.emplace_back(Net{std::move(n), width, false, is_signed, 0, std::move(comment), {}, {}});
  return r;
}
Expr Module::reg(std::string n, int width, std::string comment, bool is_signed) {
  Expr r = ex::ref(n, width, is_signed);
  items.emplace_back(Net{std::move(n), width, true, is_signed, 0, std::move(comment), {}, {}});
  return r;
}
Expr Module::memory(std::string n, int width, int depth, std::string comment) {
  Expr r = ex::mem(n, width, depth);
  items.emplace_back(Net{std::move(n), width, true, false, depth, std::move(comment), {}, {}});
  return r;
}
Expr Module::localparam(std::string n, int width, std::uint64_t value, std::string comment) {
  ex::lit(width, value);  // checks that the value fits
  Expr r = ex::ref(n, width);
  items.emplace_back(Params{{LocalParam{std::move(n), width, value, {}}}, std::move(comment)});
  return r;
}
std::vector<Expr> Module::states(const std::vector<std::string>& names, std::string comment) {
  if (names.empty()) throw std::logic_error("module " + name + ": no states");
  int w = 1;
  while ((std::size_t{1} << w) < names.size()) ++w;
  Params ps{{}, std::move(comment)};
  std::vector<Expr> refs;
  for (std::size_t i = 0; i < names.size(); ++i) {
    ps.params.push_back(LocalParam{names[i], w, i, {}});
    refs.push_back(ex::ref(names[i], w));
  }
  items.emplace_back(std::move(ps));
  return refs;
}
Expr Module::ref(const std::string& rname) const {
  for (const auto& p : ports) {
    if (p.name == rname) return ex::ref(p.name, p.width);
  }
  for (const auto& it : items) {
    if (const auto* n = std::get_if<Net>(&it); n != nullptr && n->name == rname) {
      return n->depth > 0 ? ex::mem(n->name, n->width, n->depth)
                          : ex::ref(n->name, n->width, n->is_signed);
    }
    if (const auto* ps = std::get_if<Params>(&it)) {
      for (const auto& p : ps->params) {
        if (p.name == rname) return ex::ref(p.name, p.width);
      }
    }
  }
  throw std::logic_error("module " + name + ": no declaration of '" + rname + "'");
}
void Module::attr_last(std::string a) {
  if (items.empty() || !std::holds_alternative<Net>(items.back())) {
    throw std::logic_error("attr_last: the last item is not a net");
  }
  std::get<Net>(items.back()).attr = std::move(a);
}
void Module::assign(Expr lhs, Expr rhs, std::string comment) {
  auto s = gen::assign(std::move(lhs), std::move(rhs));  // the checks
  auto& a = std::get<Assign>(s.node);
  items.emplace_back(ContAssign{std::move(a.lhs), std::move(a.rhs), std::move(comment)});
}
void Module::section(std::string text) {
  items.emplace_back(Section{std::move(text)});
}
void Module::always_ff(Block body, std::string comment) {
  items.emplace_back(Always{true, std::move(body), std::move(comment)});
}
void Module::always_comb(Block body, std::string comment) {
  items.emplace_back(Always{false, std::move(body), std::move(comment)});
}
void Module::flops(const std::vector<Flop>& fs, std::string comment) {
  Block rst, run, plain;
  for (const auto& f : fs) {
    if (f.reset.valid()) {
      rst.push_back(gen::assign(f.q, f.reset));
      run.push_back(gen::assign(f.q, f.d));
    } else {
      plain.push_back(gen::assign(f.q, f.d));
    }
  }
  Block body;
  if (!rst.empty()) body.push_back(if_(ex::lnot(ref("rst_ni")), std::move(rst), std::move(run)));
  for (auto& s : plain) body.push_back(std::move(s));
  always_ff(std::move(body), std::move(comment));
}
void Module::instance(Instance inst) {
  items.emplace_back(std::move(inst));
}
void Module::ifdef(std::string macro) {
  items.emplace_back(Conditional{Conditional::Kind::ifdef, std::move(macro)});
}
void Module::else_() {
  items.emplace_back(Conditional{Conditional::Kind::else_, {}});
}
void Module::endif() {
  items.emplace_back(Conditional{Conditional::Kind::endif, {}});
}
void Module::formal_begin() {
  ifdef("FORMAL");
}
void Module::formal_end() {
  endif();
}

namespace {
// Verilog-2005 / SystemVerilog keywords a generated name could plausibly collide with.
const std::set<std::string>& keywords() {
  static const std::set<std::string> k = {
      "always",    "and",     "assign",  "begin",     "buf",    "case",  "default",  "do",
      "else",      "end",     "endcase", "endmodule", "final",  "for",   "force",    "function",
      "generate",  "if",      "initial", "inout",     "input",  "int",   "integer",  "large",
      "logic",     "medium",  "module",  "nand",      "nor",    "not",   "or",       "output",
      "parameter", "reg",     "release", "repeat",    "signed", "small", "strong0",  "strong1",
      "supply0",   "supply1", "table",   "task",      "time",   "tri",   "unsigned", "weak0",
      "weak1",     "while",   "wire",    "xor",       "xnor",   "bit",   "byte",     "shortint",
      "longint",   "type",    "struct",  "union",     "enum",   "const", "static",   "return",
      "break",     "continue"};
  return k;
}

bool has_check(const Block& b) {
  for (const auto& s : b) {
    if (std::holds_alternative<Check>(s.node)) return true;
    if (const auto* i = std::get_if<If>(&s.node)) {
      if (has_check(i->then_body) || has_check(i->else_body)) return true;
    } else if (const auto* c = std::get_if<Case>(&s.node)) {
      for (const auto& arm : c->arms) {
        if (has_check(arm.body)) return true;
      }
    }
  }
  return false;
}
}  // namespace

void Module::validate() const {
  std::set<std::string> names;
  int depth = 0;             // open `ifdef blocks
  std::vector<bool> formal;  // per open `ifdef: FORMAL (the `else branch is not)
  auto add = [&](const std::string& n) {
    if (n.empty() || !names.insert(n).second) {
      throw std::logic_error("module " + name + ": duplicate or empty name '" + n + "'");
    }
    if (keywords().count(n) != 0) {
      throw std::logic_error("module " + name + ": name '" + n + "' is a Verilog keyword");
    }
  };
  for (const auto& p : ports) {
    if (p.width < 1) throw std::logic_error("module " + name + ": port " + p.name + " width < 1");
    add(p.name);
  }
  for (const auto& it : items) {
    const bool in_formal = std::find(formal.begin(), formal.end(), true) != formal.end();
    if (const auto* n = std::get_if<Net>(&it)) {
      if (n->width < 1)
        throw std::logic_error("module " + name + ": net " + n->name + " width < 1");
      if (!n->init.empty() && !in_formal)
        throw std::logic_error("module " + name + ": init value of " + n->name + " outside FORMAL");
      add(n->name);
    } else if (const auto* al = std::get_if<Always>(&it)) {
      if (!in_formal && has_check(al->body))
        throw std::logic_error("module " + name + ": assert/assume/cover outside `ifdef FORMAL");
    } else if (const auto* i = std::get_if<Instance>(&it)) {
      add(i->name);
    } else if (const auto* ps = std::get_if<Params>(&it)) {
      for (const auto& p : ps->params) add(p.name);
    } else if (const auto* cd = std::get_if<Conditional>(&it)) {
      depth += cd->kind == Conditional::Kind::ifdef   ? 1
               : cd->kind == Conditional::Kind::endif ? -1
                                                      : 0;
      if (depth < 0 || (cd->kind == Conditional::Kind::else_ && depth == 0))
        throw std::logic_error("module " + name + ": `else / `endif without `ifdef");
      if (cd->kind == Conditional::Kind::ifdef) formal.push_back(cd->macro == "FORMAL");
      if (cd->kind == Conditional::Kind::else_) formal.back() = false;
      if (cd->kind == Conditional::Kind::endif) formal.pop_back();
    }
  }
  if (depth != 0) throw std::logic_error("module " + name + ": `ifdef without `endif");
}

namespace {
[[noreturn]] void bad(const std::string& what) {
  throw std::logic_error("ir: " + what);
}
}  // namespace

Stmt assign(Expr lhs, Expr rhs) {
  if (!lhs.valid() || !rhs.valid()) bad("assignment with an empty side");
  if (lhs.typed() && rhs.typed() && lhs.width() != rhs.width()) {
    bad("WIDTH: " + lhs.str() + " (" + std::to_string(lhs.width()) + " bits) = " + rhs.str() +
        " (" + std::to_string(rhs.width()) + " bits)");
  }
  return Stmt{Assign{std::move(lhs), std::move(rhs)}};
}
Stmt if_(Expr cond, Block then_body, Block else_body) {
  if (!cond.valid()) bad("if without a condition");
  if (cond.typed() && cond.width() != 1) {
    bad("if condition " + cond.str() + " is " + std::to_string(cond.width()) + " bits, not 1");
  }
  return Stmt{If{std::move(cond), std::move(then_body), std::move(else_body)}};
}
Stmt case_(Expr subject, std::vector<CaseArm> arms) {
  if (!subject.valid()) bad("case without a subject");
  for (const auto& a : arms) {
    for (const auto& l : a.labels) {
      if (subject.typed() && l.typed() && l.width() != subject.width()) {
        bad("WIDTH: case label " + l.str() + " is not as wide as " + subject.str());
      }
    }
  }
  return Stmt{Case{std::move(subject), std::move(arms)}};
}
Stmt case_(Expr subject, std::vector<std::pair<std::string, Block>> arms) {
  std::vector<CaseArm> typed;
  for (auto& [label, body] : arms) {
    typed.push_back(
        CaseArm{label == "default" ? std::vector<Expr>{} : std::vector<Expr>{Expr(label)},
                std::move(body)});
  }
  return case_(std::move(subject), std::move(typed));
}
Stmt note(std::string text) {
  return Stmt{Note{std::move(text)}};
}
namespace {
Stmt check(Check::Kind k, Expr cond) {
  if (!cond.valid() || (cond.typed() && cond.width() != 1)) bad("check of " + cond.str());
  return Stmt{Check{k, std::move(cond)}};
}
}  // namespace
Stmt assert_(Expr cond) {
  return check(Check::Kind::assert_, std::move(cond));
}
Stmt assume(Expr cond) {
  return check(Check::Kind::assume, std::move(cond));
}
Stmt cover(Expr cond) {
  return check(Check::Kind::cover, std::move(cond));
}

namespace {

std::string range(int width) {
  return width == 1 ? std::string{} : std::string("[") + std::to_string(width - 1) + ":0] ";
}

using detail::Doc;

struct Emitter {
  const EmitOptions& opts;
  std::ostringstream os;

  // One logical line: `pad` + the document, broken within the line limit, continuation lines
  // indented by 4 more than `pad`.
  void line(const std::string& pad, std::vector<Doc> parts, const std::string& comment = {}) {
    Doc d = detail::cat(std::move(parts));
    const int ind = static_cast<int>(pad.size());
    const std::string flat = detail::layout(d, ind + 4, ind, 1 << 30);
    if (!comment.empty()) {
      const std::string c = "  // " + comment;
      if (ind + static_cast<int>(flat.size() + c.size()) <= opts.line_limit) {
        os << pad << flat << c << "\n";
        return;
      }
      note(pad, comment);  // too long with the comment: comment above
    }
    os << pad << detail::layout(d, ind + 4, ind, opts.line_limit) << "\n";
  }

  // A comment of any length: `// ` lines within the limit, broken between words.
  void note(const std::string& pad, const std::string& text) {
    const int room = opts.line_limit - static_cast<int>(pad.size()) - 3;
    for (const auto& l : detail::wrap_words(text, room)) os << pad << "// " << l << "\n";
  }
  // A declaration line with its comment after it when both fit, else the comment above it.
  void decl(const std::string& text, const std::string& comment) {
    if (!comment.empty()) {
      if (static_cast<int>(text.size() + comment.size()) + 5 <= opts.line_limit) {
        os << text << "  // " << comment << "\n";
        return;
      }
      note(std::string(text.find_first_not_of(' '), ' '), comment);
    }
    os << text << "\n";
  }

  void block(const Block& body, int indent, bool clocked) {
    for (const auto& s : body) stmt(s, indent, clocked);
  }

  std::vector<Doc> assign_parts(const Assign& a, bool clocked) {
    return {detail::to_doc(a.lhs), detail::text(clocked ? " <= " : " = "), detail::to_doc(a.rhs),
            detail::text(";")};
  }

  void stmt(const Stmt& s, int indent, bool clocked) {
    const std::string pad(static_cast<std::size_t>(indent), ' ');
    if (const auto* a = std::get_if<Assign>(&s.node)) {
      line(pad, assign_parts(*a, clocked));
    } else if (const auto* i = std::get_if<If>(&s.node)) {
      line(pad, {detail::text("if ("), detail::to_doc(i->cond), detail::text(") begin")});
      block(i->then_body, indent + 2, clocked);
      const If* cur = i;
      // Chain "else if" for readability when the else branch is a single if.
      while (cur->else_body.size() == 1 && std::holds_alternative<If>(cur->else_body[0].node)) {
        cur = &std::get<If>(cur->else_body[0].node);
        line(pad,
             {detail::text("end else if ("), detail::to_doc(cur->cond), detail::text(") begin")});
        block(cur->then_body, indent + 2, clocked);
      }
      if (!cur->else_body.empty()) {
        os << pad << "end else begin\n";
        block(cur->else_body, indent + 2, clocked);
      }
      os << pad << "end\n";
    } else if (const auto* c = std::get_if<Case>(&s.node)) {
      line(pad, {detail::text("case ("), detail::to_doc(c->subject), detail::text(")")});
      for (const auto& arm : c->arms) {
        std::vector<Doc> label;
        if (arm.labels.empty()) {
          label.push_back(detail::text("default"));
        } else {
          std::vector<Doc> items;
          std::vector<std::string> seps;
          for (const auto& l : arm.labels) {
            items.push_back(detail::to_doc(l));
            seps.emplace_back(",");
          }
          seps.back().clear();
          label.push_back(detail::fill(std::move(items), std::move(seps)));
        }
        label.push_back(detail::text(": "));
        const auto* single =
            arm.body.size() == 1 ? std::get_if<Assign>(&arm.body[0].node) : nullptr;
        if (single != nullptr) {  // one assignment: keep the arm on one line
          for (auto& p : assign_parts(*single, clocked)) label.push_back(std::move(p));
          line(pad + "  ", std::move(label));
          continue;
        }
        label.push_back(detail::text("begin"));
        line(pad + "  ", std::move(label));
        block(arm.body, indent + 4, clocked);
        os << pad << "  end\n";
      }
      os << pad << "endcase\n";
    } else if (const auto* n = std::get_if<Note>(&s.node)) {
      note(pad, n->text);
    } else if (const auto* k = std::get_if<Check>(&s.node)) {
      const char* kw = k->kind == Check::Kind::assert_  ? "assert ("
                       : k->kind == Check::Kind::assume ? "assume ("
                                                        : "cover (";
      line(pad, {detail::text(kw), detail::to_doc(k->cond), detail::text(");")});
    }
  }

  void params(const Params& ps) {
    if (!ps.comment.empty()) note("  ", ps.comment);
    const int w = ps.params.front().width;
    const std::string head = "  localparam " + range(w);
    const std::string cont(head.size(), ' ');
    for (std::size_t i = 0; i < ps.params.size(); ++i) {
      const auto& p = ps.params[i];
      decl((i == 0 ? head : cont) + p.name + " = " + ex::lit(p.width, p.value).str() +
               (i + 1 < ps.params.size() ? "," : ";"),
           p.comment);
    }
  }
};

// Icarus never evaluates an `always @*` block that reads no net ("@* found no sensitivities"):
// a combinational block whose statements are plain assignments of constants (literals and
// localparams) to whole regs, each assigned once, is printed as continuous assignments and its
// regs are declared as wires. (Edge configurations make such blocks: 1 channel, 1-bit INNER.)
bool reads_nets(const Expr& e, const std::set<std::string>& params) {
  const ExprNode& n = e.node();
  if (n.op == Op::raw || n.op == Op::mem) return true;
  if (n.op == Op::ref) return params.count(n.text) == 0;
  return std::any_of(n.kids.begin(), n.kids.end(),
                     [&](const Expr& k) { return reads_nets(k, params); });
}
// The names a constant-only combinational block assigns; empty when the block is anything else.
std::set<std::string> constant_block(const Always& al, const std::set<std::string>& params) {
  std::set<std::string> out;
  if (al.clocked || al.body.empty()) return {};
  for (const auto& s : al.body) {
    const auto* a = std::get_if<Assign>(&s.node);
    if (a == nullptr) {
      if (std::holds_alternative<Note>(s.node)) continue;
      return {};
    }
    if (a->lhs.op() != Op::ref || reads_nets(a->rhs, params) ||
        !out.insert(a->lhs.node().text).second) {
      return {};
    }
  }
  return out;
}

void ports(Emitter& e, const Module& m) {
  std::size_t w = 0;
  for (const auto& p : m.ports) w = std::max(w, range(p.width).size());
  for (std::size_t i = 0; i < m.ports.size(); ++i) {
    const auto& p = m.ports[i];
    std::string r = range(p.width);
    r.resize(w, ' ');
    e.decl(std::string("  ") + (p.output ? "output" : "input ") + " wire " + r + p.name +
               (i + 1 < m.ports.size() ? "," : ""),
           p.comment);
  }
}
// A constant-only block (constant_block) as continuous assignments.
void as_assigns(Emitter& e, const Always& al) {
  for (const auto& s : al.body) {
    if (const auto* a = std::get_if<Assign>(&s.node)) {
      e.line("  ", {detail::text("assign "), detail::to_doc(a->lhs), detail::text(" = "),
                    detail::to_doc(a->rhs), detail::text(";")});
    } else {
      e.note("  ", std::get<Note>(s.node).text);
    }
  }
}
// The module's localparam names, and the regs that its constant-only blocks assign.
void scan_constants(const Module& m, std::set<std::string>& params, std::set<std::string>& wired) {
  for (const auto& it : m.items) {
    if (const auto* ps = std::get_if<Params>(&it)) {
      for (const auto& p : ps->params) params.insert(p.name);
    }
  }
  for (const auto& it : m.items) {
    if (const auto* al = std::get_if<Always>(&it)) wired.merge(constant_block(*al, params));
  }
}

}  // namespace

std::string emit_module(const Module& m, const std::vector<std::string>& header,
                        const EmitOptions& opts) {
  m.validate();
  Emitter e{opts, {}};
  auto& os = e.os;
  for (const auto& h : header) e.note("", h);
  os << "`default_nettype none\n\n";
  for (const auto& d : m.description) e.note("", d);
  os << "module " << m.name << " (\n";
  ports(e, m);
  os << ");\n";
  std::set<std::string> params, wired;  // wired: regs of constant-only blocks, printed as wires
  scan_constants(m, params, wired);
  for (const auto& it : m.items) {
    if (const auto* n = std::get_if<Net>(&it)) {
      if (!n->attr.empty()) os << "  (* " << n->attr << " *)\n";
      const bool reg = n->is_reg && (n->depth > 0 || !n->init.empty() || wired.count(n->name) == 0);
      std::string d = std::string("  ") + (reg ? "reg " : "wire ") +
                      (n->is_signed ? "signed " : "") + range(n->width) + n->name;
      if (n->depth > 0) d += " [0:" + std::to_string(n->depth - 1) + "]";
      if (!n->init.empty()) d += " = " + n->init;
      e.decl(d + ";", n->comment);
    } else if (const auto* a = std::get_if<ContAssign>(&it)) {
      e.line("  ",
             {detail::text("assign "), detail::to_doc(a->lhs), detail::text(" = "),
              detail::to_doc(a->rhs), detail::text(";")},
             a->comment);
    } else if (const auto* al = std::get_if<Always>(&it)) {
      if (!al->comment.empty()) e.note("  ", al->comment);
      if (!constant_block(*al, params).empty()) {
        as_assigns(e, *al);
        continue;
      }
      os << "  always " << (al->clocked ? std::string("@(posedge ") + kClockPort + ")" : "@*")
         << " begin\n";
      e.block(al->body, 4, al->clocked);
      os << "  end\n";
    } else if (const auto* in = std::get_if<Instance>(&it)) {
      if (!in->comment.empty()) e.note("  ", in->comment);
      os << "  " << in->module;
      if (!in->parameters.empty()) {
        os << " #(\n";
        for (std::size_t i = 0; i < in->parameters.size(); ++i) {
          const auto& p = in->parameters[i];
          os << "    ." << p.name << "(";
          if (p.width > 0) {
            os << ex::lit(p.width, p.value).str();
          } else {
            os << '"' << p.text << '"';
          }
          os << (i + 1 < in->parameters.size() ? ")," : ")") << "\n";
        }
        os << "  )";
      }
      os << " " << in->name << " (\n";
      for (std::size_t i = 0; i < in->connections.size(); ++i) {
        const auto& [port, expr] = in->connections[i];
        e.line("    ", {detail::text("." + port + "("), detail::to_doc(expr),
                        detail::text(i + 1 < in->connections.size() ? ")," : ")")});
      }
      os << "  );\n";
    } else if (const auto* s = std::get_if<Section>(&it)) {
      // Consecutive sections are one comment block: a blank line only before the first.
      const bool continued = &it != &m.items.front() && std::holds_alternative<Section>(*(&it - 1));
      os << (continued ? "" : "\n");
      e.note("  ", s->text);
    } else if (const auto* ps = std::get_if<Params>(&it)) {
      e.params(*ps);
    } else if (const auto* cd = std::get_if<Conditional>(&it)) {
      using K = Conditional::Kind;
      os << (cd->kind == K::ifdef   ? "`ifdef " + cd->macro
             : cd->kind == K::else_ ? "`else"
                                    : "`endif")
         << "\n";
    }
  }
  os << "endmodule\n\n`default_nettype wire\n";
  return os.str();
}

}  // namespace normcore::gen
