// The generator's view of the configuration schema (model/include/normcore/config.hpp): the core
// and accelerator configurations, their checks and derived sizes.
#pragma once

#include "normcore/config.hpp"

namespace normcore::gen {

using normcore::bits_for;
using normcore::clog2;
using normcore::CoreConfig;
using normcore::kGeneratorVersion;

}  // namespace normcore::gen
