#include "normcore/fold.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "fold_text.hpp"

namespace normcore {

using fold_text::format;
using fold_text::g;

namespace {

std::string source_of(const BnParams& bn) {
  return bn.source.empty() ? std::string("bn params") : bn.source;
}

Quant input_quant(const BnParams& bn) {
  return bn.integer_io ? Quant{} : bn.in;
}
Quant output_quant(const BnParams& bn) {
  return bn.integer_io ? Quant{} : bn.out;
}

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

// The steps of fold(): validation and the ideal per-channel (a, d); the per-channel scale /
// offset at a given R; the choice of R (forced, by the error bound, or by the exact worst
// error); the per-channel report at the chosen R.
class Folder {
 public:
  Folder(const BnParams& bn, const ArithSpec& spec, const FoldOptions& options)
      : spec_(spec),
        options_(options),
        ad_(validated_affine(bn, spec)),
        aw_(spec.acc_bits()),
        channels_(ad_.size()) {
    const auto [lo, hi] = activation_bounds(bn, spec);
    res_.job.rounding = options.rounding.value_or(bn.rounding.value_or(Rounding::half_even));
    res_.job.lo = lo;
    res_.job.hi = hi;
    // Floor mode folds the half-LSB rounding offset into b: floor((x*s + b) / 2^R) with
    // b = round((d + 0.5) * 2^R) is round-half-up of the ideal a*x + d, as accurate as the
    // nearest modes. At R = 0 nothing is rounded (y = acc), so there is no offset.
    floor_mode_ = res_.job.rounding == Rounding::floor;
  }

  FoldResult run() {
    fit_shift();
    setup_errors();
    const int r = choose_shift();
    res_.job.shift = r;
    ctx_.job.shift = r;
    if (const auto e = res_.job.check(spec_); !e.empty()) throw Error("fold: job settings: " + e);
    report(r);
    return std::move(res_);
  }

 private:
  const ArithSpec& spec_;
  const FoldOptions& options_;
  std::vector<std::pair<long double, long double>> ad_;
  int aw_;
  std::size_t channels_;
  FoldResult res_;
  bool floor_mode_ = false;
  std::vector<bool> s_ok_, b_ok_;  // per channel: s / b fit at R = 0
  int fit_r_ = 0;
  std::int64_t x_lo_ = 0, x_hi_ = 0;
  std::uint64_t range_ = 0;
  bool exhaustive_ = false;
  ErrorContext ctx_;
  long double x_abs_ = 0;
  std::vector<std::int64_t> probes_;

  static std::vector<std::pair<long double, long double>> validated_affine(const BnParams& bn,
                                                                           const ArithSpec& spec) {
    if (const auto e = spec.check(); !e.empty()) throw Error("datapath: " + e);
    return ideal_affine(bn);  // validates bn
  }

  [[nodiscard]] long double offset_at(int r) const { return floor_mode_ && r >= 1 ? 0.5L : 0.0L; }
  [[nodiscard]] Folded s_at(std::size_t c, int r) const {
    return fold_value(std::ldexp(ad_[c].first, r), spec_.s_min(), spec_.s_max());
  }
  [[nodiscard]] Folded b_at(std::size_t c, int r) const {
    return fold_value(std::ldexp(ad_[c].second + offset_at(r), r), spec_.b_min(), spec_.b_max());
  }

  // fit_shift: the largest R at which no s or b saturates. Channels that cannot be represented
  // even at R = 0 do not constrain it (they saturate at every R).
  void fit_shift() {
    s_ok_.resize(channels_);
    b_ok_.resize(channels_);
    for (std::size_t c = 0; c < channels_; ++c) {
      s_ok_[c] = !s_at(c, 0).saturated;
      b_ok_[c] = !b_at(c, 0).saturated;
    }
    int fit_r = aw_;
    for (; fit_r > 0; --fit_r) {
      bool fits = true;
      for (std::size_t c = 0; c < channels_ && fits; ++c) {
        fits = (!s_ok_[c] || !s_at(c, fit_r).saturated) && (!b_ok_[c] || !b_at(c, fit_r).saturated);
      }
      if (fits) break;
    }
    fit_r_ = fit_r;
    res_.fit_shift = fit_r;
  }

  // The error context, whether every input is evaluated, and the probe inputs for the search's
  // lower bounds: both ends, 0 and 15 interior points.
  void setup_errors() {
    x_lo_ = spec_.x_min();
    x_hi_ = spec_.x_max();
    range_ = static_cast<std::uint64_t>(x_hi_ - x_lo_) + 1;
    exhaustive_ = range_ <= kExhaustiveBudget / channels_;
    ctx_.job = res_.job;
    ctx_.lo = static_cast<long double>(res_.job.lo);
    ctx_.hi = static_cast<long double>(res_.job.hi);
    ctx_.x_lo = x_lo_;
    ctx_.x_hi = x_hi_;
    x_abs_ = std::max(std::fabs(static_cast<long double>(x_lo_)),
                      std::fabs(static_cast<long double>(x_hi_)));
    probes_ = {x_lo_, x_hi_};
    if (x_lo_ <= 0 && 0 <= x_hi_) probes_.push_back(0);
    for (std::uint64_t k = 1; k < 16; ++k) {
      probes_.push_back(x_lo_ + static_cast<std::int64_t>((range_ - 1) / 16 * k));
    }
    std::sort(probes_.begin(), probes_.end());
    probes_.erase(std::unique(probes_.begin(), probes_.end()), probes_.end());
  }

