#include "rill/kvstore/kvstore.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/kvstore/dist_kvstore.h"
#include "rill/kvstore/local_kvstore.h"

namespace rill::kvstore {
namespace {

constexpr char kKnownTypes[] = "local, dist_sync, dist_device_sync";

absl::Status CountMismatch(const char* what, size_t keys, size_t lists) {
  return absl::InvalidArgumentError(absl::StrCat("kvstore: batched ", what, " of ", keys,
                                                 " keys with ", lists,
                                                 " tensor lists (one list per key)"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<KVStore>> KVStore::Create(const std::string& type,
                                                         const KVStoreOptions& options) {
  if (type == "local") {
    RILL_ASSIGN_OR_RETURN(std::unique_ptr<LocalKVStore> store, LocalKVStore::Create(options));
    return std::unique_ptr<KVStore>(std::move(store));
  }
  if (type == "dist_sync" || type == "dist_device_sync") {
    RILL_ASSIGN_OR_RETURN(std::unique_ptr<DistKVStore> store, DistKVStore::Create(options));
    return std::unique_ptr<KVStore>(std::move(store));
  }
  if (type == "dist" || absl::StartsWith(type, "dist_")) {
    return absl::UnimplementedError(absl::StrCat(
        "kvstore type '", type,
        "': only synchronous distributed stores exist (no parameter server): known types: ",
        kKnownTypes));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown kvstore type '", type, "' (known types: ", kKnownTypes, ")"));
}

KVStore::~KVStore() = default;

absl::Status KVStore::CheckInit(const std::string& key, const Tensor& value, const Tensor* existing,
                                engine::Engine* engine) {
  if (key.empty()) return absl::InvalidArgumentError("kvstore: Init with an empty key");
  if (existing != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat(
        "kvstore: key '", key, "' was already initialized (", existing->ToString(), ")"));
  }
  RILL_RETURN_IF_ERROR(
      Annotate(value.CheckUsable(), absl::StrCat("kvstore: Init of key '", key, "'")));
  if (value.engine() != engine) {
    return absl::InvalidArgumentError(absl::StrCat("kvstore: Init of key '", key,
                                                   "': ", value.ToString(),
                                                   " belongs to another engine than the store's"));
  }
  return absl::OkStatus();
}

absl::Status KVStore::CheckAgainstStored(const std::string& key, const Tensor* stored,
                                         absl::Span<const Tensor> tensors, bool push,
                                         engine::Engine* engine) {
  const char* what = push ? "Push" : "Pull";
  const char* noun = push ? "value" : "output";
  if (stored == nullptr) {
    return absl::NotFoundError(absl::StrCat("kvstore: ", what, " of key '", key,
                                            "', which was not initialized (Init it first)"));
  }
  if (tensors.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kvstore: ", what, " of key '", key, "' with no ", noun, "s"));
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    const std::string where =
        absl::StrCat("kvstore: ", what, " of key '", key, "', ", noun, " ", i);
    RILL_RETURN_IF_ERROR(Annotate(t.CheckUsable(), where));
    if (t.shape() != stored->shape() || t.dtype() != stored->dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " is ", t.ToString(), ", but the stored value is ", stored->ToString()));
    }
    if (t.engine() != engine) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", t.ToString(), " belongs to another engine than the store's"));
    }
  }
  return absl::OkStatus();
}

absl::Status KVStore::CheckPush(const std::string&, absl::Span<const Tensor>) const {
  return absl::OkStatus();
}

absl::Status KVStore::CheckPull(const std::string&, absl::Span<const Tensor>) const {
  return absl::OkStatus();
}

absl::Status KVStore::Push(absl::Span<const std::string> keys,
                           absl::Span<const std::vector<Tensor>> values, int priority) {
  if (keys.size() != values.size()) return CountMismatch("Push", keys.size(), values.size());
  for (size_t i = 0; i < keys.size(); ++i) RILL_RETURN_IF_ERROR(CheckPush(keys[i], values[i]));
  for (size_t i = 0; i < keys.size(); ++i) RILL_RETURN_IF_ERROR(Push(keys[i], values[i], priority));
  return absl::OkStatus();
}

absl::Status KVStore::Pull(absl::Span<const std::string> keys,
                           absl::Span<const std::vector<Tensor>> outs, int priority) {
  if (keys.size() != outs.size()) return CountMismatch("Pull", keys.size(), outs.size());
  for (size_t i = 0; i < keys.size(); ++i) RILL_RETURN_IF_ERROR(CheckPull(keys[i], outs[i]));
  for (size_t i = 0; i < keys.size(); ++i) RILL_RETURN_IF_ERROR(Pull(keys[i], outs[i], priority));
  return absl::OkStatus();
}

}  // namespace rill::kvstore
