#include "normcore/fold.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace normcore {

namespace {

template <typename... Args>
std::string format(const char* fmt, Args... args) {
  std::array<char, 256> buf{};
  std::snprintf(buf.data(), buf.size(), fmt, args...);
  return buf.data();
}

std::string g(long double v) { return format("%.6Lg", v); }

std::string source_of(const BnParams& bn) {
  return bn.source.empty() ? std::string("bn params") : bn.source;
}

Quant input_quant(const BnParams& bn) { return bn.integer_io ? Quant{} : bn.in; }
Quant output_quant(const BnParams& bn) { return bn.integer_io ? Quant{} : bn.out; }

// v, snapped to the nearest integer when it is within floating-point noise of it, so that e.g.
// min = -1.0 at scale 0.1 gives exactly -10 rather than ceil(-9.9999999999) = -9.
long double snap(long double v) {
  const long double r = std::round(v);
  return std::fabs(v - r) <= 1e-9L * std::max(1.0L, std::fabs(v)) ? r : v;
}

// round(v) (ties away) if it lies in [lo, hi], else nullopt.
std::optional<std::int64_t> round_in(long double v, std::int64_t lo, std::int64_t hi) {
  const long double r = std::round(v);
  if (!(r >= static_cast<long double>(lo) && r <= static_cast<long double>(hi))) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(r);
}

// round(v) saturated to [lo, hi].
std::int64_t round_sat(long double v, std::int64_t lo, std::int64_t hi) {
  if (auto r = round_in(v, lo, hi)) return *r;
  return v < 0 ? lo : hi;
}

}  // namespace

std::vector<std::pair<long double, long double>> ideal_affine(const BnParams& bn) {
  validate(bn);
  const Quant in = input_quant(bn), out = output_quant(bn);
  std::vector<std::pair<long double, long double>> ad;
  ad.reserve(bn.channels());
  for (std::size_t c = 0; c < bn.channels(); ++c) {
    const long double big_a =
        static_cast<long double>(bn.gamma[c]) /
        std::sqrt(static_cast<long double>(bn.var[c]) + static_cast<long double>(bn.eps));
    const long double big_b =
        static_cast<long double>(bn.beta[c]) - big_a * static_cast<long double>(bn.mean[c]);
    const long double a =
        big_a * static_cast<long double>(in.scale) / static_cast<long double>(out.scale);
    const long double d = big_b / static_cast<long double>(out.scale) +
                          static_cast<long double>(out.zero_point) -
                          a * static_cast<long double>(in.zero_point);
    if (!std::isfinite(a) || !std::isfinite(d)) {
      throw Error(source_of(bn) + ": channel " + std::to_string(c) +
                  ": folded scale/offset overflow (a = " + g(a) + ", d = " + g(d) + ")");
    }
    ad.emplace_back(a, d);
  }
  return ad;
}

std::pair<std::int64_t, std::int64_t> activation_bounds(const BnParams& bn, const ArithSpec& spec) {
  const Quant out = output_quant(bn);
  const auto zp = static_cast<long double>(out.zero_point);
  const auto scale = static_cast<long double>(out.scale);
  long double lo = static_cast<long double>(spec.y_min());
  long double hi = static_cast<long double>(spec.y_max());
  const long double y_min = lo, y_max = hi;
  if (bn.activation == "relu" || bn.activation == "relu6") lo = std::max(lo, zp);
  if (bn.activation == "relu6") hi = std::min(hi, zp + std::round(snap(6.0L / scale)));
  if (bn.activation == "clamp") {
    lo = std::max(lo, zp + std::ceil(snap(static_cast<long double>(bn.act_min) / scale)));
    hi = std::min(hi, zp + std::floor(snap(static_cast<long double>(bn.act_max) / scale)));
  }
  if (lo > hi) {
    std::string act = bn.activation;
    if (act == "clamp") act += " {min " + g(bn.act_min) + ", max " + g(bn.act_max) + "}";
    throw Error(source_of(bn) + ": activation " + act + " with output zero_point " +
                std::to_string(out.zero_point) + " and scale " + g(scale) +
                " leaves no output values inside the output range " + g(y_min) + ".." + g(y_max) +
                " (clamp lo " + g(lo) + " > hi " + g(hi) + ")");
  }
  return {static_cast<std::int64_t>(lo), static_cast<std::int64_t>(hi)};
}

