#include "rill/platform/platform.h"

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"

namespace rill {

Platform::~Platform() = default;

absl::Status Platform::CheckOrdinal(int ordinal) const {
  if (ordinal < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ordinal ", ordinal, " is negative (platform ", Name(), ")"));
  }
  absl::Status available = Availability();
  if (!available.ok()) {
    return absl::UnavailableError(
        absl::StrCat("platform ", Name(), " has no usable device (", available.message(), ")"));
  }
  const int count = VisibleDeviceCount();
  if (ordinal >= count) {
    return absl::NotFoundError(absl::StrCat("device ordinal ", ordinal,
                                            " is out of range: platform ", Name(), " has ", count,
                                            " device(s), 0..", count - 1));
  }
  return absl::OkStatus();
}

absl::StatusOr<StreamExecutor*> Platform::ExecutorForDevice(int ordinal) {
  StreamExecutorConfig config;
  config.ordinal = ordinal;
  return GetExecutor(config);
}

StreamExecutor* Platform::ExistingExecutor(int ordinal) const {
  absl::StatusOr<StreamExecutor*> executor = cache_.Get(StreamExecutorConfig{ordinal});
  return executor.ok() ? *executor : nullptr;
}

absl::StatusOr<StreamExecutor*> Platform::GetExecutor(const StreamExecutorConfig& config) {
  RILL_RETURN_IF_ERROR(CheckOrdinal(config.ordinal));
  return cache_.GetOrCreate(config, [&]() -> absl::StatusOr<std::unique_ptr<StreamExecutor>> {
    RILL_ASSIGN_OR_RETURN(std::unique_ptr<StreamExecutorInterface> impl,
                          CreateExecutorImplementation(config));
    return std::make_unique<StreamExecutor>(this, config.ordinal, std::move(impl));
  });
}

}  // namespace rill
