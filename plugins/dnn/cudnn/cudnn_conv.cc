// CuDnn's convolutions: cuDNN's view of a shape (with layout staging),
// algorithm listing, heuristics default, cudnnFind* timing, workspaces.

#include <cudnn.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"
#include "rill/base/status_macros.h"
#include "rill/platform/cuda/cuda_plugin.h"
#include "rill/plugins/dnn/cudnn/cudnn_context.h"
#include "rill/plugins/dnn/cudnn/cudnn_descriptors.h"
#include "rill/plugins/dnn/cudnn/cudnn_dnn.h"
#include "rill/plugins/dnn/cudnn/cudnn_status.h"
#include "rill/stream/stream_listener.h"

namespace rill {

namespace {

using cudnn::Session;

// cuDNN's algorithm enumerators per direction, indexed by their value.
constexpr const char* kForwardAlgorithms[] = {
    "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM", "CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM",
    "CUDNN_CONVOLUTION_FWD_ALGO_GEMM",          "CUDNN_CONVOLUTION_FWD_ALGO_DIRECT",
    "CUDNN_CONVOLUTION_FWD_ALGO_FFT",           "CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING",
    "CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD",      "CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED"};
constexpr const char* kBackwardDataAlgorithms[] = {
    "CUDNN_CONVOLUTION_BWD_DATA_ALGO_0",
    "CUDNN_CONVOLUTION_BWD_DATA_ALGO_1",
    "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT",
    "CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING",
    "CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD",
    "CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED"};
constexpr const char* kBackwardFilterAlgorithms[] = {
    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0",
    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1",
    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT",
    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3",
    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD",
    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED",
    "CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING"};
static_assert(std::size(kForwardAlgorithms) == CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
static_assert(std::size(kBackwardDataAlgorithms) == CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
static_assert(std::size(kBackwardFilterAlgorithms) == CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);

absl::Span<const char* const> AlgorithmEnumerators(ConvolutionKind kind) {
  switch (kind) {
    case ConvolutionKind::kForward:
      return kForwardAlgorithms;
    case ConvolutionKind::kBackwardData:
      return kBackwardDataAlgorithms;
    case ConvolutionKind::kBackwardFilter:
      return kBackwardFilterAlgorithms;
  }
  return {};
}

// "implicit_gemm", "algo_0", "fft_tiling": the enumerator after
// "..._ALGO_", lower case, with "algo_" kept before a bare number.
std::string AlgorithmName(ConvolutionKind kind, int64_t id) {
  std::string name = AlgorithmEnumerators(kind)[id];
  name = name.substr(name.find("_ALGO_") + 6);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return std::isdigit(static_cast<unsigned char>(name[0])) ? "algo_" + name : name;
}

absl::Status CheckAlgorithmId(ConvolutionKind kind, int64_t id) {
  const int64_t count = static_cast<int64_t>(AlgorithmEnumerators(kind).size());
  if (id >= 0 && id < count) return absl::OkStatus();
  std::vector<std::string> offered;
  for (int64_t i = 0; i < count; ++i)
    offered.push_back(absl::StrCat(i, " ", AlgorithmName(kind, i)));
  return absl::NotFoundError(
      absl::StrCat("convolution algorithm ", id, " is not offered by cudnn for ",
                   ConvolutionKindName(kind), " (it offers ", absl::StrJoin(offered, ", "), ")"));
}

// Scratch regions in a workspace start on 256-byte boundaries (cudaMalloc's).
uint64_t Aligned(uint64_t bytes) { return (bytes + 255) / 256 * 256; }

// One operand in the caller's layout and in the layout cuDNN computes in:
// when they differ, it lives in scratch at `offset` of the workspace and is
// converted by cudnnTransformTensor (a filter as a K x C x R x S tensor).
struct Staging {
  bool staged = false;
  cudnn::TensorDesc user, compute;
  uint64_t offset = 0;
};

// cuDNN's view of a ConvolutionShape. cuDNN's legacy convolutions want x,
// w and y in one format, so a shape mixing layouts runs in NCHW/OIHW.
struct ConvPlan {
  DataType type = DataType::kFloat;
  cudnn::TensorDesc x, y;  // In the compute layout.
  cudnn::FilterDesc w;
  cudnn::ConvolutionDesc conv;
  Staging x_stage, w_stage, y_stage;
  uint64_t staging_bytes = 0;  // Aligned; the algorithm's workspace follows.
};

absl::Status Stage(Staging& stage, uint64_t& bytes, uint64_t size,
                   absl::StatusOr<cudnn::TensorDesc> user,
                   absl::StatusOr<cudnn::TensorDesc> compute) {
  RILL_ASSIGN_OR_RETURN(stage.user, std::move(user));
  RILL_ASSIGN_OR_RETURN(stage.compute, std::move(compute));
  stage.staged = true;
  stage.offset = bytes;
  bytes += Aligned(size);
  return absl::OkStatus();
}

absl::StatusOr<ConvPlan> MakePlan(const ConvolutionShape& s) {
  const bool uniform = s.output.layout == s.input.layout &&
                       s.filter.layout == cudnn::MatchingFilterLayout(s.input.layout);
  const DataLayout layout = uniform ? s.input.layout : DataLayout::kNCHW;
  const FilterLayout filter_layout = cudnn::MatchingFilterLayout(layout);
  ConvPlan p;
  p.type = s.input.type;
  RILL_ASSIGN_OR_RETURN(p.x, cudnn::MakeTensor(s.input, layout));
  RILL_ASSIGN_OR_RETURN(p.y, cudnn::MakeTensor(s.output, layout));
  RILL_ASSIGN_OR_RETURN(p.w, cudnn::MakeFilter(s.filter, filter_layout));
  RILL_ASSIGN_OR_RETURN(p.conv, cudnn::MakeConvolution(s.conv, p.type));
  if (s.input.layout != layout) {
    RILL_RETURN_IF_ERROR(Stage(p.x_stage, p.staging_bytes, s.input.Bytes(),
                               cudnn::MakeTensor(s.input), cudnn::MakeTensor(s.input, layout)));
  }
  if (s.filter.layout != filter_layout) {
    RILL_RETURN_IF_ERROR(Stage(p.w_stage, p.staging_bytes, s.filter.Bytes(),
                               cudnn::MakeFilterAsTensor(s.filter, s.filter.layout),
                               cudnn::MakeFilterAsTensor(s.filter, filter_layout)));
  }
  if (s.output.layout != layout) {
    RILL_RETURN_IF_ERROR(Stage(p.y_stage, p.staging_bytes, s.output.Bytes(),
                               cudnn::MakeTensor(s.output), cudnn::MakeTensor(s.output, layout)));
  }
  return p;
}

// cuDNN's workspace bytes for algorithm `id`, or cuDNN's status when the
// algorithm cannot run the plan.
absl::StatusOr<uint64_t> AlgorithmWorkspace(cudnnHandle_t h, ConvolutionKind kind,
                                            const ConvPlan& p, int64_t id) {
  size_t bytes = 0;
  switch (kind) {
    case ConvolutionKind::kForward:
      RILL_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardWorkspaceSize(
          h, p.x.get(), p.w.get(), p.conv.get(), p.y.get(),
          static_cast<cudnnConvolutionFwdAlgo_t>(id), &bytes));
      break;
    case ConvolutionKind::kBackwardData:
      RILL_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataWorkspaceSize(
          h, p.w.get(), p.y.get(), p.conv.get(), p.x.get(),
          static_cast<cudnnConvolutionBwdDataAlgo_t>(id), &bytes));
      break;
    case ConvolutionKind::kBackwardFilter:
      RILL_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterWorkspaceSize(
          h, p.x.get(), p.y.get(), p.conv.get(), p.w.get(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(id), &bytes));
      break;
  }
  return static_cast<uint64_t>(bytes);
}

// One entry of cuDNN's heuristics or timing results.
struct AlgorithmResult {
  int64_t id;
  cudnnStatus_t status;
  bool deterministic;
};

template <typename Perf>
std::vector<AlgorithmResult> Results(const std::vector<Perf>& perf, int returned) {
  std::vector<AlgorithmResult> results;
  for (int i = 0; i < returned; ++i) {
    results.push_back({static_cast<int64_t>(perf[i].algo), perf[i].status,
                       perf[i].determinism == CUDNN_DETERMINISTIC});
  }
  return results;
}

// How many results cuDNN's ranking functions may return for `kind` (at
// least one per algorithm; some versions list an algorithm once per math
// type).
absl::StatusOr<int> MaxResults(cudnnHandle_t h, ConvolutionKind kind) {
  int count = 0;
  switch (kind) {
    case ConvolutionKind::kForward:
      RILL_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count));
      break;
    case ConvolutionKind::kBackwardData:
      RILL_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count));
      break;
    case ConvolutionKind::kBackwardFilter:
      RILL_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count));
      break;
  }
  return std::max(count, static_cast<int>(AlgorithmEnumerators(kind).size()));
}

