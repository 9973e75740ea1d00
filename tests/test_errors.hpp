// The one error_of() of the unit tests: the message a failing call gives the user.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "normcore/bn_params.hpp"  // normcore::Error

namespace normcore::test {

// The message of the normcore::Error (or subclass: DeviceError, ...) that `f` throws, or
// "(no error)" when it throws nothing. Any other exception is a test failure (the code must
// report bad input as normcore::Error so the CLI exits 2 with the message), returned as
// "(not a normcore::Error) <what>". Tests search the text for what a user must see.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const normcore::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected normcore::Error, got another exception: " << e.what();
    return std::string("(not a normcore::Error) ") + e.what();
  }
  return "(no error)";
}

}  // namespace normcore::test
