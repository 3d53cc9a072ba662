#ifndef RILL_PLATFORM_PLATFORM_ID_H_
#define RILL_PLATFORM_PLATFORM_ID_H_

namespace rill {

// Identifies a kind of platform. Each backend defines one static
// PlatformIdInfo and uses its address as the id, so ids are unique,
// comparable and hashable without a central list:
//
//   // host_platform_id.cc
//   const PlatformIdInfo kHostPlatformIdInfo{"host"};
//   const PlatformId kHostPlatformId = &kHostPlatformIdInfo;
struct PlatformIdInfo {
  const char* name;  // For messages only; Platform::Name() is authoritative.
};
using PlatformId = const PlatformIdInfo*;

}  // namespace rill

#endif  // RILL_PLATFORM_PLATFORM_ID_H_