// cuDNN's algorithms for the plan in its order of preference
// (cudnnGetConvolution*Algorithm_v7), or fastest first when `timed`
// (cudnnFindConvolution*Algorithm: runs each on buffers cuDNN allocates,
// and blocks).
absl::StatusOr<std::vector<AlgorithmResult>> RankAlgorithms(cudnnHandle_t h, ConvolutionKind kind,
                                                            const ConvPlan& p, bool timed) {
  int returned = 0;
  RILL_ASSIGN_OR_RETURN(const int count, MaxResults(h, kind));
  switch (kind) {
    case ConvolutionKind::kForward: {
      std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(count);
      if (timed) {
        RILL_CUDNN_RETURN_IF_ERROR(cudnnFindConvolutionForwardAlgorithm(
            h, p.x.get(), p.w.get(), p.conv.get(), p.y.get(), count, &returned, perf.data()));
      } else {
        RILL_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionForwardAlgorithm_v7(
            h, p.x.get(), p.w.get(), p.conv.get(), p.y.get(), count, &returned, perf.data()));
      }
      return Results(perf, returned);
    }
    case ConvolutionKind::kBackwardData: {
      std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(count);
      if (timed) {
        RILL_CUDNN_RETURN_IF_ERROR(cudnnFindConvolutionBackwardDataAlgorithm(
            h, p.w.get(), p.y.get(), p.conv.get(), p.x.get(), count, &returned, perf.data()));
      } else {
        RILL_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardDataAlgorithm_v7(
            h, p.w.get(), p.y.get(), p.conv.get(), p.x.get(), count, &returned, perf.data()));
      }
      return Results(perf, returned);
    }
    case ConvolutionKind::kBackwardFilter: {
      std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(count);
      if (timed) {
        RILL_CUDNN_RETURN_IF_ERROR(cudnnFindConvolutionBackwardFilterAlgorithm(
            h, p.x.get(), p.y.get(), p.conv.get(), p.w.get(), count, &returned, perf.data()));
      } else {
        RILL_CUDNN_RETURN_IF_ERROR(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            h, p.x.get(), p.y.get(), p.conv.get(), p.w.get(), count, &returned, perf.data()));
      }
      return Results(perf, returned);
    }
  }
  return absl::InternalError("unknown convolution kind");
}

