#include "test_paths.hpp"

namespace normcore::test {

std::string source_dir() {
  return NORMCORE_SOURCE_DIR;
}
std::string devices_dir() {
  return NORMCORE_DEVICES_DIR;
}

}  // namespace normcore::test
