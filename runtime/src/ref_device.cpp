// The `ref` backend: a software device that implements the generated accelerator's register map
// and DMA semantics on top of the golden model (normcore::apply), so the same host driver code
// runs on it as on the RTL co-simulation or the FPGA.
//
//   ref:<manifest.json>[,mem=<bytes>][,fail_job=N][,fail=read|write][,hang_job=N][,threads=N]
//       [,direct=0|1]
//
//   mem       size of the synthetic device address region DMA buffers are carved from (default
//             1 GiB at 0x4000_0000, clipped to the manifest's address width)
//   fail_job  the N-th job (START jobs and ring descriptors that passed validation, from 1
//             since open: device_options.hpp states the rule) gets an SLVERR on its first input
//             read (fail=read, the default: ERR_ADDR = SRC) or on its first write burst
//             (fail=write: ERR_ADDR = DST); nothing is written
//   hang_job  the N-th job never finishes: STATUS.busy stays 1, no interrupt, until
//             CTRL.soft_reset aborts it
//   threads   worker threads for large jobs (default: NORMCORE_THREADS, else the machine's)
//   direct    1 (default): host memory can be imported as DMA buffers (import_host), so the
//             driver runs host tensors of the device's format in place; 0: it stages them
//
// Everything about the device comes from the manifest: register offsets, fields and access
// types, reset values, error codes, widths, bus and burst sizes. Jobs run synchronously inside
// the register write of CTRL.start.
//
// Device memory: the live DMA buffers, nothing else. Each buffer occupies a whole number of bus
// words of the device address space (its backing host memory is rounded up too). Reads are bus
// words, like the RTL's (a word is readable when it lies inside one live buffer, padding
// included); writes are bytes (every output byte must lie inside a live buffer's requested
// size). Anything else answers SLVERR, which the job reports like the RTL: ERR_CODE read / write
// and ERR_ADDR (the first failing read word, parameters before input; or the start of the write
// burst holding the first unwritable byte). A read error writes nothing; on a write error the
// bursts before the failing one are written. (The RTL overlaps reads and writes, so after a read
// error it may have written part of the output; software must not rely on either.)
//
// PERF_ELEMS is exact (on a write error: the elements whose output bytes were all written),
// PERF_ACTIVE an ideal cycle estimate (RefDevice::ideal_cycles), the stall counters 0.
//
// Files: ref_device.hpp (the device class), ref_device.cpp (register file, buffers, open),
// ref_job.cpp (a job: snapshot, validation, DMA), ref_ring.cpp (the descriptor ring of a
// `--ring` manifest: descriptors run synchronously inside the register write that makes them
// runnable, HEAD or RING_CTRL), ref_kernel.cpp (arithmetic, threads),
// ref_memory.hpp (device memory).
#include "ref_device.hpp"

#include <algorithm>
#include <thread>

#include "backends.hpp"

