#include "rill/platform/device_description.h"

#include "absl/strings/str_cat.h"

namespace rill {

std::string DeviceDescription::ToString() const {
  std::string out =
      absl::StrCat("name: ", name, "\nvendor: ", vendor, "\nplatform version: ", platform_version,
                   "\ndriver version: ", driver_version, "\nmemory bytes: ", memory_bytes,
                   "\ncompute units: ", compute_units, "\nclock kHz: ", clock_khz,
                   "\nmax threads per block: ", max_threads_per_block,
                   "\nmax block dims: ", max_block_dims.ToString(),
                   "\nmax grid dims: ", max_grid_dims.ToString(), "\n");
  for (const auto& [key, value] : extra) absl::StrAppend(&out, key, ": ", value, "\n");
  return out;
}

}  // namespace rill