  [[nodiscard]] Candidate make_candidate(int r) const {
    Candidate cand;
    cand.r = r;
    cand.s.resize(channels_);
    cand.b.resize(channels_);
    cand.ub.resize(channels_);
    ErrorContext at = ctx_;
    at.job.shift = r;
    for (std::size_t c = 0; c < channels_; ++c) {
      const auto [a, d] = ad_[c];
      cand.s[c] = s_at(c, r).value;
      cand.b[c] = b_at(c, r).value;
      const long double affine = affine_error(at, a, d, cand.s[c], cand.b[c], r, offset_at(r));
      cand.bound_worst = std::max(cand.bound_worst, affine + 0.5L);
      // Slack for long-double noise in the computed errors: far above it, far below an LSB.
      const long double slack = 1e-12L * (1 + std::fabs(a) * x_abs_ + std::fabs(d));
      cand.ub[c] = affine + 0.5L + slack;
      cand.ub_max = std::max(cand.ub_max, cand.ub[c]);
      if (exhaustive_) {
        for (const auto x : probes_) {
          cand.lb = std::max(cand.lb, point_err(at, x, a, d, cand.s[c], cand.b[c]));
        }
      }
    }
    return cand;
  }

  int choose_shift() {
    if (options_.force_shift) {
      const int r = *options_.force_shift;
      if (r < 0 || r > aw_) {
        throw Error("fold: forced shift R = " + std::to_string(r) + " is out of range 0.." +
                    std::to_string(aw_));
      }
      res_.shift_choice = "forced";
      return r;
    }
    return exhaustive_ ? choose_exact() : choose_by_bound();
  }

  // Errors are bounds here (affine_err + 0.5): minimise the worst bound over every R.
  int choose_by_bound() {
    int r = fit_r_;
    long double best = std::numeric_limits<long double>::infinity();
    for (int cr = aw_; cr >= 0; --cr) {  // descending, so a tie keeps the larger R
      const long double w = make_candidate(cr).bound_worst;
      tell("candidates", static_cast<std::uint64_t>(aw_ - cr) + 1,
           static_cast<std::uint64_t>(aw_) + 1);
      if (w < best) {
        best = w;
        r = cr;
      }
    }
    res_.shift_choice = "smallest worst-case error bound over R = 0.." + std::to_string(aw_);
    return r;
  }

  // The exact search's state: the best candidate so far.
  struct Best {
    long double worst = std::numeric_limits<long double>::infinity();
    int r = -1;
    [[nodiscard]] bool loses(long double w, int cr) const {
      return w > worst || (w == worst && cr < r);
    }
  };

  // The exact worst error of a candidate, unless it loses to the best (then best is unchanged).
  void evaluate(const Candidate& cand, Best& best) const {
    if (best.loses(cand.lb, cand.r)) return;
    ErrorContext at = ctx_;
    at.job.shift = cand.r;
    std::vector<std::size_t> order(channels_);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t i, std::size_t j) { return cand.ub[i] > cand.ub[j]; });
    long double running = cand.lb;  // the exact error of some channel at some probe
    const bool stop_at_equal = cand.r < best.r;
    for (const auto c : order) {
      if (cand.ub[c] <= running) break;
      running = std::max(running, channel_err(at, ad_[c].first, ad_[c].second, cand.s[c], cand.b[c],
                                              best.worst, stop_at_equal));
      if (best.loses(running, cand.r)) return;
    }
    best.worst = running;
    best.r = cand.r;
  }

