// Writes a smoke-test vector set for a generated core (from its manifest.json) using the golden
// model: cfg.hex, prm.hex, in.hex, out.hex and iverilog_params.txt (the -P options for the
// Icarus test bench hw/tb/normcore_smoke_tb.v).
// Usage: smoke_vectors <manifest.json> <out-dir> [seed]
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "normcore/contract.hpp"
#include "normcore/float_contract.hpp"
#include "normcore/gen/config.hpp"
#include "normcore/util/bits.hpp"

namespace {

// Little LSB-first bit vector that prints as hex (most significant digit first).
struct Bits {
  std::vector<std::uint8_t> bytes;
  std::uint64_t size = 0;  // bits
  void push(std::uint64_t v, int width) {
    bytes.resize(static_cast<std::size_t>(
                     normcore::bits::bytes_for(size + static_cast<std::uint64_t>(width))),
                 0);
    normcore::bits::put(bytes, size, width, v);
    size += static_cast<std::uint64_t>(width);
  }
  std::string hex() const {
    std::string s;
    for (std::uint64_t d = (size + 3) / 4; d-- > 0;) {
      const int w = static_cast<int>(std::min<std::uint64_t>(4, size - 4 * d));
      s += "0123456789abcdef"[normcore::bits::get(bytes, 4 * d, w)];
    }
    return s;
  }
};

}  // namespace