// The first of `ranked` that cuDNN says runs the plan and whose workspace
// query agrees, as a ConvolutionAlgorithm.
absl::StatusOr<ConvolutionAlgorithm> FirstAvailable(cudnnHandle_t h, ConvolutionKind kind,
                                                    const ConvPlan& p,
                                                    const std::vector<AlgorithmResult>& ranked) {
  for (const AlgorithmResult& r : ranked) {
    if (r.status != CUDNN_STATUS_SUCCESS || !CheckAlgorithmId(kind, r.id).ok()) continue;
    absl::StatusOr<uint64_t> workspace = AlgorithmWorkspace(h, kind, p, r.id);
    if (!workspace.ok()) continue;
    ConvolutionAlgorithm a;
    a.id = r.id;
    a.name = AlgorithmName(kind, r.id);
    a.available = true;
    a.implementation = absl::StrCat(AlgorithmEnumerators(kind)[r.id],
                                    r.deterministic ? "" : " (non-deterministic)");
    a.workspace_bytes = p.staging_bytes + *workspace;
    return a;
  }
  return absl::UnimplementedError(absl::StrCat("cuDNN offers no ", ConvolutionKindName(kind),
                                               " convolution algorithm for this shape (",
                                               ranked.size(), " ranked, none runs it)"));
}

