// Small helpers shared by the unit tests.
#pragma once

#include <exception>
#include <string>

namespace normcore::test {

// The message of the std::exception `f` throws, or "(no error)". Tests search it for the text a
// user must see.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace normcore::test
