#include "tools/demo_engine.h"

#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rill/engine/engine.h"
#include "rill/rill.h"

namespace rill::demo {
namespace {

using engine::Context;
using engine::Engine;
using engine::FnProperty;
using engine::RunContext;
using engine::VarHandle;

// out[i] = a * in[i] + b
void AffineHost(const HostThread& t, const float* in, float* out, float a, float b, uint64_t n) {
  if (uint64_t i = t.global_x(); i < n) out[i] = a * in[i] + b;
}
// out[i] = w[i] * y[i]
void MulHost(const HostThread& t, const float* w, const float* y, float* out, uint64_t n) {
  if (uint64_t i = t.global_x(); i < n) out[i] = w[i] * y[i];
}
// w[i] += g[i]
void AddInPlaceHost(const HostThread& t, float* w, const float* g, uint64_t n) {
  if (uint64_t i = t.global_x(); i < n) w[i] += g[i];
}

using F = DeviceMemory<float>;

}  // namespace

absl::StatusOr<EngineDemoResult> RunEngineDemo(int iterations, int64_t n,
                                               const std::string& trace_path) {
  RILL_ASSIGN_OR_RETURN(Platform * host, PlatformManager::Default().PlatformWithName("host"));
  const int second = host->VisibleDeviceCount() > 1 ? 1 : 0;
  RILL_ASSIGN_OR_RETURN(StreamExecutor * dev0, host->ExecutorForDevice(0));
  RILL_ASSIGN_OR_RETURN(StreamExecutor * dev1, host->ExecutorForDevice(second));
  const Context c0 = Context::Device(host->id(), 0), c1 = Context::Device(host->id(), second);

  KernelSpec affine_spec("affine"), mul_spec("mul"), add_spec("add_in_place");
  affine_spec.AddHostFunction<F, F, float, float, uint64_t>(AffineHost);
  mul_spec.AddHostFunction<F, F, F, uint64_t>(MulHost);
  add_spec.AddHostFunction<F, F, uint64_t>(AddInPlaceHost);
  RILL_ASSIGN_OR_RETURN(auto affine0,
                        (dev0->LoadKernel<F, F, float, float, uint64_t>(affine_spec)));
  RILL_ASSIGN_OR_RETURN(auto affine1,
                        (dev1->LoadKernel<F, F, float, float, uint64_t>(affine_spec)));
  RILL_ASSIGN_OR_RETURN(auto mul, (dev1->LoadKernel<F, F, F, uint64_t>(mul_spec)));
  RILL_ASSIGN_OR_RETURN(auto add, (dev1->LoadKernel<F, F, uint64_t>(add_spec)));

  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> x0, dev0->AllocateOwnedArray<float>(n));
  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> y0, dev0->AllocateOwnedArray<float>(n));
  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> y1, dev1->AllocateOwnedArray<float>(n));
  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> w1, dev1->AllocateOwnedArray<float>(n));
  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> g1, dev1->AllocateOwnedArray<float>(n));
  RILL_ASSIGN_OR_RETURN(ScopedDeviceMemory<float> out1, dev1->AllocateOwnedArray<float>(n));

  engine::EngineOptions options;
  options.trace_path = trace_path;
  RILL_ASSIGN_OR_RETURN(std::unique_ptr<Engine> eng, Engine::CreateFromEnv(options));
  VarHandle x = eng->NewVariable(), y = eng->NewVariable(), yb = eng->NewVariable(),
            w = eng->NewVariable(), g = eng->NewVariable(), out = eng->NewVariable();

  const uint64_t bytes = n * sizeof(float);
  const ThreadDim threads(256);
  const BlockDim blocks((n + 255) / 256);
  const uint64_t un = static_cast<uint64_t>(n);
  std::vector<float> host_x(n), host_w(n, 0.5f);
  std::vector<std::vector<float>> host_out(iterations, std::vector<float>(n));
  std::vector<float> final_w(n);
  const absl::Time start = absl::Now();
  int pushed = 0;
  auto push = [&](auto fn, Context ctx, std::initializer_list<VarHandle> reads,
                  std::initializer_list<VarHandle> writes, FnProperty prop, const char* name) {
    ++pushed;
    return eng->PushSync(std::move(fn), ctx, reads, writes, prop, 0, name);
  };

  RILL_RETURN_IF_ERROR(push(
      [&](RunContext rc) {
        rc.stream->ThenMemcpy(w1.ptr(), host_w.data(), bytes);
        return absl::OkStatus();
      },
      c1, {}, {w}, FnProperty::kCopyToDevice, "init w"));
  for (int it = 0; it < iterations; ++it) {
    for (int64_t i = 0; i < n; ++i) host_x[i] = 0.001f * static_cast<float>((i + it) % 997);
    // x is a per-iteration copy on the host: copy it in before the host buffer changes.
    std::shared_ptr<std::vector<float>> xin = std::make_shared<std::vector<float>>(host_x);
    RILL_RETURN_IF_ERROR(push(
        [&, xin](RunContext rc) {
          rc.stream->ThenMemcpy(x0.ptr(), xin->data(), bytes).ThenDoHostCallback([xin] {});
          return absl::OkStatus();
        },
        c0, {}, {x}, FnProperty::kCopyToDevice, "copy x in"));
    RILL_RETURN_IF_ERROR(push(
        [&](RunContext rc) {
          rc.stream->ThenLaunch(threads, blocks, affine0, *x0, *y0, 2.0f, 0.0f, un);
          return absl::OkStatus();
        },
        c0, {x}, {y}, FnProperty::kNormal, "y = 2x"));
    RILL_RETURN_IF_ERROR(push(
        [&](RunContext rc) {
          rc.stream->ThenMemcpy(y1.ptr(), *y0, bytes);
          return absl::OkStatus();
        },
        c1, {y}, {yb}, FnProperty::kCopyToDevice, "copy y to dev1"));
    RILL_RETURN_IF_ERROR(push(
        [&](RunContext rc) {
          rc.stream->ThenLaunch(threads, blocks, mul, *w1, *y1, *out1, un);
          return absl::OkStatus();
        },
        c1, {w, yb}, {out}, FnProperty::kNormal, "out = w * y"));
    RILL_RETURN_IF_ERROR(push(
        [&](RunContext rc) {
          rc.stream->ThenLaunch(threads, blocks, affine1, *y1, *g1, 1.0f, 1.0f, un);
          return absl::OkStatus();
        },
        c1, {yb}, {g}, FnProperty::kNormal, "g = y + 1"));
    RILL_RETURN_IF_ERROR(push(
        [&](RunContext rc) {
          rc.stream->ThenLaunch(threads, blocks, add, *w1, *g1, un);
          return absl::OkStatus();
        },
        c1, {g}, {w}, FnProperty::kNormal, "w += g"));
    RILL_RETURN_IF_ERROR(push(
        [&, it](RunContext rc) {
          rc.stream->ThenMemcpy(host_out[it].data(), *out1, bytes);
          return absl::OkStatus();
        },
        c1, {out}, {}, FnProperty::kCopyFromDevice, "copy out back"));
  }
  RILL_RETURN_IF_ERROR(push(
      [&](RunContext rc) {
        rc.stream->ThenMemcpy(final_w.data(), *w1, bytes);
        return absl::OkStatus();
      },
      c1, {w}, {}, FnProperty::kCopyFromDevice, "copy w back"));
  RILL_RETURN_IF_ERROR(eng->WaitForAll());
  eng->Shutdown(false);  // Writes the trace.

  // The same computation, serially on the host.
  EngineDemoResult result;
  std::vector<float> ref_w(n, 0.5f);
  for (int it = 0; it < iterations; ++it) {
    for (int64_t i = 0; i < n; ++i) {
      const float yv = 2.0f * (0.001f * static_cast<float>((i + it) % 997));
      result.max_abs_error =
          std::max(result.max_abs_error, std::fabs(double{host_out[it][i]} - ref_w[i] * yv));
      ref_w[i] += yv + 1.0f;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    result.max_abs_error = std::max(result.max_abs_error, std::fabs(double{final_w[i]} - ref_w[i]));
  }
  result.wall_time = absl::Now() - start;
  result.functions = pushed;
  result.devices = absl::StrCat(c0.ToString(), " + ", c1.ToString());
  if (result.max_abs_error > 1e-3) {
    return absl::InternalError(
        absl::StrCat("engine demo differs from the serial reference by ", result.max_abs_error));
  }
  return result;
}

}  // namespace rill::demo
