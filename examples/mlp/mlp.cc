// Trains a two-layer perceptron on synthetic data, imperatively, on any
// context given on the command line: forward ops, backward ops chained by
// hand, SGD updates in place. Every op is pushed to the engine and runs on
// the chosen device; only the loss is read back, once per epoch.
//
//   mlp [--ctx=cpu|host:1|opencl:0|cuda:0] [--epochs=N] [--check]
//
// --check exits non-zero unless the loss falls below a third of its first
// value and the training accuracy passes 90 % (scripts/test.sh runs it).

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "rill/base/status_macros.h"
#include "rill/engine/engine.h"
#include "rill/ops/invoke.h"
#include "rill/ops/ops.h"
#include "rill/tensor/tensor.h"

namespace rill {
namespace {

using engine::Context;

constexpr int64_t kSamples = 1024, kFeatures = 16, kHidden = 64, kClasses = 4;

struct Options {
  Context ctx = Context::Host();
  int epochs = 60;
  bool check = false;
};

absl::StatusOr<Options> ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--ctx=", 0) == 0) {
      RILL_ASSIGN_OR_RETURN(o.ctx, Context::Parse(a.substr(6)));
    } else if (a.rfind("--epochs=", 0) == 0) {
      if (!absl::SimpleAtoi(a.substr(9), &o.epochs) || o.epochs <= 0) {
        return absl::InvalidArgumentError(absl::StrCat("'", a, "': expected a positive integer"));
      }
    } else if (a == "--check") {
      o.check = true;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown argument '", a,
                       "'; usage: mlp [--ctx=cpu|host:1|opencl:0] [--epochs=N] [--check]"));
    }
  }
  return o;
}

// Points from kClasses Gaussian blobs around random centres.
void MakeData(std::vector<float>* x, std::vector<float>* labels) {
  std::mt19937 rng(42);
  std::normal_distribution<float> n(0, 1);
  std::vector<float> centres(kClasses * kFeatures);
  for (float& c : centres) c = 2.5f * n(rng);
  x->resize(kSamples * kFeatures);
  labels->resize(kSamples);
  for (int64_t i = 0; i < kSamples; ++i) {
    const int64_t c = i % kClasses;
    (*labels)[i] = static_cast<float>(c);
    for (int64_t f = 0; f < kFeatures; ++f)
      (*x)[i * kFeatures + f] = centres[c * kFeatures + f] + n(rng);
  }
}

absl::StatusOr<Tensor> Param(const Shape& shape, float scale, uint32_t seed, const Options& o,
                             engine::Engine* e) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0, scale);
  std::vector<float> v(shape.NumElements());
  for (float& x : v) x = n(rng);
  return Tensor::FromHost<float>(v, shape, o.ctx, e);
}

absl::Status Train(const Options& o) {
  RILL_ASSIGN_OR_RETURN(auto engine, engine::Engine::CreateFromEnv());
  engine::Engine* e = engine.get();
  std::vector<float> hx, hy;
  MakeData(&hx, &hy);
  RILL_ASSIGN_OR_RETURN(Tensor x, Tensor::FromHost<float>(hx, {kSamples, kFeatures}, o.ctx, e));
  RILL_ASSIGN_OR_RETURN(Tensor y, Tensor::FromHost<float>(hy, {kSamples}, o.ctx, e));
  RILL_ASSIGN_OR_RETURN(Tensor w1, Param({kHidden, kFeatures}, 0.2f, 1, o, e));
  RILL_ASSIGN_OR_RETURN(Tensor b1, Param({kHidden}, 0.0f, 2, o, e));
  RILL_ASSIGN_OR_RETURN(Tensor w2, Param({kClasses, kHidden}, 0.2f, 3, o, e));
  RILL_ASSIGN_OR_RETURN(Tensor b2, Param({kClasses}, 0.0f, 4, o, e));
  const ops::Attrs sgd = {{"lr", "0.5"}};
  auto update = [&](const Tensor& w, const Tensor& g) {
    return ops::Invoke("sgd_update", {w, g}, sgd, {w}).status();
  };
  float first = 0, last = 0;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    // Forward.
    RILL_ASSIGN_OR_RETURN(Tensor h, ops::Call("fully_connected", {x, w1, b1}));
    RILL_ASSIGN_OR_RETURN(Tensor a, ops::Relu(h));
    RILL_ASSIGN_OR_RETURN(Tensor logits, ops::Call("fully_connected", {a, w2, b2}));
    RILL_ASSIGN_OR_RETURN(Tensor loss, ops::Call("softmax_cross_entropy", {logits, y}));
    // Backward, by hand.
    RILL_ASSIGN_OR_RETURN(Tensor dlogits,
                          ops::Call("_backward_softmax_cross_entropy", {logits, y}));
    RILL_ASSIGN_OR_RETURN(Tensor dw2, ops::Call("matmul", {dlogits, a}, {{"transpose_a", "true"}}));
    RILL_ASSIGN_OR_RETURN(Tensor db2, ops::Sum(dlogits, {0}));
    RILL_ASSIGN_OR_RETURN(Tensor da, ops::Call("matmul", {dlogits, w2}));
    RILL_ASSIGN_OR_RETURN(Tensor dh, ops::Call("_backward_relu", {da, h}));
    RILL_ASSIGN_OR_RETURN(Tensor dw1, ops::Call("matmul", {dh, x}, {{"transpose_a", "true"}}));
    RILL_ASSIGN_OR_RETURN(Tensor db1, ops::Sum(dh, {0}));
    // SGD, in place.
    RILL_RETURN_IF_ERROR(update(w1, dw1));
    RILL_RETURN_IF_ERROR(update(b1, db1));
    RILL_RETURN_IF_ERROR(update(w2, dw2));
    RILL_RETURN_IF_ERROR(update(b2, db2));
    RILL_ASSIGN_OR_RETURN(std::vector<float> l, loss.ToHost<float>());
    last = l[0];
    if (epoch == 0) first = last;
    if (epoch % 10 == 0 || epoch == o.epochs - 1)
      std::printf("epoch %3d  loss %.4f\n", epoch, last);
  }
  // Training accuracy.
  RILL_ASSIGN_OR_RETURN(Tensor h, ops::Call("fully_connected", {x, w1, b1}));
  RILL_ASSIGN_OR_RETURN(Tensor a, ops::Relu(h));
  RILL_ASSIGN_OR_RETURN(Tensor logits, ops::Call("fully_connected", {a, w2, b2}));
  RILL_ASSIGN_OR_RETURN(std::vector<float> p, logits.ToHost<float>());
  int correct = 0;
  for (int64_t i = 0; i < kSamples; ++i) {
    int best = 0;
    for (int c = 1; c < kClasses; ++c) {
      if (p[i * kClasses + c] > p[i * kClasses + best]) best = c;
    }
    correct += best == static_cast<int>(hy[i]);
  }
  const double accuracy = static_cast<double>(correct) / kSamples;
  std::printf("%s: loss %.4f -> %.4f, training accuracy %.1f %%\n", o.ctx.ToString().c_str(), first,
              last, 100 * accuracy);
  if (o.check && (!(last < first / 3) || accuracy < 0.9)) {
    return absl::InternalError("the perceptron did not learn (see the figures above)");
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  absl::StatusOr<rill::Options> o = rill::ParseArgs(argc, argv);
  if (!o.ok()) {
    std::fprintf(stderr, "mlp: %s\n", o.status().ToString().c_str());
    return 2;
  }
  absl::Status s = rill::Train(*o);
  if (!s.ok()) {
    std::fprintf(stderr, "mlp: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
