// The accelerator's SystemC/TLM-2.0 model in a small virtual platform (sc_main):
//
//   Cpu --(initiator socket)--> acc.regs     TlmAccelerator<V<name>>     acc.dma --> TlmMemory
//   Cpu.irq (sc_in<bool>) <---- acc.irq
//
// The CPU (an SC_THREAD) reads ID and CAPS through the register socket, builds a random
// batch-norm job of the requested shape, loads input and parameters into the memory (back door:
// the bench's loader), programs the job with the generated register header (<name>_regs.hpp),
// waits for the interrupt, reads STATUS / ERR_CODE / PERF_ACTIVE, acknowledges IRQ_STATUS and
// checks the output against the golden model (normcore::apply_tensor). Prints cycles, the
// simulation speed and PASS or FAIL; exits 0 on PASS.
//
//   tlm_sc_main_<name> [--n N] [--c C] [--hw HW] [--nhwc] [--seed S] [--latency CYCLES]
//   (default: 1 x 64 x 56*56, NCHW, memory latency 8 cycles)
//
// Built by sim/tlm.cmake for each device with NC_REGS_HEADER="<name>_regs.hpp" and
// NC_REGS_NS=<name>_regs; the Verilated model class comes from nc_sim_model.hpp (generated).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include NC_REGS_HEADER
#include "nc_sim_model.hpp"  // normcore::sim::model::Top = V<name>
#include "normcore/contract.hpp"
#include "tlm_bridge.hpp"

