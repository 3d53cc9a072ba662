// OneDnn's convolutions: algorithms, primitive creation, workspace, timing.

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "executor/stream_executor.h"
#include "platform/host/host_executor.h"
#include "plugins/dnn/onednn/onednn_common.h"
#include "plugins/dnn/onednn/onednn_dnn.h"

namespace rill {

using dnnl::memory;
using onednn::CachedPrimitive;

namespace {

constexpr int64_t kOpConvolution = 1;
constexpr int64_t kAlgorithmIds[] = {OneDnn::kAuto, OneDnn::kDirect, OneDnn::kWinograd};

const char* AlgorithmName(int64_t id) {
  switch (id) {
    case OneDnn::kAuto: return "auto";
    case OneDnn::kDirect: return "direct";
    case OneDnn::kWinograd: return "winograd";
  }
  return "?";
}

dnnl::algorithm ToDnnl(int64_t id) {
  if (id == OneDnn::kDirect) return dnnl::algorithm::convolution_direct;
  if (id == OneDnn::kWinograd) return dnnl::algorithm::convolution_winograd;
  return dnnl::algorithm::convolution_auto;
}

struct ConvMds {
  memory::desc src, wei, dst;
  memory::dims strides, dilates, pad;
};

ConvMds Mds(const ConvolutionShape& s) {
  return {onednn::TensorMd(s.input),
          onednn::FilterMd(s.filter, s.conv.group_count),
          onednn::TensorMd(s.output),
          {s.conv.stride_h, s.conv.stride_w},
          {s.conv.dilation_h - 1, s.conv.dilation_w - 1},  // oneDNN counts dilation from 0.
          {s.conv.pad_h, s.conv.pad_w}};
}

dnnl::convolution_forward::primitive_desc ForwardPd(const ConvMds& m, int64_t algorithm, dnnl::prop_kind prop,
                                                     const dnnl::primitive_attr& attr) {
  dnnl::convolution_forward::desc d(prop, ToDnnl(algorithm), m.src, m.wei, m.dst, m.strides, m.dilates, m.pad,
                                    m.pad);
  return dnnl::convolution_forward::primitive_desc(d, attr, **onednn::Engine());
}

template <typename Pd>
CachedPrimitive Cached(const Pd& pd, dnnl::primitive primitive) {
  CachedPrimitive c;
  c.primitive = std::move(primitive);
  c.scratchpad_md = pd.scratchpad_desc();
  c.scratchpad_bytes = c.scratchpad_md.get_size();
  c.implementation = pd.impl_info_str();
  return c;
}

// Throws dnnl::error when oneDNN has no implementation.
CachedPrimitive MakeConvolutionPrimitive(ConvolutionKind kind, const ConvolutionShape& shape, int64_t algorithm) {
  const ConvMds m = Mds(shape);
  const dnnl::primitive_attr attr = onednn::UserScratchpad();
  const dnnl::engine& engine = **onednn::Engine();
  switch (kind) {
    case ConvolutionKind::kForward: {
      auto pd = ForwardPd(m, algorithm, dnnl::prop_kind::forward_inference, attr);
      return Cached(pd, dnnl::convolution_forward(pd));
    }
    case ConvolutionKind::kBackwardData: {
      auto hint = ForwardPd(m, algorithm, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
      dnnl::convolution_backward_data::desc d(ToDnnl(algorithm), m.src, m.wei, m.dst, m.strides, m.dilates, m.pad,
                                              m.pad);
      dnnl::convolution_backward_data::primitive_desc pd(d, attr, engine, hint);
      return Cached(pd, dnnl::convolution_backward_data(pd));
    }
    case ConvolutionKind::kBackwardFilter: {
      auto hint = ForwardPd(m, algorithm, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
      dnnl::convolution_backward_weights::desc d(ToDnnl(algorithm), m.src, m.wei, m.dst, m.strides, m.dilates,
                                                 m.pad, m.pad);
      dnnl::convolution_backward_weights::primitive_desc pd(d, attr, engine, hint);
      return Cached(pd, dnnl::convolution_backward_weights(pd));
    }
  }
  throw dnnl::error(dnnl_invalid_arguments, "unknown convolution kind");
}

CachedPrimitive MakeConvolution(ConvolutionKind kind, const ConvolutionShape& shape, int64_t algorithm) {
  CachedPrimitive c = MakeConvolutionPrimitive(kind, shape, algorithm);
  const ConvMds m = Mds(shape);
  c.mds = {m.src, m.wei, m.dst};
  return c;
}

absl::StatusOr<std::shared_ptr<const CachedPrimitive>> ConvolutionPrimitive(onednn::PrimitiveCache& cache,
                                                                            ConvolutionKind kind,
                                                                            const ConvolutionShape& shape,
                                                                            int64_t algorithm) {
  std::vector<int64_t> key = {kOpConvolution, static_cast<int64_t>(kind), algorithm};
  onednn::AppendKey(key, shape.input);
  onednn::AppendKey(key, shape.filter);
  onednn::AppendKey(key, shape.output);
  const ConvolutionDescriptor& c = shape.conv;
  key.insert(key.end(), {c.pad_h, c.pad_w, c.stride_h, c.stride_w, c.dilation_h, c.dilation_w, c.group_count});
  absl::StatusOr<std::shared_ptr<const CachedPrimitive>> made = cache.GetOrCreate(
      key, "onednn convolution", [&] { return MakeConvolution(kind, shape, algorithm); });
  if (!made.ok()) {
    return absl::Status(made.status().code(),
                        absl::StrCat("onednn ", ConvolutionKindName(kind), " convolution algorithm ", algorithm,
                                     " (", AlgorithmName(algorithm), ") is not available for ", shape.ToString(),
                                     ": ", made.status().message()));
  }
  return made;
}

absl::Status CheckAlgorithmId(int64_t id) {
  if (id >= OneDnn::kAuto && id <= OneDnn::kWinograd) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("convolution algorithm ", id,
                                          " is not offered by onednn (it offers 0 auto, 1 direct, 2 winograd)"));
}

// Runs one convolution with the primitive's argument roles for `kind`.
void RunConvolution(const CachedPrimitive& p, ConvolutionKind kind, void* input, void* filter, void* output,
                    void* workspace) {
  memory src = onednn::Wrap(p.mds[0], input), wei = onednn::Wrap(p.mds[1], filter),
         dst = onednn::Wrap(p.mds[2], output);
  switch (kind) {
    case ConvolutionKind::kForward:
      onednn::Execute(p.primitive, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}},
                      p.scratchpad_md, workspace);
      break;
    case ConvolutionKind::kBackwardData:
      onednn::Execute(p.primitive, {{DNNL_ARG_DIFF_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DIFF_DST, dst}},
                      p.scratchpad_md, workspace);
      break;
    case ConvolutionKind::kBackwardFilter:
      onednn::Execute(p.primitive, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_WEIGHTS, wei}, {DNNL_ARG_DIFF_DST, dst}},
                      p.scratchpad_md, workspace);
      break;
  }
}

