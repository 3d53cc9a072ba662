// OneDnn's convolutions: algorithms, primitive creation, workspace, timing.

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/host/host_thread_budget.h"
#include "rill/plugins/dnn/onednn/onednn_common.h"
#include "rill/plugins/dnn/onednn/onednn_dnn.h"

namespace rill {

using dnnl::memory;
using onednn::CachedPrimitive;

namespace {

constexpr int64_t kOpConvolution = 1;
constexpr int64_t kAlgorithmIds[] = {OneDnn::kAuto, OneDnn::kDirect, OneDnn::kWinograd};

const char* AlgorithmName(int64_t id) {
  switch (id) {
    case OneDnn::kAuto:
      return "auto";
    case OneDnn::kDirect:
      return "direct";
    case OneDnn::kWinograd:
      return "winograd";
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

// What a forward convolution fuses: a bias, a sum with a side input (the
// destination's prior content, oneDNN's sum post-op) and an activation
// (an eltwise post-op after the sum).
//
// `constant_filter` (ConvolutionArgs::filter_id set): the filter is converted
// once, so a 1x1 convolution gets oneDNN's own layouts too (brgconv 1x1 on
// blocked layouts ran MobileNetV2 at batch 8 in 136-162 ms against 200-237
// ms on plain layouts through gemm, docs/onnx-bench.md).
struct Fusion {
  bool bias = false, sum = false;
  std::optional<ActivationDescriptor> activation;
  bool constant_filter = false;
  bool any() const { return bias || sum || activation.has_value() || constant_filter; }
};

Fusion FusionOf(const ConvolutionArgs& a) {
  return {!a.bias.is_null(), !a.side_input.is_null(), a.activation, a.filter_id != 0};
}

// The user-scratchpad attributes with the fusion's post-ops.
dnnl::primitive_attr FusedAttr(const Fusion& f) {
  dnnl::primitive_attr attr = onednn::UserScratchpad();
  dnnl::post_ops ops;
  if (f.sum) ops.append_sum(1.f);
  if (f.activation.has_value()) {
    const onednn::Eltwise e = onednn::ToEltwise(*f.activation);
    ops.append_eltwise(1.f, e.algorithm, e.alpha, e.beta);
  }
  attr.set_post_ops(ops);
  return attr;
}

// The caller's layouts (explicit strides).
ConvMds Mds(const ConvolutionShape& s) {
  return {onednn::TensorMd(s.input),
          onednn::FilterMd(s.filter, s.conv.group_count),
          onednn::TensorMd(s.output),
          {s.conv.stride_h, s.conv.stride_w},
          {s.conv.dilation_h - 1, s.conv.dilation_w - 1},  // oneDNN counts dilation from 0.
          {s.conv.pad_h, s.conv.pad_w}};
}

// The same shapes with format_tag::any: oneDNN picks the layouts its fastest
// implementation wants (on AVX2, the JIT direct convolution's nChw8c /
// OIhw8i8o blocked ones; gemm keeps plain ones).
ConvMds AnyMds(const ConvMds& m) {
  auto any = [](const memory::desc& md) {
    return memory::desc(md.dims(), memory::data_type::f32, memory::format_tag::any);
  };
  return {any(m.src), any(m.wei), any(m.dst), m.strides, m.dilates, m.pad};
}

dnnl::convolution_forward::primitive_desc ForwardPd(const ConvMds& m, int64_t algorithm,
                                                    dnnl::prop_kind prop,
                                                    const dnnl::primitive_attr& attr,
                                                    bool bias = false) {
  if (bias) {
    const memory::desc bias_md({m.dst.dims()[1]}, memory::data_type::f32, memory::format_tag::x);
    dnnl::convolution_forward::desc d(prop, ToDnnl(algorithm), m.src, m.wei, bias_md, m.dst,
                                      m.strides, m.dilates, m.pad, m.pad);
    return dnnl::convolution_forward::primitive_desc(d, attr, **onednn::Engine());
  }
  dnnl::convolution_forward::desc d(prop, ToDnnl(algorithm), m.src, m.wei, m.dst, m.strides,
                                    m.dilates, m.pad, m.pad);
  return dnnl::convolution_forward::primitive_desc(d, attr, **onednn::Engine());
}

constexpr uint64_t RoundUp64(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

// The convolution primitive of `pd` reading and writing the layouts
// `chosen` (input, filter, output roles) while the caller's are `user`:
// a reorder for each tensor whose layouts differ, inputs before the
// convolution and outputs after, with the staged copies in the workspace.
template <typename Pd>
CachedPrimitive Staged(const Pd& pd, dnnl::primitive primitive,
                       const std::vector<memory::desc>& user,
                       const std::vector<memory::desc>& chosen,
                       const std::vector<bool>& is_output) {
  CachedPrimitive c;
  c.primitive = std::move(primitive);
  c.scratchpad_md = pd.scratchpad_desc();
  c.scratchpad_bytes = c.scratchpad_md.get_size();
  c.implementation = pd.impl_info_str();
  c.mds = user;
  const dnnl::engine& engine = **onednn::Engine();
  uint64_t scratch = c.scratchpad_bytes, staged = 0;
  for (size_t i = 0; i < user.size(); ++i) {
    CachedPrimitive::Staged st;
    st.md = chosen[i];
    if (chosen[i] != user[i]) {
      dnnl::reorder::primitive_desc r =
          is_output[i] ? dnnl::reorder::primitive_desc(engine, chosen[i], engine, user[i],
                                                       onednn::UserScratchpad())
                       : dnnl::reorder::primitive_desc(engine, user[i], engine, chosen[i],
                                                       onednn::UserScratchpad());
      st.reorder = dnnl::reorder(r);
      st.reorder_scratchpad_md = r.scratchpad_desc();
      scratch = std::max<uint64_t>(scratch, st.reorder_scratchpad_md.get_size());
      st.offset = staged;
      staged += RoundUp64(chosen[i].get_size());
    }
    c.staged.push_back(std::move(st));
  }
  if (c.staged.size() == 3 && c.staged[1].reorder) {
    c.filters = std::make_shared<onednn::ConstFilters>();
  }
  scratch = RoundUp64(scratch);
  for (CachedPrimitive::Staged& st : c.staged) st.offset += scratch;
  c.workspace_bytes = scratch + staged;
  return c;
}

// The convolution of `kind` with the layouts of `io` (the caller's, or
// format_tag::any), staged against the caller's `m`. Throws dnnl::error when
// oneDNN has no implementation.
CachedPrimitive MakeConvolutionWith(ConvolutionKind kind, const ConvMds& m, const ConvMds& io,
                                    int64_t algorithm, const Fusion& fusion) {
  const std::vector<memory::desc> user = {m.src, m.wei, m.dst};
  const dnnl::primitive_attr attr = onednn::UserScratchpad();
  const dnnl::engine& engine = **onednn::Engine();
  switch (kind) {
    case ConvolutionKind::kForward: {
      auto pd = ForwardPd(io, algorithm, dnnl::prop_kind::forward_inference, FusedAttr(fusion),
                          fusion.bias);
      CachedPrimitive c =
          Staged(pd, dnnl::convolution_forward(pd), user,
                 {pd.src_desc(), pd.weights_desc(), pd.dst_desc()}, {false, false, true});
      if (fusion.sum && c.staged[2].reorder) {
        // The side input goes into the staged output before the primitive.
        dnnl::reorder::primitive_desc r(engine, m.dst, engine, pd.dst_desc(),
                                        onednn::UserScratchpad());
        c.side_input.reorder = dnnl::reorder(r);
        c.side_input.reorder_scratchpad_md = r.scratchpad_desc();
        // Its scratchpad is the workspace's start, before the staged copies.
        uint64_t region = c.workspace_bytes;
        for (const CachedPrimitive::Staged& st : c.staged)
          if (st.reorder) region = std::min(region, st.offset);
        const uint64_t need = RoundUp64(r.scratchpad_desc().get_size());
        if (need > region) {
          for (CachedPrimitive::Staged& st : c.staged) st.offset += need - region;
          c.workspace_bytes += need - region;
        }
      }
      return c;
    }
    case ConvolutionKind::kBackwardData: {
      auto hint =
          ForwardPd(io, algorithm, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
      dnnl::convolution_backward_data::desc d(ToDnnl(algorithm), io.src, io.wei, io.dst, m.strides,
                                              m.dilates, m.pad, m.pad);
      dnnl::convolution_backward_data::primitive_desc pd(d, attr, engine, hint);
      return Staged(pd, dnnl::convolution_backward_data(pd), user,
                    {pd.diff_src_desc(), pd.weights_desc(), pd.diff_dst_desc()},
                    {true, false, false});
    }
    case ConvolutionKind::kBackwardFilter: {
      auto hint =
          ForwardPd(io, algorithm, dnnl::prop_kind::forward_training, dnnl::primitive_attr());
      dnnl::convolution_backward_weights::desc d(ToDnnl(algorithm), io.src, io.wei, io.dst,
                                                 m.strides, m.dilates, m.pad, m.pad);
      dnnl::convolution_backward_weights::primitive_desc pd(d, attr, engine, hint);
      return Staged(pd, dnnl::convolution_backward_weights(pd), user,
                    {pd.src_desc(), pd.diff_weights_desc(), pd.diff_dst_desc()},
                    {false, true, false});
    }
  }
  throw dnnl::error(dnnl_invalid_arguments, "unknown convolution kind");
}

// Whether a staged layout pads a dimension up to its block (channels 1 or
// 3 of a first layer in nChw8c): the blocked kernel then computes on zeros,
// and with the reorders it lost to gemm on the caller's layouts (measured,
// docs/host_cnn_speed.md).
bool PadsChannels(const CachedPrimitive& c) {
  for (const CachedPrimitive::Staged& st : c.staged) {
    if (!st.reorder) continue;
    for (int i = 0; i < st.md.data.ndims; ++i) {
      if (st.md.data.padded_dims[i] != st.md.data.dims[i]) return true;
    }
  }
  return false;
}

// The layouts oneDNN prefers (format_tag::any), with reorders around the
// call, unless those pad channels or the filter is 1x1 and not constant; then the caller's
// layouts when oneDNN runs them. A 1x1 convolution on plain layouts is one
// gemm without im2col: it ran 2-3x faster than jit_1x1 with its reorders
// (bench/dnn_bench conv1x1, 256 -> 64 channels at 56x56). Throws dnnl::error
// when oneDNN has no implementation.
CachedPrimitive MakeConvolution(ConvolutionKind kind, const ConvolutionShape& shape,
                                int64_t algorithm, const Fusion& fusion) {
  const ConvMds m = Mds(shape);
  if (fusion.constant_filter && shape.input.layout == DataLayout::kNHWC &&
      shape.output.layout == DataLayout::kNHWC) {
    // NHWC activations as they are (brgconv reads them directly), the
    // filter in oneDNN's layout (converted once): no per-call reorder.
    ConvMds io = m;
    io.wei = AnyMds(m).wei;
    try {
      CachedPrimitive c = MakeConvolutionWith(kind, m, io, algorithm, fusion);
      if (c.implementation.rfind("ref", 0) != 0) return c;
    } catch (const dnnl::error&) {
      // No implementation on NHWC: let oneDNN choose.
    }
  }
  if (shape.filter.height == 1 && shape.filter.width == 1 && !fusion.constant_filter) {
    try {
      CachedPrimitive plain = MakeConvolutionWith(kind, m, m, algorithm, fusion);
      // oneDNN's reference kernels are its last resort (NHWC 1x1 forward
      // got "ref:any", 5000x slower than gemm): let it choose layouts then.
      if (plain.implementation.rfind("ref", 0) != 0) return plain;
    } catch (const dnnl::error&) {
      // No implementation on the caller's layouts: let oneDNN choose.
    }
  }
  CachedPrimitive c = MakeConvolutionWith(kind, m, AnyMds(m), algorithm, fusion);
  if (!PadsChannels(c)) return c;
  try {
    return MakeConvolutionWith(kind, m, m, algorithm, fusion);
  } catch (const dnnl::error&) {
    return c;  // No implementation on the caller's layouts: keep the padded one.
  }
}

// The primitive for `threads` OpenMP threads (created under that count;
// oneDNN fixes its team size then), cached by every shape parameter.
absl::StatusOr<std::shared_ptr<const CachedPrimitive>> ConvolutionPrimitive(
    onednn::PrimitiveCache& cache, ConvolutionKind kind, const ConvolutionShape& shape,
    int64_t algorithm, int threads, bool with_choice, const Fusion& fusion) {
  std::vector<int64_t> key = {kOpConvolution, static_cast<int64_t>(kind), algorithm, threads};
  if (fusion.any()) {
    const ActivationDescriptor act = fusion.activation.value_or(ActivationDescriptor{});
    key.insert(key.end(), {fusion.bias, fusion.sum, fusion.constant_filter,
                           fusion.activation.has_value(), static_cast<int64_t>(act.mode),
                           static_cast<int64_t>(std::bit_cast<uint64_t>(act.coefficient))});
  }
  onednn::AppendKey(key, shape.input);
  onednn::AppendKey(key, shape.filter);
  onednn::AppendKey(key, shape.output);
  const ConvolutionDescriptor& c = shape.conv;
  key.insert(key.end(),
             {c.pad_h, c.pad_w, c.stride_h, c.stride_w, c.dilation_h, c.dilation_w, c.group_count});
  absl::StatusOr<std::shared_ptr<const CachedPrimitive>> made =
      cache.GetOrCreate(key, "onednn convolution", [&] {
        onednn::ScopedThreads scope(threads);
        CachedPrimitive made = MakeConvolution(kind, shape, algorithm, fusion);
        if (with_choice) made.choice = std::make_shared<onednn::ThreadChoice>();
        return made;
      });
  if (!made.ok()) {
    return absl::Status(
        made.status().code(),
        absl::StrCat("onednn ", ConvolutionKindName(kind), " convolution algorithm ", algorithm,
                     " (", AlgorithmName(algorithm), ") is not available for ", shape.ToString(),
                     ": ", made.status().message()));
  }
  return made;
}

// A convolution on all the plugin's threads and, when the count may vary
// per call, its one-thread twin (onednn::ThreadChoice picks per call).
struct ConvVariants {
  std::shared_ptr<const CachedPrimitive> all, one;  // `one` null: always `all`.
  uint64_t workspace_bytes = 0;                     // Enough for either.
};

absl::StatusOr<ConvVariants> Variants(onednn::PrimitiveCache& cache, ConvolutionKind kind,
                                      const ConvolutionShape& shape, int64_t algorithm,
                                      const Fusion& fusion = {}) {
  const int threads = onednn::PluginThreads();
  const bool adaptive = onednn::ThreadsAdjustable() && !onednn::ThreadsFixed() && threads > 1;
  ConvVariants v;
  RILL_ASSIGN_OR_RETURN(
      v.all, ConvolutionPrimitive(cache, kind, shape, algorithm, threads, adaptive, fusion));
  v.workspace_bytes = v.all->workspace_bytes;
  if (adaptive) {
    RILL_ASSIGN_OR_RETURN(v.one,
                          ConvolutionPrimitive(cache, kind, shape, algorithm, 1, false, fusion));
    v.workspace_bytes = std::max(v.workspace_bytes, v.one->workspace_bytes);
  }
  return v;
}

absl::Status CheckAlgorithmId(int64_t id) {
  if (id >= OneDnn::kAuto && id <= OneDnn::kWinograd) return absl::OkStatus();
  return absl::NotFoundError(
      absl::StrCat("convolution algorithm ", id,
                   " is not offered by onednn (it offers 0 auto, 1 direct, 2 winograd)"));
}

// The buffers of one call: the caller's tensors, the workspace (the
// primitive's workspace_bytes) and, for a forward convolution, what it fuses.
struct ConvCall {
  void* input = nullptr;
  void* filter = nullptr;
  void* output = nullptr;
  void* workspace = nullptr;
  const void* bias = nullptr;        // Fusion::bias.
  const void* side_input = nullptr;  // Fusion::sum; may be `output`.
  uint64_t filter_id = 0;            // ConvolutionArgs::filter_id.
};

// The filter in the primitive's staged layout: the one kept for the call's
// filter id, else converted now (into the workspace, or kept for the id).
memory StagedFilter(const CachedPrimitive& p, const ConvCall& c, char* base) {
  const CachedPrimitive::Staged& st = p.staged[1];
  const memory user = onednn::Wrap(p.mds[1], c.filter);
  if (c.filter_id != 0 && p.filters != nullptr) {
    if (const void* kept = p.filters->Find(c.filter_id)) return onednn::Wrap(st.md, kept);
    const uint64_t bytes = RoundUp64(st.md.get_size());
    if (void* data = std::aligned_alloc(64, bytes)) {
      onednn::Execute(st.reorder, {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, onednn::Wrap(st.md, data)}},
                      st.reorder_scratchpad_md, c.workspace);
      if (const void* kept = p.filters->Insert(c.filter_id, data, bytes)) {
        return onednn::Wrap(st.md, kept);
      }
    }
  }
  memory m = onednn::Wrap(st.md, base + st.offset);
  onednn::Execute(st.reorder, {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, m}}, st.reorder_scratchpad_md,
                  c.workspace);
  return m;
}

// Runs one convolution with the primitive's argument roles for `kind`:
// inputs reordered into their staged copies, the side input into the
// output (staged or the caller's), the convolution, outputs reordered back.
void RunConvolution(const CachedPrimitive& p, ConvolutionKind kind, const ConvCall& c) {
  void* const user[3] = {c.input, c.filter, c.output};
  const int output_role = kind == ConvolutionKind::kForward        ? 2
                          : kind == ConvolutionKind::kBackwardData ? 0
                                                                   : 1;
  char* const base = static_cast<char*>(c.workspace);
  memory m[3];
  for (int i = 0; i < 3; ++i) {
    const CachedPrimitive::Staged& st = p.staged[i];
    if (!st.reorder) {
      m[i] = onednn::Wrap(p.mds[i], user[i]);
    } else if (i == 1 && kind == ConvolutionKind::kForward) {
      m[i] = StagedFilter(p, c, base);
    } else {
      m[i] = onednn::Wrap(st.md, base + st.offset);
      if (i != output_role) {
        onednn::Execute(st.reorder,
                        {{DNNL_ARG_FROM, onednn::Wrap(p.mds[i], user[i])}, {DNNL_ARG_TO, m[i]}},
                        st.reorder_scratchpad_md, c.workspace);
      }
    }
  }
  switch (kind) {
    case ConvolutionKind::kForward: {
      if (c.side_input != nullptr) {
        if (p.side_input.reorder) {
          onednn::Execute(
              p.side_input.reorder,
              {{DNNL_ARG_FROM, onednn::Wrap(p.mds[2], c.side_input)}, {DNNL_ARG_TO, m[2]}},
              p.side_input.reorder_scratchpad_md, c.workspace);
        } else if (c.side_input != c.output) {
          std::memcpy(c.output, c.side_input, p.mds[2].get_size());
        }
      }
      std::unordered_map<int, memory> args = {
          {DNNL_ARG_SRC, m[0]}, {DNNL_ARG_WEIGHTS, m[1]}, {DNNL_ARG_DST, m[2]}};
      if (c.bias != nullptr) {
        args[DNNL_ARG_BIAS] = onednn::Wrap(
            memory::desc({p.mds[2].dims()[1]}, memory::data_type::f32, memory::format_tag::x),
            c.bias);
      }
      onednn::Execute(p.primitive, std::move(args), p.scratchpad_md, c.workspace);
      break;
    }
    case ConvolutionKind::kBackwardData:
      onednn::Execute(
          p.primitive,
          {{DNNL_ARG_DIFF_SRC, m[0]}, {DNNL_ARG_WEIGHTS, m[1]}, {DNNL_ARG_DIFF_DST, m[2]}},
          p.scratchpad_md, c.workspace);
      break;
    case ConvolutionKind::kBackwardFilter:
      onednn::Execute(
          p.primitive,
          {{DNNL_ARG_SRC, m[0]}, {DNNL_ARG_DIFF_WEIGHTS, m[1]}, {DNNL_ARG_DIFF_DST, m[2]}},
          p.scratchpad_md, c.workspace);
      break;
  }
  const CachedPrimitive::Staged& out = p.staged[output_role];
  if (out.reorder) {
    onednn::Execute(out.reorder,
                    {{DNNL_ARG_FROM, m[output_role]},
                     {DNNL_ARG_TO, onednn::Wrap(p.mds[output_role], user[output_role])}},
                    out.reorder_scratchpad_md, c.workspace);
  }
}

// Runs the convolution on the variant the choice picks, under its thread
// count, and records the time. While another host library call runs
// (platform/host/host_thread_budget.h), the one-thread variant runs,
// untimed: the cores are shared.
void RunVariant(const ConvVariants& v, ConvolutionKind kind, const ConvCall& c) {
  HostComputeScope budget;
  if (v.one == nullptr) {
    onednn::ScopedThreads scope(onednn::PluginThreads());
    RunConvolution(*v.all, kind, c);
    return;
  }
  if (budget.Share(onednn::PluginThreads()) == 1) {
    onednn::ScopedThreads scope(1);
    RunConvolution(*v.one, kind, c);
    return;
  }
  const int variant = v.all->choice->Pick();
  onednn::ScopedThreads scope(variant == 0 ? onednn::PluginThreads() : 1);
  const auto start = std::chrono::steady_clock::now();
  RunConvolution(variant == 0 ? *v.all : *v.one, kind, c);
  v.all->choice->Record(
      variant, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

// A 64-byte-aligned host buffer for timing runs.
struct AlignedBuffer {
  explicit AlignedBuffer(uint64_t bytes)
      : data(static_cast<float*>(
            std::aligned_alloc(64, std::max<uint64_t>(64, (bytes + 63) / 64 * 64)))) {
    if (data != nullptr) std::fill(data, data + bytes / sizeof(float), 0.01f);
  }
  ~AlignedBuffer() { std::free(data); }
  float* data;
};

}  // namespace

absl::StatusOr<std::vector<ConvolutionAlgorithm>> OneDnn::ConvolutionAlgorithms(
    ConvolutionKind kind, const ConvolutionShape& shape) {
  RILL_RETURN_IF_ERROR(onednn::RequireFloat("convolution", shape.input.type));
  std::vector<ConvolutionAlgorithm> algorithms;
  for (int64_t id : kAlgorithmIds) {
    ConvolutionAlgorithm a;
    a.id = id;
    a.name = AlgorithmName(id);
    absl::StatusOr<ConvVariants> v = Variants(*cache_, kind, shape, id);
    if (v.ok()) {
      a.available = true;
      a.implementation = v->all->implementation;
      a.workspace_bytes = v->workspace_bytes;
      // Backward filter reduces over the batch and the pixels across the
      // OpenMP team, so its rounding follows the team size, which varies per
      // call (ThreadChoice, the host thread budget) unless RILL_DNN_THREADS
      // fixes it. Forward and backward data sum each output on one thread.
      a.deterministic = kind != ConvolutionKind::kBackwardFilter || v->one == nullptr;
    } else {
      a.reason = std::string(v.status().message());
    }
    algorithms.push_back(std::move(a));
  }
  return algorithms;
}

absl::StatusOr<ConvolutionAlgorithm> OneDnn::BestConvolutionAlgorithm(
    ConvolutionKind kind, const ConvolutionShape& shape) {
  {
    MutexLock lock(&best_mu_);
    auto it = best_.find({static_cast<int>(kind), shape});
    if (it != best_.end()) return it->second;
  }
  RILL_ASSIGN_OR_RETURN(ConvolutionAlgorithm best, TimeAlgorithms(kind, shape));
  MutexLock lock(&best_mu_);
  return best_.try_emplace({static_cast<int>(kind), shape}, best).first->second;
}

absl::StatusOr<ConvolutionAlgorithm> OneDnn::TimeAlgorithms(ConvolutionKind kind,
                                                            const ConvolutionShape& shape) {
  RILL_ASSIGN_OR_RETURN(std::vector<ConvolutionAlgorithm> algorithms,
                        ConvolutionAlgorithms(kind, shape));
  AlignedBuffer input(shape.input.Bytes()), filter(shape.filter.Bytes()),
      output(shape.output.Bytes());
  if (input.data == nullptr || filter.data == nullptr || output.data == nullptr) {
    return absl::ResourceExhaustedError("onednn: no host memory for timing convolution algorithms");
  }
  const ConvolutionAlgorithm* best = nullptr;
  double best_seconds = std::numeric_limits<double>::infinity();
  for (const ConvolutionAlgorithm& a : algorithms) {
    if (!a.available) continue;
    RILL_ASSIGN_OR_RETURN(ConvVariants v, Variants(*cache_, kind, shape, a.id));
    AlignedBuffer workspace(v.workspace_bytes);
    onednn::ScopedThreads scope(onednn::PluginThreads());
    double seconds = std::numeric_limits<double>::infinity();
    // A warm-up run, then the best of two.
    for (int run = 0; run < 3; ++run) {
      const auto start = std::chrono::steady_clock::now();
      RILL_RETURN_IF_ERROR(onednn::Guard("onednn: timing a convolution", [&] {
        RunConvolution(*v.all, kind,
                       ConvCall{input.data, filter.data, output.data, workspace.data});
      }));
      if (run > 0)
        seconds = std::min(
            seconds,
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    if (seconds < best_seconds) {
      best_seconds = seconds;
      best = &a;
    }
  }
  if (best == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat("onednn: no convolution algorithm is available for ",
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
  RILL_ASSIGN_OR_RETURN(ConvVariants v, Variants(*cache_, kind, a.shape, algorithm, FusionOf(a)));
  const uint64_t need = v.workspace_bytes;
  ScopedDeviceMemory<uint8_t> owned;
  void* workspace = nullptr;
  if (!a.workspace.is_null()) {
    if (a.workspace.size() < need) {
      return absl::InvalidArgumentError(absl::StrCat(
          "workspace ", a.workspace.ToString(), " is too small: onednn's ",
          ConvolutionKindName(kind), " convolution algorithm ", algorithm, " (",
          AlgorithmName(algorithm), ") needs ", need, " bytes for ", a.shape.ToString()));
    }
    workspace = HostPointer(a.workspace);
  } else if (need > 0) {
    RILL_ASSIGN_OR_RETURN(owned, executor_->AllocateOwnedArray<uint8_t>(need));
    workspace = HostPointer(*owned);
  }
  ConvCall call{HostPointer(a.input), HostPointer(a.filter), HostPointer(a.output), workspace};
  if (!a.bias.is_null()) call.bias = HostPointer(a.bias);
  if (!a.side_input.is_null()) call.side_input = HostPointer(a.side_input);
  call.filter_id = a.filter_id;
  return onednn::EnqueueDnn(
      executor_, stream, "onednn convolution",
      [v = std::move(v), kind, call, owned = std::move(owned)] { RunVariant(v, kind, call); });
}

}  // namespace rill