int main(int argc, char** argv) {
  using namespace normcore;
  if (argc < 3) {
    std::cerr << "usage: smoke_vectors <manifest.json> <out-dir> [seed]\n";
    return 2;
  }
  std::ifstream is(argv[1]);
  if (!is) {
    std::cerr << "smoke_vectors: cannot open " << argv[1] << "\n";
    return 2;
  }
  const auto manifest = nlohmann::json::parse(is);
  const auto cfg = gen::CoreConfig::from_json(manifest.at("config"));
  if (const auto err = cfg.check(); !err.empty()) {
    std::cerr << "smoke_vectors: " << err << "\n";
    return 2;
  }
  const std::string dir = argv[2];
  std::mt19937_64 rng(argc > 3 ? std::stoull(argv[3]) : 7);
  const ArithSpec a = cfg.arith;
  const int L = cfg.lanes;

  // One job whose beats span channel boundaries and end with a partial beat.
  // A specialised core gets a job it runs: C a multiple of L, its fixed layout, R and rounding.
  int C = std::min(cfg.max_channels, L + 3);
  if (cfg.lanes_divide_channels) C = C / L * L;
  const std::int64_t hw = std::min<std::int64_t>((1LL << std::min(cfg.inner_bits, 20)) - 1, 3);
  const Layout layout = cfg.has_fixed_layout() ? parse_layout(cfg.fixed_layout) : Layout::nchw;
  const std::size_t n = static_cast<std::size_t>(2 * C * hw + 1);  // two images and one element
  JobSettings job;
  job.shift = std::min(a.sw - 1, a.acc_bits());
  job.rounding = Rounding::half_away;
  if (cfg.has_fixed_shift()) job.shift = cfg.fixed_shift;
  if (cfg.has_fixed_rounding()) job.rounding = parse_rounding(cfg.fixed_rounding);
  job.lo = std::max<std::int64_t>(a.y_min(), a.y_min() / 2);
  job.hi = a.y_max();
  std::vector<std::int64_t> s(static_cast<std::size_t>(C)), b(static_cast<std::size_t>(C));
  for (int c = 0; c < C; ++c) {
    s[static_cast<std::size_t>(c)] =
        std::uniform_int_distribution<std::int64_t>(a.s_min(), a.s_max())(rng);
    b[static_cast<std::size_t>(c)] = std::uniform_int_distribution<std::int64_t>(
        std::max(a.b_min(), -(std::int64_t{1} << (a.sw + a.xw - 2))),
        std::min(a.b_max(), std::int64_t{1} << (a.sw + a.xw - 2)))(rng);
  }
  std::vector<std::int64_t> x(n), y(n);
  for (auto& v : x) v = std::uniform_int_distribution<std::int64_t>(a.x_min(), a.x_max())(rng);
  if (a.is_float()) {  // contract v2: fp32 s, b around 1; any x pattern; R = 0; ReLU
    job.shift = 0;
    job.lo = 0;
    job.hi =
        a.y_type == NumType::integer ? a.y_max() : static_cast<std::int64_t>(float_inf(a.y_type));
    for (auto* v : {&s, &b}) {
      for (auto& e : *v) e = static_cast<std::int64_t>((rng() & 0x80FFFFFFU) | 0x3C000000U);
    }
    for (auto& v : x) v = static_cast<std::int64_t>(rng() & 0xFFFFU);
    for (std::size_t e = 0; e < n; ++e) {
      const auto i = static_cast<std::int64_t>(e);
      const auto c = static_cast<std::size_t>(layout == Layout::nhwc ? i % C : (i / hw) % C);
      y[e] = apply_float(x[e], static_cast<std::uint32_t>(s[c]), static_cast<std::uint32_t>(b[c]),
                         a, job);
    }
  } else {
    apply_tensor(x, y, s, b, hw, layout, job);
  }

  const std::size_t beats = (n + static_cast<std::size_t>(L) - 1) / static_cast<std::size_t>(L);
  std::ofstream cf(dir + "/cfg.hex"), pf(dir + "/prm.hex"), inf(dir + "/in.hex"),
      of(dir + "/out.hex"), pp(dir + "/iverilog_params.txt");
  auto mask = [](std::int64_t v, int w) { return normcore::bits::truncate(v, w); };
  const std::uint64_t cfg_words[] = {static_cast<std::uint64_t>(C),
                                     static_cast<std::uint64_t>(hw),
                                     static_cast<std::uint64_t>(layout == Layout::nhwc ? 1 : 0),
                                     static_cast<std::uint64_t>(job.shift),
                                     static_cast<std::uint64_t>(job.rounding),
                                     mask(job.lo, a.yw),
                                     mask(job.hi, a.yw),
                                     std::uint64_t{beats}};
  for (std::uint64_t v : cfg_words) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%016llx\n", static_cast<unsigned long long>(v));
    cf << buf;
  }
  for (int c = 0; c < C; ++c) {
    Bits w;
    w.push(mask(s[static_cast<std::size_t>(c)], a.sw), a.sw);
    w.push(mask(b[static_cast<std::size_t>(c)], a.bw), a.bw);
    pf << w.hex() << "\n";
  }
  for (std::size_t beat = 0; beat < beats; ++beat) {
    Bits in, out;
    std::uint64_t keep = 0;
    for (int i = 0; i < L; ++i) {
      const std::size_t e = beat * static_cast<std::size_t>(L) + static_cast<std::size_t>(i);
      const bool k = e < n;
      if (k) keep |= 1ULL << i;
      in.push(k ? mask(x[e], a.xw) : 0, a.xw);
      out.push(k ? mask(y[e], a.yw) : 0, a.yw);
    }
    in.push(keep, L);
    out.push(keep, L);
    in.push(beat + 1 == beats, 1);
    out.push(beat + 1 == beats, 1);
    inf << in.hex() << "\n";
    of << out.hex() << "\n";
  }
  pp << "-Pnormcore_smoke_tb.LANES=" << L << " -Pnormcore_smoke_tb.XW=" << a.xw
     << " -Pnormcore_smoke_tb.YW=" << a.yw << " -Pnormcore_smoke_tb.SW=" << a.sw
     << " -Pnormcore_smoke_tb.BW=" << a.bw << " -Pnormcore_smoke_tb.CW=" << cfg.chan_bits()
     << " -Pnormcore_smoke_tb.HWW=" << cfg.inner_bits
     << " -Pnormcore_smoke_tb.RW=" << cfg.rshift_bits() << "\n";
  std::cout << "smoke_vectors: " << beats << " beats, C=" << C << " HW=" << hw << "\n";
  return 0;
}