namespace normcore::detail {
namespace ref {

RefBuffer::~RefBuffer() {
  std::lock_guard lock(mem_->mu);
  mem_->alloc.release(addr_);
  mem_->live.erase(addr_);
  if (mem_->owner != nullptr && data_) mem_->owner->on_release(size_);
}

namespace {

// The manifest's bus and address widths the device model relies on.
void check_config(const Manifest& m, const std::string& where) {
  const DeviceConfig& cfg = m.config;
  if (const std::string bad = cfg.arith().check(); !bad.empty()) {
    throw DeviceError(where + "manifest " + m.source + ": " + bad);
  }
  const int bb = cfg.bus_bytes();
  if (bb < 1 || (bb & (bb - 1)) != 0 || bb > 4096) {
    throw DeviceError(where + "manifest " + m.source + ": bus width " +
                      std::to_string(cfg.bus_bits) + " bits is not a power-of-two byte count");
  }
  if (cfg.addr_bits < 12 || cfg.addr_bits > 64) {
    throw DeviceError(where + "manifest " + m.source + ": address width " +
                      std::to_string(cfg.addr_bits) + " is outside 12..64");
  }
  if (cfg.max_burst < 1) {
    throw DeviceError(where + "manifest " + m.source + ": max_burst must be at least 1");
  }
}

}  // namespace

RefDevice::RefDevice(const DeviceSpec& spec, Manifest manifest, const Options& opt)
    : Device(spec.text, std::move(manifest)), opt_(opt) {
  const Manifest& m = this->manifest();
  const std::string where = "device '" + spec.text + "': ";
  check_config(m, where);
  build_register_file();
  try {
    resolve_fields();
  } catch (const Error& e) {
    throw DeviceError(where + "manifest " + m.source + ": " + e.what());
  }

  // The synthetic device address space: [base, base + mem), inside the address width.
  std::uint64_t base = 0x40000000ull;
  u128 limit = u128{1} << m.config.addr_bits;
  if (base >= limit / 2) base = static_cast<std::uint64_t>(limit / 4);
  const std::uint64_t size = static_cast<std::uint64_t>(std::min<u128>(opt_.mem, limit - base));
  mem_ = std::make_shared<Memory>(base, size);
  mem_->owner = this;
}

void RefDevice::build_register_file() {
  const Manifest& m = manifest();
  slots_.resize(m.window_bytes() / 4);
  for (const RegDesc& r : m.registers) {
    Slot& s = slots_.at(r.offset / 4);
    s.reg = &r;
    std::uint32_t fields = 0;
    for (const FieldDesc& f : r.fields) {
      fields |= f.mask();
      if (f.access == "rw") s.rw |= f.mask();
      if (f.access == "w1c") s.w1c |= f.mask();
      if (f.access == "w1s_sc") s.w1s |= f.mask();
    }
    s.readable = fields & ~s.w1s;
    s.value = r.reset & s.readable;
  }
}

// The fields and error codes the model uses, by name (Error naming what is missing).
void RefDevice::resolve_fields() {
  rules_.emplace(manifest());
  start_ = field("CTRL", "start");
  soft_reset_ = field("CTRL", "soft_reset");
  en_done_ = field("CTRL", "irq_en_done");
  en_error_ = field("CTRL", "irq_en_error");
  busy_ = field("STATUS", "busy");
  done_ = field("STATUS", "done");
  error_ = field("STATUS", "error");
  start_ignored_ = field("STATUS", "start_ignored");
  irq_done_ = field("IRQ_STATUS", "done");
  irq_error_ = field("IRQ_STATUS", "error");
  err_code_ = field("ERR_CODE", "code");
  err_lo_ = field("ERR_ADDR_LO", "value");
  err_hi_ = field("ERR_ADDR_HI", "value");
  perf_active_ = field("PERF_ACTIVE", "value", false);
  perf_rd_stall_ = field("PERF_RD_STALL", "value", false);
  perf_wr_stall_ = field("PERF_WR_STALL", "value", false);
  perf_elems_lo_ = field("PERF_ELEMS_LO", "value", false);
  perf_elems_hi_ = field("PERF_ELEMS_HI", "value", false);
  code_read_ = code("read");
  code_write_ = code("write");
  resolve_ring_fields();
}

Field RefDevice::field(const char* reg, const char* name, bool required) const {
  const Manifest& m = manifest();
  const RegDesc* r = nullptr;
  for (const auto& x : m.registers) {
    if (x.name == reg) r = &x;
  }
  if (r == nullptr) {
    if (!required) return {};
    (void)m.reg(reg);  // throws the manifest's message
    return {};
  }
  for (const auto& f : r->fields) {
    if (f.name == name) return Field{r->offset / 4, &f};
  }
  if (!required) return {};
  (void)r->field(name);  // throws
  return {};
}

int RefDevice::code(const char* name) const {
  const auto it = manifest().error_codes.find(name);
  if (it == manifest().error_codes.end()) {
    throw Error("error_codes has no '" + std::string(name) + "'");
  }
  return it->second;
}

std::unique_ptr<DmaBuffer> RefDevice::alloc(std::size_t bytes, std::size_t align) {
  if (bytes == 0) throw DeviceError("ref: cannot allocate a 0-byte DMA buffer");
  if (align == 0 || (align & (align - 1)) != 0) {
    throw DeviceError("ref: DMA buffer alignment " + std::to_string(align) +
                      " is not a power of two");
  }
  const std::uint64_t bus = static_cast<std::uint64_t>(manifest().config.bus_bytes());
  const std::uint64_t a = std::max<std::uint64_t>(align, bus);
  std::lock_guard lock(mem_->mu);
  const std::uint64_t free_bytes = mem_->alloc.size() - mem_->alloc.in_use();
  auto out_of_memory = [&] {
    return DeviceError("ref: out of device memory: " + std::to_string(bytes) +
                       " bytes requested, " + std::to_string(free_bytes) + " free (" +
                       std::to_string(mem_->alloc.size()) + "-byte region at " +
                       hex(mem_->alloc.base()) + " of device '" + name() + "'; see mem=)");
  };
  if (bytes > std::uint64_t{1} << 62) throw out_of_memory();
  const std::uint64_t span = ceil_div(bytes, bus) * bus;
  const auto addr = mem_->alloc.allocate(span, a);
  if (!addr) throw out_of_memory();
  std::unique_ptr<std::uint8_t[]> data;
  try {
    data.reset(new std::uint8_t[static_cast<std::size_t>(span)]());
  } catch (const std::bad_alloc&) {
    mem_->alloc.release(*addr);
    throw DeviceError("ref: cannot allocate " + std::to_string(span) +
                      " bytes of host memory for a DMA buffer");
  }
  mem_->live[*addr] = Block{*addr, bytes, span, data.get()};
  auto& c = mutable_counters();
  ++c.buffers;
  c.buffer_bytes += bytes;
  return std::make_unique<RefBuffer>(mem_, *addr, bytes, std::move(data));
}

std::unique_ptr<DmaBuffer> RefDevice::import_host(const void* data, std::size_t bytes,
                                                  bool writable) {
  if (!opt_.direct || data == nullptr || bytes == 0) return nullptr;
  const std::uint64_t bus = static_cast<std::uint64_t>(manifest().config.bus_bytes());
  // Readable: whole bus words (the device reads only the job's bytes); writable: the bytes.
  const std::uint64_t span = ceil_div(bytes, bus) * bus;
  std::lock_guard lock(mem_->mu);
  const auto addr = mem_->alloc.allocate(span, std::max<std::uint64_t>(bus, 64));
  if (!addr) return nullptr;  // no address space left: the caller stages instead
  // The device model writes only through Block::data inside Block::size (0: read-only).
  auto* p = const_cast<std::uint8_t*>(static_cast<const std::uint8_t*>(data));
  mem_->live[*addr] = Block{*addr, writable ? bytes : 0, span, p};
  return std::make_unique<RefBuffer>(mem_, *addr, bytes, p);
}

bool RefDevice::wait_irq(std::chrono::milliseconds timeout) {
  ++mutable_counters().irq_waits;
  if (irq_line()) return true;
  // Jobs run synchronously inside the START write, so nothing can raise the line while we wait
  // (a hung job never finishes): sleep out the time-out.
  if (timeout.count() > 0) std::this_thread::sleep_for(timeout);
  return irq_line();
}

std::uint32_t RefDevice::do_read32(std::uint32_t offset) {
  const Slot& s = slots_[offset / 4];
  if (s.reg == nullptr) {
    throw DeviceError(name() + ": read at register offset " + hex(offset) +
                      " answered SLVERR (no register there)");
  }
  return s.value & s.readable;
}

void RefDevice::do_write32(std::uint32_t offset, std::uint32_t value) {
  Slot& s = slots_[offset / 4];
  if (s.reg == nullptr) {
    throw DeviceError(name() + ": write at register offset " + hex(offset) +
                      " answered SLVERR (no register there)");
  }
  s.value = (s.value & ~s.rw) | (value & s.rw);
  s.value &= ~(value & s.w1c);
  const std::uint32_t pulses = value & s.w1s;
  if (has_ring_ && pulses != 0 && offset / 4 == ring_resume_.slot) ring_control(pulses);
  if (pulses != 0 && offset / 4 == start_.slot) {
    const bool start = (pulses & start_.desc->mask()) != 0;
    const bool reset = (pulses & soft_reset_.desc->mask()) != 0;
    if (start && busy()) set(start_ignored_, 1);
    if (reset) {
      // Like the RTL: START and SOFT RESET together on an idle device take the job snapshot (and
      // clear the status) and then abort it at once.
      if (start && !busy()) clear_for_start();
      soft_reset();
      return;
    }
    if (start && !busy()) start_job();
  }
  // Any write may let the ring go on (HEAD, RING_CTRL, or the end of a START job).
  if (has_ring_) ring_run();
}

void RefDevice::clear_for_start() {
  set(done_, 0);
  set(error_, 0);
  set(err_code_, 0);
  set64(err_lo_, err_hi_, 0);
  set(perf_active_, 0);
  set(perf_rd_stall_, 0);
  set(perf_wr_stall_, 0);
  set64(perf_elems_lo_, perf_elems_hi_, 0);
}

void RefDevice::soft_reset() {
  // Aborts a (hung) job; resets the engine, not the registers: ERR_CODE, ERR_ADDR and
  // IRQ_STATUS keep their values, no interrupt.
  set(busy_, 0);
  set(done_, 0);
  set(error_, 0);
  if (has_ring_) ring_soft_reset();
}

void RefDevice::finish(bool ok, int err_code, std::uint64_t err_addr) {
  set(busy_, 0);
  if (ok) {
    set(done_, 1);
    set(irq_done_, 1);
  } else {
    set(err_code_, static_cast<std::uint64_t>(err_code));
    set64(err_lo_, err_hi_, err_addr);
    set(error_, 1);
    set(irq_error_, 1);
  }
}

void RefDevice::set_perf(std::uint64_t active, std::uint64_t elements) {
  set(perf_active_, active & 0xFFFFFFFFu);
  set64(perf_elems_lo_, perf_elems_hi_, elements);
}

}  // namespace ref

std::unique_ptr<Device> open_ref_device(const DeviceSpec& spec) {
  const OptionReader r(spec);
  ref::Options opt;
  opt.mem = r.at_least("mem", opt.mem, 1);
  opt.faults = r.faults();
  opt.threads = static_cast<unsigned>(r.u64("threads", default_threads(), 1, 256));
  opt.direct = r.u64("direct", 1, 0, 1) == 1;
  Manifest m;
  try {
    m = load_manifest(spec.target);
  } catch (const DeviceError&) {
    throw;
  } catch (const std::exception& e) {
    throw DeviceError("device '" + spec.text + "': cannot load manifest " + spec.target + ": " +
                      e.what());
  }
  return std::make_unique<ref::RefDevice>(spec, std::move(m), opt);
}

}  // namespace normcore::detail
