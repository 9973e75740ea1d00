// Shared helpers of the _normcore extension: the exception types and the translation of C++
// errors into them, the numpy dtype <-> DType mapping.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "normcore/driver.hpp"

namespace normcore::py {

namespace pyb = pybind11;

// normcore.Error (ValueError): bad input; normcore.DeviceError (RuntimeError, .registers);
// normcore.InputValueError (DeviceError and ValueError). Created in module.cpp.
struct Exceptions {
  PyObject* error = nullptr;
  PyObject* device_error = nullptr;
  PyObject* input_value_error = nullptr;
};
Exceptions& exceptions();

// Raises the DeviceError `e` as normcore.DeviceError / InputValueError whose `registers` is a
// dict {name: value} read from `acc` after the failure (empty when acc is null).
[[noreturn]] void raise_device_error(const DeviceError& e, Accelerator* acc);

// The DType of a numpy array (int8, uint8, int16, uint16, int32, float32, float16, and
// ml_dtypes.bfloat16); `as` ("float16" / "bfloat16") reads a 2-byte array's elements as those
// bit patterns (a uint16 view of bfloat16 data without ml_dtypes). Error naming `what`.
DType dtype_of_array(const pyb::array& a, const char* what, const std::string& as = "");
pyb::dtype numpy_dtype(DType t);

void bind_model(pyb::module_& m);
void bind_accel(pyb::module_& m);
void bind_import(pyb::module_& m);

}  // namespace normcore::py