// A 64-byte-aligned host buffer for timing runs.
struct AlignedBuffer {
  explicit AlignedBuffer(uint64_t bytes)
      : data(static_cast<float*>(std::aligned_alloc(64, std::max<uint64_t>(64, (bytes + 63) / 64 * 64)))) {
    if (data != nullptr) std::fill(data, data + bytes / sizeof(float), 0.01f);
  }
  ~AlignedBuffer() { std::free(data); }
  float* data;
};

}  // namespace

absl::StatusOr<std::vector<ConvolutionAlgorithm>> OneDnn::ConvolutionAlgorithms(ConvolutionKind kind,
                                                                                const ConvolutionShape& shape) {
  RILL_RETURN_IF_ERROR(onednn::RequireFloat("convolution", shape.input.type));
  std::vector<ConvolutionAlgorithm> algorithms;
  for (int64_t id : kAlgorithmIds) {
    ConvolutionAlgorithm a;
    a.id = id;
    a.name = AlgorithmName(id);
    absl::StatusOr<std::shared_ptr<const CachedPrimitive>> p = ConvolutionPrimitive(*cache_, kind, shape, id);
    if (p.ok()) {
      a.available = true;
      a.implementation = (*p)->implementation;
      a.workspace_bytes = (*p)->scratchpad_bytes;
    } else {
      a.reason = std::string(p.status().message());
    }
    algorithms.push_back(std::move(a));
  }
  return algorithms;
}

