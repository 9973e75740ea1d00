#include "normcore/gen/ir.hpp"

#include <set>
#include <sstream>
#include <stdexcept>

namespace normcore::gen {

void Module::port(std::string pname, bool output, int width, std::string comment) {
  ports.push_back(Port{std::move(pname), output, width, std::move(comment)});
}
void Module::wire(std::string n, int width, std::string comment, bool is_signed) {
  items.emplace_back(Net{std::move(n), width, false, is_signed, 0, std::move(comment), {}});
}
void Module::reg(std::string n, int width, std::string comment, bool is_signed) {
  items.emplace_back(Net{std::move(n), width, true, is_signed, 0, std::move(comment), {}});
}
void Module::memory(std::string n, int width, int depth, std::string comment) {
  items.emplace_back(Net{std::move(n), width, true, false, depth, std::move(comment), {}});
}
void Module::attr_last(std::string a) {
  if (items.empty() || !std::holds_alternative<Net>(items.back())) {
    throw std::logic_error("attr_last: the last item is not a net");
  }
  std::get<Net>(items.back()).attr = std::move(a);
}
void Module::assign(std::string lhs, std::string rhs, std::string comment) {
  items.emplace_back(ContAssign{std::move(lhs), std::move(rhs), std::move(comment)});
}
void Module::section(std::string text) { items.emplace_back(Section{std::move(text)}); }
void Module::always_ff(Block body, std::string comment) {
  items.emplace_back(Always{true, std::move(body), std::move(comment)});
}
void Module::always_comb(Block body, std::string comment) {
  items.emplace_back(Always{false, std::move(body), std::move(comment)});
}
void Module::instance(Instance inst) { items.emplace_back(std::move(inst)); }

namespace {
// Verilog-2005 / SystemVerilog keywords a generated name could plausibly collide with.
const std::set<std::string>& keywords() {
  static const std::set<std::string> k = {
      "always", "and", "assign", "begin", "buf", "case", "default", "do", "else", "end",
      "endcase", "endmodule", "final", "for", "force", "function", "generate", "if", "initial",
      "inout", "input", "int", "integer", "large", "logic", "medium", "module", "nand", "nor",
      "not", "or", "output", "parameter", "reg", "release", "repeat", "signed", "small",
      "strong0", "strong1", "supply0", "supply1", "table", "task", "time", "tri", "unsigned",
      "weak0", "weak1", "while", "wire", "xor", "xnor", "bit", "byte", "shortint", "longint",
      "type", "struct", "union", "enum", "const", "static", "return", "break", "continue"};
  return k;
}
}  // namespace

void Module::validate() const {
  std::set<std::string> names;
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
    if (const auto* n = std::get_if<Net>(&it)) {
      if (n->width < 1) throw std::logic_error("module " + name + ": net " + n->name + " width < 1");
      add(n->name);
    } else if (const auto* i = std::get_if<Instance>(&it)) {
      add(i->name);
    }
  }
}

Stmt assign(std::string lhs, std::string rhs) {
  return Stmt{Assign{std::move(lhs), std::move(rhs)}};
}
Stmt if_(std::string cond, Block then_body, Block else_body) {
  return Stmt{If{std::move(cond), std::move(then_body), std::move(else_body)}};
}
Stmt case_(std::string subject, std::vector<std::pair<std::string, Block>> arms) {
  return Stmt{Case{std::move(subject), std::move(arms)}};
}
Stmt note(std::string text) { return Stmt{Note{std::move(text)}}; }

