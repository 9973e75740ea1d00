// The `ref` backend: a software device that implements the generated accelerator's register map
// and DMA semantics on top of the golden model (normcore::apply), so the same host driver code
// runs on it as on the RTL co-simulation or the FPGA.
//
//   ref:<manifest.json>[,mem=<bytes>][,fail_job=N][,fail=read|write][,hang_job=N][,threads=N]
//
//   mem       size of the synthetic device address region DMA buffers are carved from (default
//             1 GiB at 0x4000_0000, clipped to the manifest's address width)
//   fail_job  the N-th job (1-based, counting jobs that passed validation since open) gets an
//             SLVERR on its first input read (fail=read, the default: ERR_ADDR = SRC) or on its
//             first write burst (fail=write: ERR_ADDR = DST); nothing is written
//   hang_job  the N-th job never finishes: STATUS.busy stays 1, no interrupt, until
//             CTRL.soft_reset aborts it
//   threads   worker threads for large jobs (default: hardware concurrency, at most 8)
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
// PERF_ACTIVE an ideal cycle estimate (see start_job), the stall counters 0.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NORMCORE_REF_X86 1
#endif

#include "addr_alloc.hpp"
#include "backends.hpp"
#include "device_options.hpp"
#include "normcore/contract.hpp"

namespace normcore::detail {

namespace {

__extension__ using u128 = unsigned __int128;

std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llX", static_cast<unsigned long long>(v));
  return buf;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

inline std::int64_t sign_extend(std::uint64_t v, int width) {
  const int sh = 64 - width;
  return static_cast<std::int64_t>(v << sh) >> sh;
}

inline std::uint64_t low_mask(int width) {
  return width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
}

// ---------------------------------------------------------------------------------------------
// Device memory: the live DMA buffers, shared by the device and its buffers (which may outlive
// it).

struct Block {
  std::uint64_t addr = 0;
  std::uint64_t size = 0;  // requested bytes (writable)
  std::uint64_t span = 0;  // size rounded up to bus words (readable)
  std::uint8_t* data = nullptr;
};

class RefDevice;

struct Memory {
  Memory(std::uint64_t base, std::uint64_t size) : alloc(base, size) {}
  std::mutex mu;
  AddressAllocator alloc;
  std::map<std::uint64_t, Block> live;  // by address
  RefDevice* owner = nullptr;           // null once the device is gone

  // The live block containing byte `addr`, readable (span) or writable (size) extent.
  const Block* find(std::uint64_t addr, bool for_write) const {
    auto it = live.upper_bound(addr);
    if (it == live.begin()) return nullptr;
    --it;
    const Block& b = it->second;
    return addr - b.addr < (for_write ? b.size : b.span) ? &b : nullptr;
  }
  // First bus word of `words` words from the bus-aligned `addr` that is not inside one live
  // buffer (words never straddle buffers: blocks are bus-aligned whole words).
  std::optional<std::uint64_t> first_bad_read(std::uint64_t addr, u128 words,
                                              std::uint64_t bus) const {
    const u128 end = static_cast<u128>(addr) + words * bus;
    u128 cur = addr;
    while (cur < end) {
      const Block* b = find(static_cast<std::uint64_t>(cur), false);
      if (b == nullptr) return static_cast<std::uint64_t>(cur);
      cur = static_cast<u128>(b->addr) + b->span;
    }
    return std::nullopt;
  }
  // First byte of [addr, addr + bytes) outside every live buffer's requested size.
  std::optional<std::uint64_t> first_bad_write(std::uint64_t addr, u128 bytes) const {
    const u128 end = static_cast<u128>(addr) + bytes;
    u128 cur = addr;
    while (cur < end) {
      const Block* b = find(static_cast<std::uint64_t>(cur), true);
      if (b == nullptr) return static_cast<std::uint64_t>(cur);
      cur = static_cast<u128>(b->addr) + b->size;
    }
    return std::nullopt;
  }
  // Host pointer to [addr, addr + bytes) if it lies inside one buffer, else nullptr.
  std::uint8_t* contiguous(std::uint64_t addr, std::uint64_t bytes, bool for_write) const {
    const Block* b = find(addr, for_write);
    if (b == nullptr) return nullptr;
    const std::uint64_t off = addr - b->addr;
    return bytes <= (for_write ? b->size : b->span) - off ? b->data + off : nullptr;
  }
  // Copies between device memory and host memory; the range must have been checked.
  void read(std::uint64_t addr, std::uint8_t* dst, std::uint64_t bytes) const {
    while (bytes > 0) {
      const Block* b = find(addr, false);
      const std::uint64_t off = addr - b->addr;
      const std::uint64_t n = std::min(bytes, b->span - off);
      std::memcpy(dst, b->data + off, static_cast<std::size_t>(n));
      addr += n;
      dst += n;
      bytes -= n;
    }
  }
  void write(std::uint64_t addr, const std::uint8_t* src, std::uint64_t bytes) const {
    while (bytes > 0) {
      const Block* b = find(addr, true);
      const std::uint64_t off = addr - b->addr;
      const std::uint64_t n = std::min(bytes, b->size - off);
      std::memcpy(b->data + off, src, static_cast<std::size_t>(n));
      addr += n;
      src += n;
      bytes -= n;
    }
  }
};

// ---------------------------------------------------------------------------------------------
// The compute kernel: element range [e0, e1) of a job. Every output value comes from
// normcore::apply, either directly or through per-channel lookup tables filled with it.

// LSB-first bit stream reader that reads a byte only when its bits are needed (so an in-place
// job with out_bits <= in_bits never reads a byte the writer has already replaced).
class BitReader {
 public:
  explicit BitReader(const std::uint8_t* p) : p_(p) {}
  std::uint64_t get(int width) {
    while (nbits_ < width) {
      acc_ |= static_cast<std::uint64_t>(*p_++) << nbits_;
      nbits_ += 8;
    }
    const std::uint64_t v = acc_ & low_mask(width);
    acc_ >>= width;
    nbits_ -= width;
    return v;
  }

