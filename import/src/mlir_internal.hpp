// Private to the MLIR text front end (mlir*.cpp): the lexer and literal/type readers
// (mlir_lex.cpp), the op-level parser (mlir_parse.cpp) and what the lowering (mlir.cpp) reads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "normcore/import/graph.hpp"

namespace normcore::import::mlir_detail {

// Limits (checked before allocating).
constexpr std::size_t kMaxTokens = std::size_t{1} << 24;
constexpr std::size_t kMaxDepth = 256;          // bracket nesting
constexpr std::int64_t kMaxElements = 1 << 22;  // constant data kept (larger: shape only)
constexpr std::int64_t kMaxDim = std::int64_t{1} << 40;

enum class Tok {
  ssa,    // %name, %0, %0#1
  sym,    // @name, @"quoted"
  id,     // bare identifier, with an attached <...> body (tensor<2x3xf32>, dense<...>)
  str,    // "..." (text without the quotes, escapes kept)
  num,    // -1, 2.5e-3, 0x7FC00000
  hash,   // #alias, #dialect<...>
  bang,   // !dialect.type<...>
  caret,  // ^bb0
  punct,  // ( ) [ ] { } < > , : = ->
};

struct Token {
  Tok kind = Tok::punct;
  std::string text;
  int line = 0;
  int col = 0;
};

// The file's `{-# dialect_resources: { builtin: { key: "0x..." } } #-}` blobs: key -> hex digits
// (without "0x"; the first 4 bytes are the blob's alignment).
using Resources = std::map<std::string, std::string>;

// The tokens of a whole file; comments and `loc(...)` are dropped, `{-# ... #-}` read into
// `resources`.
std::vector<Token> lex(std::string_view text, const std::string& source, Resources& resources);

[[noreturn]] void fail_at(const std::string& source, int line, int col, const std::string& msg);

// A tensor (or scalar) type: "tensor<2x?x3xf32>" -> dims {2,-1,3}, elem "f32".
struct Type {
  bool ranked = false;  // false: unranked tensor or a type that is not a tensor / scalar
  std::vector<std::int64_t> dims;
  std::string elem;
  std::string text;
};
Type parse_type(const Token& t, const std::string& source);

// `dense<...>` (decimal, nested lists, splat, hex "0x..." of the element type's bytes) or
// `dense_resource<key>` (a blob of `resources`) for a tensor of `type`; nullopt when the data is
// not kept (an elided or absent resource, too many elements).
std::optional<Constant> parse_dense(const Token& t, const Type& type, const std::string& source,
                                    const Resources& resources);

// `array<i64: 1, 2>`, `[1, 2]`, `dense<[1, 2]>` or a single integer -> integers.
std::optional<std::vector<std::int64_t>> int_list(const std::vector<Token>& value);
std::optional<double> number_of(const std::vector<Token>& value);

// One operation, as read: results, name, operands (names without '%'), attributes (key -> the
// value's tokens), the trailing type signature, the callee of a call.
struct Op {
  const Token* name_tok = nullptr;
  std::string name;  // "stablehlo.add", "tosa.mul", "func.call", "func.return"
  bool generic = false;
  std::vector<std::string> results;
  std::vector<std::string> operands;
  std::vector<std::pair<std::string, std::vector<Token>>> attrs;
  std::vector<Type> operand_types;  // from "(T, T) -> R" (empty when not given)
  std::vector<Type> result_types;
  std::string callee;  // func.call

  [[nodiscard]] const std::vector<Token>* attr(std::string_view key) const {
    for (const auto& [k, v] : attrs) {
      if (k == key) return &v;
    }
    return nullptr;
  }
};

struct Arg {
  std::string name;  // without '%'
  Type type;
  std::string info;  // jax.arg_info / a name attribute, if any
  const Token* tok = nullptr;
};

struct Func {
  std::string name;
  const Token* tok = nullptr;
  bool is_public = true;
  bool declaration = false;  // no body
  std::vector<Arg> args;
  std::vector<Type> results;
  std::vector<Op> ops;  // the last one is the return
};

struct Module {
  std::vector<Func> funcs;
  [[nodiscard]] const Func* find(const std::string& name) const {
    for (const auto& f : funcs) {
      if (f.name == name) return &f;
    }
    return nullptr;
  }
};

Module parse_module(const std::vector<Token>& toks, const std::string& source);

// Known ops of the dialects normcore checks: a misspelt one is an error ("" when known or the
// dialect is not checked), with the closest known name.
std::string unknown_op_message(const std::string& name);

}  // namespace normcore::import::mlir_detail
