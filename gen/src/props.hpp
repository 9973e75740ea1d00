// Protocol properties inside the generated RTL (private to the generator library): the builders
// add, at the end of a module, an `ifdef FORMAL block of f_* nets and flops and one clocked block
// of immediate assert / assume / cover statements (ir.hpp, Check) that Yosys 0.23 reads with
// `read_verilog -formal`. Simulators and linters never define FORMAL. scripts/prove_props.py
// proves them (docs/architecture.md, "Protocol properties").
//
// Conventions: the first cycle is in reset (rst_ni low), every later one out of reset (assumed);
// f_past_q is 0 in the first cycle, then 1; checks apply from the second cycle. Assumptions
// constrain a module's inputs, assertions its outputs and state; a proof of a module that
// instantiates others turns their assumptions into assertions (chformal -assume2assert).
#pragma once

#include <string>
#include <vector>

#include "normcore/gen/ir.hpp"

namespace normcore::gen::fv {

class Formal {
 public:
  // formal_begin(), f_past_q and the reset assumption.
  explicit Formal(Module& m);
  Formal(const Formal&) = delete;
  Formal& operator=(const Formal&) = delete;
  ~Formal() = default;

  [[nodiscard]] Module& mod() { return m_; }
  [[nodiscard]] const Expr& past() const { return past_; }
  // f_<name>_q (no reset: next() gives it its value every cycle).
  Expr reg(const std::string& name, int width, const std::string& comment = {});
  // f_<name> = value (a wire).
  Expr wire(const std::string& name, const Expr& value, const std::string& comment = {});
  // (* anyseq *) f_<name>: a free value in every cycle (the solver picks it).
  Expr anyseq(const std::string& name, int width, const std::string& comment = {});
  // q <= (f_past_q ? d : first), or q <= d when `first` is empty.
  void next(const Expr& q, const Expr& d, const Expr& first = {});
  // A check (assert_ / assume / cover or an if_ of them); all are guarded by f_past_q.
  void add(Stmt s);
  // The flops, the checks, formal_end().
  void done();

 private:
  Module& m_;
  Expr past_;
  std::vector<Flop> flops_;
  Block checks_;
};

// A valid/ready interface. Payload parts are concatenated.
struct Stream {
  std::string name;  // f_<name>_stall_q, f_<name>_data_q
  Expr valid, ready;
  std::vector<Expr> payload;
};
// AXI4-Stream / AXI4 handshake rules: once valid is high and ready low, valid stays high and the
// payload stable in the next cycle. `assume` for a module's input, else asserted (its output).
void stream_rules(Formal& f, const Stream& s, bool as_assumption);

// tkeep of a beat: not zero, contiguous from lane 0, all ones unless tlast.
Expr keep_ok(const Expr& keep, const Expr& last);

// A buffer between in_fire (in_data) and out_fire (out_data) that holds at most `capacity`
// beats: f_<name>_cnt_q counts beats held (asserted <= capacity and equal to the design's
// `held` / out_valid when given); no beat leaves an empty buffer; a tracked beat (picked by a
// free f_<name>_pick among the accepted ones) leaves unchanged after exactly the beats that
// entered before it: no loss, no duplication, order kept.
struct Channel {
  std::string name;
  Expr in_fire, in_data, out_fire, out_data;
  int capacity = 1;
  Expr held;       // optional: the design's count of beats held
  Expr out_valid;  // optional: must be (beats held != 0)
};
// Returns f_<name>_cnt_q.
Expr channel(Formal& f, const Channel& c);

// The AXI4-Lite slave ports s_axil_* of m: the masters' handshake rules assumed, the slave's
// asserted; a write response only for a write whose address and data were both accepted, a read
// response only for an accepted read, one at a time.
void axil_slave(Formal& f);

// Widths of an AXI4 burst: addr[11:0] + (len + 1) * bus_bytes <= 4096 and len < max_burst.
Expr burst_in_4k(const Expr& addr, const Expr& len, int bus_bytes);

}  // namespace normcore::gen::fv
