// A small in-memory description of Verilog modules: ports, nets, continuous assignments, always
// blocks with structured statements, and instances. Builders create it; emit_module() prints it.
// Expressions are kept as text built by the helpers in vexpr.hpp, which size every operand.
#pragma once

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace normcore::gen {

struct Port {
  std::string name;
  bool output = false;
  int width = 1;
  std::string comment;
};

struct Net {
  std::string name;
  int width = 1;
  bool is_reg = false;
  bool is_signed = false;
  int depth = 0;  // > 0: an unpacked array (memory) of `depth` words
  std::string comment;
  std::string attr;  // emitted as (* attr *) before the declaration when not empty
};

struct Stmt;
using Block = std::vector<Stmt>;

struct Assign {  // blocking in a combinational block, non-blocking in a clocked one
  std::string lhs, rhs;
};
struct If {
  std::string cond;
  Block then_body, else_body;
};
struct Case {
  std::string subject;
  std::vector<std::pair<std::string, Block>> arms;  // label text ("default" allowed)
};
struct Note {
  std::string text;
};
struct Stmt {
  std::variant<Assign, If, Case, Note> node;
};

struct ContAssign {
  std::string lhs, rhs, comment;
};
struct Always {
  bool clocked = false;  // true: always @(posedge clk_i); false: always @*
  Block body;
  std::string comment;
};
struct Instance {
  std::string module, name;
  std::vector<std::pair<std::string, std::string>> connections;  // port -> expression
  std::string comment;
};
struct Section {  // a comment line that separates groups of items
  std::string text;
};
using Item = std::variant<Net, ContAssign, Always, Instance, Section>;

struct Module {
  std::string name;
  std::vector<std::string> description;  // comment lines printed above the module
  std::vector<Port> ports;
  std::vector<Item> items;

  void port(std::string pname, bool output, int width, std::string comment = {});
  void in(std::string pname, int width, std::string comment = {}) {
    port(std::move(pname), false, width, std::move(comment));
  }
  void out(std::string pname, int width, std::string comment = {}) {
    port(std::move(pname), true, width, std::move(comment));
  }
  void wire(std::string wname, int width, std::string comment = {}, bool is_signed = false);
  void reg(std::string rname, int width, std::string comment = {}, bool is_signed = false);
  void memory(std::string mname, int width, int depth, std::string comment = {});
  void attr_last(std::string a);  // (* a *) on the net declared last
  void assign(std::string lhs, std::string rhs, std::string comment = {});
  void section(std::string text);
  void always_ff(Block body, std::string comment = {});
  void always_comb(Block body, std::string comment = {});
  void instance(Instance inst);
  // Throws std::logic_error on a duplicate or missing name (a generator bug, not user input).
  void validate() const;
};

// Statement helpers.
Stmt assign(std::string lhs, std::string rhs);
Stmt if_(std::string cond, Block then_body, Block else_body = {});
Stmt case_(std::string subject, std::vector<std::pair<std::string, Block>> arms);
Stmt note(std::string text);

// Prints one module with `header` (comment lines) at the top of the file.
std::string emit_module(const Module& m, const std::vector<std::string>& header);

}  // namespace normcore::gen