// Converts `stage`'s operand from `src` to `dst` (user <-> compute layout).
absl::Status Transform(Session& s, DataType type, const cudnn::TensorDesc& src_desc,
                       const void* src, const cudnn::TensorDesc& dst_desc, void* dst) {
  RILL_CUDNN_RETURN_IF_ERROR(cudnnTransformTensor(s.handle(), cudnn::One(type), src_desc.get(), src,
                                                  cudnn::Zero(type), dst_desc.get(), dst));
  return absl::OkStatus();
}

// Device addresses of x, w and y for one run: the caller's, or scratch
// copies in the compute layout.
struct Operands {
  void* x;
  void* w;
  void* y;
};

// Enqueues the convolution `id` of `kind` on the session's stream:
// converts the staged operands it reads into scratch, runs cuDNN, converts
// a staged result back. `workspace` holds the plan's staging_bytes and then
// `algorithm_bytes` for cuDNN.
absl::Status Enqueue(Session& s, ConvolutionKind kind, const ConvPlan& p, int64_t id, Operands user,
                     char* workspace, uint64_t algorithm_bytes) {
  Operands c = user;
  if (p.x_stage.staged) c.x = workspace + p.x_stage.offset;
  if (p.w_stage.staged) c.w = workspace + p.w_stage.offset;
  if (p.y_stage.staged) c.y = workspace + p.y_stage.offset;
  const bool reads_x = kind != ConvolutionKind::kBackwardData,
             reads_w = kind != ConvolutionKind::kBackwardFilter,
             reads_y = kind != ConvolutionKind::kForward;
  if (reads_x && p.x_stage.staged)
    RILL_RETURN_IF_ERROR(Transform(s, p.type, p.x_stage.user, user.x, p.x_stage.compute, c.x));
  if (reads_w && p.w_stage.staged)
    RILL_RETURN_IF_ERROR(Transform(s, p.type, p.w_stage.user, user.w, p.w_stage.compute, c.w));
  if (reads_y && p.y_stage.staged)
    RILL_RETURN_IF_ERROR(Transform(s, p.type, p.y_stage.user, user.y, p.y_stage.compute, c.y));
  void* scratch = algorithm_bytes > 0 ? workspace + p.staging_bytes : nullptr;
  const void* one = cudnn::One(p.type);
  const void* zero = cudnn::Zero(p.type);
  switch (kind) {
    case ConvolutionKind::kForward:
      RILL_CUDNN_RETURN_IF_ERROR(
          cudnnConvolutionForward(s.handle(), one, p.x.get(), c.x, p.w.get(), c.w, p.conv.get(),
                                  static_cast<cudnnConvolutionFwdAlgo_t>(id), scratch,
                                  algorithm_bytes, zero, p.y.get(), c.y));
      if (p.y_stage.staged)
        return Transform(s, p.type, p.y_stage.compute, c.y, p.y_stage.user, user.y);
      break;
    case ConvolutionKind::kBackwardData:
      RILL_CUDNN_RETURN_IF_ERROR(
          cudnnConvolutionBackwardData(s.handle(), one, p.w.get(), c.w, p.y.get(), c.y,
                                       p.conv.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(id),
                                       scratch, algorithm_bytes, zero, p.x.get(), c.x));
      if (p.x_stage.staged)
        return Transform(s, p.type, p.x_stage.compute, c.x, p.x_stage.user, user.x);
      break;
    case ConvolutionKind::kBackwardFilter:
      RILL_CUDNN_RETURN_IF_ERROR(cudnnConvolutionBackwardFilter(
          s.handle(), one, p.x.get(), c.x, p.y.get(), c.y, p.conv.get(),
          static_cast<cudnnConvolutionBwdFilterAlgo_t>(id), scratch, algorithm_bytes, zero,
          p.w.get(), c.w));
      if (p.w_stage.staged)
        return Transform(s, p.type, p.w_stage.compute, c.w, p.w_stage.user, user.w);
      break;
  }
  return absl::OkStatus();
}

