#include "rtl_util.hpp"

#include <memory>
#include <sstream>
#include <stdexcept>

#include "normcore/gen/config.hpp"

namespace normcore::gen::rtl {

namespace {

Expr based_lit(int width, std::uint64_t value, char base) {
  ex::lit(width, value);  // the width and fit checks
  if (width == 1) return ex::lit(1, value);
  std::ostringstream os;
  os << width << "'" << base;
  if (base == 'h') {
    os << std::hex << value;
  } else {
    std::string digits;
    for (int i = width - 1; i >= 0; --i) digits += ((value >> i) & 1U) != 0 ? '1' : '0';
    os << digits;
  }
  auto n = std::make_shared<ExprNode>();
  n->op = Op::lit;
  n->width = width;
  n->text = os.str();
  return Expr(std::shared_ptr<const ExprNode>(std::move(n)));
}

}  // namespace

Expr hex_lit(int width, std::uint64_t value) {
  return based_lit(width, value, 'h');
}
Expr bin_lit(int width, std::uint64_t value) {
  return based_lit(width, value, 'b');
}

RegPair reg_pair(Module& m, const std::string& stem, int width, const std::string& comment) {
  RegPair r;
  r.q = m.reg(stem + "_q", width, comment);
  r.d = m.reg(stem + "_d", width);
  return r;
}

Expr shl_by(const Expr& e, int n) {
  if (n < 1) throw std::logic_error("shl_by: amount < 1");
  return ex::shl(e, ex::lit(bits_for(n), static_cast<std::uint64_t>(n)));
}
Expr shr_by(const Expr& e, int n) {
  if (n < 1) throw std::logic_error("shr_by: amount < 1");
  return ex::shr(e, ex::lit(bits_for(n), static_cast<std::uint64_t>(n)));
}

Expr xor_all(const std::vector<Expr>& parts) {
  if (parts.size() == 1) return parts[0].width() == 1 ? parts[0] : ex::red_xor(parts[0]);
  return ex::red_xor(ex::cat(parts));
}

void sink(Module& m, const std::string& name, const std::vector<Expr>& parts) {
  m.assign(m.wire(name, 1), xor_all(parts));
}

Expr popcount(Module& m, const std::string& prefix, const Expr& e, int out_bits) {
  std::vector<Expr> terms;
  for (int i = 0; i < e.width(); ++i) terms.push_back(ex::zext(ex::bit(e, i), out_bits));
  int level = 0;
  while (terms.size() > 1) {
    std::vector<Expr> next;
    for (std::size_t i = 0; i < terms.size(); i += 2) {
      if (i + 1 == terms.size()) {
        next.push_back(terms[i]);
        continue;
      }
      const std::string w = prefix + "_" + std::to_string(level) + "_" + std::to_string(i / 2);
      const Expr wire = m.wire(w, out_bits);
      m.assign(wire, terms[i] + terms[i + 1]);
      next.push_back(wire);
    }
    terms = std::move(next);
    ++level;
  }
  return terms[0];
}

}  // namespace normcore::gen::rtl
