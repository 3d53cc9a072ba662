#ifndef RILL_EXECUTOR_DEVICE_MEMORY_H_
#define RILL_EXECUTOR_DEVICE_MEMORY_H_

#include <cstdint>
#include <string>
#include <type_traits>

#include "absl/status/statusor.h"

namespace rill {

class StreamExecutor;

// A view of a range of device memory: an opaque backend handle, a byte
// offset into the allocation behind it, and a size in bytes. The handle is
// whatever the backend allocates: a host pointer, a CUDA device pointer, an
// OpenCL cl_mem. Sub-ranges keep the handle and move the offset, so they work
// on backends without pointer arithmetic; a backend resolves
// (opaque, offset) itself. A view does not own memory (see
// ScopedDeviceMemory). A null view has a null handle. Thread-compatible.
class DeviceMemoryBase {
 public:
  DeviceMemoryBase() = default;
  DeviceMemoryBase(void* opaque, uint64_t size, uint64_t offset = 0)
      : opaque_(opaque), size_(size), offset_(offset) {}

  bool is_null() const { return opaque_ == nullptr; }
  void* opaque() const { return opaque_; }
  uint64_t size() const { return size_; }
  uint64_t offset() const { return offset_; }

  // Whether [offset, offset + size) lies within an allocation of
  // `allocation_bytes` (checked without wrapping: an offset near 2^64 is
  // outside). Backends' Owns() use it.
  bool LiesWithin(uint64_t allocation_bytes) const {
    return offset_ <= allocation_bytes && size_ <= allocation_bytes - offset_;
  }

  // The byte range [offset, offset + size) of this view, or InvalidArgument
  // naming the values when it does not fit.
  absl::StatusOr<DeviceMemoryBase> GetByteSlice(uint64_t offset, uint64_t size) const;

  // "DeviceMemory{handle=0x.., offset=0, size=64}" for messages.
  std::string ToString() const;

  friend bool operator==(const DeviceMemoryBase&, const DeviceMemoryBase&) = default;

 private:
  void* opaque_ = nullptr;
  uint64_t size_ = 0;
  uint64_t offset_ = 0;
};

// The host address of `memory`'s first byte (the handle plus the offset),
// on a device whose memory is host memory (Feature::kHostAddressableMemory:
// the handle is a host pointer). Meaningless elsewhere: a CUDA or OpenCL
// handle is no host address. StreamExecutor::HostAddress also checks that
// the device owns the memory.
inline void* HostPointer(const DeviceMemoryBase& memory) {
  return static_cast<char*>(memory.opaque()) + memory.offset();
}

// A typed view of device memory holding elements of T.
//   DeviceMemory<float> x = ...;  x.ElementCount();  x.GetSlice(8, 16);
template <typename T>
class DeviceMemory : public DeviceMemoryBase {
 public:
  static_assert(std::is_trivially_copyable_v<T>, "device memory holds trivially copyable types");
  using ElementType = T;

  DeviceMemory() = default;
  explicit DeviceMemory(const DeviceMemoryBase& base) : DeviceMemoryBase(base) {}

  uint64_t ElementCount() const { return size() / sizeof(T); }

  // Elements [first, first + count) of this view.
  absl::StatusOr<DeviceMemory<T>> GetSlice(uint64_t first, uint64_t count) const {
    if (count > UINT64_MAX / sizeof(T) || first > UINT64_MAX / sizeof(T)) {
      return GetByteSlice(UINT64_MAX, UINT64_MAX).status();  // reports the overflow
    }
    auto bytes = GetByteSlice(first * sizeof(T), count * sizeof(T));
    if (!bytes.ok()) return bytes.status();
    return DeviceMemory<T>(*bytes);
  }
};

// Owns one allocation of an executor and frees it on destruction. Move-only.
// The executor must outlive it.
//   RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> buf,
//                         executor->AllocateOwnedArray<float>(1024));
//   stream.ThenMemcpy(buf.ptr(), host.data(), buf->size());
template <typename T>
class ScopedDeviceMemory {
 public:
  ScopedDeviceMemory() = default;
  ScopedDeviceMemory(StreamExecutor* parent, DeviceMemory<T> memory)
      : parent_(parent), memory_(memory) {}
  ScopedDeviceMemory(ScopedDeviceMemory&& other) noexcept { *this = std::move(other); }
  ScopedDeviceMemory& operator=(ScopedDeviceMemory&& other) noexcept {
    if (this != &other) {
      Free();
      parent_ = other.parent_;
      memory_ = other.Release();
    }
    return *this;
  }
  ~ScopedDeviceMemory() { Free(); }

  const DeviceMemory<T>& cref() const { return memory_; }
  DeviceMemory<T>* ptr() { return &memory_; }
  const DeviceMemory<T>* operator->() const { return &memory_; }
  const DeviceMemory<T>& operator*() const { return memory_; }
  bool is_null() const { return memory_.is_null(); }

  // Gives up ownership and returns the view.
  DeviceMemory<T> Release() {
    DeviceMemory<T> m = memory_;
    memory_ = DeviceMemory<T>();
    return m;
  }

 private:
  void Free();  // Defined in stream_executor.h.
  StreamExecutor* parent_ = nullptr;
  DeviceMemory<T> memory_;
};

}  // namespace rill

#endif  // RILL_EXECUTOR_DEVICE_MEMORY_H_
