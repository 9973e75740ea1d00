// SystemC/TLM-2.0 model of a generated normcore accelerator for virtual platforms: the Verilated
// RTL itself (verilator --sc), so it is cycle-accurate, wrapped in TLM-2.0 sockets. Header-only,
// templated on the Verilated top (class V<name> of <name>_top).
//
//   #include "Vnormcore.h"     // verilator --sc --top-module normcore_top --prefix Vnormcore
//   #include "tlm_bridge.hpp"
//   normcore::vp::TlmAccelerator<Vnormcore> acc("acc");   // own clock, 100 MHz by default
//   bus.initiator_socket.bind(acc.regs);                  // register block: 4 KiB window
//   acc.dma.bind(memory.socket);                          // DMA master
//   cpu.irq_in(acc.irq);                                  // level interrupt (sc_signal<bool>)
//
// regs (tlm_utils::simple_target_socket, 32 bits): every b_transport becomes one AXI4-Lite
//   transaction on s_axil_*. Accepted: 4-byte reads/writes at 4-aligned offsets below the window
//   size; byte enables (0x00/0xFF per byte) become WSTRB on writes and mask the copy on reads.
//   Rejected without touching the pins: data length != 4 or streaming width < 4 ->
//   TLM_BURST_ERROR_RESPONSE, an offset outside the window or not 4-aligned ->
//   TLM_ADDRESS_ERROR_RESPONSE, byte enables other than 0x00/0xFF ->
//   TLM_BYTE_ENABLE_ERROR_RESPONSE. The RTL's answer maps OKAY/EXOKAY -> TLM_OK_RESPONSE, SLVERR
//   (unmapped offset) -> TLM_GENERIC_ERROR_RESPONSE, DECERR -> TLM_ADDRESS_ERROR_RESPONSE. No DMI
//   (get_direct_mem_ptr answers false, dmi_allowed is false), no debug transport (transport_dbg
//   moves 0 bytes).
// dma (tlm_utils::simple_initiator_socket, BUSWIDTH = DmaWidth, 32 by default): the AXI4 slave
//   side of m_axi_*. An INCR burst of full bus words at an aligned address becomes one TLM
//   transaction of (AxLEN + 1) * bus bytes at AxADDR; any other burst (FIXED, WRAP, narrow or
//   unaligned) becomes one transaction per beat covering that beat's byte lanes. Writes carry
//   byte enables built from WSTRB (none when every strobe is set). A response other than
//   TLM_OK_RESPONSE answers the burst with SLVERR (DECERR for TLM_ADDRESS_ERROR_RESPONSE) on every
//   R beat or on B. Up to max_outstanding bursts per direction are accepted (AR/AW READY low
//   beyond); the read and write sides run concurrently, each in order.
// irq: the RTL's irq_o (level, high while IRQ_STATUS & CTRL.irq_en_* is non-zero).
// clk / rst_n: the model's own sc_clock (BridgeConfig::clock_period) and synchronous reset,
//   held low for reset_cycles rising edges at time 0 and again after reset().
//
// Timing (loosely-timed initiators with annotated delays):
//   regs: b_transport first waits the annotated delay (synchronises: the RTL cannot run ahead of
//     or behind the kernel), then runs the AXI4-Lite handshakes on the clock, taking real
//     simulated time (about 3-4 clock periods per access), and returns with delay = 0.
//   dma: each transaction is issued with delay 0 at the time of the AR handshake (write: when its
//     AW and last W beat are in); the delay the target annotates is when the data exists: R beats
//     (B) are presented at the first rising edge at or after now + delay, one beat per cycle.
//     Transactions of later bursts are issued without waiting for that delay, so the target's
//     annotated delay acts as a pipelined latency (AXI outstanding bursts). A target that calls
//     wait() inside b_transport blocks its direction until it returns.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <systemc>
#include <tlm>
#include <type_traits>
#include <utility>
#include <vector>

#include "axi_mem.hpp"  // normcore::sim::SparseMemory (TlmMemory's store)
#include "normcore/util/hex.hpp"

