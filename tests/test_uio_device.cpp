// Placeholder: filled in by the test_uio_device work.
#include <gtest/gtest.h>