absl::StatusOr<ConvolutionAlgorithm> OneDnn::BestConvolutionAlgorithm(ConvolutionKind kind,
                                                                      const ConvolutionShape& shape) {
  {
    MutexLock lock(&best_mu_);
    auto it = best_.find({static_cast<int>(kind), shape});
    if (it != best_.end()) return it->second;
  }
  RILL_ASSIGN_OR_RETURN(ConvolutionAlgorithm best, TimeAlgorithms(kind, shape));
  MutexLock lock(&best_mu_);
  return best_.try_emplace({static_cast<int>(kind), shape}, best).first->second;
}

absl::StatusOr<ConvolutionAlgorithm> OneDnn::TimeAlgorithms(ConvolutionKind kind, const ConvolutionShape& shape) {
  RILL_ASSIGN_OR_RETURN(std::vector<ConvolutionAlgorithm> algorithms, ConvolutionAlgorithms(kind, shape));
  AlignedBuffer input(shape.input.Bytes()), filter(shape.filter.Bytes()), output(shape.output.Bytes());
  if (input.data == nullptr || filter.data == nullptr || output.data == nullptr) {
    return absl::ResourceExhaustedError("onednn: no host memory for timing convolution algorithms");
  }
  const ConvolutionAlgorithm* best = nullptr;
  double best_seconds = std::numeric_limits<double>::infinity();
  for (const ConvolutionAlgorithm& a : algorithms) {
    if (!a.available) continue;
    RILL_ASSIGN_OR_RETURN(std::shared_ptr<const CachedPrimitive> p, ConvolutionPrimitive(*cache_, kind, shape, a.id));
    AlignedBuffer workspace(p->scratchpad_bytes);
    double seconds = std::numeric_limits<double>::infinity();
    // A warm-up run, then the best of two.
    for (int run = 0; run < 3; ++run) {
      const auto start = std::chrono::steady_clock::now();
      RILL_RETURN_IF_ERROR(onednn::Guard("onednn: timing a convolution", [&] {
        RunConvolution(*p, kind, input.data, filter.data, output.data, workspace.data);
      }));
      if (run > 0) seconds = std::min(seconds, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    if (seconds < best_seconds) {
      best_seconds = seconds;
      best = &a;
    }
  }
  if (best == nullptr) {
    return absl::UnimplementedError(absl::StrCat("onednn: no convolution algorithm is available for ",
                                                 ConvolutionKindName(kind), " ", shape.ToString()));
  }
  return *best;
}

absl::Status OneDnn::Convolve(Stream* stream, ConvolutionKind kind, const ConvolutionArgs& a) {
  RILL_RETURN_IF_ERROR(onednn::RequireFloat("convolution", a.shape.input.type));
  int64_t algorithm = a.algorithm;
  if (algorithm == kBestAlgorithm) {
    RILL_ASSIGN_OR_RETURN(ConvolutionAlgorithm best, BestConvolutionAlgorithm(kind, a.shape));
    algorithm = best.id;
  } else if (algorithm == kDefaultAlgorithm) {
    algorithm = kAuto;
  }
  RILL_RETURN_IF_ERROR(CheckAlgorithmId(algorithm));
  RILL_ASSIGN_OR_RETURN(std::shared_ptr<const CachedPrimitive> p,
                        ConvolutionPrimitive(*cache_, kind, a.shape, algorithm));
  const uint64_t need = p->scratchpad_bytes;
  ScopedDeviceMemory<uint8_t> owned;
  void* workspace = nullptr;
  if (!a.workspace.is_null()) {
    if (a.workspace.size() < need) {
      return absl::InvalidArgumentError(absl::StrCat(
          "workspace ", a.workspace.ToString(), " is too small: onednn's ", ConvolutionKindName(kind),
          " convolution algorithm ", algorithm, " (", AlgorithmName(algorithm), ") needs ", need, " bytes for ",
          a.shape.ToString()));
    }
    workspace = HostPointer(a.workspace);
  } else if (need > 0) {
    RILL_ASSIGN_OR_RETURN(owned, executor_->AllocateOwnedArray<uint8_t>(need));
    workspace = HostPointer(*owned);
  }
  return onednn::EnqueueDnn(
      executor_, stream, "onednn convolution",
      [p = std::move(p), kind, input = HostPointer(a.input), filter = HostPointer(a.filter),
       output = HostPointer(a.output), workspace, owned = std::move(owned)] {
        RunConvolution(*p, kind, input, filter, output, workspace);
      });
}

}  // namespace rill