namespace normcore::vp {

inline constexpr unsigned kAxiOkay = 0, kAxiExokay = 1, kAxiSlverr = 2, kAxiDecerr = 3;

// AXI RRESP/BRESP -> TLM: SLVERR -> generic error, DECERR -> address error.
inline ::tlm::tlm_response_status axi_to_tlm(unsigned resp) {
  switch (resp & 3U) {
    case kAxiSlverr:
      return ::tlm::TLM_GENERIC_ERROR_RESPONSE;
    case kAxiDecerr:
      return ::tlm::TLM_ADDRESS_ERROR_RESPONSE;
    default:
      return ::tlm::TLM_OK_RESPONSE;
  }
}
// TLM -> AXI: OK -> OKAY, address error -> DECERR, any other status (incomplete too) -> SLVERR.
inline unsigned tlm_to_axi(::tlm::tlm_response_status s) {
  if (s == ::tlm::TLM_OK_RESPONSE) return kAxiOkay;
  return s == ::tlm::TLM_ADDRESS_ERROR_RESPONSE ? kAxiDecerr : kAxiSlverr;
}
inline const char* axi_resp_name(unsigned resp) {
  static const char* const names[] = {"OKAY", "EXOKAY", "SLVERR", "DECERR"};
  return names[resp & 3U];
}

struct BridgeConfig {
  sc_core::sc_time clock_period = sc_core::sc_time(10, sc_core::SC_NS);  // 100 MHz
  unsigned reset_cycles = 4;                 // rising edges with rst_ni low (time 0 and reset())
  std::uint32_t reg_window_bytes = 4096;     // 2^(AXI4-Lite address bits): manifest reg_addr_bits
  unsigned max_outstanding = 16;             // AXI4 bursts per direction accepted and not answered
  unsigned max_write_beats = 1024;           // W beats buffered ahead of their burst's transaction
  std::uint64_t axil_timeout_cycles = 4096;  // no AXI4-Lite handshake -> generic error
};

struct BridgeStats {
  std::uint64_t reg_reads = 0, reg_writes = 0;  // AXI4-Lite transactions run on the pins
  std::uint64_t reg_rejected = 0;               // refused by the TLM checks (pins untouched)
  std::uint64_t reg_errors = 0;                 // answered SLVERR/DECERR or timed out
  std::uint64_t dma_read_bursts = 0, dma_write_bursts = 0;
  std::uint64_t dma_transactions = 0;  // b_transport calls on dma
  std::uint64_t dma_read_bytes = 0, dma_write_bytes = 0;
  std::uint64_t dma_errors = 0;         // transactions answered other than OK
  std::vector<std::string> violations;  // AXI protocol problems (first 16)
};

namespace detail {

template <class Port>
using value_of = typename std::remove_reference_t<Port>::data_type;

template <class T>
std::uint64_t to_u64(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v ? 1U : 0U;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<std::uint64_t>(v);
  } else {
    return v.to_uint64();
  }
}
template <class T>
T from_u64(std::uint64_t v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(v);
  } else {
    T t;
    t = v;
    return t;
  }
}
// Bits of a port value: integral ports are exactly their type's size here (Verilator --sc maps
// 2..32 bits to uint32_t and 33..64 to uint64_t; the AXI data buses are 32..512 bits).
template <class T>
std::size_t bits_of(const T& v) {
  if constexpr (std::is_integral_v<T>) {
    (void)v;
    return sizeof(T) * 8;
  } else {
    return static_cast<std::size_t>(v.length());
  }
}
// Little-endian byte image of a port value (n bytes) and back.
template <class T>
void to_bytes(const T& v, std::uint8_t* p, std::size_t n) {
  if constexpr (std::is_integral_v<T>) {
    const auto u = static_cast<std::uint64_t>(v);
    for (std::size_t i = 0; i < n; ++i) p[i] = i < 8 ? static_cast<std::uint8_t>(u >> (8 * i)) : 0;
  } else {
    for (std::size_t i = 0; i < n; ++i) {
      const auto w = static_cast<std::uint32_t>(v.get_word(static_cast<int>(i / 4)));
      p[i] = static_cast<std::uint8_t>(w >> (8 * (i % 4)));
    }
  }
}
template <class T>
T from_bytes(const std::uint8_t* p, std::size_t n) {
  if constexpr (std::is_integral_v<T>) {
    std::uint64_t u = 0;
    for (std::size_t i = 0; i < n && i < 8; ++i) u |= std::uint64_t{p[i]} << (8 * i);
    return static_cast<T>(u);
  } else {
    T t;
    for (std::size_t w = 0; w * 4 < n; ++w) {
      std::uint32_t x = 0;
      for (std::size_t k = 0; k < 4 && w * 4 + k < n; ++k)
        x |= std::uint32_t{p[w * 4 + k]} << (8 * k);
      t.set_word(static_cast<int>(w), x);
    }
    return t;
  }
}

}  // namespace detail

// The accelerator as a TLM-2.0 module around the Verilated top `Top` (see the file comment).
template <class Top, unsigned int DmaWidth = 32>
class TlmAccelerator : public sc_core::sc_module {
  template <class P>
  using sig = sc_core::sc_signal<detail::value_of<P>>;

 public:
  SC_HAS_PROCESS(TlmAccelerator);

  tlm_utils::simple_target_socket<TlmAccelerator, 32> regs;
  tlm_utils::simple_initiator_socket<TlmAccelerator, DmaWidth> dma;
  sc_core::sc_signal<bool> irq;
  sc_core::sc_clock clk;
  sc_core::sc_signal<bool> rst_n;

  // Every other pin of the RTL, named as the port (for sc_trace and monitors; do not write).
#define NC_VP_PIN(p) sig<decltype(std::declval<Top&>().p)> p{#p}
  NC_VP_PIN(s_axil_awaddr);
  NC_VP_PIN(s_axil_awprot);
  NC_VP_PIN(s_axil_awvalid);
  NC_VP_PIN(s_axil_awready);
  NC_VP_PIN(s_axil_wdata);
  NC_VP_PIN(s_axil_wstrb);
  NC_VP_PIN(s_axil_wvalid);
  NC_VP_PIN(s_axil_wready);
  NC_VP_PIN(s_axil_bresp);
  NC_VP_PIN(s_axil_bvalid);
  NC_VP_PIN(s_axil_bready);
  NC_VP_PIN(s_axil_araddr);
  NC_VP_PIN(s_axil_arprot);
  NC_VP_PIN(s_axil_arvalid);
  NC_VP_PIN(s_axil_arready);
  NC_VP_PIN(s_axil_rdata);
  NC_VP_PIN(s_axil_rresp);
  NC_VP_PIN(s_axil_rvalid);
  NC_VP_PIN(s_axil_rready);
  NC_VP_PIN(m_axi_awid);
  NC_VP_PIN(m_axi_awaddr);
  NC_VP_PIN(m_axi_awlen);
  NC_VP_PIN(m_axi_awsize);
  NC_VP_PIN(m_axi_awburst);
  NC_VP_PIN(m_axi_awlock);
  NC_VP_PIN(m_axi_awcache);
  NC_VP_PIN(m_axi_awprot);
  NC_VP_PIN(m_axi_awvalid);
  NC_VP_PIN(m_axi_awready);
  NC_VP_PIN(m_axi_wdata);
  NC_VP_PIN(m_axi_wstrb);
  NC_VP_PIN(m_axi_wlast);
  NC_VP_PIN(m_axi_wvalid);
  NC_VP_PIN(m_axi_wready);
  NC_VP_PIN(m_axi_bid);
  NC_VP_PIN(m_axi_bresp);
  NC_VP_PIN(m_axi_bvalid);
  NC_VP_PIN(m_axi_bready);
  NC_VP_PIN(m_axi_arid);
  NC_VP_PIN(m_axi_araddr);
  NC_VP_PIN(m_axi_arlen);
  NC_VP_PIN(m_axi_arsize);
  NC_VP_PIN(m_axi_arburst);
  NC_VP_PIN(m_axi_arlock);
  NC_VP_PIN(m_axi_arcache);
  NC_VP_PIN(m_axi_arprot);
  NC_VP_PIN(m_axi_arvalid);
  NC_VP_PIN(m_axi_arready);
  NC_VP_PIN(m_axi_rid);
  NC_VP_PIN(m_axi_rdata);
  NC_VP_PIN(m_axi_rresp);
  NC_VP_PIN(m_axi_rlast);
  NC_VP_PIN(m_axi_rvalid);
  NC_VP_PIN(m_axi_rready);
#undef NC_VP_PIN

