// A small in-memory description of Verilog modules: ports, nets, localparams, continuous
// assignments, always blocks with structured statements, and instances. Expressions are typed
// trees (expr.hpp). Builders create it; emit_module() only prints it (deterministic, lines
// wrapped at EmitOptions::line_limit columns).
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "normcore/gen/expr.hpp"

namespace normcore::gen {

// The one clock of every generated module: every clocked block is `always @(posedge clk_i)`.
// The clock constraints (SDC, XDC) name this port of the top.
inline constexpr const char* kClockPort = "clk_i";

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
  std::string init;  // emitted as `reg x = init;` when not empty (FORMAL blocks only)
};

struct Stmt;
using Block = std::vector<Stmt>;

struct Assign {  // blocking in a combinational block, non-blocking in a clocked one
  Expr lhs, rhs;
};
struct If {
  Expr cond;
  Block then_body, else_body;
};
struct CaseArm {
  std::vector<Expr> labels;  // empty: default
  Block body;
};
struct Case {
  Expr subject;
  std::vector<CaseArm> arms;
};
struct Note {
  std::string text;
};
// An immediate formal check in a clocked block: `assert (cond);`, `assume (cond);` or
// `cover (cond);` (Yosys `read_verilog -formal`). Only inside Module::formal_begin() ..
// formal_end(), so simulators and linters (FORMAL undefined) never see it.
struct Check {
  enum class Kind { assert_, assume, cover };
  Kind kind = Kind::assert_;
  Expr cond;
};
struct Stmt {
  std::variant<Assign, If, Case, Note, Check> node;
};

struct ContAssign {
  Expr lhs, rhs;
  std::string comment;
};
struct Always {
  bool clocked = false;  // true: always @(posedge clk_i); false: always @*
  Block body;
  std::string comment;
};
// A parameter of an instance: a sized constant (width > 0: `width'dvalue`) or a string.
struct InstParam {
  std::string name;
  int width = 0;  // 0: `text` is a string parameter ("CLK0")
  std::uint64_t value = 0;
  std::string text;
};
struct Instance {
  std::string module, name;
  std::vector<std::pair<std::string, Expr>> connections;  // port -> expression
  std::string comment;
  std::vector<InstParam> parameters;  // #(.NAME(value), ...), in this order

  Instance() = default;
  Instance(std::string mod, std::string inst, std::vector<std::pair<std::string, Expr>> conns,
           std::string cmt = {})
      : module(std::move(mod)),
        name(std::move(inst)),
        connections(std::move(conns)),
        comment(std::move(cmt)) {}
  // Transitional: connections as text (builders not yet ported).
  template <class S>
  requires std::is_same_v<S, std::string> Instance(
      std::string mod, std::string inst, const std::vector<std::pair<std::string, S>>& conns,
      std::string cmt = {})
      : module(std::move(mod)), name(std::move(inst)), comment(std::move(cmt)) {
    for (const auto& [port, e] : conns) connections.emplace_back(port, Expr(e));
  }
};
struct Section {  // a comment line that separates groups of items
  std::string text;
};
struct LocalParam {
  std::string name;
  int width = 1;
  std::uint64_t value = 0;
  std::string comment;
};
struct Params {  // one localparam declaration (one or more names of the same width)
  std::vector<LocalParam> params;
  std::string comment;
};
// A conditional-compilation line: `ifdef MACRO, `else or `endif (the items between belong to the
// branch; a net declared in one branch is used only there).
struct Conditional {
  enum class Kind { ifdef, else_, endif };
  Kind kind;
  std::string macro;  // ifdef only
};
using Item = std::variant<Net, ContAssign, Always, Instance, Section, Params, Conditional>;

// A flop: q <= reset value (when it has one) while rst_ni is low, else q <= d.
struct Flop {
  Expr q, d;
  Expr reset;  // empty: no reset
};

