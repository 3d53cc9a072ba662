#include "rill/executor/device_memory.h"

#include "absl/strings/str_format.h"

namespace rill {

absl::StatusOr<DeviceMemoryBase> DeviceMemoryBase::GetByteSlice(uint64_t offset,
                                                                uint64_t size) const {
  if (offset > size_ || size > size_ - offset || offset_ > UINT64_MAX - offset) {
    return absl::InvalidArgumentError(
        absl::StrFormat("slice [offset=%u, size=%u] does not fit in %s", offset, size, ToString()));
  }
  return DeviceMemoryBase(opaque_, size, offset_ + offset);
}

std::string DeviceMemoryBase::ToString() const {
  return absl::StrFormat("DeviceMemory{handle=%p, offset=%u, size=%u}", opaque_, offset_, size_);
}

}  // namespace rill