namespace {

namespace regs = NC_REGS_NS;
using Accel = normcore::vp::TlmAccelerator<normcore::sim::model::Top>;
using Memory = normcore::vp::TlmMemory<32>;

constexpr std::uint64_t kMemBase = 0x8000'0000;
constexpr std::uint64_t kMemSize = 64ULL << 20;

struct Args {
  std::uint64_t n = 1, c = 64, hw = 56 * 56;
  bool nhwc = false;
  std::uint64_t seed = 1;
  std::uint64_t latency = 8;
};

void put_bits(std::vector<std::uint8_t>& out, std::uint64_t bit, std::uint64_t v, unsigned w) {
  for (unsigned i = 0; i < w; ++i, ++bit) {
    if (((v >> i) & 1U) != 0) out[bit / 8] |= static_cast<std::uint8_t>(1U << (bit % 8));
  }
}
std::int64_t get_bits(const std::vector<std::uint8_t>& in, std::uint64_t bit, unsigned w,
                      bool sign) {
  std::uint64_t u = 0;
  for (unsigned i = 0; i < w; ++i, ++bit) {
    if (((in[bit / 8] >> (bit % 8)) & 1U) != 0) u |= 1ULL << i;
  }
  if (sign && ((u >> (w - 1)) & 1U) != 0) u |= ~0ULL << w;
  return static_cast<std::int64_t>(u);
}
std::uint64_t mask(unsigned w) {
  return w >= 64 ? ~0ULL : (1ULL << w) - 1;
}
std::uint32_t field(std::uint32_t reg, std::uint32_t m, std::uint32_t shift) {
  return regs::field_get(reg, m, shift);
}

// The CPU: one thread that runs the job, then stops the simulation.
class Cpu : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Cpu);
  tlm_utils::simple_initiator_socket<Cpu, 32> socket;
  sc_core::sc_in<bool> irq;

  Cpu(const sc_core::sc_module_name& name, const Args& args, Accel& acc, Memory& mem)
      : sc_core::sc_module(name), socket("socket"), irq("irq"), args_(args), acc_(acc), mem_(mem) {
    SC_THREAD(run);
  }

  bool passed() const { return passed_; }

 private:
  // Register access, loosely timed: the CPU's local time offset goes with the transaction (the
  // accelerator synchronises and runs the AXI4-Lite handshakes in simulated time).
  std::uint32_t rd(std::uint32_t offset) {
    std::uint32_t v = 0;
    access(tlm::TLM_READ_COMMAND, offset, v);
    return v;
  }
  void wr(std::uint32_t offset, std::uint32_t v) { access(tlm::TLM_WRITE_COMMAND, offset, v); }
  void access(tlm::tlm_command cmd, std::uint32_t offset, std::uint32_t& v) {
    tlm::tlm_generic_payload gp;
    gp.set_command(cmd);
    gp.set_address(offset);
    gp.set_data_ptr(reinterpret_cast<unsigned char*>(&v));
    gp.set_data_length(4);
    gp.set_streaming_width(4);
    gp.set_byte_enable_ptr(nullptr);
    gp.set_dmi_allowed(false);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    socket->b_transport(gp, local_time_);
    if (gp.is_response_error()) {
      std::printf("register %s at 0x%03X: %s\n", cmd == tlm::TLM_READ_COMMAND ? "read" : "write",
                  offset, gp.get_response_string().c_str());
      ok_ = false;
    }
  }
  void check(bool cond, const std::string& what) {
    if (!cond) {
      std::printf("FAIL: %s\n", what.c_str());
      ok_ = false;
    }
  }

  void run() {
    run_job();
    passed_ = ok_;
    sc_core::sc_stop();
  }

  void run_job() {
    // Identification and capabilities, through the bus.
    check(rd(regs::ID_OFFSET) == regs::ID_RESET, "ID reads the NCBN magic");
    const std::uint32_t caps0 = rd(regs::CAPS0_OFFSET);
    const std::uint32_t caps2 = rd(regs::CAPS2_OFFSET);
    const std::uint32_t caps3 = rd(regs::CAPS3_OFFSET);
    normcore::ArithSpec a;
    a.xw = static_cast<int>(field(caps0, regs::CAPS0_IN_BITS_MASK, regs::CAPS0_IN_BITS_SHIFT));
    a.x_signed = field(caps0, regs::CAPS0_IN_SIGNED_MASK, regs::CAPS0_IN_SIGNED_SHIFT) != 0;
    a.yw = static_cast<int>(field(caps0, regs::CAPS0_OUT_BITS_MASK, regs::CAPS0_OUT_BITS_SHIFT));
    a.y_signed = field(caps0, regs::CAPS0_OUT_SIGNED_MASK, regs::CAPS0_OUT_SIGNED_SHIFT) != 0;
    a.sw =
        static_cast<int>(field(caps3, regs::CAPS3_SCALE_BITS_MASK, regs::CAPS3_SCALE_BITS_SHIFT));
    a.bw =
        static_cast<int>(field(caps3, regs::CAPS3_OFFSET_BITS_MASK, regs::CAPS3_OFFSET_BITS_SHIFT));
    const std::uint32_t lanes = field(caps0, regs::CAPS0_LANES_MASK, regs::CAPS0_LANES_SHIFT);
    const std::uint32_t bus = field(caps2, regs::CAPS2_BUS_BYTES_MASK, regs::CAPS2_BUS_BYTES_SHIFT);
    const std::uint32_t entry =
        field(caps3, regs::CAPS3_PARAM_ENTRY_BYTES_MASK, regs::CAPS3_PARAM_ENTRY_BYTES_SHIFT);
    const std::uint32_t max_c = field(rd(regs::CAPS1_OFFSET), regs::CAPS1_MAX_CHANNELS_MASK,
                                      regs::CAPS1_MAX_CHANNELS_SHIFT);
    if (args_.c > max_c || args_.c == 0 || args_.hw == 0 || args_.n == 0) {
      check(false, "shape within the device (C 1.." + std::to_string(max_c) + ")");
      return;
    }

    // A random job.
    std::mt19937_64 rng(args_.seed);
    auto uni = [&rng](std::int64_t lo, std::int64_t hi) {
      return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
    };
    const std::uint64_t elems = args_.n * args_.c * args_.hw;
    normcore::JobSettings js;
    js.shift = static_cast<int>(std::clamp(a.sw + a.xw - a.yw, 0, a.acc_bits()));
    js.rounding = normcore::Rounding::half_even;
    js.lo = a.y_min();
    js.hi = a.y_max();
    std::vector<std::int64_t> scale(args_.c), shift(args_.c), x(elems), y(elems);
    const int bbits = std::min(a.bw, a.sw + a.xw);
    for (std::uint64_t ch = 0; ch < args_.c; ++ch) {
      scale[ch] = uni(a.s_min(), a.s_max());
      shift[ch] = uni(-(std::int64_t{1} << (bbits - 1)), (std::int64_t{1} << (bbits - 1)) - 1);
    }
    for (auto& v : x) v = uni(a.x_min(), a.x_max());
    const auto layout = args_.nhwc ? normcore::Layout::nhwc : normcore::Layout::nchw;
    // NHWC runs as C x 1 x (N*HW); NCHW as C x HW x N.
    const std::uint64_t inner = args_.nhwc ? 1 : args_.hw;
    const std::uint64_t outer = args_.nhwc ? args_.n * args_.hw : args_.n;
    normcore::apply_tensor(x, y, scale, shift, static_cast<std::int64_t>(args_.nhwc ? 1 : args_.hw),
                           layout, js);

    // Memory image: parameters, input, output (aligned to the bus width).
    auto align = [bus](std::uint64_t v) { return (v + bus - 1) / bus * bus; };
    const std::uint64_t prm_addr = kMemBase;
    const std::uint64_t src_addr = align(prm_addr + args_.c * entry);
    const std::uint64_t src_bytes = (elems * static_cast<std::uint64_t>(a.xw) + 7) / 8;
    const std::uint64_t dst_addr = align(src_addr + src_bytes);
    const std::uint64_t dst_bytes = (elems * static_cast<std::uint64_t>(a.yw) + 7) / 8;
    if (dst_addr + dst_bytes > kMemBase + kMemSize) {
      check(false, "job fits the 64 MiB memory");
      return;
    }
    std::vector<std::uint8_t> prm(args_.c * entry, 0), src(src_bytes, 0), dst(dst_bytes, 0);
    for (std::uint64_t ch = 0; ch < args_.c; ++ch) {
      put_bits(prm, ch * entry * 8,
               static_cast<std::uint64_t>(scale[ch]) & mask(static_cast<unsigned>(a.sw)),
               static_cast<unsigned>(a.sw));
      put_bits(prm, ch * entry * 8 + static_cast<std::uint64_t>(a.sw),
               static_cast<std::uint64_t>(shift[ch]) & mask(static_cast<unsigned>(a.bw)),
               static_cast<unsigned>(a.bw));
    }
    for (std::uint64_t i = 0; i < elems; ++i) {
      put_bits(src, i * static_cast<std::uint64_t>(a.xw),
               static_cast<std::uint64_t>(x[i]) & mask(static_cast<unsigned>(a.xw)),
               static_cast<unsigned>(a.xw));
    }
    mem_.write(prm_addr, prm);
    mem_.write(src_addr, src);

    // Program and start the job.
    wr(regs::CHANNELS_OFFSET, static_cast<std::uint32_t>(args_.c));
    wr(regs::INNER_OFFSET, static_cast<std::uint32_t>(inner));
    wr(regs::OUTER_OFFSET, static_cast<std::uint32_t>(outer));
    std::uint32_t mode = 0;
    mode =
        regs::field_set(mode, regs::MODE_LAYOUT_MASK, regs::MODE_LAYOUT_SHIFT, args_.nhwc ? 1 : 0);
    mode = regs::field_set(mode, regs::MODE_ROUNDING_MASK, regs::MODE_ROUNDING_SHIFT,
                           static_cast<std::uint32_t>(js.rounding));
    mode = regs::field_set(mode, regs::MODE_SHIFT_MASK, regs::MODE_SHIFT_SHIFT,
                           static_cast<std::uint32_t>(js.shift));
    wr(regs::MODE_OFFSET, mode);
    wr(regs::CLAMP_LO_OFFSET, static_cast<std::uint32_t>(static_cast<std::uint64_t>(js.lo) &
                                                         mask(static_cast<unsigned>(a.yw))));
    wr(regs::CLAMP_HI_OFFSET, static_cast<std::uint32_t>(static_cast<std::uint64_t>(js.hi) &
                                                         mask(static_cast<unsigned>(a.yw))));
    wr(regs::SRC_LO_OFFSET, static_cast<std::uint32_t>(src_addr));
    wr(regs::SRC_HI_OFFSET, static_cast<std::uint32_t>(src_addr >> 32));
    wr(regs::DST_LO_OFFSET, static_cast<std::uint32_t>(dst_addr));
    wr(regs::DST_HI_OFFSET, static_cast<std::uint32_t>(dst_addr >> 32));
    wr(regs::PARAM_LO_OFFSET, static_cast<std::uint32_t>(prm_addr));
    wr(regs::PARAM_HI_OFFSET, static_cast<std::uint32_t>(prm_addr >> 32));
    const std::uint32_t ctrl =
        regs::CTRL_START_MASK | regs::CTRL_IRQ_EN_DONE_MASK | regs::CTRL_IRQ_EN_ERROR_MASK;
    const std::uint64_t c0 = acc_.cycles();
    const auto w0 = std::chrono::steady_clock::now();
    const std::clock_t cpu0 = std::clock();
    wr(regs::CTRL_OFFSET, ctrl);

    // Wait for the interrupt (with a bound: 64 cycles per element is far beyond any job).
    const sc_core::sc_time limit =
        acc_.config().clock_period * static_cast<double>(elems * 64 + 100000);
    if (!irq.read()) wait(limit, irq.posedge_event());
    const auto w1 = std::chrono::steady_clock::now();
    const std::clock_t cpu1 = std::clock();
    const std::uint64_t c1 = acc_.cycles();
    check(irq.read(), "the interrupt rose");
    const std::uint32_t status = rd(regs::STATUS_OFFSET);
    const std::uint32_t irq_status = rd(regs::IRQ_STATUS_OFFSET);
    const std::uint32_t err = rd(regs::ERR_CODE_OFFSET);
    const std::uint32_t active = rd(regs::PERF_ACTIVE_OFFSET);
    wr(regs::IRQ_STATUS_OFFSET, irq_status);  // W1C
    wait(acc_.config().clock_period * 2.0);
    check(!irq.read(), "the interrupt fell after IRQ_STATUS was cleared");
    check(field(status, regs::STATUS_DONE_MASK, regs::STATUS_DONE_SHIFT) == 1, "STATUS.done");
    check(field(status, regs::STATUS_ERROR_MASK, regs::STATUS_ERROR_SHIFT) == 0,
          "STATUS.error clear (ERR_CODE " + std::to_string(err) + ")");

    // Output against the golden model.
    mem_.read(dst_addr, dst);
    std::uint64_t bad = 0;
    for (std::uint64_t i = 0; i < elems; ++i) {
      const std::int64_t got = get_bits(dst, i * static_cast<std::uint64_t>(a.yw),
                                        static_cast<unsigned>(a.yw), a.y_signed);
      if (got != y[i] && bad++ < 5) {
        std::printf("element %llu: %lld, golden %lld\n", static_cast<unsigned long long>(i),
                    static_cast<long long>(got), static_cast<long long>(y[i]));
      }
    }
    check(bad == 0, std::to_string(bad) + " elements differ from the golden model");

    const double wall = std::chrono::duration<double>(w1 - w0).count();
    const double cpu = static_cast<double>(cpu1 - cpu0) / CLOCKS_PER_SEC;
    std::printf("%s: %u lanes, job %llux%llux%llu %s, memory latency %llu cycles\n",
                acc_.rtl.name(), lanes, static_cast<unsigned long long>(args_.n),
                static_cast<unsigned long long>(args_.c), static_cast<unsigned long long>(args_.hw),
                args_.nhwc ? "NHWC" : "NCHW", static_cast<unsigned long long>(args_.latency));
    std::printf(
        "PERF_ACTIVE %u cycles (%.3f elements/cycle); START to irq %llu cycles, %.1f us "
        "simulated, %.3f s wall (%.0f cycles/s), %.3f s CPU (%.0f cycles/s)\n",
        active, static_cast<double>(elems) / std::max(active, 1U),
        static_cast<unsigned long long>(c1 - c0),
        (acc_.config().clock_period * static_cast<double>(c1 - c0)).to_seconds() * 1e6, wall,
        static_cast<double>(c1 - c0) / std::max(wall, 1e-9), cpu,
        static_cast<double>(c1 - c0) / std::max(cpu, 1e-9));
    const auto& st = acc_.stats();
    std::printf(
        "bridge: %llu register reads, %llu writes; DMA %llu read and %llu write bursts in "
        "%llu TLM transactions, %llu + %llu bytes\n",
        static_cast<unsigned long long>(st.reg_reads),
        static_cast<unsigned long long>(st.reg_writes),
        static_cast<unsigned long long>(st.dma_read_bursts),
        static_cast<unsigned long long>(st.dma_write_bursts),
        static_cast<unsigned long long>(st.dma_transactions),
        static_cast<unsigned long long>(st.dma_read_bytes),
        static_cast<unsigned long long>(st.dma_write_bytes));
    for (const auto& v : st.violations) check(false, "AXI: " + v);
  }

  Args args_;
  Accel& acc_;
  Memory& mem_;
  sc_core::sc_time local_time_ = sc_core::SC_ZERO_TIME;
  bool ok_ = true, passed_ = false;
};

