// Placeholder until the sim backend lands (same session).
#include "backends.hpp"

namespace normcore::detail {

std::unique_ptr<Device> open_sim_device(const DeviceSpec& spec) {
  throw DeviceError("device '" + spec.text + "': backend 'sim' is not implemented yet");
}

}  // namespace normcore::detail
