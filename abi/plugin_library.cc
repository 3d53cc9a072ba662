// A plugin's BLAS and DNN libraries as BlasSupport and DnnSupport.
//
// A host-memory library (RILL_LIBRARY_HOST_MEMORY) is a host library plugin
// (plugins/host_library.h): each call is enqueued as host work on the
// stream and calls the plugin there with host buffers. An own-platform
// library gets the plugin stream's handle and enqueues itself. Calls the
// library lacks answer Unimplemented from Supports(), so the executor's
// chain hands them on (RILL_BLAS=mine,openblas).

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/abi/plugin_objects.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/plugins/blas/blas.h"
#include "rill/plugins/dnn/dnn.h"
#include "rill/plugins/host_library.h"
#include "rill/plugins/plugin_registry.h"
#include "rill/stream/stream.h"

namespace rill::abi {
namespace {

RillDataType ToC(DataType type) { return type == DataType::kDouble ? RILL_FLOAT64 : RILL_FLOAT32; }

// Runs `call(stream handle)` the way the library's target says: as host
// work in `stream`'s order (host memory), or at once with the plugin's
// stream handle (own platform).
class LibraryCaller {
 public:
  LibraryCaller(std::shared_ptr<LoadedPlugin> plugin, StreamExecutor* executor,
                RillLibraryTarget target, std::string name, const char* accessor)
      : plugin_(std::move(plugin)),
        executor_(executor),
        target_(target),
        name_(std::move(name)),
        accessor_(accessor) {}

  template <typename Call>
  absl::Status Run(Stream* stream, Call call) const {
    if (target_ == RILL_LIBRARY_HOST_MEMORY) {
      return EnqueueHostWork(executor_, stream, name_, accessor_,
                             [plugin = plugin_, call = std::move(call)]() mutable {
                               return TakeError(call(nullptr));
                             });
    }
    if (stream == nullptr || stream->parent() != executor_) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_,
                       ": the stream does not belong to the executor this plugin serves; use that "
                       "executor's ",
                       accessor_));
    }
    auto* plugin_stream = dynamic_cast<PluginStream*>(stream->implementation());
    if (plugin_stream == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(name_, ": not a stream of plugin ", plugin_->path()));
    }
    return TakeError(call(plugin_stream->handle()));
  }

  const std::string& name() const { return name_; }

 private:
  std::shared_ptr<LoadedPlugin> plugin_;
  StreamExecutor* executor_;
  RillLibraryTarget target_;
  std::string name_;
  const char* accessor_;
};

class PluginBlas : public BlasSupport {
 public:
  PluginBlas(std::shared_ptr<LoadedPlugin> plugin, StreamExecutor* executor)
      : fns_(*plugin->blas()),
        caller_(plugin, executor, fns_.target, plugin->blas_name(), "AsBlas()"),
        version_(fns_.version ? fns_.version : plugin->version()),
        plugin_(std::move(plugin)) {}

  std::string Name() const override { return caller_.name(); }
  std::string Version() const override { return version_; }

  absl::Status Supports(const Operation& op) const override {
    const std::string routine = op.routine;
    if (routine == "gemm") {
      if (fns_.gemm_supports == nullptr) return absl::OkStatus();
      RillBlasGemmArgs args = GemmShape(op.type, op.m, op.n, op.k);
      return TakeError(fns_.gemm_supports(&args));
    }
    if (routine == "gemv" && fns_.gemv != nullptr) return absl::OkStatus();
    return absl::UnimplementedError(
        absl::StrCat(caller_.name(), " (plugin ", plugin_->path(), ") has no ", routine));
  }

 protected:
  absl::Status Gemm(Stream* stream, const GemmArgs& a) override {
    RillBlasGemmArgs args = GemmShape(a.type, a.m, a.n, a.k);
    args.trans_a = a.trans_a == Transpose::kTranspose;
    args.trans_b = a.trans_b == Transpose::kTranspose;
    args.alpha = a.alpha;
    args.a = abi::ToC(a.a);
    args.lda = a.lda;
    args.b = abi::ToC(a.b);
    args.ldb = a.ldb;
    args.beta = a.beta;
    args.c = abi::ToC(a.c);
    args.ldc = a.ldc;
    args.batch_count = a.batch_count;
    args.stride_a = a.stride_a;
    args.stride_b = a.stride_b;
    args.stride_c = a.stride_c;
    auto* gemm = fns_.gemm;
    return caller_.Run(stream, [gemm, args](RillStream* s) { return gemm(s, &args); });
  }
  absl::Status Gemv(Stream* stream, const GemvArgs& a) override {
    RillBlasGemvArgs args{};
    args.struct_size = sizeof(args);
    args.type = ToC(a.type);
    args.trans = a.trans == Transpose::kTranspose;
    args.m = a.m;
    args.n = a.n;
    args.alpha = a.alpha;
    args.a = abi::ToC(a.a);
    args.lda = a.lda;
    args.x = abi::ToC(a.x);
    args.incx = a.incx;
    args.beta = a.beta;
    args.y = abi::ToC(a.y);
    args.incy = a.incy;
    auto* gemv = fns_.gemv;
    return caller_.Run(stream, [gemv, args](RillStream* s) { return gemv(s, &args); });
  }
  // Supports() refuses these: the chain's next plugin runs them.
  absl::Status GemmBatched(Stream*, const GemmBatchedArgs&) override {
    return Lacks("gemm_batched");
  }
  absl::Status Axpy(Stream*, const VectorArgs&) override { return Lacks("axpy"); }
  absl::Status Scal(Stream*, const VectorArgs&) override { return Lacks("scal"); }
  absl::Status Copy(Stream*, const VectorArgs&) override { return Lacks("copy"); }
  absl::Status Dot(Stream*, const VectorArgs&) override { return Lacks("dot"); }
  absl::Status Nrm2(Stream*, const VectorArgs&) override { return Lacks("nrm2"); }
  absl::Status Asum(Stream*, const VectorArgs&) override { return Lacks("asum"); }

