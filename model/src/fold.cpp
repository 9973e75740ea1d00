#include "normcore/fold.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
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

namespace {

// One folded parameter: round(v) saturated to the width's range, and whether it saturated.
struct Folded {
  std::int64_t value = 0;
  bool saturated = false;
};

Folded fold_value(long double v, std::int64_t lo, std::int64_t hi) {
  if (auto r = round_in(v, lo, hi)) return {*r, false};
  return {v < 0 ? lo : hi, true};
}

// Everything the per-x error needs that does not depend on the channel.
struct ErrorContext {
  JobSettings job;  // job.shift is set per candidate R
  long double lo = 0, hi = 0;
  std::int64_t x_lo = 0, x_hi = 0;
};

// |y - clamp(a*x + d, lo, hi)| with y = apply(x, s, b, job). The one error formula: the search,
// the probes and the final report all use it, so the same (x, s, b, R) gives bit-identical values.
long double err_of(const ErrorContext& ctx, std::int64_t x, std::int64_t y, long double a,
                   long double d) {
  const long double ref = std::clamp(a * static_cast<long double>(x) + d, ctx.lo, ctx.hi);
  return std::fabs(static_cast<long double>(y) - ref);
}

long double point_err(const ErrorContext& ctx, std::int64_t x, long double a, long double d,
                      std::int64_t s, std::int64_t b) {
  return err_of(ctx, x, apply(x, s, b, ctx.job), a, d);
}

// Exact max over every x in [x_lo, x_hi] of err_of. Both y(x) = apply(x) and the computed
// reference are monotone in x (x*s + b is, every rounding mode and the clamp are, and so are
// long-double a*x + d and clamp), so on a run x_a..x_b with y(x_a) == y(x_b) the output is
// constant and |y - ref(x)| peaks at x_a or x_b: such runs are accounted for by their ends. The
// range is bisected down to runs of constant output (or short runs, evaluated point by point),
// so every x is covered and the result is the same value a point-by-point loop gives.
//
// Stops as soon as the running maximum exceeds `limit` (or reaches it, if stop_at_equal) and
// then returns that running maximum: a value already known to lose, and a lower bound of the max.
long double channel_err(const ErrorContext& ctx, long double a, long double d, std::int64_t s,
                        std::int64_t b, long double limit, bool stop_at_equal) {
  long double worst = 0;
  auto take = [&](long double e) {
    if (e > worst) worst = e;
    return worst > limit || (stop_at_equal && worst == limit);
  };
  auto y_at = [&](std::int64_t x) { return apply(x, s, b, ctx.job); };
  struct Run {
    std::int64_t xa, xb, ya, yb;  // both ends already taken
  };
  constexpr std::int64_t kShortRun = 16;
  std::array<Run, 72> stack{};  // <= one pending right half per level: log2(range) + 1 < 72
  std::size_t top = 0;
  const std::int64_t ya = y_at(ctx.x_lo), yb = y_at(ctx.x_hi);
  if (take(err_of(ctx, ctx.x_lo, ya, a, d)) || take(err_of(ctx, ctx.x_hi, yb, a, d))) {
    return worst;
  }
  stack[top++] = {ctx.x_lo, ctx.x_hi, ya, yb};
  while (top > 0) {
    const Run run = stack[--top];
    if (run.ya == run.yb || run.xb - run.xa <= 1) continue;
    if (run.xb - run.xa <= kShortRun) {
      for (std::int64_t x = run.xa + 1; x < run.xb; ++x) {
        if (take(err_of(ctx, x, y_at(x), a, d))) return worst;
      }
      continue;
    }
    const std::int64_t xm = run.xa + (run.xb - run.xa) / 2;
    const std::int64_t ym = y_at(xm);
    if (take(err_of(ctx, xm, ym, a, d))) return worst;
    stack[top++] = {xm, run.xb, ym, run.yb};  // left half first (popped next)
    stack[top++] = {run.xa, xm, run.ya, ym};
  }
  return worst;
}

// max over x in {x_lo, x_hi} of |(x*s + b)/2^R - o - (a*x + d)| (linear in x, so the ends).
long double affine_error(const ErrorContext& ctx, long double a, long double d, std::int64_t s,
                         std::int64_t b, int r, long double offset) {
  long double err = 0;
  for (const auto x : {ctx.x_lo, ctx.x_hi}) {
    const long double hw = std::ldexp(static_cast<long double>(x * s + b), -r) - offset;
    err = std::max(err, std::fabs(hw - (a * static_cast<long double>(x) + d)));
  }
  return err;
}

// One candidate R of the search: every channel folded at R, plus cheap bounds of the worst case.
struct Candidate {
  int r = 0;
  std::vector<std::int64_t> s, b;
  std::vector<long double> ub;  // per channel: affine_err + 0.5 (+ noise slack), >= exact error
  long double lb = 0;           // max over channels and probe inputs of point_err: <= exact worst
  long double ub_max = 0;       // max over channels of ub
  long double bound_worst = 0;  // max over channels of affine_err + 0.5 (the reported bound)
};

}  // namespace

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

  // Floor mode folds the half-LSB rounding offset into b: floor((x*s + b) / 2^R) with
  // b = round((d + 0.5) * 2^R) is round-half-up of the ideal a*x + d, as accurate as the nearest
  // modes. At R = 0 nothing is rounded (y = acc), so there is no offset.
  const bool floor_mode = res.job.rounding == Rounding::floor;
  auto offset_at = [&](int r) { return floor_mode && r >= 1 ? 0.5L : 0.0L; };
  auto s_at = [&](std::size_t c, int r) {
    return fold_value(std::ldexp(ad[c].first, r), spec.s_min(), spec.s_max());
  };
  auto b_at = [&](std::size_t c, int r) {
    return fold_value(std::ldexp(ad[c].second + offset_at(r), r), spec.b_min(), spec.b_max());
  };

  // fit_shift: the largest R at which no s or b saturates. Channels that cannot be represented
  // even at R = 0 do not constrain it (they saturate at every R).
  std::vector<bool> s_ok(channels), b_ok(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    s_ok[c] = !s_at(c, 0).saturated;
    b_ok[c] = !b_at(c, 0).saturated;
  }
  int fit_r = aw;
  for (; fit_r > 0; --fit_r) {
    bool fits = true;
    for (std::size_t c = 0; c < channels && fits; ++c) {
      fits = (!s_ok[c] || !s_at(c, fit_r).saturated) && (!b_ok[c] || !b_at(c, fit_r).saturated);
    }
    if (fits) break;
  }
  res.fit_shift = fit_r;

  const auto x_lo = spec.x_min(), x_hi = spec.x_max();
  const auto range = static_cast<std::uint64_t>(x_hi - x_lo) + 1;
  const bool exhaustive = range <= kExhaustiveBudget / channels;
  ErrorContext ctx;
  ctx.job = res.job;
  ctx.lo = static_cast<long double>(lo);
  ctx.hi = static_cast<long double>(hi);
  ctx.x_lo = x_lo;
  ctx.x_hi = x_hi;
  const long double x_abs =
      std::max(std::fabs(static_cast<long double>(x_lo)), std::fabs(static_cast<long double>(x_hi)));

  // Probe inputs for the search's lower bounds: both ends, 0 and 15 interior points.
  std::vector<std::int64_t> probes = {x_lo, x_hi};
  if (x_lo <= 0 && 0 <= x_hi) probes.push_back(0);
  for (std::uint64_t k = 1; k < 16; ++k) {
    probes.push_back(x_lo + static_cast<std::int64_t>((range - 1) / 16 * k));
  }
  std::sort(probes.begin(), probes.end());
  probes.erase(std::unique(probes.begin(), probes.end()), probes.end());

  auto make_candidate = [&](int r) {
    Candidate cand;
    cand.r = r;
    cand.s.resize(channels);
    cand.b.resize(channels);
    cand.ub.resize(channels);
    ErrorContext at = ctx;
    at.job.shift = r;
    for (std::size_t c = 0; c < channels; ++c) {
      const auto [a, d] = ad[c];
      cand.s[c] = s_at(c, r).value;
      cand.b[c] = b_at(c, r).value;
      const long double affine = affine_error(at, a, d, cand.s[c], cand.b[c], r, offset_at(r));
      cand.bound_worst = std::max(cand.bound_worst, affine + 0.5L);
      // Slack for long-double noise in the computed errors: far above it, far below an LSB.
      const long double slack = 1e-12L * (1 + std::fabs(a) * x_abs + std::fabs(d));
      cand.ub[c] = affine + 0.5L + slack;
      cand.ub_max = std::max(cand.ub_max, cand.ub[c]);
      if (exhaustive) {
        for (const auto x : probes) {
          cand.lb = std::max(cand.lb, point_err(at, x, a, d, cand.s[c], cand.b[c]));
        }
      }
    }
    return cand;
  };

  int r = fit_r;
  if (options.force_shift) {
    r = *options.force_shift;
    if (r < 0 || r > aw) {
      throw Error("fold: forced shift R = " + std::to_string(r) + " is out of range 0.." +
                  std::to_string(aw));
    }
    res.shift_choice = "forced";
  } else if (!exhaustive) {
    // Errors are bounds here (affine_err + 0.5): minimise the worst bound over every R.
    long double best = std::numeric_limits<long double>::infinity();
    for (int cr = aw; cr >= 0; --cr) {  // descending, so a tie keeps the larger R
      const long double w = make_candidate(cr).bound_worst;
      if (w < best) {
        best = w;
        r = cr;
      }
    }
    res.shift_choice = "smallest worst-case error bound over R = 0.." + std::to_string(aw);
  } else {
    // Exact search. A candidate R wins if its exact worst-case error over all channels is smaller
    // than the best so far, or equal and R is larger. Pruning never changes the result:
    //  * lb (exact errors at the probe inputs) <= the exact worst: a candidate whose lb already
    //    loses is skipped;
    //  * channels are evaluated in decreasing order of their bound ub >= exact error, and once
    //    ub <= the running worst the remaining channels cannot raise it;
    //  * a channel's evaluation stops as soon as its running error makes the candidate lose.
    std::vector<Candidate> all;
    all.reserve(static_cast<std::size_t>(aw) + 1);
    for (int cr = 0; cr <= aw; ++cr) all.push_back(make_candidate(cr));

    long double best = std::numeric_limits<long double>::infinity();
    int best_r = -1;
    auto loses = [&](long double w, int cr) { return w > best || (w == best && cr < best_r); };
    auto evaluate = [&](const Candidate& cand) {
      if (loses(cand.lb, cand.r)) return;
      ErrorContext at = ctx;
      at.job.shift = cand.r;
      std::vector<std::size_t> order(channels);
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::stable_sort(order.begin(), order.end(),
                       [&](std::size_t i, std::size_t j) { return cand.ub[i] > cand.ub[j]; });
      long double running = cand.lb;  // the exact error of some channel at some probe
      const bool stop_at_equal = cand.r < best_r;
      for (const auto c : order) {
        if (cand.ub[c] <= running) break;
        running = std::max(running, channel_err(at, ad[c].first, ad[c].second, cand.s[c],
                                                cand.b[c], best, stop_at_equal));
        if (loses(running, cand.r)) return;
      }
      best = running;
      best_r = cand.r;
    };

    const bool full = range * channels <= kShiftSearchBudget / (static_cast<std::uint64_t>(aw) + 1);
    std::vector<const Candidate*> first, rest;
    for (const auto& cand : all) {
      const bool in_window = cand.r >= fit_r && cand.r <= fit_r + kShiftSearchWindow;
      (full || in_window ? first : rest).push_back(&cand);
    }
    // Most promising first (smallest lower bound, then the larger R), so that the rest prune.
    std::sort(first.begin(), first.end(), [](const Candidate* x, const Candidate* y) {
      return x->lb != y->lb ? x->lb < y->lb : x->r > y->r;
    });
    for (const auto* cand : first) evaluate(*cand);
    // Outside the window (budget exceeded only): an R is examined only when its bound ub_max
    // (>= its exact worst) says it cannot lose to the best found, i.e. the bound proves it helps.
    std::sort(rest.begin(), rest.end(), [](const Candidate* x, const Candidate* y) {
      return x->ub_max != y->ub_max ? x->ub_max < y->ub_max : x->r > y->r;
    });
    for (const auto* cand : rest) {
      if (!loses(cand->ub_max, cand->r)) evaluate(*cand);
    }
    r = best_r;
    res.shift_choice =
        full ? "smallest exact worst-case error over R = 0.." + std::to_string(aw)
             : "smallest exact worst-case error over R = " + std::to_string(fit_r) + ".." +
                   std::to_string(std::min(aw, fit_r + kShiftSearchWindow)) +
                   " (search budget exceeded: other R's only where their error bound beats that)";
  }
  res.job.shift = r;
  ctx.job.shift = r;
  if (const auto e = res.job.check(spec); !e.empty()) throw Error("fold: job settings: " + e);

  const long double offset = offset_at(r);
  const std::string at_r =
      options.force_shift
          ? "at forced R = " + std::to_string(r)
          : "at R = " + std::to_string(r) + " (chosen to minimise the worst-case error)";

  res.channels.reserve(channels);
  res.worst_err = -1;
  for (std::size_t c = 0; c < channels; ++c) {
    ChannelReport ch;
    ch.channel = static_cast<int>(c);
    ch.a = ad[c].first;
    ch.d = ad[c].second;
    const Folded s = s_at(c, r), b = b_at(c, r);
    ch.s = s.value;
    ch.b = b.value;
    ch.s_saturated = s.saturated;
    ch.b_saturated = b.saturated;
    ch.affine_err = affine_error(ctx, ch.a, ch.d, ch.s, ch.b, r, offset);
    ch.exhaustive = exhaustive;
    ch.max_err = exhaustive ? channel_err(ctx, ch.a, ch.d, ch.s, ch.b,
                                          std::numeric_limits<long double>::infinity(), false)
                            : ch.affine_err + 0.5L;

    const std::string err_text =
        g(ch.max_err) + " LSB" + (exhaustive ? std::string() : std::string(" (bound)"));
    if (ch.s_saturated) {
      ch.warnings.push_back("scale a = " + g(ch.a) + " does not fit a " + std::to_string(spec.sw) +
                            "-bit signed s " + (s_ok[c] ? at_r : "even at R = 0") +
                            "; s saturated to " + std::to_string(ch.s) + ", max error " + err_text);
    }
    if (ch.b_saturated) {
      ch.warnings.push_back("offset d = " + g(ch.d) + " output LSBs does not fit a " +
                            std::to_string(spec.bw) + "-bit signed b " +
                            (b_ok[c]
                                 ? at_r
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

std::string channel_notes(const ChannelReport& ch) {
  std::vector<std::string> notes;
  if (ch.s_saturated) notes.emplace_back("s saturated");
  if (ch.b_saturated) notes.emplace_back("b saturated");
  if (ch.s == 0 && ch.a != 0) notes.emplace_back("scale underflow");
  if (ch.max_err > 1) notes.emplace_back("> 1 LSB");
  if (!ch.exhaustive) notes.emplace_back("bound");
  std::string text;
  for (const auto& n : notes) text += (text.empty() ? "" : ", ") + n;
  return text;
}

std::string table_row(const ChannelReport& ch) {
  return format("  %5d  %14.6Le  %14.6Le  %12lld  %20lld  %10.6Lf  ", ch.channel, ch.a, ch.d,
                static_cast<long long>(ch.s), static_cast<long long>(ch.b), ch.max_err) +
         channel_notes(ch) + "\n";
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
  const bool floor_offset = result.job.rounding == Rounding::floor && result.job.shift >= 1;
  out += "  R = " + std::to_string(result.job.shift) +
         ", rounding = " + std::string(to_string(result.job.rounding)) +
         (floor_offset ? " (half-LSB offset folded into b)" : "") + ", clamp [lo, hi] = [" +
         std::to_string(result.job.lo) + ", " + std::to_string(result.job.hi) +
         "], activation = " + bn.activation + "\n";
  if (!result.shift_choice.empty()) {
    out += "  R choice: " + result.shift_choice + "; largest R without saturation: " +
           std::to_string(result.fit_shift) + "\n";
  }
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
                     : "bound (affine error + 0.5), input range too large to evaluate "
                       "exhaustively") +
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
  for (const auto c : order) out += table_row(result.channels[c]);
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
