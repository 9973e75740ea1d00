// The fold report (format_report): ranges, R and its choice, quantisation, the per-channel table
// (the 8 worst when there are many channels), warnings and the worst-case error.
#include <algorithm>
#include <numeric>

#include "fold_text.hpp"
#include "normcore/fold.hpp"

namespace normcore {

using fold_text::format;
using fold_text::g;

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
         "-bit signed, offset b: " + std::to_string(spec.bw) +
         "-bit signed, accumulator: " + std::to_string(spec.acc_bits()) + "-bit signed\n";
  const bool floor_offset = result.job.rounding == Rounding::floor && result.job.shift >= 1;
  out += "  R = " + std::to_string(result.job.shift) +
         ", rounding = " + std::string(to_string(result.job.rounding)) +
         (floor_offset ? " (half-LSB offset folded into b)" : "") + ", clamp [lo, hi] = [" +
         std::to_string(result.job.lo) + ", " + std::to_string(result.job.hi) +
         "], activation = " + bn.activation + "\n";
  if (!result.shift_choice.empty()) {
    out += "  R choice: " + result.shift_choice +
           "; largest R without saturation: " + std::to_string(result.fit_shift) + "\n";
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
