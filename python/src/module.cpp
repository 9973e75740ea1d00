// The _normcore extension module: exception types, C++ -> Python error translation, dtypes.
#include <pybind11/stl.h>

#include <string>

#include "common.hpp"
#include "normcore/npz.hpp"

namespace normcore::py {

Exceptions& exceptions() {
  static Exceptions e;
  return e;
}

[[noreturn]] void raise_device_error(const DeviceError& e, Accelerator* acc) {
  pyb::dict regs;
  if (acc != nullptr) {
    // A snapshot of the register file after the failure (reads have no side effects).
    for (const auto& r : acc->manifest().registers) {
      try {
        regs[pyb::str(r.name)] = acc->device().read32(r.offset);
      } catch (const std::exception&) {
        // A register the device cannot answer for stays out of the snapshot.
      }
    }
  }
  const bool input = dynamic_cast<const InputValueError*>(&e) != nullptr;
  PyObject* type = input ? exceptions().input_value_error : exceptions().device_error;
  pyb::object ex = pyb::reinterpret_borrow<pyb::object>(type)(pyb::str(e.what()));
  ex.attr("registers") = regs;
  PyErr_SetObject(type, ex.ptr());
  throw pyb::error_already_set();
}

DType dtype_of_array(const pyb::array& a, const char* what, const std::string& as) {
  const auto d = a.dtype();
  const char kind = d.kind();
  const auto size = d.itemsize();
  const bool native = d.byteorder() != '>';
  if (!as.empty()) {  // 16-bit elements read as float16 / bfloat16 bit patterns
    if (as != "float16" && as != "bfloat16") {
      throw Error(std::string(what) + ": element type '" + as +
                  "' is not float16 or bfloat16 (the types a 16-bit array may hold)");
    }
    if (size != 2 || !native) {
      throw Error(std::string(what) + ": " + as + " elements need a 2-byte native array, got " +
                  std::string(pyb::str(d)));
    }
    return as == "float16" ? DType::float16 : DType::bfloat16;
  }
  if (native && kind == 'f' && size == 2) return DType::float16;
  // ml_dtypes.bfloat16: a 2-byte numpy extension type named "bfloat16"
  if (size == 2 && std::string(pyb::str(d.attr("name"))) == "bfloat16") return DType::bfloat16;
  if (native && kind == 'i' && size == 1) return DType::int8;
  if (native && kind == 'u' && size == 1) return DType::uint8;
  if (native && kind == 'i' && size == 2) return DType::int16;
  if (native && kind == 'u' && size == 2) return DType::uint16;
  if (native && kind == 'i' && size == 4) return DType::int32;
  if (native && kind == 'f' && size == 4) return DType::float32;
  throw Error(std::string(what) + ": dtype " + std::string(pyb::str(d)) +
              " is not supported (int8, uint8, int16, uint16, int32, float32, float16, "
              "ml_dtypes.bfloat16)");
}

pyb::dtype numpy_dtype(DType t) {
  switch (t) {
    case DType::int8:
      return pyb::dtype::of<std::int8_t>();
    case DType::uint8:
      return pyb::dtype::of<std::uint8_t>();
    case DType::int16:
      return pyb::dtype::of<std::int16_t>();
    case DType::uint16:
      return pyb::dtype::of<std::uint16_t>();
    case DType::int32:
      return pyb::dtype::of<std::int32_t>();
    case DType::float16:
      return pyb::dtype("float16");
    case DType::bfloat16:  // raw bit patterns (ml_dtypes' bfloat16 has no buffer format)
      return pyb::dtype::of<std::uint16_t>();
    case DType::float32:
      break;
  }
  return pyb::dtype::of<float>();
}

namespace {

PyObject* new_exception(pyb::module_& m, const char* name, PyObject* bases, const char* doc) {
  const std::string qual = std::string("normcore.") + name;
  PyObject* t = PyErr_NewExceptionWithDoc(qual.c_str(), doc, bases, nullptr);
  if (t == nullptr) throw pyb::error_already_set();
  m.add_object(name, pyb::reinterpret_borrow<pyb::object>(t));
  return t;
}

void make_exceptions(pyb::module_& m) {
  auto& ex = exceptions();
  ex.error = new_exception(m, "Error", PyExc_ValueError,
                           "Bad input: a value, file or option normcore cannot take.");
  ex.device_error = new_exception(
      m, "DeviceError", PyExc_RuntimeError,
      "A device or driver failure. `registers` holds the register file read after it.");
  pyb::tuple bases = pyb::make_tuple(pyb::handle(ex.device_error), pyb::handle(PyExc_ValueError));
  ex.input_value_error =
      new_exception(m, "InputValueError", bases.ptr(),
                    "A value of the input tensor the device cannot take (NaN, out of range).");
  pyb::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const DeviceError& e) {
      raise_device_error(e, nullptr);
    } catch (const Error& e) {
      PyErr_SetString(exceptions().error, e.what());
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(exceptions().error, e.what());
    }
  });
}

}  // namespace

}  // namespace normcore::py

PYBIND11_MODULE(_normcore, m) {
  using namespace normcore::py;
  m.doc() = "normcore C++ bindings (model, runtime, import); use the `normcore` package";
  make_exceptions(m);
  bind_model(m);
  bind_accel(m);
#if NORMCORE_WITH_IMPORT
  bind_import(m);
  m.attr("has_import") = true;
#else
  m.attr("has_import") = false;
#endif
}