FoldResult fold(const BnParams& bn, const ArithSpec& spec, const FoldOptions& options) {
  if (const auto e = spec.check(); !e.empty()) throw Error("datapath: " + e);
  const auto ad = ideal_affine(bn);  // validates bn
  const auto [lo, hi] = activation_bounds(bn, spec);
  const int aw = spec.acc_bits();
  const std::size_t channels = ad.size();

  FoldResult res;
  res.job.rounding = options.rounding.value_or(bn.rounding.value_or(Rounding::half_even));
  res.job.lo = lo;
  res.job.hi = hi;

  auto s_at = [&](std::size_t c, int r) {
    return round_in(std::ldexp(ad[c].first, r), spec.s_min(), spec.s_max());
  };
  auto b_at = [&](std::size_t c, int r) {
    return round_in(std::ldexp(ad[c].second, r), spec.b_min(), spec.b_max());
  };

  // Channels that cannot be represented even at R = 0 do not constrain R (they saturate).
  std::vector<bool> s_ok(channels), b_ok(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    s_ok[c] = s_at(c, 0).has_value();
    b_ok[c] = b_at(c, 0).has_value();
  }
  int r = 0;
  if (options.force_shift) {
    r = *options.force_shift;
    if (r < 0 || r > aw) {
      throw Error("fold: forced shift R = " + std::to_string(r) + " is out of range 0.." +
                  std::to_string(aw));
    }
  } else {
    // Fitting is monotone in R, so the largest R that fits is found scanning down.
    for (r = aw; r > 0; --r) {
      bool fits = true;
      for (std::size_t c = 0; c < channels && fits; ++c) {
        fits = (!s_ok[c] || s_at(c, r)) && (!b_ok[c] || b_at(c, r));
      }
      if (fits) break;
    }
  }
  res.job.shift = r;
  if (const auto e = res.job.check(spec); !e.empty()) throw Error("fold: job settings: " + e);

  const auto x_lo = spec.x_min(), x_hi = spec.x_max();
  const auto range = static_cast<std::uint64_t>(x_hi - x_lo) + 1;
  const bool exhaustive = range <= kExhaustiveBudget / channels;
  const long double round_bound = res.job.rounding == Rounding::floor ? 1.0L : 0.5L;
  const auto lo_l = static_cast<long double>(lo), hi_l = static_cast<long double>(hi);

  res.channels.reserve(channels);
  res.worst_err = -1;
  for (std::size_t c = 0; c < channels; ++c) {
    ChannelReport ch;
    ch.channel = static_cast<int>(c);
    ch.a = ad[c].first;
    ch.d = ad[c].second;
    const long double s_ideal = std::ldexp(ch.a, r), b_ideal = std::ldexp(ch.d, r);
    ch.s = round_sat(s_ideal, spec.s_min(), spec.s_max());
    ch.b = round_sat(b_ideal, spec.b_min(), spec.b_max());
    const bool s_sat = !s_at(c, r).has_value(), b_sat = !b_at(c, r).has_value();

    for (const auto x : {x_lo, x_hi}) {
      const long double hw = std::ldexp(static_cast<long double>(x * ch.s + ch.b), -r);
      ch.affine_err = std::max(ch.affine_err, std::fabs(hw - (ch.a * x + ch.d)));
    }
    ch.exhaustive = exhaustive;
    if (exhaustive) {
      for (std::int64_t x = x_lo; x <= x_hi; ++x) {
        const long double ref = std::clamp(ch.a * static_cast<long double>(x) + ch.d, lo_l, hi_l);
        const auto y = static_cast<long double>(apply(x, ch.s, ch.b, res.job));
        ch.max_err = std::max(ch.max_err, std::fabs(y - ref));
      }
    } else {
      ch.max_err = ch.affine_err + round_bound;
    }

    const std::string err_text =
        g(ch.max_err) + " LSB" + (exhaustive ? std::string() : std::string(" (bound)"));
    if (s_sat) {
      ch.warnings.push_back("scale a = " + g(ch.a) + " does not fit a " + std::to_string(spec.sw) +
                            "-bit signed s " +
                            (s_ok[c] ? "at forced R = " + std::to_string(r) : "even at R = 0") +
                            "; s saturated to " + std::to_string(ch.s) + ", max error " + err_text);
    }
    if (b_sat) {
      ch.warnings.push_back("offset d = " + g(ch.d) + " output LSBs does not fit a " +
                            std::to_string(spec.bw) + "-bit signed b " +
                            (b_ok[c]
                                 ? "at forced R = " + std::to_string(r)
                                 : "even at R = 0 (|mean| or |beta| too large for the datapath)") +
                            "; b saturated to " + std::to_string(ch.b) + ", max error " + err_text);
    }
    if (ch.s == 0 && ch.a != 0) {
      ch.warnings.push_back("scale underflow: a = " + g(ch.a) +
                            " rounds to s = 0 at R = " + std::to_string(r) +
                            " (gamma tiny relative to the other channels); the output is "
                            "constant, max error " +
                            err_text);
    }
    if (ch.max_err > 1) {
      ch.warnings.push_back("precision: max error " + err_text + " exceeds 1 LSB (s = " +
                            std::to_string(ch.s) + " at R = " + std::to_string(r) + ")");
    }
    for (const auto& w : ch.warnings) {
      res.warnings.push_back("channel " + std::to_string(c) + ": " + w);
    }

    if (ch.max_err > res.worst_err) {
      res.worst_err = ch.max_err;
      res.worst_channel = ch.channel;
    }
    res.scale.push_back(ch.s);
    res.shift.push_back(ch.b);
    res.channels.push_back(std::move(ch));
  }
  return res;
}