bool parse(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto num = [&](std::uint64_t& v) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      v = std::strtoull(argv[++i], &end, 0);
      return end != nullptr && *end == '\0';
    };
    bool ok = true;
    if (k == "--n") {
      ok = num(a.n);
    } else if (k == "--c") {
      ok = num(a.c);
    } else if (k == "--hw") {
      ok = num(a.hw);
    } else if (k == "--seed") {
      ok = num(a.seed);
    } else if (k == "--latency") {
      ok = num(a.latency);
    } else if (k == "--nhwc") {
      a.nhwc = true;
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr,
                   "usage: %s [--n N] [--c C] [--hw HW] [--nhwc] [--seed S] [--latency CYCLES]\n",
                   argv[0]);
      return false;
    }
  }
  return true;
}

}  // namespace

int sc_main(int argc, char* argv[]) {
  Args args;
  if (!parse(argc, argv, args)) return 2;

  normcore::vp::BridgeConfig cfg;  // 100 MHz, 4 KiB register window
  Accel acc("acc", cfg);
  Memory mem("mem", kMemBase, kMemSize, cfg.clock_period * static_cast<double>(args.latency));
  Cpu cpu("cpu", args, acc, mem);
  cpu.socket.bind(acc.regs);
  acc.dma.bind(mem.socket);
  cpu.irq(acc.irq);

  sc_core::sc_start();  // until the CPU calls sc_stop()
  const bool pass = cpu.passed();
  std::printf("%s\n", pass ? "PASS" : "FAIL");
  return pass ? 0 : 1;
}
