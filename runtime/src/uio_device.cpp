// Placeholder until the uio backend lands (same session).
#include "backends.hpp"

namespace normcore::detail {

std::unique_ptr<Device> open_uio_device(const DeviceSpec& spec) {
  throw DeviceError("device '" + spec.text + "': backend 'uio' is not implemented yet");
}

}  // namespace normcore::detail