  Top rtl;  // the Verilated RTL

  explicit TlmAccelerator(const sc_core::sc_module_name& name, const BridgeConfig& cfg = {})
      : sc_core::sc_module(name),
        regs("regs"),
        dma("dma"),
        irq("irq"),
        clk("clk", cfg.clock_period),
        rst_n("rst_n", false),
        rtl("rtl"),
        cfg_(cfg) {
    bind_pins();
    bus_bytes_ = detail::bits_of(m_axi_rdata.read()) / 8;
    regs.register_b_transport(this, &TlmAccelerator::regs_b_transport);
    regs.register_transport_dbg(this, &TlmAccelerator::regs_transport_dbg);

    SC_THREAD(reset_thread);
    SC_THREAD(axil_thread);
    SC_THREAD(read_worker);
    SC_THREAD(write_worker);
    SC_METHOD(axi_edge);
    sensitive << clk.posedge_event();
    dont_initialize();
  }

  ~TlmAccelerator() override {
    rtl.final();
  }

  TlmAccelerator(const TlmAccelerator&) = delete;
  TlmAccelerator& operator=(const TlmAccelerator&) = delete;

  // Asserts rst_ni for reset_cycles rising edges, from the next delta on: every register and
  // the job engine go to their reset state; DMA bursts in flight are dropped (a transaction
  // still inside the target's b_transport finishes there, its result is discarded). Callable
  // from a process or, between sc_start calls, from the host.
  void reset() {
    reset_pending_ = true;
    in_reset_ = true;
    reset_request_.notify(sc_core::SC_ZERO_TIME);
  }
  [[nodiscard]] bool in_reset() const {
    return in_reset_;
  }
  const sc_core::sc_event& reset_done_event() const {
    return reset_done_;
  }

  [[nodiscard]] const BridgeConfig& config() const {
    return cfg_;
  }
  [[nodiscard]] std::size_t bus_bytes() const {
    return bus_bytes_;
  }
  [[nodiscard]] const BridgeStats& stats() const {
    return stats_;
  }
  void clear_violations() {
    stats_.violations.clear();
  }
  // Rising clock edges since time 0 (the clock runs from time 0, the first edge at 0).
  [[nodiscard]] std::uint64_t cycles() const {
    return static_cast<std::uint64_t>(sc_core::sc_time_stamp() / cfg_.clock_period);
  }

 private:
  struct AxilReq {
    bool write = false;
    std::uint32_t addr = 0, data = 0, strb = 0xF;
    unsigned resp = kAxiOkay;
    bool timeout = false, aborted = false, done = false;
  };
  struct Ax {  // one AR or AW
    std::uint32_t id = 0;
    std::uint64_t addr = 0;
    unsigned len = 0, size = 0, burst = 1;
  };
  struct ReadBurst {
    std::uint32_t id = 0;
    unsigned beats = 1, next = 0;
    unsigned resp = kAxiOkay;
    std::vector<std::uint8_t> data;  // beats * bus bytes
    sc_core::sc_time ready;
  };
  struct WriteBurst {
    std::vector<std::uint8_t> data, strb;  // per byte; strb 0x00 / 0xFF
    unsigned beats = 0;
  };
  struct Bresp {
    std::uint32_t id = 0;
    unsigned resp = kAxiOkay;
    sc_core::sc_time ready;
  };

  void bind_pins() {
    rtl.clk_i(clk);
    rtl.rst_ni(rst_n);
    rtl.irq_o(irq);
#define NC_VP_BIND(p) rtl.p(p)
    NC_VP_BIND(s_axil_awaddr);
    NC_VP_BIND(s_axil_awprot);
    NC_VP_BIND(s_axil_awvalid);
    NC_VP_BIND(s_axil_awready);
    NC_VP_BIND(s_axil_wdata);
    NC_VP_BIND(s_axil_wstrb);
    NC_VP_BIND(s_axil_wvalid);
    NC_VP_BIND(s_axil_wready);
    NC_VP_BIND(s_axil_bresp);
    NC_VP_BIND(s_axil_bvalid);
    NC_VP_BIND(s_axil_bready);
    NC_VP_BIND(s_axil_araddr);
    NC_VP_BIND(s_axil_arprot);
    NC_VP_BIND(s_axil_arvalid);
    NC_VP_BIND(s_axil_arready);
    NC_VP_BIND(s_axil_rdata);
    NC_VP_BIND(s_axil_rresp);
    NC_VP_BIND(s_axil_rvalid);
    NC_VP_BIND(s_axil_rready);
    NC_VP_BIND(m_axi_awid);
    NC_VP_BIND(m_axi_awaddr);
    NC_VP_BIND(m_axi_awlen);
    NC_VP_BIND(m_axi_awsize);
    NC_VP_BIND(m_axi_awburst);
    NC_VP_BIND(m_axi_awlock);
    NC_VP_BIND(m_axi_awcache);
    NC_VP_BIND(m_axi_awprot);
    NC_VP_BIND(m_axi_awvalid);
    NC_VP_BIND(m_axi_awready);
    NC_VP_BIND(m_axi_wdata);
    NC_VP_BIND(m_axi_wstrb);
    NC_VP_BIND(m_axi_wlast);
    NC_VP_BIND(m_axi_wvalid);
    NC_VP_BIND(m_axi_wready);
    NC_VP_BIND(m_axi_bid);
    NC_VP_BIND(m_axi_bresp);
    NC_VP_BIND(m_axi_bvalid);
    NC_VP_BIND(m_axi_bready);
    NC_VP_BIND(m_axi_arid);
    NC_VP_BIND(m_axi_araddr);
    NC_VP_BIND(m_axi_arlen);
    NC_VP_BIND(m_axi_arsize);
    NC_VP_BIND(m_axi_arburst);
    NC_VP_BIND(m_axi_arlock);
    NC_VP_BIND(m_axi_arcache);
    NC_VP_BIND(m_axi_arprot);
    NC_VP_BIND(m_axi_arvalid);
    NC_VP_BIND(m_axi_arready);
    NC_VP_BIND(m_axi_rid);
    NC_VP_BIND(m_axi_rdata);
    NC_VP_BIND(m_axi_rresp);
    NC_VP_BIND(m_axi_rlast);
    NC_VP_BIND(m_axi_rvalid);
    NC_VP_BIND(m_axi_rready);
#undef NC_VP_BIND
  }

