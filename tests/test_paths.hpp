// Where the tests find the source tree and the generated device directories. Only
// tests/test_paths.cpp is compiled with these absolute paths (NORMCORE_SOURCE_DIR,
// NORMCORE_DEVICES_DIR), so every other test object has the same compile line in any checkout
// and ccache shares it between checkouts.
#pragma once

#include <string>

namespace normcore::test {

std::string source_dir();   // the project's source tree
std::string devices_dir();  // build/devices: <name>/rtl/manifest.json of cmake/devices.cmake

}  // namespace normcore::test