 private:
  const std::uint8_t* p_;
  std::uint64_t acc_ = 0;
  int nbits_ = 0;
};

// LSB-first bit stream writer; whole bytes only, a final partial byte is padded with zeros (the
// RTL's output gearbox does the same and writes the byte whole).
class BitWriter {
 public:
  explicit BitWriter(std::uint8_t* p) : p_(p) {}
  void put(std::uint64_t v, int width) {
    acc_ |= v << nbits_;
    nbits_ += width;
    while (nbits_ >= 8) {
      *p_++ = static_cast<std::uint8_t>(acc_);
      acc_ >>= 8;
      nbits_ -= 8;
    }
  }
  void flush() {
    if (nbits_ > 0) *p_++ = static_cast<std::uint8_t>(acc_);
    acc_ = 0;
    nbits_ = 0;
  }

 private:
  std::uint8_t* p_;
  std::uint64_t acc_ = 0;
  int nbits_ = 0;
};

struct Kernel {
  const std::uint8_t* in = nullptr;  // packed input, element 0 at bit 0
  std::uint8_t* out = nullptr;       // packed output, element 0 at bit 0
  int xw = 8, yw = 8;
  bool x_signed = true;
  std::uint64_t channels = 1;
  std::uint64_t stride = 1;  // elements per channel run: HW (NCHW) or 1 (NHWC)
  const std::int64_t* scale = nullptr;
  const std::int64_t* shift = nullptr;
  JobSettings job;
  const std::uint8_t* lut8 = nullptr;  // [c][256] output bytes (xw == yw == 8)
  const std::uint32_t* lut = nullptr;  // [c][2^xw] output bits (xw <= 16)

  // One table row: every input code of channel c through the golden model.
  template <typename T>
  void fill_row(T* row, std::uint64_t c) const {
    const std::uint64_t codes = std::uint64_t{1} << xw;
    const std::uint64_t ymask = low_mask(yw);
    for (std::uint64_t v = 0; v < codes; ++v) {
      const std::int64_t x = x_signed ? sign_extend(v, xw) : static_cast<std::int64_t>(v);
      row[v] =
          static_cast<T>(static_cast<std::uint64_t>(apply(x, scale[c], shift[c], job)) & ymask);
    }
  }

  // The requirement for splitting: e0 * xw and e0 * yw are multiples of 8 (except e0 = 0 and
  // the end of the tensor), so each range starts and ends on whole bytes.
  void run(std::uint64_t e0, std::uint64_t e1) const {
    std::uint64_t c = (e0 / stride) % channels, r = e0 % stride;
    if (lut8 != nullptr) {
      run8(e0, e1, c, r);
      return;
    }
    BitReader rd(in + e0 * static_cast<std::uint64_t>(xw) / 8);
    BitWriter wr(out + e0 * static_cast<std::uint64_t>(yw) / 8);
    const std::uint64_t ymask = low_mask(yw);
    const int xs = xw;
    for (std::uint64_t e = e0; e < e1; ++e) {
      const std::uint64_t raw = rd.get(xw);
      std::uint64_t y;
      if (lut != nullptr) {
        y = lut[(c << xs) | raw];
      } else {
        const std::int64_t x = x_signed ? sign_extend(raw, xw) : static_cast<std::int64_t>(raw);
        y = static_cast<std::uint64_t>(apply(x, scale[c], shift[c], job)) & ymask;
      }
      wr.put(y, yw);
      if (++r == stride) {
        r = 0;
        if (++c == channels) c = 0;
      }
    }
    wr.flush();
  }

