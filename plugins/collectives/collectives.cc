#include "rill/plugins/collectives/collectives.h"

#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "rill/base/env_settings.h"

namespace rill {

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "allreduce";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kAllGather:
      return "allgather";
    case CollectiveKind::kReduceScatter:
      return "reducescatter";
    case CollectiveKind::kBarrier:
      return "barrier";
  }
  return "unknown";
}

const char* ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kAverage:
      return "average";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kMin:
      return "min";
  }
  return "unknown";
}

std::string CollectiveArgs::ToString() const {
  std::string s = CollectiveKindName(kind);
  if (kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter)
    absl::StrAppend(&s, "(", ReduceOpName(op), ")");
  if (kind == CollectiveKind::kBroadcast) absl::StrAppend(&s, "(root ", root, ")");
  if (kind != CollectiveKind::kBarrier) absl::StrAppend(&s, " ", DataTypeName(type), " x", count);
  if (!name.empty()) absl::StrAppend(&s, " '", name, "'");
  return s;
}

uint64_t CollectiveArgs::bytes() const {
  return count <= 0 ? 0 : static_cast<uint64_t>(count) * static_cast<uint64_t>(SizeOf(type));
}

absl::Status CheckCollectiveArgs(const CollectiveArgs& a, int size) {
  const std::string what = a.ToString();
  if (size <= 0)
    return absl::InvalidArgumentError(absl::StrCat(what, ": communicator of ", size, " ranks"));
  if (a.kind != CollectiveKind::kAllReduce && a.kind != CollectiveKind::kBroadcast &&
      a.kind != CollectiveKind::kAllGather && a.kind != CollectiveKind::kReduceScatter &&
      a.kind != CollectiveKind::kBarrier) {
    return absl::InvalidArgumentError(
        absl::StrCat("collective kind ", static_cast<int>(a.kind), " is not a CollectiveKind"));
  }
  if (a.type != DataType::kFloat && a.type != DataType::kDouble) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": element type ", static_cast<int>(a.type), " is not float or double"));
  }
  if (a.op != ReduceOp::kSum && a.op != ReduceOp::kAverage && a.op != ReduceOp::kMax &&
      a.op != ReduceOp::kMin) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": reduce op ", static_cast<int>(a.op), " is not a ReduceOp"));
  }
  if (a.count < 0) return absl::InvalidArgumentError(absl::StrCat(what, ": negative count"));
  if (a.root < 0 || a.root >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": root ", a.root, " is not a rank of a communicator of ", size));
  }
  if (a.kind == CollectiveKind::kBarrier) {
    if (a.count != 0 || !a.send.is_null() || !a.recv.is_null())
      return absl::InvalidArgumentError(absl::StrCat(what, ": a barrier takes no memory"));
    return absl::OkStatus();
  }
  const uint64_t elem = static_cast<uint64_t>(SizeOf(a.type));
  const uint64_t count = static_cast<uint64_t>(a.count);
  if (count > std::numeric_limits<uint64_t>::max() / elem / static_cast<uint64_t>(size))
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", size, " ranks overflow the size"));
  const uint64_t one = count * elem, all = one * static_cast<uint64_t>(size);
  uint64_t send_need = one, recv_need = one;
  switch (a.kind) {
    case CollectiveKind::kAllGather:
      recv_need = all;
      break;
    case CollectiveKind::kReduceScatter:
      send_need = all;
      break;
    default:
      break;
  }
  auto need = [&](const DeviceMemoryBase& m, uint64_t bytes, const char* which) -> absl::Status {
    if (bytes == 0) return absl::OkStatus();
    if (m.is_null())
      return absl::InvalidArgumentError(absl::StrCat(what, ": the ", which, " buffer is null"));
    if (m.size() < bytes) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": the ", which, " buffer holds ",
                                                     m.size(), " bytes, ", bytes, " needed"));
    }
    return absl::OkStatus();
  };
  if (a.kind != CollectiveKind::kBroadcast || !a.send.is_null()) {
    absl::Status s = need(a.send, send_need, "send");
    if (!s.ok()) return s;
  }
  return need(a.recv, recv_need, "receive");
}

namespace {

// Timeouts above this are refused (they would overflow the clock's
// nanoseconds once added to a time point).
constexpr std::chrono::milliseconds kMaxTimeout = std::chrono::hours(24 * 365);

absl::Status FromEnv(const char* variable, std::chrono::milliseconds fallback,
                     std::chrono::milliseconds* out) {
  if (*out > kMaxTimeout) {
    return absl::InvalidArgumentError(
        absl::StrCat(variable, ": ", out->count() / 1000, " s is more than a year"));
  }
  if (out->count() > 0) return absl::OkStatus();
  if (out->count() < 0)
    return absl::InvalidArgumentError(absl::StrCat(variable, ": negative duration"));
  absl::StatusOr<std::optional<double>> seconds = EnvSeconds(variable);
  if (!seconds.ok()) return seconds.status();
  if (!seconds->has_value()) {
    *out = fallback;
    return absl::OkStatus();
  }
  *out = std::chrono::milliseconds(static_cast<int64_t>(**seconds * 1000 + 0.5));
  if (out->count() == 0) *out = std::chrono::milliseconds(1);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CommunicatorOptions> ResolveCommunicatorOptions(CommunicatorOptions o) {
  absl::Status s = FromEnv("RILL_COLLECTIVE_TIMEOUT", std::chrono::seconds(120), &o.timeout);
  if (!s.ok()) return s;
  s = FromEnv("RILL_COLLECTIVE_STALL", std::chrono::seconds(30), &o.stall_warning);
  if (!s.ok()) return s;
  return o;
}

}  // namespace rill