std::string Describe(ConvolutionKind kind, const ConvolutionShape& shape) {
  return absl::StrCat("cudnn ", ConvolutionKindName(kind), " convolution ", shape.ToString());
}

}  // namespace

absl::StatusOr<std::vector<ConvolutionAlgorithm>> CuDnn::ConvolutionAlgorithms(
    ConvolutionKind kind, const ConvolutionShape& shape) {
  std::vector<ConvolutionAlgorithm> algorithms;
  absl::Status status = context_->Run(nullptr, [&](Session& s) -> absl::Status {
    RILL_ASSIGN_OR_RETURN(ConvPlan p, MakePlan(shape));
    RILL_ASSIGN_OR_RETURN(std::vector<AlgorithmResult> ranked,
                          RankAlgorithms(s.handle(), kind, p, /*timed=*/false));
    for (int64_t id = 0; id < static_cast<int64_t>(AlgorithmEnumerators(kind).size()); ++id) {
      ConvolutionAlgorithm a;
      a.id = id;
      a.name = AlgorithmName(kind, id);
      a.implementation = AlgorithmEnumerators(kind)[id];
      // The heuristics' verdict: runnable when any entry for the id is (an
      // id may be listed once per math type); unlisted ids rely on the
      // workspace query alone.
      const AlgorithmResult* listed = nullptr;
      const AlgorithmResult* runnable = nullptr;
      for (const AlgorithmResult& r : ranked) {
        if (r.id != id) continue;
        if (listed == nullptr) listed = &r;
        if (runnable == nullptr && r.status == CUDNN_STATUS_SUCCESS) runnable = &r;
      }
      absl::StatusOr<uint64_t> workspace = AlgorithmWorkspace(s.handle(), kind, p, id);
      if (listed != nullptr && runnable == nullptr) {
        a.reason = absl::StrCat("not available: cuDNN's heuristics return ",
                                CudnnStatusName(listed->status), " (",
                                static_cast<int>(listed->status), ")");
      } else if (!workspace.ok()) {
        a.reason = absl::StrCat("not available: ", workspace.status().message());
      } else {
        a.available = true;
        a.workspace_bytes = p.staging_bytes + *workspace;
        if (runnable != nullptr && !runnable->deterministic) {
          a.implementation += " (non-deterministic)";
          a.deterministic = false;  // AlgorithmSelector's deterministic mode skips it.
        }
      }
      algorithms.push_back(std::move(a));
    }
    return absl::OkStatus();
  });
  if (!status.ok())
    return absl::Status(status.code(), absl::StrCat(Describe(kind, shape), ": ", status.message()));
  return algorithms;
}

absl::StatusOr<int64_t> CuDnn::DefaultAlgorithm(ConvolutionKind kind,
                                                const ConvolutionShape& shape) {
  const AlgorithmKey key{static_cast<int>(kind), shape};
  {
    MutexLock lock(&algorithms_mu_);
    auto it = default_.find(key);
    if (it != default_.end()) return it->second;
  }
  ConvolutionAlgorithm first;
  absl::Status status = context_->Run(nullptr, [&](Session& s) -> absl::Status {
    RILL_ASSIGN_OR_RETURN(ConvPlan p, MakePlan(shape));
    RILL_ASSIGN_OR_RETURN(std::vector<AlgorithmResult> ranked,
                          RankAlgorithms(s.handle(), kind, p, /*timed=*/false));
    RILL_ASSIGN_OR_RETURN(first, FirstAvailable(s.handle(), kind, p, ranked));
    return absl::OkStatus();
  });
  if (!status.ok())
    return absl::Status(status.code(), absl::StrCat(Describe(kind, shape), ": ", status.message()));
  MutexLock lock(&algorithms_mu_);
  return default_.try_emplace(key, first.id).first->second;
}

