// Internals of the Relay text front end: the parsed module (relay_parse.cpp) that relay.cpp
// lowers into a Graph.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "normcore/import/graph.hpp"

namespace normcore::import::relay_detail {

struct Pos {
  int line = 1, col = 1;
};

// A Relay type: a tensor (shape: -1 for an unknown dimension `?` / `Any`), a scalar tensor
// (`float32`: shape [], known), or a tuple of types.
struct RType {
  bool given = false;  // false: no type written
  bool tuple = false;
  bool shape_known = false;
  std::vector<std::int64_t> shape;
  std::string dtype;
  std::vector<RType> fields;
};

struct RExpr {
  enum class Kind { var, call, get, tuple, scalar } kind = Kind::var;
  std::string name;  // var: the name without '%'; call: the op ("nn.batch_norm")
  std::vector<std::shared_ptr<RExpr>> args;  // call arguments, tuple fields, get: its tuple
  std::map<std::string, Attr> attrs;         // call attributes
  int index = 0;                             // get: the field
  double value = 0;                          // scalar
  std::string dtype;                         // scalar: "f32", "i64", ...
  RType ty;                                  // the /* ty=... */ annotation, if any
  Pos pos;
};
using RExprP = std::shared_ptr<RExpr>;

struct RBinding {
  std::string name;
  RExprP expr;
  Pos pos;
};

struct RFunc {
  std::string name;
  std::vector<std::pair<std::string, RType>> params;
  std::vector<RBinding> body;
  RExprP result;
  Pos pos;
};

struct RModule {
  std::vector<RFunc> funcs;
};

RModule parse_relay_module(std::string_view text, const std::string& source);

// Relay's operator names (the registry of TVM's relay, as of its last release with Relay).
bool is_relay_op(const std::string& name);
std::string closest_relay_op(const std::string& name);

}  // namespace normcore::import::relay_detail
