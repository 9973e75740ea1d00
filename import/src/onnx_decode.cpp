// ONNX front end: tensor payloads (raw_data and the typed fields, every numeric element type) and
// node attributes.
#include <cmath>
#include <cstring>
#include <limits>

#include "onnx_internal.hpp"

namespace normcore::import::onnx_detail {

using DT = onnx::TensorProto_DataType;

// Element type names as graph.hpp spells them ("" for types the IR has no name for).
std::string dtype_name(int t) {
  switch (t) {
    case onnx::TensorProto_DataType_FLOAT:
      return "f32";
    case onnx::TensorProto_DataType_DOUBLE:
      return "f64";
    case onnx::TensorProto_DataType_FLOAT16:
      return "f16";
    case onnx::TensorProto_DataType_BFLOAT16:
      return "bf16";
    case onnx::TensorProto_DataType_INT8:
      return "i8";
    case onnx::TensorProto_DataType_UINT8:
      return "u8";
    case onnx::TensorProto_DataType_INT16:
      return "i16";
    case onnx::TensorProto_DataType_UINT16:
      return "u16";
    case onnx::TensorProto_DataType_INT32:
      return "i32";
    case onnx::TensorProto_DataType_UINT32:
      return "u32";
    case onnx::TensorProto_DataType_INT64:
      return "i64";
    case onnx::TensorProto_DataType_UINT64:
      return "u64";
    case onnx::TensorProto_DataType_BOOL:
      return "bool";
    case onnx::TensorProto_DataType_STRING:
      return "string";
    case onnx::TensorProto_DataType_COMPLEX64:
      return "c64";
    case onnx::TensorProto_DataType_COMPLEX128:
      return "c128";
    default:
      return "";
  }
}

namespace {

std::string dtype_label(int t) {
  if (onnx::TensorProto_DataType_IsValid(t)) {
    return onnx::TensorProto_DataType_Name(static_cast<DT>(t));
  }
  return "data type " + std::to_string(t);
}

// Bytes per element in raw_data, 0 for types this front end does not decode.
std::size_t raw_size(int t) {
  switch (t) {
    case onnx::TensorProto_DataType_FLOAT:
    case onnx::TensorProto_DataType_INT32:
    case onnx::TensorProto_DataType_UINT32:
      return 4;
    case onnx::TensorProto_DataType_DOUBLE:
    case onnx::TensorProto_DataType_INT64:
    case onnx::TensorProto_DataType_UINT64:
      return 8;
    case onnx::TensorProto_DataType_FLOAT16:
    case onnx::TensorProto_DataType_BFLOAT16:
    case onnx::TensorProto_DataType_INT16:
    case onnx::TensorProto_DataType_UINT16:
      return 2;
    case onnx::TensorProto_DataType_INT8:
    case onnx::TensorProto_DataType_UINT8:
    case onnx::TensorProto_DataType_BOOL:
      return 1;
    default:
      return 0;
  }
}

double half_to_double(std::uint32_t bits) {
  const bool neg = (bits & 0x8000U) != 0;
  const std::uint32_t exp = (bits >> 10) & 0x1fU;
  const std::uint32_t mant = bits & 0x3ffU;
  double v = 0;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else if (exp == 31) {
    v = mant == 0 ? std::numeric_limits<double>::infinity()
                  : std::numeric_limits<double>::quiet_NaN();
  } else {
    v = std::ldexp(static_cast<double>(mant | 0x400U), static_cast<int>(exp) - 25);
  }
  return neg ? -v : v;
}

double bf16_to_double(std::uint32_t bits) {
  const std::uint32_t f32 = (bits & 0xffffU) << 16;
  float f = 0;
  std::memcpy(&f, &f32, sizeof f);
  return static_cast<double>(f);
}

double float_bits(std::uint64_t bits) {
  const auto b = static_cast<std::uint32_t>(bits);
  float f = 0;
  std::memcpy(&f, &b, sizeof f);
  return static_cast<double>(f);
}

double double_bits(std::uint64_t bits) {
  double d = 0;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

// One element of a decoded integer-ish payload (raw bytes or int32_data / uint64_data) as double.
double element_from_bits(int t, std::uint64_t bits) {
  switch (t) {
    case onnx::TensorProto_DataType_FLOAT:
      return float_bits(bits);
    case onnx::TensorProto_DataType_DOUBLE:
      return double_bits(bits);
    case onnx::TensorProto_DataType_FLOAT16:
      return half_to_double(static_cast<std::uint32_t>(bits));
    case onnx::TensorProto_DataType_BFLOAT16:
      return bf16_to_double(static_cast<std::uint32_t>(bits));
    case onnx::TensorProto_DataType_INT8:
      return static_cast<double>(static_cast<std::int8_t>(static_cast<std::uint8_t>(bits)));
    case onnx::TensorProto_DataType_INT16:
      return static_cast<double>(static_cast<std::int16_t>(static_cast<std::uint16_t>(bits)));
    case onnx::TensorProto_DataType_INT32:
      return static_cast<double>(static_cast<std::int32_t>(static_cast<std::uint32_t>(bits)));
    case onnx::TensorProto_DataType_INT64:
      return static_cast<double>(static_cast<std::int64_t>(bits));
    case onnx::TensorProto_DataType_BOOL:
      return (bits & 0xffU) != 0 ? 1.0 : 0.0;
    case onnx::TensorProto_DataType_UINT8:
      return static_cast<double>(bits & 0xffU);
    case onnx::TensorProto_DataType_UINT16:
      return static_cast<double>(bits & 0xffffU);
    case onnx::TensorProto_DataType_UINT32:
      return static_cast<double>(bits & 0xffffffffU);
    default:
      return static_cast<double>(bits);  // UINT64
  }
}

// The number of values in the typed repeated field that holds a tensor of t's data type.
std::size_t stored_count(const onnx::TensorProto& t) {
  switch (t.data_type()) {
    case onnx::TensorProto_DataType_FLOAT:
      return static_cast<std::size_t>(t.float_data_size());
    case onnx::TensorProto_DataType_DOUBLE:
      return static_cast<std::size_t>(t.double_data_size());
    case onnx::TensorProto_DataType_INT64:
      return static_cast<std::size_t>(t.int64_data_size());
    case onnx::TensorProto_DataType_UINT32:
    case onnx::TensorProto_DataType_UINT64:
      return static_cast<std::size_t>(t.uint64_data_size());
    default:
      return static_cast<std::size_t>(t.int32_data_size());
  }
}

// Throws unless t holds exactly `count` values of `esize` bytes (raw) or typed values.
void check_present(const onnx::TensorProto& t, std::size_t count, std::size_t esize,
                   const Shape& shape, const std::string& what) {
  const std::size_t present = t.has_raw_data() ? t.raw_data().size() / esize : stored_count(t);
  if (count == present && (!t.has_raw_data() || t.raw_data().size() % esize == 0)) return;
  if (t.has_raw_data()) {
    throw Error(
        what + ": raw_data holds " + std::to_string(t.raw_data().size()) + " bytes, expected " +
        (count > std::numeric_limits<std::size_t>::max() / esize ? std::string("more than 2^64")
                                                                 : std::to_string(count * esize)) +
        " for shape " + shape_str(shape) + " of " + dtype_label(t.data_type()));
  }
  throw Error(what + ": holds " + std::to_string(present) + " values, expected " +
              std::to_string(count) + " for shape " + shape_str(shape));
}

}  // namespace

// `what` names the tensor in messages ("<source>: initializer 'w'").
Decoded decode_tensor(const onnx::TensorProto& t, const std::string& what) {
  Decoded out;
  Constant c;
  std::size_t count = 1;
  bool overflow = false;
  for (const auto d : t.dims()) {
    if (d < 0) throw Error(what + ": negative dimension " + std::to_string(d));
    c.shape.push_back(d);
    const auto u = static_cast<std::size_t>(d);
    if (u != 0 && count > std::numeric_limits<std::size_t>::max() / u) overflow = true;
    count *= u;
  }
  if (overflow) {
    throw Error(what + ": dims " + shape_str(c.shape) + ": the element count overflows 64 bits");
  }
  const int type = t.data_type();
  if (t.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    out.problem =
        "is stored as external data (not supported; save the model with its weights inside)";
    return out;
  }
  const std::size_t esize = raw_size(type);
  if (esize == 0) {
    out.problem = "has unsupported data type " + dtype_label(type);
    return out;
  }
  check_present(t, count, esize, c.shape, what);  // before anything is allocated
  c.data.reserve(count);
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    for (std::size_t i = 0; i < count; ++i) {
      std::uint64_t bits = 0;
      for (std::size_t b = 0; b < esize; ++b) {  // little endian, independent of the host
        bits |= static_cast<std::uint64_t>(static_cast<unsigned char>(raw[i * esize + b]))
                << (8 * b);
      }
      c.data.push_back(element_from_bits(type, bits));
    }
  } else {
    switch (type) {
      case onnx::TensorProto_DataType_FLOAT:
        for (const float v : t.float_data()) c.data.push_back(static_cast<double>(v));
        break;
      case onnx::TensorProto_DataType_DOUBLE:
        for (const double v : t.double_data()) c.data.push_back(v);
        break;
      case onnx::TensorProto_DataType_INT64:
        for (const auto v : t.int64_data()) c.data.push_back(static_cast<double>(v));
        break;
      case onnx::TensorProto_DataType_UINT32:
      case onnx::TensorProto_DataType_UINT64:
        for (const auto v : t.uint64_data()) c.data.push_back(static_cast<double>(v));
        break;
      default:  // int32_data carries INT32/16/8, UINT16/8, BOOL and the bits of FLOAT16/BFLOAT16
        for (const auto v : t.int32_data()) {
          c.data.push_back(
              element_from_bits(type, static_cast<std::uint64_t>(static_cast<std::uint32_t>(v))));
        }
        break;
    }
  }
  out.constant = std::move(c);
  return out;
}

const onnx::AttributeProto* find_attr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

std::int64_t attr_int(const onnx::NodeProto& n, const std::string& name, std::int64_t dflt) {
  const auto* a = find_attr(n, name);
  return a ? a->i() : dflt;
}

std::optional<Shape> attr_ints(const onnx::NodeProto& n, const std::string& name) {
  const auto* a = find_attr(n, name);
  if (!a) return std::nullopt;
  return Shape(a->ints().begin(), a->ints().end());
}

// Generic attribute copy for ops the recogniser does not interpret ("other:*", conv, matmul).
Attr convert_attr(const onnx::AttributeProto& a) {
  Attr out;
  switch (a.type()) {
    case onnx::AttributeProto_AttributeType_INT:
      out.i = a.i();
      break;
    case onnx::AttributeProto_AttributeType_FLOAT:
      out.f = static_cast<double>(a.f());
      break;
    case onnx::AttributeProto_AttributeType_INTS:
      out.ints.assign(a.ints().begin(), a.ints().end());
      break;
    case onnx::AttributeProto_AttributeType_STRING:
      out.s = a.s();
      break;
    default:
      break;
  }
  return out;
}

std::int64_t product(const Shape& s) {
  std::int64_t p = 1;
  for (const auto d : s) {
    if (d < 0) return -1;
    p *= d;
  }
  return p;
}

void check_bn_statistics_unused(const Graph& g) {
  std::vector<char> used(g.values.size(), 0);
  for (const auto& n : g.nodes) {
    for (int v : n.inputs) {
      if (v >= 0) used[static_cast<std::size_t>(v)] = 1;
    }
  }
  for (int v : g.outputs) used[static_cast<std::size_t>(v)] = 1;
  for (const auto& n : g.nodes) {
    if (n.op != "bn") continue;
    for (std::size_t k = 1; k < n.outputs.size(); ++k) {
      const auto v = static_cast<std::size_t>(n.outputs[k]);
      if (used[v] == 0) continue;
      throw Error(g.source + ": " + n.location + ": its batch-statistics output '" +
                  g.values[v].name +
                  "' is used (training-mode batch normalisation) and is not supported; export "
                  "the model in inference (eval) mode");
    }
  }
}

}  // namespace normcore::import::onnx_detail
