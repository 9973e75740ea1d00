// Placeholder until the ref backend lands (same session).
#include "backends.hpp"

namespace normcore::detail {

std::unique_ptr<Device> open_ref_device(const DeviceSpec& spec) {
  throw DeviceError("device '" + spec.text + "': backend 'ref' is not implemented yet");
}

}  // namespace normcore::detail