  // Byte in, byte out: one table row per channel run.
  static void map_run(const std::uint8_t* row, const std::uint8_t* src, std::uint8_t* dst,
                      std::uint64_t n) {
#ifdef NORMCORE_REF_X86
    if (n >= 64 && have_avx2()) {
      const std::uint64_t done = map_run_avx2(row, src, dst, n);
      src += done;
      dst += done;
      n -= done;
    }
#endif
    // Eight bytes per step: one load, eight table reads, one store (in place safe: the word is
    // read before it is written).
    while (n >= 8) {
      std::uint64_t w;
      std::memcpy(&w, src, 8);
      const std::uint64_t o = static_cast<std::uint64_t>(row[w & 0xFF]) |
                              static_cast<std::uint64_t>(row[(w >> 8) & 0xFF]) << 8 |
                              static_cast<std::uint64_t>(row[(w >> 16) & 0xFF]) << 16 |
                              static_cast<std::uint64_t>(row[(w >> 24) & 0xFF]) << 24 |
                              static_cast<std::uint64_t>(row[(w >> 32) & 0xFF]) << 32 |
                              static_cast<std::uint64_t>(row[(w >> 40) & 0xFF]) << 40 |
                              static_cast<std::uint64_t>(row[(w >> 48) & 0xFF]) << 48 |
                              static_cast<std::uint64_t>(row[w >> 56]) << 56;
      std::memcpy(dst, &o, 8);
      src += 8;
      dst += 8;
      n -= 8;
    }
    for (std::uint64_t i = 0; i < n; ++i) dst[i] = row[src[i]];
  }

#ifdef NORMCORE_REF_X86
  // 32 bytes through a 256-entry row held as 16 PSHUFB tables of 16 entries. PSHUFB looks up
  // the low nibble of each index byte, or gives 0 when bit 7 is set. For the low half (x < 128,
  // high nibble h < 8), table j gets the index x +sat (0x70 - 16j): bit 7 is clear exactly when
  // h <= j, so x collects tables h..7; with d[j] = T[j] ^ T[j + 1] (d[7] = T[7]) their XOR
  // telescopes to T[h]. x >= 128 saturates every index (no contribution). The high half is the
  // same with x ^ 0x80 and d[8..15]. (d, bias: prepared by map_run_avx2.)
  __attribute__((target("avx2"))) static inline __m256i map32(const __m256i* d, const __m256i* bias,
                                                              const std::uint8_t* p) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    const __m256i x2 = _mm256_xor_si256(x, _mm256_set1_epi8(static_cast<char>(0x80)));
    __m256i r0 = _mm256_shuffle_epi8(d[0], _mm256_adds_epu8(x, bias[0]));
    __m256i r1 = _mm256_shuffle_epi8(d[8], _mm256_adds_epu8(x2, bias[0]));
    for (int j = 1; j < 8; ++j) {
      r0 = _mm256_xor_si256(r0, _mm256_shuffle_epi8(d[j], _mm256_adds_epu8(x, bias[j])));
      r1 = _mm256_xor_si256(r1, _mm256_shuffle_epi8(d[8 + j], _mm256_adds_epu8(x2, bias[j])));
    }
    return _mm256_or_si256(r0, r1);
  }
  static bool have_avx2() {
    static const bool yes = __builtin_cpu_supports("avx2") != 0;
    return yes;
  }
  // 32 bytes per step (map32). Returns the bytes done.
  __attribute__((target("avx2"))) static std::uint64_t map_run_avx2(const std::uint8_t* row,
                                                                    const std::uint8_t* src,
                                                                    std::uint8_t* dst,
                                                                    std::uint64_t n) {
    __m256i t[16], d[16], bias[8];
    for (int k = 0; k < 16; ++k) {
      t[k] = _mm256_broadcastsi128_si256(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 16 * k)));
    }
    for (int k = 0; k < 16; ++k) d[k] = (k % 8 == 7) ? t[k] : _mm256_xor_si256(t[k], t[k + 1]);
    for (int j = 0; j < 8; ++j) bias[j] = _mm256_set1_epi8(static_cast<char>(0x70 - 16 * j));
    std::uint64_t i = 0;
    // Long runs into a separate output: streaming stores (no read for ownership of the output
    // lines, which otherwise costs a third memory stream), once dst is 32-byte aligned.
    if (n >= (std::uint64_t{1} << 20) && src != dst) {
      const std::uint64_t head = (32 - (reinterpret_cast<std::uintptr_t>(dst) & 31)) & 31;
      for (; i < head; ++i) dst[i] = row[src[i]];
      for (; i + 32 <= n; i += 32) {
        _mm256_stream_si256(reinterpret_cast<__m256i*>(dst + i), map32(d, bias, src + i));
      }
      _mm_sfence();
      return i;
    }
    for (; i + 32 <= n; i += 32) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i), map32(d, bias, src + i));
    }
    return i;
  }
