#include "rill/plugins/collectives/mpi/mpi_transfer.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "rill/executor/device_memory.h"

namespace rill::mpi_collectives {

namespace {

// All-reduces and broadcasts go in pieces of at most this many bytes (MPI
// counts are int anyway): Open MPI's large-message all-reduce allocates
// temporary buffers as large as the message per call, and on a thread other
// than the main one (this communicator's) glibc serves those from a
// per-thread heap of at most 64 MB, so a larger message's buffers were
// mapped and faulted in afresh on every call (64 MB: 2.2x the main thread's
// time, docs/collectives.md). Pieces of 16 MB stay inside that heap.
constexpr int64_t kPieceBytes = int64_t{16} << 20;

template <typename T>
void Scale(void* data, int64_t count, double factor) {
  T* p = static_cast<T*>(data);
  for (int64_t i = 0; i < count; ++i) p[i] = static_cast<T>(p[i] * factor);
}

}  // namespace

absl::Status MpiError(const std::string& call, int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  return absl::InternalError(absl::StrCat("MPI: ", call,
                                          " failed: ", len > 0 ? std::string(text, len) : "error ",
                                          len > 0 ? "" : std::to_string(code)));
}

absl::Status Transfer(const CollectiveArgs& a, MPI_Comm data, int rank, int size) {
  const MPI_Datatype type = a.type == DataType::kFloat ? MPI_FLOAT : MPI_DOUBLE;
  const int64_t elem = SizeOf(a.type);
  MPI_Op mop = MPI_SUM;
  if (a.op == ReduceOp::kMax) mop = MPI_MAX;
  if (a.op == ReduceOp::kMin) mop = MPI_MIN;
  char* send = static_cast<char*>(a.send.is_null() ? nullptr : HostPointer(a.send));
  char* recv = static_cast<char*>(a.recv.is_null() ? nullptr : HostPointer(a.recv));
  auto average = [&](void* p, int64_t n) {
    if (a.op != ReduceOp::kAverage) return;
    if (a.type == DataType::kFloat)
      Scale<float>(p, n, 1.0 / size);
    else
      Scale<double>(p, n, 1.0 / size);
  };
  auto one_piece = [&](const char* call) -> absl::Status {
    if (a.count <= INT_MAX) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("collectives (mpi): ", call, " of ", a.count,
                                                   " elements: MPI counts are int (at most ",
                                                   INT_MAX, " per rank)"));
  };
  const int64_t piece = kPieceBytes / elem;
  int rc = MPI_SUCCESS;
  switch (a.kind) {
    case CollectiveKind::kAllReduce:
      for (int64_t off = 0; off < a.count || (off == 0 && a.count == 0); off += piece) {
        const int n = static_cast<int>(std::min(piece, a.count - off));
        char* r = recv == nullptr ? nullptr : recv + off * elem;
        const void* s = send == recv ? MPI_IN_PLACE : send + off * elem;
        rc = MPI_Allreduce(s, r, n, type, mop, data);
        if (rc != MPI_SUCCESS)
          return MpiError(absl::StrCat("MPI_Allreduce (", a.ToString(), ")"), rc);
        if (a.count == 0) break;
      }
      average(recv, a.count);
      return absl::OkStatus();
    case CollectiveKind::kBroadcast:
      if (rank == a.root && send != nullptr && send != recv && a.count > 0)
        std::memcpy(recv, send, static_cast<size_t>(a.count * elem));
      for (int64_t off = 0; off < a.count; off += piece) {
        const int n = static_cast<int>(std::min(piece, a.count - off));
        rc = MPI_Bcast(recv + off * elem, n, type, a.root, data);
        if (rc != MPI_SUCCESS) return MpiError(absl::StrCat("MPI_Bcast (", a.ToString(), ")"), rc);
      }
      return absl::OkStatus();
    case CollectiveKind::kAllGather: {
      absl::Status s = one_piece("allgather");
      if (!s.ok()) return s;
      const void* in = send == recv + rank * a.count * elem ? MPI_IN_PLACE : send;
      rc = MPI_Allgather(in, static_cast<int>(a.count), type, recv, static_cast<int>(a.count), type,
                         data);
      if (rc != MPI_SUCCESS)
        return MpiError(absl::StrCat("MPI_Allgather (", a.ToString(), ")"), rc);
      return absl::OkStatus();
    }
    case CollectiveKind::kReduceScatter: {
      absl::Status s = one_piece("reducescatter");
      if (!s.ok()) return s;
      rc = MPI_Reduce_scatter_block(send, recv, static_cast<int>(a.count), type, mop, data);
      if (rc != MPI_SUCCESS)
        return MpiError(absl::StrCat("MPI_Reduce_scatter_block (", a.ToString(), ")"), rc);
      average(recv, a.count);
      return absl::OkStatus();
    }
    case CollectiveKind::kBarrier:
      rc = MPI_Barrier(data);
      if (rc != MPI_SUCCESS) return MpiError("MPI_Barrier", rc);
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("collectives (mpi): unknown collective kind");
}

}  // namespace rill::mpi_collectives
