// Factories of the backends built into the runtime library (registered by open_device()).
#pragma once

#include <memory>

#include "normcore/device.hpp"

namespace normcore::detail {

std::unique_ptr<Device> open_ref_device(const DeviceSpec& spec);  // ref_device.cpp
std::unique_ptr<Device> open_uio_device(const DeviceSpec& spec);  // uio_device.cpp
// Loads the Verilator plugin (libnormcore_sim.so) built beside the manifest.
std::unique_ptr<Device> open_sim_device(const DeviceSpec& spec);  // sim_loader.cpp
// Loads the SystemC/TLM-2.0 plugin (libnormcore_tlm.so) built beside the manifest.
std::unique_ptr<Device> open_tlm_device(const DeviceSpec& spec);  // sim_loader.cpp

}  // namespace normcore::detail