 private:
  static RillBlasGemmArgs GemmShape(DataType type, int64_t m, int64_t n, int64_t k) {
    RillBlasGemmArgs args{};
    args.struct_size = sizeof(args);
    args.type = ToC(type);
    args.m = m;
    args.n = n;
    args.k = k;
    args.batch_count = 1;
    return args;
  }
  absl::Status Lacks(const char* routine) const {
    return absl::UnimplementedError(absl::StrCat(caller_.name(), " has no ", routine));
  }

  const RillBlasFns& fns_;
  LibraryCaller caller_;
  std::string version_;
  std::shared_ptr<LoadedPlugin> plugin_;
};

class PluginDnn : public DnnSupport {
 public:
  PluginDnn(std::shared_ptr<LoadedPlugin> plugin, StreamExecutor* executor)
      : fns_(*plugin->dnn()),
        caller_(plugin, executor, fns_.target, plugin->dnn_name(), "AsDnn()"),
        version_(fns_.version ? fns_.version : plugin->version()),
        plugin_(std::move(plugin)) {}

  std::string Name() const override { return caller_.name(); }
  std::string Version() const override { return version_; }

  absl::Status Supports(const DnnOperation& op) const override {
    const std::string who = absl::StrCat(caller_.name(), " (plugin ", plugin_->path(), ")");
    if (op.op != DnnOp::kConvolveForward) {
      return absl::UnimplementedError(absl::StrCat(who, " runs forward convolutions only"));
    }
    if (op.input.layout != DataLayout::kNCHW || op.output.layout != DataLayout::kNCHW ||
        op.filter.layout != FilterLayout::kOIHW) {
      return absl::UnimplementedError(absl::StrCat(who, ": NCHW tensors and OIHW filters only"));
    }
    if (op.fused_bias || op.fused_side_input || op.fused_activation) {
      return absl::UnimplementedError(absl::StrCat(who, ": no fused bias, sum or activation"));
    }
    if (op.algorithm != kDefaultAlgorithm && op.algorithm != kBestAlgorithm && op.algorithm != 0) {
      return absl::UnimplementedError(absl::StrCat(who, ": algorithm ", op.algorithm));
    }
    if (fns_.conv_forward_supports == nullptr) return absl::OkStatus();
    RillConvArgs args = Shape({op.input, op.filter, op.conv, op.output});
    return TakeError(fns_.conv_forward_supports(&args));
  }

 protected:
  absl::StatusOr<std::vector<ConvolutionAlgorithm>> ConvolutionAlgorithms(
      ConvolutionKind, const ConvolutionShape&) override {
    return std::vector<ConvolutionAlgorithm>{Algorithm()};
  }
  absl::StatusOr<ConvolutionAlgorithm> BestConvolutionAlgorithm(ConvolutionKind,
                                                                const ConvolutionShape&) override {
    return Algorithm();
  }
  absl::Status Convolve(Stream* stream, ConvolutionKind kind, const ConvolutionArgs& a) override {
    if (kind != ConvolutionKind::kForward) return Lacks("backward convolutions");
    RillConvArgs args = Shape(a.shape);
    args.x = abi::ToC(a.input);
    args.w = abi::ToC(a.filter);
    args.y = abi::ToC(a.output);
    auto* conv = fns_.conv_forward;
    return caller_.Run(stream, [conv, args](RillStream* s) { return conv(s, &args); });
  }
  absl::Status BiasAdd(Stream*, const BiasAddArgs&) override { return Lacks("bias_add"); }
  absl::Status Activate(Stream*, const ActivationArgs&) override { return Lacks("activations"); }
  absl::Status ActivateBackward(Stream*, const ActivationBackwardArgs&) override {
    return Lacks("activations");
  }
  absl::Status PoolForward(Stream*, const PoolArgs&) override { return Lacks("pooling"); }
  absl::Status PoolBackward(Stream*, const PoolBackwardArgs&) override { return Lacks("pooling"); }
  absl::Status Softmax(Stream*, const SoftmaxArgs&) override { return Lacks("softmax"); }
  absl::Status SoftmaxBackward(Stream*, const SoftmaxBackwardArgs&) override {
    return Lacks("softmax");
  }
  absl::Status BatchNormInference(Stream*, const BatchNormInferenceArgs&) override {
    return Lacks("batch norm");
  }
  absl::Status BatchNormTraining(Stream*, const BatchNormTrainingArgs&) override {
    return Lacks("batch norm");
  }
  absl::Status BatchNormBackward(Stream*, const BatchNormBackwardArgs&) override {
    return Lacks("batch norm");
  }
  absl::Status Lrn(Stream*, const LrnArgs&) override { return Lacks("LRN"); }