namespace {

std::string range_text(int bits, bool is_signed, std::int64_t lo, std::int64_t hi) {
  return std::to_string(bits) + "-bit " + (is_signed ? "signed" : "unsigned") + " [" +
         std::to_string(lo) + ", " + std::to_string(hi) + "]";
}

std::string channel_notes(const ChannelReport& ch, const ArithSpec& spec, int r) {
  std::vector<std::string> notes;
  const long double s_ideal = std::ldexp(ch.a, r), b_ideal = std::ldexp(ch.d, r);
  if (!round_in(s_ideal, spec.s_min(), spec.s_max())) notes.emplace_back("s saturated");
  if (!round_in(b_ideal, spec.b_min(), spec.b_max())) notes.emplace_back("b saturated");
  if (ch.s == 0 && ch.a != 0) notes.emplace_back("scale underflow");
  if (ch.max_err > 1) notes.emplace_back("> 1 LSB");
  if (!ch.exhaustive) notes.emplace_back("bound");
  std::string text;
  for (const auto& n : notes) text += (text.empty() ? "" : ", ") + n;
  return text;
}

std::string table_row(const ChannelReport& ch, const ArithSpec& spec, int r) {
  return format("  %5d  %14.6Le  %14.6Le  %12lld  %20lld  %10.6Lf  ", ch.channel, ch.a, ch.d,
                static_cast<long long>(ch.s), static_cast<long long>(ch.b), ch.max_err) +
         channel_notes(ch, spec, r) + "\n";
}

}  // namespace

std::string format_report(const FoldResult& result, const ArithSpec& spec, const BnParams& bn) {
  std::string out;
  out += "normcore fold report" + (bn.source.empty() ? std::string() : ": " + bn.source) + "\n";
  out += "  input  x: " + range_text(spec.xw, spec.x_signed, spec.x_min(), spec.x_max()) + "\n";
  out += "  output y: " + range_text(spec.yw, spec.y_signed, spec.y_min(), spec.y_max()) + "\n";
  out += "  scale  s: " + std::to_string(spec.sw) +
         "-bit signed, shift b: " + std::to_string(spec.bw) +
         "-bit signed, accumulator: " + std::to_string(spec.acc_bits()) + "-bit signed\n";
  out += "  R = " + std::to_string(result.job.shift) +
         ", rounding = " + std::string(to_string(result.job.rounding)) + ", clamp [lo, hi] = [" +
         std::to_string(result.job.lo) + ", " + std::to_string(result.job.hi) +
         "], activation = " + bn.activation + "\n";
  if (bn.integer_io) {
    out += "  quantisation: integer in, integer out\n";
  } else {
    out += "  quantisation: in scale " + g(bn.in.scale) + " zero_point " +
           std::to_string(bn.in.zero_point) + ", out scale " + g(bn.out.scale) + " zero_point " +
           std::to_string(bn.out.zero_point) + "\n";
  }
  const std::size_t n = result.channels.size();
  const bool exhaustive = n > 0 && result.channels.front().exhaustive;
  out += "  channels: " + std::to_string(n) + ", error: " +
         (exhaustive ? "exact, every input evaluated"
                     : "bound (affine error + " +
                           std::string(result.job.rounding == Rounding::floor ? "1" : "0.5") +
                           "), input range too large to evaluate exhaustively") +
         "; errors are in output LSBs versus the real-valued clamp(a*x + d, lo, hi)\n\n";

  out += format("  %5s  %14s  %14s  %12s  %20s  %10s  %s\n", "c", "a", "d", "s", "b", "max err",
                "notes");
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (n > 32) {
    std::stable_sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) {
      return result.channels[i].max_err > result.channels[j].max_err;
    });
    order.resize(8);
  }
  for (const auto c : order) out += table_row(result.channels[c], spec, result.job.shift);
  if (n > 32) {
    long double sum = 0;
    std::size_t over_half = 0, over_one = 0;
    for (const auto& ch : result.channels) {
      sum += ch.max_err;
      over_half += ch.max_err > 0.5L + 1e-12L ? 1 : 0;
      over_one += ch.max_err > 1 ? 1 : 0;
    }
    out += "  (the 8 worst of " + std::to_string(n) + " channels shown) mean max err " +
           g(sum / static_cast<long double>(n)) +
           " LSB; channels above 0.5 LSB: " + std::to_string(over_half) +
           ", above 1 LSB: " + std::to_string(over_one) + "\n";
  }
  if (!result.warnings.empty()) {
    out += "\nwarnings (" + std::to_string(result.warnings.size()) + "):\n";
    for (const auto& w : result.warnings) out += "  - " + w + "\n";
  }
  out += "\nworst-case error: " + format("%.6Lf", result.worst_err) + " LSB (channel " +
         std::to_string(result.worst_channel) + ", " + (exhaustive ? "exhaustive" : "bound") +
         ")\n";
  return out;
}

}  // namespace normcore