  template <class S>
  static void put(S& s, std::uint64_t v) {
    using T = std::remove_cv_t<std::remove_reference_t<decltype(s.read())>>;
    s.write(detail::from_u64<T>(v));
  }
  template <class S>
  static std::uint64_t get(const S& s) {
    return detail::to_u64(s.read());
  }

  void violation(const std::string& what) {
    if (stats_.violations.size() < 16) {
      stats_.violations.push_back("cycle " + std::to_string(cycles()) + ": " + what);
    }
  }

  // ---- Reset.
  void reset_thread() {
    for (;;) {
      in_reset_ = true;
      rst_n.write(false);
      for (unsigned i = 0; i < std::max(cfg_.reset_cycles, 1U); ++i) wait(clk.posedge_event());
      rst_n.write(true);
      wait(clk.posedge_event());  // the first edge with rst_ni high
      in_reset_ = false;
      reset_done_.notify();
      while (!reset_pending_) wait(reset_request_);
      reset_pending_ = false;
    }
  }

  // ---- Register socket: TLM checks, then one AXI4-Lite transaction on the pins.
  void regs_b_transport(::tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    gp.set_dmi_allowed(false);
    const ::tlm::tlm_command cmd = gp.get_command();
    if (cmd == ::tlm::TLM_IGNORE_COMMAND) {
      gp.set_response_status(::tlm::TLM_OK_RESPONSE);
      return;
    }
    const std::uint64_t addr = gp.get_address();
    if (gp.get_data_length() != 4 || gp.get_streaming_width() < 4) {
      ++stats_.reg_rejected;
      gp.set_response_status(::tlm::TLM_BURST_ERROR_RESPONSE);
      return;
    }
    if (addr % 4 != 0 || addr >= cfg_.reg_window_bytes) {
      ++stats_.reg_rejected;
      gp.set_response_status(::tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return;
    }
    std::uint32_t strb = 0xF;
    const unsigned char* be = gp.get_byte_enable_ptr();
    if (be != nullptr) {
      const unsigned n = gp.get_byte_enable_length();
      if (n == 0) {
        ++stats_.reg_rejected;
        gp.set_response_status(::tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
        return;
      }
      strb = 0;
      for (unsigned i = 0; i < 4; ++i) {
        const unsigned char b = be[i % n];
        if (b != TLM_BYTE_DISABLED && b != TLM_BYTE_ENABLED) {
          ++stats_.reg_rejected;
          gp.set_response_status(::tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
          return;
        }
        if (b == TLM_BYTE_ENABLED) strb |= 1U << i;
      }
    }
    // Synchronise with the kernel before touching the cycle-accurate pins.
    if (delay > sc_core::SC_ZERO_TIME) wait(delay);
    delay = sc_core::SC_ZERO_TIME;

    unsigned char* data = gp.get_data_ptr();
    AxilReq req;
    req.write = cmd == ::tlm::TLM_WRITE_COMMAND;
    req.addr = static_cast<std::uint32_t>(addr);
    req.strb = strb;
    if (req.write) std::memcpy(&req.data, data, 4);
    axil_mutex_.lock();
    axil_req_ = &req;
    axil_kick_.notify();
    while (!req.done) wait(axil_done_);
    axil_mutex_.unlock();

    if (req.timeout || req.aborted) {
      ++stats_.reg_errors;
      gp.set_response_status(::tlm::TLM_GENERIC_ERROR_RESPONSE);
      return;
    }
    if (!req.write) {
      std::uint8_t bytes[4];
      std::memcpy(bytes, &req.data, 4);
      for (unsigned i = 0; i < 4; ++i) {
        if ((strb >> i) & 1U) data[i] = bytes[i];
      }
    }
    if (req.resp >= kAxiSlverr) ++stats_.reg_errors;
    gp.set_response_status(axi_to_tlm(req.resp));
  }

  unsigned regs_transport_dbg(::tlm::tlm_generic_payload&) {
    return 0;
  }

  // Owns the s_axil_* inputs: runs one request at a time, driving right after a rising edge and
  // sampling the handshakes at the next one.
  void axil_thread() {
    axil_idle();
    for (;;) {
      while (axil_req_ == nullptr) wait(axil_kick_);
      AxilReq& r = *axil_req_;
      while (in_reset_) wait(reset_done_);
      run_axil(r);
      axil_req_ = nullptr;
      r.done = true;
      axil_done_.notify();
    }
  }

  void axil_idle() {
    put(s_axil_awvalid, 0);
    put(s_axil_awaddr, 0);
    put(s_axil_awprot, 0);
    put(s_axil_wvalid, 0);
    put(s_axil_wdata, 0);
    put(s_axil_wstrb, 0);
    put(s_axil_bready, 0);
    put(s_axil_arvalid, 0);
    put(s_axil_araddr, 0);
    put(s_axil_arprot, 0);
    put(s_axil_rready, 0);
  }

  void run_axil(AxilReq& r) {
    wait(clk.posedge_event());
    bool aw = r.write, w = r.write, ar = !r.write;
    if (r.write) {
      ++stats_.reg_writes;
      put(s_axil_awaddr, r.addr);
      put(s_axil_awvalid, 1);
      put(s_axil_wdata, r.data);
      put(s_axil_wstrb, r.strb);
      put(s_axil_wvalid, 1);
      put(s_axil_bready, 1);
    } else {
      ++stats_.reg_reads;
      put(s_axil_araddr, r.addr);
      put(s_axil_arvalid, 1);
      put(s_axil_rready, 1);
    }
    std::uint64_t idle = 0;
    for (;;) {
      wait(clk.posedge_event());
      if (!rst_n.read() || in_reset_) {
        r.aborted = true;
        break;
      }
      bool progress = false;
      if (aw && get(s_axil_awready) != 0) {
        aw = false;
        progress = true;
        put(s_axil_awvalid, 0);
      }
      if (w && get(s_axil_wready) != 0) {
        w = false;
        progress = true;
        put(s_axil_wvalid, 0);
      }
      if (ar && get(s_axil_arready) != 0) {
        ar = false;
        progress = true;
        put(s_axil_arvalid, 0);
      }
      if (r.write && get(s_axil_bvalid) != 0) {
        if (aw || w) violation("AXI4-Lite: BVALID before both AW and W were accepted");
        r.resp = static_cast<unsigned>(get(s_axil_bresp) & 3U);
        break;
      }
      if (!r.write && get(s_axil_rvalid) != 0) {
        if (ar) violation("AXI4-Lite: RVALID before AR was accepted");
        r.resp = static_cast<unsigned>(get(s_axil_rresp) & 3U);
        r.data = static_cast<std::uint32_t>(get(s_axil_rdata));
        break;
      }
      idle = progress ? 0 : idle + 1;
      if (idle > cfg_.axil_timeout_cycles) {
        r.timeout = true;
        violation("AXI4-Lite: no handshake for " + std::to_string(cfg_.axil_timeout_cycles) +
                  " cycles on a register " + (r.write ? "write" : "read") + " at " + hex(r.addr));
        break;
      }
    }
    axil_idle();
  }

  // ---- AXI4 slave side of the DMA master: handshakes at every rising edge (the values sampled
  // are the ones before the edge, as the RTL's flops see them), outputs for the next cycle.
  void axi_edge() {
    if (!rst_n.read()) {
      if (!was_reset_) {
        ++generation_;
        ar_q_.clear();
        aw_q_.clear();
        r_q_.clear();
        b_q_.clear();
        w_bursts_.clear();
        w_cur_ = WriteBurst{};
        rd_outstanding_ = wr_outstanding_ = w_buffered_ = 0;
        ar_wait_.reset();
        aw_wait_.reset();
      }
      was_reset_ = true;
      ar_ready_ = aw_ready_ = w_ready_ = r_valid_ = b_valid_ = false;
      put(m_axi_arready, 0);
      put(m_axi_awready, 0);
      put(m_axi_wready, 0);
      put(m_axi_rvalid, 0);
      put(m_axi_bvalid, 0);
      return;
    }
    was_reset_ = false;

    // AR / AW: stability while waiting, then the handshake.
    const bool arvalid = get(m_axi_arvalid) != 0;
    if (arvalid) {
      const Ax a = sample_ar();
      if (ar_wait_ && !same(*ar_wait_, a)) violation("AR payload changed while ARVALID was high");
      if (ar_ready_) {
        ar_q_.push_back(a);
        ++rd_outstanding_;
        ++stats_.dma_read_bursts;
        rd_work_.notify();
        ar_wait_.reset();
      } else {
        ar_wait_ = a;
      }
    } else if (ar_wait_) {
      violation("ARVALID dropped before ARREADY");
      ar_wait_.reset();
    }
    const bool awvalid = get(m_axi_awvalid) != 0;
    if (awvalid) {
      const Ax a = sample_aw();
      if (aw_wait_ && !same(*aw_wait_, a)) violation("AW payload changed while AWVALID was high");
      if (aw_ready_) {
        aw_q_.push_back(a);
        ++wr_outstanding_;
        ++stats_.dma_write_bursts;
        wr_work_.notify();
        aw_wait_.reset();
      } else {
        aw_wait_ = a;
      }
    } else if (aw_wait_) {
      violation("AWVALID dropped before AWREADY");
      aw_wait_.reset();
    }
    if (w_ready_ && get(m_axi_wvalid) != 0) {
      const std::size_t n = bus_bytes_;
      const std::size_t at = w_cur_.data.size();
      w_cur_.data.resize(at + n);
      w_cur_.strb.resize(at + n);
      detail::to_bytes(m_axi_wdata.read(), w_cur_.data.data() + at, n);
      std::uint8_t sb[64] = {};
      detail::to_bytes(m_axi_wstrb.read(), sb, (n + 7) / 8);
      for (std::size_t i = 0; i < n; ++i) {
        w_cur_.strb[at + i] = ((sb[i / 8] >> (i % 8)) & 1U) != 0 ? 0xFF : 0x00;
      }
      ++w_cur_.beats;
      ++w_buffered_;
      if (get(m_axi_wlast) != 0) {
        w_bursts_.push_back(std::move(w_cur_));
        w_cur_ = WriteBurst{};
        wr_work_.notify();
      }
    }
    if (r_valid_ && get(m_axi_rready) != 0) {
      ReadBurst& b = r_q_.front();
      if (++b.next == b.beats) {
        r_q_.pop_front();
        --rd_outstanding_;
      }
    }
    if (b_valid_ && get(m_axi_bready) != 0) {
      b_q_.pop_front();
      --wr_outstanding_;
    }

    // Outputs for the next cycle.
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    ar_ready_ = rd_outstanding_ < cfg_.max_outstanding;
    aw_ready_ = wr_outstanding_ < cfg_.max_outstanding;
    w_ready_ = w_buffered_ < cfg_.max_write_beats;
    put(m_axi_arready, ar_ready_ ? 1 : 0);
    put(m_axi_awready, aw_ready_ ? 1 : 0);
    put(m_axi_wready, w_ready_ ? 1 : 0);
    r_valid_ = !r_q_.empty() && r_q_.front().ready <= now;
    if (r_valid_) {
      const ReadBurst& b = r_q_.front();
      put(m_axi_rid, b.id);
      m_axi_rdata.write(detail::from_bytes<detail::value_of<decltype(rtl.m_axi_rdata)>>(
          b.data.data() + static_cast<std::size_t>(b.next) * bus_bytes_, bus_bytes_));
      put(m_axi_rresp, b.resp);
      put(m_axi_rlast, b.next + 1 == b.beats ? 1 : 0);
    }
    put(m_axi_rvalid, r_valid_ ? 1 : 0);
    b_valid_ = !b_q_.empty() && b_q_.front().ready <= now;
    if (b_valid_) {
      put(m_axi_bid, b_q_.front().id);
      put(m_axi_bresp, b_q_.front().resp);
    }
    put(m_axi_bvalid, b_valid_ ? 1 : 0);
  }

  Ax sample_ar() const {
    return Ax{static_cast<std::uint32_t>(get(m_axi_arid)), get(m_axi_araddr),
              static_cast<unsigned>(get(m_axi_arlen)), static_cast<unsigned>(get(m_axi_arsize)),
              static_cast<unsigned>(get(m_axi_arburst))};
  }
  Ax sample_aw() const {
    return Ax{static_cast<std::uint32_t>(get(m_axi_awid)), get(m_axi_awaddr),
              static_cast<unsigned>(get(m_axi_awlen)), static_cast<unsigned>(get(m_axi_awsize)),
              static_cast<unsigned>(get(m_axi_awburst))};
  }
  static bool same(const Ax& a, const Ax& b) {
    return a.id == b.id && a.addr == b.addr && a.len == b.len && a.size == b.size &&
           a.burst == b.burst;
  }

  // Address of beat i of a burst (AXI4 A3.4.1).
  static std::uint64_t beat_address(const Ax& a, unsigned i) {
    const std::uint64_t nb = std::uint64_t{1} << a.size;
    const std::uint64_t aligned = a.addr & ~(nb - 1);
    if (a.burst == 0 || i == 0) return a.addr;  // FIXED, or the first beat
    std::uint64_t at = aligned + i * nb;
    if (a.burst == 2) {  // WRAP
      const std::uint64_t total = nb * (a.len + 1);
      const std::uint64_t lower = a.addr & ~(total - 1);
      if (at >= lower + total) at -= total;
    }
    return at;
  }

  bool check_burst(const Ax& a, const char* what) {
    if (a.burst == 3 || (std::size_t{1} << a.size) > bus_bytes_) {
      violation(std::string(what) + ": burst type " + std::to_string(a.burst) + ", size " +
                std::to_string(a.size) + " is not allowed on a " + std::to_string(bus_bytes_) +
                "-byte bus");
      return false;
    }
    return true;
  }

  ::tlm::tlm_response_status transact(::tlm::tlm_generic_payload& gp, ::tlm::tlm_command cmd,
                                      std::uint64_t addr, std::uint8_t* data, std::size_t len,
                                      std::uint8_t* be, sc_core::sc_time& delay) {
    gp.set_command(cmd);
    gp.set_address(addr);
    gp.set_data_ptr(data);
    gp.set_data_length(static_cast<unsigned>(len));
    gp.set_streaming_width(static_cast<unsigned>(len));
    gp.set_byte_enable_ptr(be);
    gp.set_byte_enable_length(be != nullptr ? static_cast<unsigned>(len) : 0U);
    gp.set_dmi_allowed(false);
    gp.set_response_status(::tlm::TLM_INCOMPLETE_RESPONSE);
    ++stats_.dma_transactions;
    dma->b_transport(gp, delay);
    const auto s = gp.get_response_status();
    if (s != ::tlm::TLM_OK_RESPONSE) ++stats_.dma_errors;
    if (cmd == ::tlm::TLM_READ_COMMAND) {
      stats_.dma_read_bytes += len;
    } else {
      stats_.dma_write_bytes += len;
    }
    return s;
  }

  // One burst as TLM transactions (see the file comment); returns the AXI response.
  unsigned burst_transport(::tlm::tlm_generic_payload& gp, const Ax& a, bool write,
                           std::uint8_t* data, std::uint8_t* strb, sc_core::sc_time& delay) {
    const ::tlm::tlm_command cmd = write ? ::tlm::TLM_WRITE_COMMAND : ::tlm::TLM_READ_COMMAND;
    const std::size_t bus = bus_bytes_;
    const unsigned beats = a.len + 1;
    const std::size_t nb = std::size_t{1} << a.size;
    unsigned resp = kAxiOkay;
    auto worst = [&resp](::tlm::tlm_response_status s) {
      const unsigned r = tlm_to_axi(s);
      if (r == kAxiDecerr || (r == kAxiSlverr && resp == kAxiOkay)) resp = r;
    };
    if (a.burst == 1 && nb == bus && a.addr % bus == 0) {
      const std::size_t len = beats * bus;
      std::uint8_t* be = nullptr;
      if (write && std::any_of(strb, strb + len, [](std::uint8_t b) { return b == 0; })) be = strb;
      worst(transact(gp, cmd, a.addr, data, len, be, delay));
      return resp;
    }
    for (unsigned i = 0; i < beats; ++i) {
      const std::uint64_t at = beat_address(a, i);
      const std::size_t lower = static_cast<std::size_t>(at % bus);
      const std::size_t upper =
          static_cast<std::size_t>((at & ~std::uint64_t{nb - 1}) % bus) + nb - 1;
      const std::size_t off = i * bus + lower;
      const std::size_t len = upper - lower + 1;
      std::uint8_t* be = nullptr;
      if (write &&
          std::any_of(strb + off, strb + off + len, [](std::uint8_t b) { return b == 0; })) {
        be = strb + off;
      }
      worst(transact(gp, cmd, at, data + off, len, be, delay));
    }
    return resp;
  }

  // The payloads are members, not locals of the threads: a thread's stack is not scanned by leak
  // checkers, and the payload owns heap memory (its extension array).
  void read_worker() {
    ::tlm::tlm_generic_payload& gp = rd_gp_;
    for (;;) {
      while (ar_q_.empty()) wait(rd_work_);
      const Ax a = ar_q_.front();
      ar_q_.pop_front();
      const std::uint64_t gen = generation_;
      ReadBurst b;
      b.id = a.id;
      b.beats = a.len + 1;
      b.data.assign(b.beats * bus_bytes_, 0);
      sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
      b.resp = check_burst(a, "read") ? burst_transport(gp, a, false, b.data.data(), nullptr, delay)
                                      : kAxiSlverr;
      b.ready = sc_core::sc_time_stamp() + delay;
      if (gen != generation_) continue;  // reset meanwhile
      r_q_.push_back(std::move(b));
    }
  }

  void write_worker() {
    ::tlm::tlm_generic_payload& gp = wr_gp_;
    for (;;) {
      while (aw_q_.empty() || w_bursts_.empty()) wait(wr_work_);
      const Ax a = aw_q_.front();
      aw_q_.pop_front();
      WriteBurst w = std::move(w_bursts_.front());
      w_bursts_.pop_front();
      w_buffered_ -= w.beats;
      const std::uint64_t gen = generation_;
      sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
      Bresp br;
      br.id = a.id;
      if (w.beats != a.len + 1) {
        violation("write burst at " + hex(a.addr) + ": AWLEN " + std::to_string(a.len) +
                  " but WLAST after " + std::to_string(w.beats) + " beats");
        br.resp = kAxiSlverr;
      } else if (!check_burst(a, "write")) {
        br.resp = kAxiSlverr;
      } else {
        br.resp = burst_transport(gp, a, true, w.data.data(), w.strb.data(), delay);
      }
      br.ready = sc_core::sc_time_stamp() + delay;
      if (gen != generation_) continue;
      b_q_.push_back(br);
    }
  }

  BridgeConfig cfg_;
  BridgeStats stats_;
  std::size_t bus_bytes_ = 8;

  // Reset.
  bool in_reset_ = true, reset_pending_ = false;
  sc_core::sc_event reset_request_, reset_done_;

  // AXI4-Lite.
  sc_core::sc_mutex axil_mutex_;
  AxilReq* axil_req_ = nullptr;
  sc_core::sc_event axil_kick_, axil_done_;

  // AXI4.
  std::uint64_t generation_ = 0;
  bool was_reset_ = false;
  bool ar_ready_ = false, aw_ready_ = false, w_ready_ = false, r_valid_ = false, b_valid_ = false;
  unsigned rd_outstanding_ = 0, wr_outstanding_ = 0, w_buffered_ = 0;
  std::optional<Ax> ar_wait_, aw_wait_;
  std::deque<Ax> ar_q_, aw_q_;
  std::deque<ReadBurst> r_q_;
  std::deque<WriteBurst> w_bursts_;
  WriteBurst w_cur_;
  std::deque<Bresp> b_q_;
  sc_core::sc_event rd_work_, wr_work_;
  ::tlm::tlm_generic_payload rd_gp_, wr_gp_;
};

// A simple TLM-2.0 memory for test benches and examples: [base, base + size), sparse (bytes
// never written read 0), DMI off, every transaction annotated with `latency`. Accepts byte
// enables and streaming widths; answers TLM_ADDRESS_ERROR_RESPONSE outside its range. Fault
// injection: set_fault() makes transactions of one direction that touch one address answer a
// given error status; set_hang(true) makes b_transport wait until set_hang(false).
template <unsigned int Width = 32>
class TlmMemory : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(TlmMemory);

  struct Fault {
    bool write = false;
    std::uint64_t addr = 0;
    ::tlm::tlm_response_status status = ::tlm::TLM_GENERIC_ERROR_RESPONSE;
  };
  struct Stats {
    std::uint64_t reads = 0, writes = 0, read_bytes = 0, write_bytes = 0, errors = 0;
  };

  tlm_utils::simple_target_socket<TlmMemory, Width> socket;

  TlmMemory(const sc_core::sc_module_name& name, std::uint64_t base, std::uint64_t size,
            sc_core::sc_time latency = sc_core::sc_time(80, sc_core::SC_NS))
      : sc_core::sc_module(name), socket("socket"), base_(base), size_(size), latency_(latency) {
    socket.register_b_transport(this, &TlmMemory::b_transport);
    socket.register_transport_dbg(this, &TlmMemory::transport_dbg);
  }

  void set_range(std::uint64_t base, std::uint64_t size) {
    base_ = base;
    size_ = size;
  }
  void set_latency(sc_core::sc_time t) { latency_ = t; }
  void set_fault(std::optional<Fault> f) { fault_ = f; }
  void set_hang(bool on) {
    hang_ = on;
    if (!on) {
      hang_read_at_.reset();
      hang_reads_ = false;
      resume_.notify(sc_core::SC_ZERO_TIME);
    }
  }
  // Hang from a read (a ring job's hang): from the first read touching byte `addr` on, reads wait
  // (that one included) while writes go on. Cleared by set_hang(false).
  void hang_from_read(std::uint64_t addr) { hang_read_at_ = addr; }
  [[nodiscard]] bool hanging() const { return hang_; }
  [[nodiscard]] std::uint64_t base() const { return base_; }
  [[nodiscard]] std::uint64_t size() const { return size_; }
  [[nodiscard]] const Stats& stats() const { return stats_; }

  // Back door (no time, no checks beyond the range): the bench's loader and checker.
  void write(std::uint64_t addr, std::span<const std::uint8_t> bytes) {
    store_.write_bytes(addr, bytes);
  }
  void read(std::uint64_t addr, std::span<std::uint8_t> out) const { store_.read_into(addr, out); }
  void clear() { store_.clear(); }

 private:
  bool inside(std::uint64_t addr, std::uint64_t len) const {
    return addr >= base_ && addr - base_ <= size_ && len <= size_ - (addr - base_);
  }

  void b_transport(::tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
    if (gp.get_command() == ::tlm::TLM_READ_COMMAND && hang_read_at_ &&
        *hang_read_at_ >= gp.get_address() &&
        *hang_read_at_ - gp.get_address() < gp.get_data_length()) {
      hang_reads_ = true;
    }
    while (hang_ || (hang_reads_ && gp.get_command() == ::tlm::TLM_READ_COMMAND)) wait(resume_);
    gp.set_dmi_allowed(false);
    delay += latency_;
    const ::tlm::tlm_command cmd = gp.get_command();
    const std::uint64_t addr = gp.get_address();
    const std::uint64_t len = gp.get_data_length();
    const bool write = cmd == ::tlm::TLM_WRITE_COMMAND;
    if (cmd == ::tlm::TLM_IGNORE_COMMAND) {
      gp.set_response_status(::tlm::TLM_OK_RESPONSE);
      return;
    }
    (write ? stats_.writes : stats_.reads) += 1;
    if (len == 0 || !inside(addr, len)) {
      ++stats_.errors;
      gp.set_response_status(::tlm::TLM_ADDRESS_ERROR_RESPONSE);
      return;
    }
    if (fault_ && fault_->write == write && fault_->addr >= addr && fault_->addr - addr < len) {
      ++stats_.errors;
      gp.set_response_status(fault_->status);
      return;
    }
    (write ? stats_.write_bytes : stats_.read_bytes) += len;
    copy(gp, write);
    gp.set_response_status(::tlm::TLM_OK_RESPONSE);
  }

  unsigned transport_dbg(::tlm::tlm_generic_payload& gp) {
    const std::uint64_t addr = gp.get_address();
    const std::uint64_t len = gp.get_data_length();
    if (gp.get_command() == ::tlm::TLM_IGNORE_COMMAND || !inside(addr, len)) return 0;
    copy(gp, gp.get_command() == ::tlm::TLM_WRITE_COMMAND);
    return static_cast<unsigned>(len);
  }

  void copy(::tlm::tlm_generic_payload& gp, bool write) {
    const std::uint64_t addr = gp.get_address();
    const std::size_t len = gp.get_data_length();
    unsigned char* data = gp.get_data_ptr();
    const unsigned char* be = gp.get_byte_enable_ptr();
    const std::size_t be_len = be != nullptr ? gp.get_byte_enable_length() : 0;
    const std::size_t sw = gp.get_streaming_width() == 0 ? len : gp.get_streaming_width();
    if (be_len == 0 && sw >= len) {
      if (write) {
        store_.write_bytes(addr, std::span<const std::uint8_t>(data, len));
      } else {
        store_.read_into(addr, std::span<std::uint8_t>(data, len));
      }
      return;
    }
    for (std::size_t i = 0; i < len; ++i) {
      if (be_len != 0 && be[i % be_len] == TLM_BYTE_DISABLED) continue;
      const std::uint64_t a = addr + i % sw;
      if (write) {
        store_.write_byte(a, data[i]);
      } else {
        data[i] = store_.read_byte(a);
      }
    }
  }

  std::uint64_t base_, size_;
  sc_core::sc_time latency_;
  std::optional<Fault> fault_;
  bool hang_ = false;
  std::optional<std::uint64_t> hang_read_at_;
  bool hang_reads_ = false;
  sc_core::sc_event resume_;
  Stats stats_;
  sim::SparseMemory store_;
};

// TLM access for code outside the simulation (a host program that calls sc_start itself, e.g.
// the runtime's tlm backend or a unit test): access() hands the transaction to this module's
// thread, runs the kernel until it has completed (the thread calls sc_pause()) and returns
// its response status. The target's annotated delay is waited before completion.
class HostPort : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(HostPort);
  tlm_utils::simple_initiator_socket<HostPort, 32> socket;

  HostPort(const sc_core::sc_module_name& name, sc_core::sc_time slice)
      : sc_core::sc_module(name), socket("socket"), slice_(slice) {
    SC_THREAD(run);
  }

  // Returns false if the kernel ran `max_slices` slices without completing the access.
  bool access(::tlm::tlm_command cmd, std::uint64_t addr, std::uint8_t* data, unsigned len,
              ::tlm::tlm_response_status* status, std::uint8_t* be = nullptr, unsigned be_len = 0,
              unsigned max_slices = 1000) {
    Req r{cmd, addr, data, len, be, be_len};
    req_ = &r;
    kick_.notify(sc_core::SC_ZERO_TIME);
    for (unsigned i = 0; i < max_slices && !r.done; ++i) sc_core::sc_start(slice_);
    if (!r.done) return false;
    *status = r.status;
    return true;
  }

 private:
  struct Req {
    ::tlm::tlm_command cmd;
    std::uint64_t addr;
    std::uint8_t* data;
    unsigned len;
    std::uint8_t* be;
    unsigned be_len;
    ::tlm::tlm_response_status status = ::tlm::TLM_INCOMPLETE_RESPONSE;
    bool done = false;
  };

  void run() {
    ::tlm::tlm_generic_payload& gp = gp_;  // a member: see TlmAccelerator::read_worker
    for (;;) {
      while (req_ == nullptr) wait(kick_);
      Req& r = *req_;
      gp.set_command(r.cmd);
      gp.set_address(r.addr);
      gp.set_data_ptr(r.data);
      gp.set_data_length(r.len);
      gp.set_streaming_width(r.len);
      gp.set_byte_enable_ptr(r.be);
      gp.set_byte_enable_length(r.be_len);
      gp.set_dmi_allowed(false);
      gp.set_response_status(::tlm::TLM_INCOMPLETE_RESPONSE);
      sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
      socket->b_transport(gp, delay);
      if (delay > sc_core::SC_ZERO_TIME) wait(delay);
      r.status = gp.get_response_status();
      r.done = true;
      req_ = nullptr;
      sc_core::sc_pause();
    }
  }

  sc_core::sc_time slice_;
  Req* req_ = nullptr;
  sc_core::sc_event kick_;
  ::tlm::tlm_generic_payload gp_;
};

}  // namespace normcore::vp