 private:
  static RillConvArgs Shape(const ConvolutionShape& s) {
    RillConvArgs args{};
    args.struct_size = sizeof(args);
    args.type = ToC(s.input.type);
    args.batch = s.input.n;
    args.in_channels = s.input.c;
    args.in_height = s.input.h;
    args.in_width = s.input.w;
    args.out_channels = s.filter.output_channels;
    args.kernel_height = s.filter.height;
    args.kernel_width = s.filter.width;
    args.out_height = s.output.h;
    args.out_width = s.output.w;
    args.pad_top = args.pad_bottom = s.conv.pad_h;
    args.pad_left = args.pad_right = s.conv.pad_w;
    args.stride_h = s.conv.stride_h;
    args.stride_w = s.conv.stride_w;
    args.dilation_h = s.conv.dilation_h;
    args.dilation_w = s.conv.dilation_w;
    args.groups = s.conv.group_count;
    args.alpha = 1;
    args.beta = 0;
    return args;
  }
  ConvolutionAlgorithm Algorithm() const {
    return ConvolutionAlgorithm{0, "plugin", true, "", caller_.name(), 0, true};
  }
  absl::Status Lacks(const char* what) const {
    return absl::UnimplementedError(absl::StrCat(caller_.name(), " has no ", what));
  }

  const RillDnnFns& fns_;
  LibraryCaller caller_;
  std::string version_;
  std::shared_ptr<LoadedPlugin> plugin_;
};

// Whether `name` is taken for `kind` on any platform.
bool Taken(PluginKind kind, const std::string& name) {
  for (const PluginRegistry::Entry& e : PluginRegistry::Default().List()) {
    if (e.kind == kind && e.name == name) return true;
  }
  return false;
}

template <typename Library>
absl::Status RegisterLibrary(const std::shared_ptr<LoadedPlugin>& plugin, PluginKind kind,
                             const std::string& name, RillLibraryTarget target, bool make_default) {
  if (target == RILL_LIBRARY_OWN_PLATFORM) {
    // Registered under the platform's id, which outlives this load: the
    // factory takes the plugin from the executor, so that the registry
    // does not keep it loaded, and a later load registers harmlessly again.
    return PluginRegistry::Default().Register(
        PluginPlatformId(plugin->platform_name()), kind, name,
        [kind](StreamExecutor* executor) -> absl::StatusOr<std::unique_ptr<PluginInterface>> {
          auto* device = dynamic_cast<PluginExecutor*>(executor->implementation());
          if (device == nullptr) {
            return absl::FailedPreconditionError("not a device of a run-time plugin");
          }
          // Another plugin of the same platform name (loaded into another
          // manager) may lack the library.
          const std::shared_ptr<LoadedPlugin>& owner = device->plugin();
          const bool has =
              kind == PluginKind::kBlas ? owner->blas() != nullptr : owner->dnn() != nullptr;
          if (!has) {
            return absl::NotFoundError(absl::StrCat("plugin ", owner->path(), " has no ",
                                                    PluginKindName(kind), " library"));
          }
          return std::unique_ptr<PluginInterface>(new Library(owner, executor));
        },
        make_default);
  }
  if (Taken(kind, name)) {
    return absl::AlreadyExistsError(absl::StrCat("plugin ", plugin->path(), ": a ",
                                                 PluginKindName(kind), " plugin named \"", name,
                                                 "\" is already registered"));
  }
  // A host-memory library serves every host-memory executor; the registry
  // keeps its factory, and so the plugin loaded, for the process's life.
  return RegisterHostLibraryPlugin(
      kind, name,
      [plugin, name](StreamExecutor* executor) -> absl::StatusOr<std::unique_ptr<PluginInterface>> {
        RILL_RETURN_IF_ERROR(CheckHostLibraryPlatform(executor, name));
        return std::unique_ptr<PluginInterface>(new Library(plugin, executor));
      },
      make_default);
}

}  // namespace

absl::Status RegisterPluginLibraries(const std::shared_ptr<LoadedPlugin>& plugin) {
  if (const RillBlasFns* blas = plugin->blas()) {
    RILL_RETURN_IF_ERROR(RegisterLibrary<PluginBlas>(plugin, PluginKind::kBlas, plugin->blas_name(),
                                                     blas->target, blas->make_default));
  }
  if (const RillDnnFns* dnn = plugin->dnn()) {
    RILL_RETURN_IF_ERROR(RegisterLibrary<PluginDnn>(plugin, PluginKind::kDnn, plugin->dnn_name(),
                                                    dnn->target, dnn->make_default));
  }
  return absl::OkStatus();
}

}  // namespace rill::abi