#endif

  void run8(std::uint64_t e0, std::uint64_t e1, std::uint64_t c, std::uint64_t r) const {
    const std::uint8_t* src = in + e0;
    std::uint8_t* dst = out + e0;
    std::uint64_t n = e1 - e0;
    if (stride >= 16) {  // long runs of one channel
      while (n > 0) {
        const std::uint64_t len = std::min(stride - r, n);
        map_run(lut8 + (c << 8), src, dst, len);
        src += len;
        dst += len;
        n -= len;
        r += len;
        if (r == stride) {
          r = 0;
          if (++c == channels) c = 0;
        }
      }
      return;
    }
    if (stride == 1) {  // NHWC: the channel advances every element
      // Eight bytes per step through the rows of channels c..c+7 (mod C).
      const std::uint64_t nch = channels;  // locals: the byte stores may alias members
      const std::uint8_t* const table = lut8;
      std::vector<const std::uint8_t*> rows(static_cast<std::size_t>(nch + 8));
      for (std::uint64_t k = 0; k < nch + 8; ++k) rows[k] = table + ((k % nch) << 8);
      const std::uint64_t step = 8 % nch;
      std::uint64_t i = 0;
      for (; i + 8 <= n; i += 8) {
        const std::uint8_t* const* rp = rows.data() + c;
        std::uint64_t w;
        std::memcpy(&w, src + i, 8);
        const std::uint64_t o = static_cast<std::uint64_t>(rp[0][w & 0xFF]) |
                                static_cast<std::uint64_t>(rp[1][(w >> 8) & 0xFF]) << 8 |
                                static_cast<std::uint64_t>(rp[2][(w >> 16) & 0xFF]) << 16 |
                                static_cast<std::uint64_t>(rp[3][(w >> 24) & 0xFF]) << 24 |
                                static_cast<std::uint64_t>(rp[4][(w >> 32) & 0xFF]) << 32 |
                                static_cast<std::uint64_t>(rp[5][(w >> 40) & 0xFF]) << 40 |
                                static_cast<std::uint64_t>(rp[6][(w >> 48) & 0xFF]) << 48 |
                                static_cast<std::uint64_t>(rp[7][w >> 56]) << 56;
        std::memcpy(dst + i, &o, 8);
        c += step;
        if (c >= nch) c -= nch;
      }
      for (; i < n; ++i) {
        dst[i] = table[(c << 8) | src[i]];
        if (++c == nch) c = 0;
      }
      return;
    }
    for (std::uint64_t i = 0; i < n; ++i) {
      dst[i] = lut8[(c << 8) | src[i]];
      if (++r == stride) {
        r = 0;
        if (++c == channels) c = 0;
      }
    }
  }
};