namespace {

std::string range(int width) {
  return width == 1 ? std::string{} : "[" + std::to_string(width - 1) + ":0] ";
}

void emit_block(std::ostringstream& os, const Block& body, int indent, bool clocked);

void emit_stmt(std::ostringstream& os, const Stmt& s, int indent, bool clocked) {
  const std::string pad(static_cast<std::size_t>(indent), ' ');
  if (const auto* a = std::get_if<Assign>(&s.node)) {
    os << pad << a->lhs << (clocked ? " <= " : " = ") << a->rhs << ";\n";
  } else if (const auto* i = std::get_if<If>(&s.node)) {
    os << pad << "if (" << i->cond << ") begin\n";
    emit_block(os, i->then_body, indent + 2, clocked);
    const If* cur = i;
    // Chain "else if" for readability when the else branch is a single if.
    while (cur->else_body.size() == 1 && std::holds_alternative<If>(cur->else_body[0].node)) {
      cur = &std::get<If>(cur->else_body[0].node);
      os << pad << "end else if (" << cur->cond << ") begin\n";
      emit_block(os, cur->then_body, indent + 2, clocked);
    }
    if (!cur->else_body.empty()) {
      os << pad << "end else begin\n";
      emit_block(os, cur->else_body, indent + 2, clocked);
    }
    os << pad << "end\n";
  } else if (const auto* c = std::get_if<Case>(&s.node)) {
    os << pad << "case (" << c->subject << ")\n";
    for (const auto& [label, body] : c->arms) {
      const auto* single = body.size() == 1 ? std::get_if<Assign>(&body[0].node) : nullptr;
      if (single != nullptr) {  // one assignment: keep the arm on one line
        os << pad << "  " << label << ": " << single->lhs << (clocked ? " <= " : " = ")
           << single->rhs << ";\n";
        continue;
      }
      os << pad << "  " << label << ": begin\n";
      emit_block(os, body, indent + 4, clocked);
      os << pad << "  end\n";
    }
    os << pad << "endcase\n";
  } else if (const auto* n = std::get_if<Note>(&s.node)) {
    os << pad << "// " << n->text << "\n";
  }
}

void emit_block(std::ostringstream& os, const Block& body, int indent, bool clocked) {
  for (const auto& s : body) emit_stmt(os, s, indent, clocked);
}

}  // namespace

std::string emit_module(const Module& m, const std::vector<std::string>& header) {
  m.validate();
  std::ostringstream os;
  for (const auto& h : header) os << "// " << h << "\n";
  os << "`default_nettype none\n\n";
  for (const auto& d : m.description) os << "// " << d << "\n";
  os << "module " << m.name << " (\n";
  std::size_t w = 0;
  for (const auto& p : m.ports) w = std::max(w, range(p.width).size());
  for (std::size_t i = 0; i < m.ports.size(); ++i) {
    const auto& p = m.ports[i];
    std::string r = range(p.width);
    r.resize(w, ' ');
    os << "  " << (p.output ? "output" : "input ") << " wire " << r << p.name
       << (i + 1 < m.ports.size() ? "," : "");
    if (!p.comment.empty()) os << "  // " << p.comment;
    os << "\n";
  }
  os << ");\n";
  for (const auto& it : m.items) {
    if (const auto* n = std::get_if<Net>(&it)) {
      if (!n->attr.empty()) os << "  (* " << n->attr << " *)\n";
      os << "  " << (n->is_reg ? "reg " : "wire ") << (n->is_signed ? "signed " : "")
         << range(n->width) << n->name;
      if (n->depth > 0) os << " [0:" << n->depth - 1 << "]";
      os << ";";
      if (!n->comment.empty()) os << "  // " << n->comment;
      os << "\n";
    } else if (const auto* a = std::get_if<ContAssign>(&it)) {
      os << "  assign " << a->lhs << " = " << a->rhs << ";";
      if (!a->comment.empty()) os << "  // " << a->comment;
      os << "\n";
    } else if (const auto* al = std::get_if<Always>(&it)) {
      if (!al->comment.empty()) os << "  // " << al->comment << "\n";
      os << "  always " << (al->clocked ? "@(posedge clk_i)" : "@*") << " begin\n";
      emit_block(os, al->body, 4, al->clocked);
      os << "  end\n";
    } else if (const auto* in = std::get_if<Instance>(&it)) {
      if (!in->comment.empty()) os << "  // " << in->comment << "\n";
      os << "  " << in->module << " " << in->name << " (\n";
      for (std::size_t i = 0; i < in->connections.size(); ++i) {
        const auto& [port, expr] = in->connections[i];
        os << "    ." << port << "(" << expr << ")" << (i + 1 < in->connections.size() ? "," : "")
           << "\n";
      }
      os << "  );\n";
    } else if (const auto* s = std::get_if<Section>(&it)) {
      // Consecutive sections are one comment block: a blank line only before the first.
      const bool continued = &it != &m.items.front() && std::holds_alternative<Section>(*(&it - 1));
      os << (continued ? "" : "\n") << "  // " << s->text << "\n";
    }
  }
  os << "endmodule\n\n`default_nettype wire\n";
  return os.str();
}

}  // namespace normcore::gen
