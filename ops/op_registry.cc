#include "rill/ops/op_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/status_macros.h"

namespace rill::ops {
namespace {

int EditDistance(std::string_view a, std::string_view b) {
  std::vector<int> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry;
    RegisterBuiltinOps(*r);
    return r;
  }();
  return *registry;
}

absl::Status OpRegistry::Register(OpDef def) {
  MutexLock lock(&mu_);
  auto& slot = ops_[def.name()];
  if (slot != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("op '", def.name(), "' is already registered"));
  }
  slot = std::make_unique<Entry>();
  slot->def = std::make_unique<OpDef>(std::move(def));
  by_def_[slot->def.get()] = slot.get();
  return absl::OkStatus();
}

absl::Status OpRegistry::RegisterKernel(std::string_view op, std::string_view platform,
                                        KernelDef kernel) {
  if (kernel.fn == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("null kernel for op '", AsAbsl(op), "'"));
  }
  MutexLock lock(&mu_);
  auto it = ops_.find(AsAbsl(op));
  if (it == ops_.end()) {
    return absl::NotFoundError(absl::StrCat("RegisterKernel: no op '", AsAbsl(op), "'"));
  }
  for (auto& [name, k] : it->second->kernels) {
    if (name == platform) {
      k = kernel;
      return absl::OkStatus();
    }
  }
  it->second->kernels.emplace_back(std::string(platform), kernel);
  return absl::OkStatus();
}

absl::StatusOr<const OpDef*> OpRegistry::Find(std::string_view name) const {
  MutexLock lock(&mu_);
  auto it = ops_.find(AsAbsl(name));
  if (it != ops_.end()) return it->second->def.get();
  std::vector<std::pair<int, std::string>> close;
  for (const auto& [n, e] : ops_) {
    int d = EditDistance(name, n);
    if (d <= 3 || n.find(name) != std::string::npos || name.find(n) != std::string_view::npos) {
      close.emplace_back(d, n);
    }
  }
  std::sort(close.begin(), close.end());
  std::vector<std::string> names;
  for (size_t i = 0; i < close.size() && i < 5; ++i) names.push_back(close[i].second);
  return absl::NotFoundError(
      absl::StrCat("unknown op '", AsAbsl(name), "'",
                   names.empty() ? "" : "; did you mean: ", absl::StrJoin(names, ", "), "?"));
}

absl::StatusOr<KernelDef> OpRegistry::FindKernel(const OpDef& op, std::string_view platform) const {
  MutexLock lock(&mu_);
  auto it = by_def_.find(&op);
  if (it != by_def_.end()) {
    for (const auto& [name, k] : it->second->kernels) {
      if (name == platform) return k;
    }
  }
  std::vector<std::string> have;
  if (it != by_def_.end()) {
    for (const auto& [name, k] : it->second->kernels) have.push_back(name);
  }
  return absl::UnimplementedError(absl::StrCat(
      "op '", op.name(), "' has no kernel for platform '", AsAbsl(platform),
      "'; platforms with one: ", have.empty() ? "none" : absl::StrJoin(have, ", "),
      " (host fallback is opt-in: InvokeOptions::host_fallback or RILL_OPS_HOST_FALLBACK=1)"));
}

std::vector<std::string> OpRegistry::KernelPlatforms(const OpDef& op) const {
  MutexLock lock(&mu_);
  std::vector<std::string> out;
  auto it = by_def_.find(&op);
  if (it != by_def_.end()) {
    for (const auto& [name, k] : it->second->kernels) out.push_back(name);
  }
  return out;
}

std::vector<std::string> OpRegistry::OpNames() const {
  MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [n, e] : ops_) out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace rill::ops