// A clocked process written as "if (reset) resets else body; always" (Module::process): the
// next-state logic goes into one always @* block on <x>_d regs (declared by process(); <x>_q
// without the _q, other names + _d) that start from their q unless a top-level statement sets
// them, and one clocked block of q <= d. A register that `body` assigns and `resets` does not is
// loaded only out of reset; one whose only assignment is a top-level `q = <name>` is flopped
// from that name directly (no _d).
struct ClockedProcess {
  std::vector<std::pair<Expr, Expr>> resets;  // q, value while rst_ni is low
  Expr clear;                 // optional: also take the reset values when this is high
  Block body;                 // when not in reset (and not clear)
  Block always;               // every cycle: registers without a reset
  std::string comment;        // above the always @* block
  std::string flops_comment;  // above the clocked block
};

struct EmitOptions {
  int line_limit = 100;  // expressions are broken at operators and commas to stay within it
};

struct Module {
  std::string name;
  std::vector<std::string> description;  // comment lines printed above the module
  std::vector<Port> ports;
  std::vector<Item> items;

  // Declarations return a reference to what they declare.
  Expr port(std::string pname, bool output, int width, std::string comment = {});
  Expr in(std::string pname, int width, std::string comment = {}) {
    return port(std::move(pname), false, width, std::move(comment));
  }
  Expr out(std::string pname, int width, std::string comment = {}) {
    return port(std::move(pname), true, width, std::move(comment));
  }
  Expr wire(std::string wname, int width, std::string comment = {}, bool is_signed = false);
  Expr reg(std::string rname, int width, std::string comment = {}, bool is_signed = false);
  Expr memory(std::string mname, int width, int depth, std::string comment = {});
  // localparam [width-1:0] name = value;
  Expr localparam(std::string pname, int width, std::uint64_t value, std::string comment = {});
  // Named FSM states: one localparam block, state i = i, the width the fewest bits that hold
  // them all. Returns the names as references, in order.
  std::vector<Expr> states(const std::vector<std::string>& names, std::string comment = {});
  // A reference to the port, net or localparam declared as `rname` (throws if there is none).
  [[nodiscard]] Expr ref(const std::string& rname) const;
  void attr_last(std::string a);  // (* a *) on the net declared last
  // Throws std::logic_error when both sides are typed and their widths differ.
  void assign(Expr lhs, Expr rhs, std::string comment = {});
  void section(std::string text);
  void always_ff(Block body, std::string comment = {});
  void always_comb(Block body, std::string comment = {});
  // One clocked block: the flops with a reset under `if (!rst_ni)`, then the others; only q <= d.
  void flops(const std::vector<Flop>& fs, std::string comment = {});
  // The one implementation of a clocked process (see ClockedProcess). Assigned names must be
  // typed references; a register may not be both in `body` and in `always`.
  void process(const ClockedProcess& p);
  // A clocked process written as statements (`if (!rst_ni) <resets> else <updates>`, then
  // updates without reset): process() with the reset branch as resets, the else branch as body
  // and the rest as always; comments "<comment>: next state" and "<comment>". A register with a
  // reset must not be assigned outside the else branch, one without not inside it.
  void seq(const Block& body, std::string comment = {});
  void instance(Instance inst);
  // `ifdef macro / `else / `endif around the items added between the calls.
  void ifdef(std::string macro);
  void else_();
  void endif();
  // `ifdef FORMAL .. `endif: the verification-only items (f_* nets and flops, clocked blocks of
  // Check statements) added between the calls. A Check outside such a block is rejected by
  // validate(), as is a net with an init value.
  void formal_begin();
  void formal_end();
  // Throws std::logic_error on a duplicate or missing name (a generator bug, not user input).
  void validate() const;
};

// Statement helpers. Typed operands are checked: assignment sides of equal width, a 1-bit
// condition, case labels as wide as the subject (std::logic_error otherwise).
Stmt assign(Expr lhs, Expr rhs);
Stmt if_(Expr cond, Block then_body, Block else_body = {});
Stmt case_(Expr subject, std::vector<CaseArm> arms);
// Transitional: labels as text ("default" for the default arm).
Stmt case_(Expr subject, std::vector<std::pair<std::string, Block>> arms);
Stmt note(std::string text);
// Formal checks (see Check); `cond` is 1 bit.
Stmt assert_(Expr cond);
Stmt assume(Expr cond);
Stmt cover(Expr cond);

// Prints one module with `header` (comment lines) at the top of the file.
std::string emit_module(const Module& m, const std::vector<std::string>& header,
                        const EmitOptions& opts = {});

}  // namespace normcore::gen
