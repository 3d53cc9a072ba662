// Stream::ThenPopulate*: one-line forwards to the executor's RngSupport.

#include "rill/plugins/rng/rng.h"
#include "rill/stream/stream_plugin.h"

namespace rill {

Stream& Stream::ThenPopulateRandUniform(DeviceMemory<float>* out) {
  return ThenPlugin<RngSupport>(
      [] { return "ThenPopulateRandUniform(float)"; },
      [&](RngSupport* rng) { return rng->DoPopulateRandUniform(this, out); });
}

Stream& Stream::ThenPopulateRandUniform(DeviceMemory<double>* out) {
  return ThenPlugin<RngSupport>(
      [] { return "ThenPopulateRandUniform(double)"; },
      [&](RngSupport* rng) { return rng->DoPopulateRandUniform(this, out); });
}

Stream& Stream::ThenPopulateRandGaussian(float mean, float stddev, DeviceMemory<float>* out) {
  return ThenPlugin<RngSupport>(
      [] { return "ThenPopulateRandGaussian(float)"; },
      [&](RngSupport* rng) { return rng->DoPopulateRandGaussian(this, mean, stddev, out); });
}

Stream& Stream::ThenPopulateRandGaussian(double mean, double stddev, DeviceMemory<double>* out) {
  return ThenPlugin<RngSupport>(
      [] { return "ThenPopulateRandGaussian(double)"; },
      [&](RngSupport* rng) { return rng->DoPopulateRandGaussian(this, mean, stddev, out); });
}

Stream& Stream::ThenPopulateRandBits(DeviceMemory<uint32_t>* out) {
  return ThenPlugin<RngSupport>(
      [] { return "ThenPopulateRandBits"; },
      [&](RngSupport* rng) { return rng->DoPopulateRandBits(this, out); });
}

}  // namespace rill
