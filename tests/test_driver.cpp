// Placeholder: filled in by the test_driver work.
#include <gtest/gtest.h>
