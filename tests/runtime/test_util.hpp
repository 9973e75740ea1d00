// Small helpers shared by the runtime unit tests: error_of is the shared strict one.
#pragma once

#include "test_errors.hpp"
