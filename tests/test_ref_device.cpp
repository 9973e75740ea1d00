// Placeholder: filled in by the test_ref_device work.
#include <gtest/gtest.h>