absl::StatusOr<ConvolutionAlgorithm> CuDnn::FindAlgorithm(ConvolutionKind kind,
                                                          const ConvolutionShape& shape) {
  ConvolutionAlgorithm best;
  absl::Status status = context_->Run(nullptr, [&](Session& s) -> absl::Status {
    RILL_ASSIGN_OR_RETURN(ConvPlan p, MakePlan(shape));
    RILL_ASSIGN_OR_RETURN(std::vector<AlgorithmResult> ranked,
                          RankAlgorithms(s.handle(), kind, p, /*timed=*/true));
    RILL_ASSIGN_OR_RETURN(best, FirstAvailable(s.handle(), kind, p, ranked));
    return absl::OkStatus();
  });
  if (!status.ok())
    return absl::Status(status.code(), absl::StrCat(Describe(kind, shape), ": ", status.message()));
  return best;
}

absl::StatusOr<ConvolutionAlgorithm> CuDnn::BestConvolutionAlgorithm(
    ConvolutionKind kind, const ConvolutionShape& shape) {
  const AlgorithmKey key{static_cast<int>(kind), shape};
  {
    MutexLock lock(&algorithms_mu_);
    auto it = best_.find(key);
    if (it != best_.end()) return it->second;
  }
  RILL_ASSIGN_OR_RETURN(ConvolutionAlgorithm best, FindAlgorithm(kind, shape));
  MutexLock lock(&algorithms_mu_);
  return best_.try_emplace(key, best).first->second;
}

absl::Status CuDnn::Convolve(Stream* stream, ConvolutionKind kind, const ConvolutionArgs& a) {
  int64_t id = a.algorithm;
  if (id == kBestAlgorithm) {
    RILL_ASSIGN_OR_RETURN(ConvolutionAlgorithm best, BestConvolutionAlgorithm(kind, a.shape));
    id = best.id;
  } else if (id == kDefaultAlgorithm) {
    RILL_ASSIGN_OR_RETURN(id, DefaultAlgorithm(kind, a.shape));
  }
  RILL_RETURN_IF_ERROR(CheckAlgorithmId(kind, id));
  if (StreamListenersActive()) NoteAlgorithm(AlgorithmName(kind, id));
  return RunOn(
      stream, [&] { return Describe(kind, a.shape); },
      [&](Session& s) -> absl::Status {
        RILL_ASSIGN_OR_RETURN(ConvPlan p, MakePlan(a.shape));
        absl::StatusOr<uint64_t> algorithm_bytes = AlgorithmWorkspace(s.handle(), kind, p, id);
        if (!algorithm_bytes.ok()) {
          return absl::Status(
              algorithm_bytes.status().code(),
              absl::StrCat("algorithm ", id, " (", AlgorithmName(kind, id),
                           ") is not available: ", algorithm_bytes.status().message()));
        }
        const uint64_t need = p.staging_bytes + *algorithm_bytes;
        char* workspace = nullptr;
        if (!a.workspace.is_null()) {
          if (a.workspace.size() < need) {
            return absl::InvalidArgumentError(
                absl::StrCat("workspace ", a.workspace.ToString(), " is too small: algorithm ", id,
                             " (", AlgorithmName(kind, id), ") needs ", need, " bytes"));
          }
          workspace = static_cast<char*>(CudaAddress(a.workspace));
        } else if (need > 0) {
          RILL_ASSIGN_OR_RETURN(void* cached, s.Workspace(need));
          workspace = static_cast<char*>(cached);
        }
        return Enqueue(s, kind, p, id,
                       {CudaAddress(a.input), CudaAddress(a.filter), CudaAddress(a.output)},
                       workspace, *algorithm_bytes);
      });
}

}  // namespace rill