  // Exact search. A candidate R wins if its exact worst-case error over all channels is smaller
  // than the best so far, or equal and R is larger. Pruning never changes the result:
  //  * lb (exact errors at the probe inputs) <= the exact worst: a candidate whose lb already
  //    loses is skipped;
  //  * channels are evaluated in decreasing order of their bound ub >= exact error, and once
  //    ub <= the running worst the remaining channels cannot raise it;
  //  * a channel's evaluation stops as soon as its running error makes the candidate lose.
  int choose_exact() {
    std::vector<Candidate> all;
    all.reserve(static_cast<std::size_t>(aw_) + 1);
    for (int cr = 0; cr <= aw_; ++cr) {
      all.push_back(make_candidate(cr));
      tell("candidates", static_cast<std::uint64_t>(cr) + 1, static_cast<std::uint64_t>(aw_) + 1);
    }
    Best best;
    const bool full =
        range_ * channels_ <= kShiftSearchBudget / (static_cast<std::uint64_t>(aw_) + 1);
    std::vector<const Candidate*> first, rest;
    for (const auto& cand : all) {
      const bool in_window = cand.r >= fit_r_ && cand.r <= fit_r_ + kShiftSearchWindow;
      (full || in_window ? first : rest).push_back(&cand);
    }
    // Most promising first (smallest lower bound, then the larger R), so that the rest prune.
    std::sort(first.begin(), first.end(), [](const Candidate* x, const Candidate* y) {
      return x->lb != y->lb ? x->lb < y->lb : x->r > y->r;
    });
    for (std::size_t i = 0; i < first.size(); ++i) {
      evaluate(*first[i], best);
      tell("search", i + 1, first.size());
    }
    // Outside the window (budget exceeded only): an R is examined only when its bound ub_max
    // (>= its exact worst) says it cannot lose to the best found, i.e. the bound proves it helps.
    std::sort(rest.begin(), rest.end(), [](const Candidate* x, const Candidate* y) {
      return x->ub_max != y->ub_max ? x->ub_max < y->ub_max : x->r > y->r;
    });
    for (const auto* cand : rest) {
      if (!best.loses(cand->ub_max, cand->r)) evaluate(*cand, best);
    }
    res_.shift_choice =
        full ? "smallest exact worst-case error over R = 0.." + std::to_string(aw_)
             : "smallest exact worst-case error over R = " + std::to_string(fit_r_) + ".." +
                   std::to_string(std::min(aw_, fit_r_ + kShiftSearchWindow)) +
                   " (search budget exceeded: other R's only where their error bound beats that)";
    return best.r;
  }

  // Channel c at the chosen R: s, b, the exact (or bound) error.
  [[nodiscard]] ChannelReport channel_at(std::size_t c, int r) const {
    ChannelReport ch;
    ch.channel = static_cast<int>(c);
    ch.a = ad_[c].first;
    ch.d = ad_[c].second;
    const Folded s = s_at(c, r), b = b_at(c, r);
    ch.s = s.value;
    ch.b = b.value;
    ch.s_saturated = s.saturated;
    ch.b_saturated = b.saturated;
    ch.affine_err = affine_error(ctx_, ch.a, ch.d, ch.s, ch.b, r, offset_at(r));
    ch.exhaustive = exhaustive_;
    ch.max_err = exhaustive_ ? channel_err(ctx_, ch.a, ch.d, ch.s, ch.b,
                                           std::numeric_limits<long double>::infinity(), false)
                             : ch.affine_err + 0.5L;
    return ch;
  }

  void channel_warnings(ChannelReport& ch, std::size_t c, int r) const {
    const std::string at_r =
        options_.force_shift
            ? "at forced R = " + std::to_string(r)
            : "at R = " + std::to_string(r) + " (chosen to minimise the worst-case error)";
    const std::string err_text =
        g(ch.max_err) + " LSB" + (exhaustive_ ? std::string() : std::string(" (bound)"));
    if (ch.s_saturated) {
      ch.warnings.push_back("scale a = " + g(ch.a) + " does not fit a " + std::to_string(spec_.sw) +
                            "-bit signed s " + (s_ok_[c] ? at_r : "even at R = 0") +
                            "; s saturated to " + std::to_string(ch.s) + ", max error " + err_text);
    }
    if (ch.b_saturated) {
      ch.warnings.push_back(
          "offset d = " + g(ch.d) + " output LSBs does not fit a " + std::to_string(spec_.bw) +
          "-bit signed b " +
          (b_ok_[c] ? at_r : "even at R = 0 (|mean| or |beta| too large for the datapath)") +
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
  }

  // The error report: every channel at R, its warnings, the worst channel.
  void report(int r) {
    res_.channels.reserve(channels_);
    res_.worst_err = -1;
    for (std::size_t c = 0; c < channels_; ++c) {
      ChannelReport ch = channel_at(c, r);
      channel_warnings(ch, c, r);
      for (const auto& w : ch.warnings) {
        res_.warnings.push_back("channel " + std::to_string(c) + ": " + w);
      }
      if (ch.max_err > res_.worst_err) {
        res_.worst_err = ch.max_err;
        res_.worst_channel = ch.channel;
      }
      res_.scale.push_back(ch.s);
      res_.shift.push_back(ch.b);
      res_.channels.push_back(std::move(ch));
      if ((c + 1) % 4096 == 0 || c + 1 == channels_) tell("report", c + 1, channels_);
    }
  }

  void tell(const char* phase, std::uint64_t done, std::uint64_t total) const {
    if (options_.progress) options_.progress(phase, done, total);
  }
};

}  // namespace

FoldResult fold(const BnParams& bn, const ArithSpec& spec, const FoldOptions& options) {
  return Folder(bn, spec, options).run();
}

}  // namespace normcore