// Runs f(i) for i in [0, parts) on up to `threads` threads (the caller's thread included).
template <typename F>
void parallel_for(std::uint64_t parts, unsigned threads, F&& f) {
  const unsigned nt = static_cast<unsigned>(std::min<std::uint64_t>(threads, parts));
  if (nt <= 1) {
    for (std::uint64_t i = 0; i < parts; ++i) f(i);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(nt - 1);
  auto worker = [&](unsigned t) {
    for (std::uint64_t i = t; i < parts; i += nt) f(i);
  };
  for (unsigned t = 1; t < nt; ++t) pool.emplace_back(worker, t);
  worker(0);
  for (auto& th : pool) th.join();
}

// ---------------------------------------------------------------------------------------------

struct Options {
  std::uint64_t mem = std::uint64_t{1} << 30;
  FaultOptions faults;
  unsigned threads = 1;
};

// A field of the register file: its register's slot (offset / 4) and description.
struct Field {
  std::size_t slot = 0;
  const FieldDesc* desc = nullptr;
  explicit operator bool() const { return desc != nullptr; }
};

class RefBuffer final : public DmaBuffer {
 public:
  RefBuffer(std::shared_ptr<Memory> mem, std::uint64_t addr, std::size_t size,
            std::unique_ptr<std::uint8_t[]> data)
      : mem_(std::move(mem)), addr_(addr), size_(size), data_(std::move(data)) {}
  ~RefBuffer() override;

  [[nodiscard]] std::uint64_t device_address() const override { return addr_; }
  [[nodiscard]] std::size_t size() const override { return size_; }
  [[nodiscard]] std::span<std::uint8_t> map() override { return {data_.get(), size_}; }
  // Coherent memory: only the bounds are checked.
  void sync_to_device(std::size_t offset, std::size_t length) override {
    check(offset, length, "sync_to_device");
  }
  void sync_from_device(std::size_t offset, std::size_t length) override {
    check(offset, length, "sync_from_device");
  }

 private:
  void check(std::size_t offset, std::size_t length, const char* what) const {
    if (offset > size_ || length > size_ - offset) {
      throw DeviceError("ref: " + std::string(what) + "(offset " + std::to_string(offset) +
                        ", length " + std::to_string(length) + ") is outside the " +
                        std::to_string(size_) + "-byte DMA buffer at " + hex(addr_));
    }
  }
  std::shared_ptr<Memory> mem_;
  std::uint64_t addr_;
  std::size_t size_;
  std::unique_ptr<std::uint8_t[]> data_;
};

class RefDevice final : public Device {
 public:
  RefDevice(const DeviceSpec& spec, Manifest manifest, const Options& opt);
  ~RefDevice() override {
    std::lock_guard lock(mem_->mu);
    mem_->owner = nullptr;
  }

  std::unique_ptr<DmaBuffer> alloc(std::size_t bytes, std::size_t align) override;
  bool wait_irq(std::chrono::milliseconds timeout) override;

  // Called by a buffer's destructor with the memory lock held.
  void on_release(std::uint64_t bytes) { mutable_counters().buffer_bytes -= bytes; }

 protected:
  std::uint32_t do_read32(std::uint32_t offset) override;
  void do_write32(std::uint32_t offset, std::uint32_t value) override;

 private:
  struct Slot {
    const RegDesc* reg = nullptr;
    std::uint32_t value = 0;
    std::uint32_t readable = 0;  // every field bit except w1s_sc
    std::uint32_t rw = 0, w1c = 0, w1s = 0;
  };

  Field field(const char* reg, const char* name, bool required = true) const;
  int code(const char* name) const;
  [[nodiscard]] std::uint64_t get(Field f) const {
    return f ? f.desc->get(slots_[f.slot].value) : 0;
  }
  void set(Field f, std::uint64_t v) {
    if (f) slots_[f.slot].value = f.desc->put(slots_[f.slot].value, v);
  }
  [[nodiscard]] std::uint64_t get64(Field lo, Field hi) const { return get(lo) | get(hi) << 32; }
  void set64(Field lo, Field hi, std::uint64_t v) {
    set(lo, v & 0xFFFFFFFFu);
    set(hi, v >> 32);
  }
  [[nodiscard]] bool irq_line() const {
    return (get(irq_done_) != 0 && get(en_done_) != 0) ||
           (get(irq_error_) != 0 && get(en_error_) != 0);
  }
  [[nodiscard]] bool busy() const { return get(busy_) != 0; }

  void start_job();
  void clear_for_start();
  void soft_reset();
  void finish(bool ok, int err_code, std::uint64_t err_addr);
  void set_perf(std::uint64_t active, std::uint64_t elements);
  void compute(const Kernel& base, std::uint64_t total, bool in_place, int xw, int yw);

  Options opt_;
  std::shared_ptr<Memory> mem_;
  std::vector<Slot> slots_;
  std::uint64_t jobs_ = 0;  // jobs that passed validation

  // Fields, resolved by name from the manifest.
  Field start_, soft_reset_, en_done_, en_error_;
  Field busy_, done_, error_, start_ignored_, irq_done_, irq_error_;
  Field err_code_, err_lo_, err_hi_;
  Field channels_, inner_, outer_, layout_, rounding_, shift_, clamp_lo_, clamp_hi_;
  Field src_lo_, src_hi_, dst_lo_, dst_hi_, param_lo_, param_hi_;
  Field win_base_lo_, win_base_hi_, win_last_lo_, win_last_hi_;
  Field perf_active_, perf_rd_stall_, perf_wr_stall_, perf_elems_lo_, perf_elems_hi_;
  int code_channels_ = 0, code_zero_ = 0, code_shift_ = 0, code_misaligned_ = 0;
  int code_window_ = 0, code_overlap_ = 0, code_read_ = 0, code_write_ = 0;
};

RefBuffer::~RefBuffer() {
  std::lock_guard lock(mem_->mu);
  mem_->alloc.release(addr_);
  mem_->live.erase(addr_);
  if (mem_->owner != nullptr) mem_->owner->on_release(size_);
}

RefDevice::RefDevice(const DeviceSpec& spec, Manifest manifest, const Options& opt)
    : Device(spec.text, std::move(manifest)), opt_(opt) {
  const Manifest& m = this->manifest();
  const DeviceConfig& cfg = m.config;
  const std::string where = "device '" + spec.text + "': ";
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

  // Register file.
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
  try {
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
    channels_ = field("CHANNELS", "value");
    inner_ = field("INNER", "value");
    outer_ = field("OUTER", "value");
    layout_ = field("MODE", "layout");
    rounding_ = field("MODE", "rounding");
    shift_ = field("MODE", "shift");
    clamp_lo_ = field("CLAMP_LO", "value");
    clamp_hi_ = field("CLAMP_HI", "value");
    src_lo_ = field("SRC_LO", "value");
    src_hi_ = field("SRC_HI", "value");
    dst_lo_ = field("DST_LO", "value");
    dst_hi_ = field("DST_HI", "value");
    param_lo_ = field("PARAM_LO", "value");
    param_hi_ = field("PARAM_HI", "value");
    // Optional: without a window every address is allowed; without counters none is kept.
    win_base_lo_ = field("WIN_BASE_LO", "value", false);
    win_base_hi_ = field("WIN_BASE_HI", "value", false);
    win_last_lo_ = field("WIN_LAST_LO", "value", false);
    win_last_hi_ = field("WIN_LAST_HI", "value", false);
    perf_active_ = field("PERF_ACTIVE", "value", false);
    perf_rd_stall_ = field("PERF_RD_STALL", "value", false);
    perf_wr_stall_ = field("PERF_WR_STALL", "value", false);
    perf_elems_lo_ = field("PERF_ELEMS_LO", "value", false);
    perf_elems_hi_ = field("PERF_ELEMS_HI", "value", false);
    code_channels_ = code("bad_channels");
    code_zero_ = code("zero_length");
    code_shift_ = code("bad_shift");
    code_misaligned_ = code("misaligned");
    code_window_ = code("window");
    code_overlap_ = code("overlap");
    code_read_ = code("read");
    code_write_ = code("write");
  } catch (const Error& e) {
    throw DeviceError(where + "manifest " + m.source + ": " + e.what());
  }

  // The synthetic device address space: [base, base + mem), inside the address width.
  std::uint64_t base = 0x40000000ull;
  u128 limit = u128{1} << cfg.addr_bits;
  if (base >= limit / 2) base = static_cast<std::uint64_t>(limit / 4);
  const std::uint64_t size = static_cast<std::uint64_t>(std::min<u128>(opt_.mem, limit - base));
  mem_ = std::make_shared<Memory>(base, size);
  mem_->owner = this;
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
  if (pulses == 0 || offset / 4 != start_.slot) return;
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

void RefDevice::start_job() {
  const DeviceConfig& cfg = manifest().config;
  const ArithSpec arith = cfg.arith();
  const int xw = cfg.in_bits, yw = cfg.out_bits;
  const std::uint64_t bus = static_cast<std::uint64_t>(cfg.bus_bytes());
  const std::uint64_t lanes = static_cast<std::uint64_t>(std::max(1, cfg.lanes));
  clear_for_start();

  // Snapshot.
  const std::uint64_t C = get(channels_), HW = get(inner_), N = get(outer_);
  const auto layout = get(layout_) != 0 ? Layout::nhwc : Layout::nchw;
  const auto rounding = static_cast<Rounding>(get(rounding_) & 3);
  const auto R = static_cast<int>(get(shift_));
  const std::uint64_t lo_raw = get(clamp_lo_), hi_raw = get(clamp_hi_);
  const std::int64_t lo =
      cfg.out_signed ? sign_extend(lo_raw, yw) : static_cast<std::int64_t>(lo_raw);
  const std::int64_t hi =
      cfg.out_signed ? sign_extend(hi_raw, yw) : static_cast<std::int64_t>(hi_raw);
  const std::uint64_t src = get64(src_lo_, src_hi_), dst = get64(dst_lo_, dst_hi_);
  const std::uint64_t param = get64(param_lo_, param_hi_);
  const std::uint64_t win_base = win_base_lo_ ? get64(win_base_lo_, win_base_hi_) : 0;
  const std::uint64_t win_last =
      win_last_lo_ ? get64(win_last_lo_, win_last_hi_) : ~std::uint64_t{0};

  // Sizes (exact: C * HW * N needs up to 11 + 24 + 32 bits; 128-bit arithmetic throughout).
  const u128 total = static_cast<u128>(C) * HW * N;
  const u128 in_bytes = (total * static_cast<unsigned>(xw) + 7) / 8;
  const u128 out_bytes = (total * static_cast<unsigned>(yw) + 7) / 8;
  const std::uint64_t pe = static_cast<std::uint64_t>(cfg.param_entry_bytes());
  const u128 prm_bytes = static_cast<u128>(C) * pe;
  const u128 in_end = static_cast<u128>(src) + in_bytes - 1;
  const u128 out_end = static_cast<u128>(dst) + out_bytes - 1;
  const u128 prm_end = static_cast<u128>(param) + prm_bytes - 1;
  const u128 addr_limit = u128{1} << cfg.addr_bits;
  auto in_window = [&](std::uint64_t start, u128 end) {
    return start >= win_base && end <= win_last && end < addr_limit;
  };

  // Validation: the RTL's checks, in its priority order, with no memory access on failure.
  // (PERF_ACTIVE: the 64 sizing cycles plus the check, as the RTL counts busy cycles.)
  constexpr std::uint64_t kSizingCycles = 64 + 3;
  int fail = 0;
  if (C == 0 || C > static_cast<std::uint64_t>(cfg.max_channels)) {
    fail = code_channels_;
  } else if (HW == 0 || N == 0) {
    fail = code_zero_;
  } else if (R > arith.acc_bits()) {
    fail = code_shift_;
  } else if (src % bus != 0 || dst % bus != 0 || param % bus != 0) {
    fail = code_misaligned_;
  } else if (!in_window(src, in_end) || !in_window(dst, out_end) || !in_window(param, prm_end)) {
    fail = code_window_;
  } else if (static_cast<u128>(src) <= out_end && static_cast<u128>(dst) <= in_end &&
             !(yw <= xw && src == dst)) {
    fail = code_overlap_;
  }
  if (fail != 0) {
    set_perf(kSizingCycles, 0);
    finish(false, fail, 0);
    return;
  }

  ++jobs_;
  if (opt_.faults.hang_job != 0 && jobs_ == opt_.faults.hang_job) {
    set(busy_, 1);  // until CTRL.soft_reset
    return;
  }
  if (opt_.faults.fail_job != 0 && jobs_ == opt_.faults.fail_job) {
    set_perf(kSizingCycles, 0);
    if (opt_.faults.fail_write) {
      finish(false, code_write_, dst);
    } else {
      finish(false, code_read_, src);
    }
    return;
  }

  const std::uint64_t n_total = static_cast<std::uint64_t>(total);
  const std::uint64_t prm_words = ceil_div(static_cast<std::uint64_t>(prm_bytes), bus);
  const std::uint64_t in_words = static_cast<std::uint64_t>((in_bytes + bus - 1) / bus);
  const std::uint64_t out_words = static_cast<std::uint64_t>((out_bytes + bus - 1) / bus);
  // PERF_ACTIVE, an ideal cycle estimate (no memory stalls): sizing and checks (67), core set-up
  // (2 * lanes + 2), the parameter load (one cycle per bus word or table entry, whichever is
  // more), the stream (one beat of `lanes` elements per cycle unless the bus words in or out
  // are more), the pipeline drain (pipeline + 1) and the final flush (2).
  const std::uint64_t stream = std::max({ceil_div(n_total, lanes), in_words, out_words});
  const std::uint64_t ideal = kSizingCycles + 2 * lanes + 2 + std::max(prm_words, C) + stream +
                              static_cast<std::uint64_t>(cfg.pipeline) + 1 + 2;

  std::lock_guard lock(mem_->mu);
  Memory& mem = *mem_;
  // Reads: the parameter table, then the input, in bus words; the first failing word stops it.
  if (auto bad = mem.first_bad_read(param, prm_words, bus)) {
    set_perf(kSizingCycles, 0);
    finish(false, code_read_, *bad);
    return;
  }
  if (auto bad = mem.first_bad_read(src, in_words, bus)) {
    set_perf(kSizingCycles + prm_words, 0);
    finish(false, code_read_, *bad);
    return;
  }
  // Writes: bursts from DST of at most max_burst words, never across 4 KiB. The burst holding
  // the first unwritable byte fails; the bursts before it are written, nothing after.
  const std::uint64_t n_out = static_cast<std::uint64_t>(out_bytes);
  std::uint64_t write_bytes = n_out;
  const auto bad_write = mem.first_bad_write(dst, n_out);
  std::uint64_t bad_burst = 0;
  if (bad_write) {
    const std::uint64_t max_burst_bytes = static_cast<std::uint64_t>(cfg.max_burst) * bus;
    std::uint64_t a = dst;
    for (;;) {
      const std::uint64_t len = std::min(max_burst_bytes, 4096 - (a & 4095));
      if (*bad_write - a < len) break;
      a += len;
    }
    bad_burst = a;
    write_bytes = a - dst;
  }

  // Parameters: C entries, little endian, s in the low scale_bits bits, b above it.
  const std::uint64_t n_prm = static_cast<std::uint64_t>(prm_bytes);
  std::vector<std::uint8_t> prm(static_cast<std::size_t>(n_prm));
  mem.read(param, prm.data(), n_prm);
  std::vector<std::int64_t> scale(static_cast<std::size_t>(C)), shift(static_cast<std::size_t>(C));
  for (std::uint64_t c = 0; c < C; ++c) {
    u128 entry = 0;
    for (std::uint64_t k = pe; k-- > 0;)
      entry = entry << 8 | prm[static_cast<std::size_t>(c * pe + k)];
    const auto sbits = static_cast<std::uint64_t>(entry) & low_mask(cfg.scale_bits);
    const auto bbits =
        static_cast<std::uint64_t>(entry >> cfg.scale_bits) & low_mask(cfg.shift_bits);
    scale[static_cast<std::size_t>(c)] = sign_extend(sbits, cfg.scale_bits);
    shift[static_cast<std::size_t>(c)] = sign_extend(bbits, cfg.shift_bits);
  }

  // Input and output: in place in the buffers when each lies inside one, else staged.
  const std::uint64_t n_in = static_cast<std::uint64_t>(in_bytes);
  std::vector<std::uint8_t> in_stage, out_stage;
  const std::uint8_t* in_ptr = mem.contiguous(src, n_in, false);
  if (in_ptr == nullptr) {
    in_stage.resize(static_cast<std::size_t>(n_in));
    mem.read(src, in_stage.data(), n_in);
    in_ptr = in_stage.data();
  }
  std::uint8_t* out_ptr = bad_write ? nullptr : mem.contiguous(dst, n_out, true);
  if (out_ptr == nullptr) {
    out_stage.resize(static_cast<std::size_t>(n_out));
    out_ptr = out_stage.data();
  }

  Kernel k;
  k.in = in_ptr;
  k.out = out_ptr;
  k.xw = xw;
  k.yw = yw;
  k.x_signed = cfg.in_signed;
  k.channels = C;
  k.stride = layout == Layout::nchw ? HW : 1;
  k.scale = scale.data();
  k.shift = shift.data();
  k.job = JobSettings{R, rounding, lo, hi};
  compute(k, n_total, in_ptr == out_ptr, xw, yw);

  if (!out_stage.empty()) mem.write(dst, out_stage.data(), write_bytes);
  if (bad_write) {
    const std::uint64_t elems =
        std::min<std::uint64_t>(n_total, write_bytes * 8 / static_cast<std::uint64_t>(yw));
    set_perf(kSizingCycles + prm_words + write_bytes / bus, elems);
    finish(false, code_write_, bad_burst);
    return;
  }
  set_perf(ideal, n_total);
  finish(true, 0, 0);
}

void RefDevice::compute(const Kernel& base, std::uint64_t total, bool in_place, int xw, int yw) {
  Kernel k = base;
  const std::uint64_t C = k.channels;
  // Lookup tables (one row per channel, every input code through apply) when they cost less
  // than evaluating every element: at least two elements per table entry.
  std::vector<std::uint8_t> lut8;
  std::vector<std::uint32_t> lut;
  const unsigned threads = total >= (1u << 18) ? opt_.threads : 1u;
  if (xw <= 16) {
    const std::uint64_t entries = C << xw;
    if (total >= 2 * entries && entries <= (std::uint64_t{1} << 24)) {
      if (xw == 8 && yw == 8) {
        lut8.resize(static_cast<std::size_t>(entries));
        parallel_for(C, threads, [&](std::uint64_t c) {
          k.fill_row(lut8.data() + static_cast<std::size_t>(c << 8), c);
        });
        k.lut8 = lut8.data();
      } else {
        lut.resize(static_cast<std::size_t>(entries));
        parallel_for(C, threads, [&](std::uint64_t c) {
          k.fill_row(lut.data() + static_cast<std::size_t>(c << xw), c);
        });
        k.lut = lut.data();
      }
    }
  }
  // Split into element ranges that start on whole bytes in both input and output. In place with
  // narrower output, a later range would overwrite input an earlier one has not read yet: one
  // range then.
  const std::uint64_t gx = 8 / std::gcd<std::uint64_t>(8, static_cast<std::uint64_t>(xw));
  const std::uint64_t gy = 8 / std::gcd<std::uint64_t>(8, static_cast<std::uint64_t>(yw));
  const std::uint64_t grain = std::lcm(gx, gy) * 4096;
  unsigned parts = (in_place && yw != xw) ? 1u : threads;
  if (total < 2 * grain) parts = 1;
  if (parts <= 1) {
    k.run(0, total);
    return;
  }
  const std::uint64_t chunk = ceil_div(ceil_div(total, parts), grain) * grain;
  const std::uint64_t n = ceil_div(total, chunk);
  parallel_for(n, parts,
               [&](std::uint64_t i) { k.run(i * chunk, std::min(total, (i + 1) * chunk)); });
}

}  // namespace

std::unique_ptr<Device> open_ref_device(const DeviceSpec& spec) {
  const OptionReader r(spec);
  Options opt;
  opt.mem = r.at_least("mem", opt.mem, 1);
  opt.faults = r.faults();
  const unsigned hw = std::thread::hardware_concurrency();
  opt.threads = static_cast<unsigned>(r.u64("threads", std::clamp(hw, 1u, 8u), 1, 256));
  Manifest m;
  try {
    m = load_manifest(spec.target);
  } catch (const DeviceError&) {
    throw;
  } catch (const std::exception& e) {
    throw DeviceError("device '" + spec.text + "': cannot load manifest " + spec.target + ": " +
                      e.what());
  }
  return std::make_unique<RefDevice>(spec, std::move(m), opt);
}

}  // namespace normcore::detail
