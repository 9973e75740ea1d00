// The job controller's shared pieces (accel_ctrl.cpp: the START job; accel_ring.cpp: the
// descriptor ring of a `--ring` configuration). Private to the generator library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "accel_internal.hpp"

namespace normcore::gen::accel_detail {

inline std::uint64_t u(long long v) {
  return static_cast<std::uint64_t>(v);
}
// An error code as the 8-bit ERR_CODE value.
inline Expr code(AccelError e) {
  return ex::lit(8, u(static_cast<int>(e)));
}

// The job FSM's states, in encoding order (IDLE = 0). FETCH, DSNAP and WB exist only with
// --ring (the descriptor fetch, its snapshot, the status write-back).
enum State {
  IDLE,
  MUL1,
  MUL2,
  SIZES,
  CHECK,
  CFG,
  CFGW,
  PARAM,
  RUN,
  ABORT,
  FLUSH,
  FETCH,
  DSNAP,
  WB,
  kStates
};

struct Ctx {
  const AccelConfig& c;
  Module& m;
  std::vector<Expr> st;  // the states' localparams
  Expr r(const std::string& n) const { return m.ref(n); }
  const Expr& s(State x) const { return st[static_cast<std::size_t>(x)]; }
  Expr in_state(State x) const { return ex::eq(r("st_q"), s(x)); }
  Stmt a(const char* q, const Expr& v) const { return assign(r(q), v); }
  Stmt to(State x) const { return assign(r("st_q"), s(x)); }
};

// Ring ports of <n>_ctrl (the RING_* register fields, the read FIFO's head, the write FIFO's
// room, the status words), its registers and wires (before the FSM), its FSM pieces, the
// ring registers' process and outputs (after it).
void ring_ports(Module& m, const AccelConfig& c);
void ring_state_regs(Ctx& x);  // the prefetch state (before the busy wire)
void ring_regs(Ctx& x);
Block ring_launch(const Ctx& x);  // IDLE: fetch the descriptor at TAIL
Block ring_wb_entry(const Ctx& x);
std::vector<CaseArm> ring_arms(const Ctx& x);  // FETCH, DSNAP, WB
Stmt ring_capture(const Ctx& x);               // descriptor words from the read DMA
Block ring_prefetch(const Ctx& x);  // the next descriptor's fetch while RUN ends (after the case)
void ring_process(Ctx& x);
void ring_outputs(Ctx& x);

}  // namespace normcore::gen::accel_detail
