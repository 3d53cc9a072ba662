#include "rill/ops/op_registry.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/logging.h"
#include "rill/base/status_macros.h"
#include "rill/executor/stream_executor.h"
#include "rill/platform/platform.h"

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

uint32_t PluginBit(PluginKind kind) { return 1u << static_cast<int>(kind); }

bool SameNeed(const KernelNeeds& a, const KernelNeeds& b) {
  return a.kind == b.kind && a.platform == b.platform && a.plugins == b.plugins && a.code == b.code;
}

std::string UnmetKind(const KernelNeeds& needs, StreamExecutor* exec);

std::string UnmetPlugins(uint32_t plugins, StreamExecutor* exec) {
  for (PluginKind kind : kAllPluginKinds) {
    if ((plugins & PluginBit(kind)) == 0) continue;
    absl::StatusOr<PluginInterface*> p = exec->GetPlugin(kind);
    if (!p.ok()) return std::string(p.status().message());
  }
  return "";
}

// Empty when `exec` meets `needs`; otherwise why not.
std::string Unmet(const KernelNeeds& needs, StreamExecutor* exec) {
  std::string kind = UnmetKind(needs, exec);
  return kind.empty() ? UnmetPlugins(needs.plugins, exec) : kind;
}

std::string UnmetKind(const KernelNeeds& needs, StreamExecutor* exec) {
  switch (needs.kind) {
    case KernelNeeds::Kind::kPlatform:
      if (exec->platform()->Name() == needs.platform) return "";
      return absl::StrCat(exec->DebugName(), " is not of that platform");
    case KernelNeeds::Kind::kHostMemory: {
      absl::Status s = exec->Supports(Feature::kHostAddressableMemory);
      return s.ok() ? "" : std::string(s.message());
    }
    case KernelNeeds::Kind::kDeviceCode: {
      absl::Status s = exec->Supports(Feature::kKernelLaunch);
      if (!s.ok()) return std::string(s.message());
      if (needs.code == nullptr || !exec->CanLoad(*needs.code)) {
        return absl::StrCat(exec->DebugName(), " loads none of those forms");
      }
      return "";
    }
    case KernelNeeds::Kind::kLibraries:
      return "";  // The plugins are checked for every kind.
  }
  return "unknown need";
}

int Rank(KernelNeeds::Kind kind) { return static_cast<int>(kind); }

}  // namespace

KernelNeeds KernelNeeds::Platform(std::string_view name) {
  KernelNeeds n;
  n.kind = Kind::kPlatform;
  n.platform = std::string(name);
  return n;
}

KernelNeeds KernelNeeds::HostMemory() { return KernelNeeds{}; }

KernelNeeds KernelNeeds::And(std::initializer_list<PluginKind> kinds) && {
  for (PluginKind k : kinds) plugins |= PluginBit(k);
  return std::move(*this);
}

KernelNeeds KernelNeeds::DeviceCode(std::shared_ptr<const KernelSpec> code) {
  KernelNeeds n;
  n.kind = Kind::kDeviceCode;
  n.code = std::move(code);
  return n;
}

KernelNeeds KernelNeeds::Libraries(std::initializer_list<PluginKind> kinds) {
  KernelNeeds n;
  n.kind = Kind::kLibraries;
  for (PluginKind k : kinds) n.plugins |= PluginBit(k);
  return n;
}

std::string KernelNeeds::ToString() const {
  std::string base = KindString();
  if (kind == Kind::kLibraries || plugins == 0) return base;
  std::vector<std::string> kinds;
  for (PluginKind k : kAllPluginKinds) {
    if (plugins & PluginBit(k)) kinds.push_back(PluginKindName(k));
  }
  return absl::StrCat(base, " and libraries ", absl::StrJoin(kinds, "+"));
}

std::string KernelNeeds::KindString() const {
  switch (kind) {
    case Kind::kPlatform:
      return absl::StrCat("platform '", platform, "'");
    case Kind::kHostMemory:
      return "host memory";
    case Kind::kDeviceCode: {
      std::vector<std::string> forms;
      if (code != nullptr) {
        if (!code->opencl_source().empty()) forms.push_back("OpenCL C");
        if (!code->cuda_fatbin().empty()) forms.push_back("CUDA fatbin");
        if (!code->cuda_ptx().empty()) forms.push_back("CUDA PTX");
        if (code->has_host_function()) forms.push_back("host function");
      }
      return absl::StrCat("device code (", forms.empty() ? "none" : absl::StrJoin(forms, ", "),
                          ")");
    }
    case Kind::kLibraries: {
      std::vector<std::string> kinds;
      for (PluginKind k : kAllPluginKinds) {
        if (plugins & PluginBit(k)) kinds.push_back(PluginKindName(k));
      }
      return absl::StrCat("libraries ", absl::StrJoin(kinds, "+"));
    }
  }
  return "?";
}

// One choice of kernels for one executor, made under `generation`.
struct OpRegistry::Resolved {
  uint64_t generation = 0;
  KernelChoice choice;
};

struct OpRegistry::Entry {
  static constexpr uint32_t kFast = 64;  // Executors with serial() below: lock-free.

  const OpRegistry* owner = nullptr;
  std::unique_ptr<OpDef> def;
  std::vector<std::pair<KernelNeeds, KernelDef>> kernels;  // Guarded by owner->mu_.
  std::array<std::atomic<const Resolved*>, kFast> fast{};
  absl::flat_hash_map<uint32_t, const Resolved*> slow;  // serial() >= kFast; owner->mu_.
  std::vector<std::unique_ptr<Resolved>> made;          // Every choice made; owner->mu_.
};

OpRegistry::OpRegistry() = default;
OpRegistry::~OpRegistry() = default;

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry;
    RegisterBuiltinOps(*r);
    for (const absl::Status& s : r->registration_errors()) {
      RILL_LOG(ERROR) << "built-in op registration failed: " << s;
    }
    return r;
  }();
  return *registry;
}

void OpRegistry::Check(absl::Status status) {
  if (!status.ok()) errors_.push_back(std::move(status));
}

absl::Status OpRegistry::Register(OpDef def) {
  MutexLock lock(&mu_);
  auto& slot = ops_[def.name()];
  if (slot != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("op '", def.name(), "' is already registered"));
  }
  slot = std::make_unique<Entry>();
  slot->owner = this;
  slot->def = std::make_unique<OpDef>(std::move(def));
  slot->def->registry_entry_ = slot.get();
  return absl::OkStatus();
}

absl::Status OpRegistry::RegisterKernel(std::string_view op, KernelNeeds needs, KernelDef kernel) {
  if (kernel.fn == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("null kernel for op '", AsAbsl(op), "'"));
  }
  if ((needs.kind == KernelNeeds::Kind::kPlatform && needs.platform.empty()) ||
      (needs.kind == KernelNeeds::Kind::kDeviceCode && needs.code == nullptr) ||
      (needs.kind == KernelNeeds::Kind::kLibraries && needs.plugins == 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel for op '", AsAbsl(op), "' needs nothing usable: ", needs.ToString()));
  }
  MutexLock lock(&mu_);
  auto it = ops_.find(AsAbsl(op));
  if (it == ops_.end()) {
    return absl::NotFoundError(absl::StrCat("RegisterKernel: no op '", AsAbsl(op), "'"));
  }
  auto& kernels = it->second->kernels;
  auto same = std::find_if(kernels.begin(), kernels.end(),
                           [&](const auto& k) { return SameNeed(k.first, needs); });
  if (same != kernels.end()) {
    same->second = kernel;
  } else {
    kernels.emplace_back(std::move(needs), kernel);
  }
  generation_.fetch_add(1, std::memory_order_acq_rel);  // Every executor chooses again.
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

absl::StatusOr<const OpRegistry::Resolved*> OpRegistry::Resolve(Entry& e, StreamExecutor* exec) {
  const OpRegistry& r = *e.owner;
  std::vector<std::pair<KernelNeeds, KernelDef>> kernels;
  uint64_t generation;
  {
    MutexLock lock(&r.mu_);
    kernels = e.kernels;
    generation = r.generation_.load(std::memory_order_acquire);
  }
  // Asking the executor (plugins are created on first use) happens outside
  // the lock.
  std::stable_sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) {
    return Rank(a.first.kind) < Rank(b.first.kind);
  });
  auto resolved = std::make_unique<Resolved>();
  resolved->generation = generation;
  std::vector<std::string> why;
  for (const auto& [needs, kernel] : kernels) {
    std::string unmet = Unmet(needs, exec);
    if (unmet.empty()) {
      resolved->choice.push_back(kernel);
    } else {
      why.push_back(absl::StrCat(needs.ToString(), ": ", unmet));
    }
  }
  if (resolved->choice.empty()) {
    return absl::UnimplementedError(absl::StrCat(
        "op '", e.def->name(), "' has no kernel for ", exec->DebugName(), " (platform '",
        exec->platform()->Name(), "'); ",
        why.empty() ? "it has no kernels at all"
                    : absl::StrCat("its kernels need ", absl::StrJoin(why, "; ")),
        ". A backend gets host kernels by declaring Feature::kHostAddressableMemory, library "
        "kernels by having the plugins, or runs the op on its Platform::OpFallback() device"));
  }
  MutexLock lock(&r.mu_);
  const Resolved* out = resolved.get();
  e.made.push_back(std::move(resolved));
  const uint32_t serial = exec->serial();
  if (serial < Entry::kFast) {
    e.fast[serial].store(out, std::memory_order_release);
  } else {
    e.slow[serial] = out;
  }
  return out;
}

absl::StatusOr<const KernelChoice*> OpRegistry::Choose(const OpDef& op, StreamExecutor* exec) {
  auto* e = static_cast<Entry*>(op.registry_entry_);
  if (e == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("op '", op.name(), "' is not registered (OpRegistry::Register)"));
  }
  const uint64_t generation = e->owner->generation_.load(std::memory_order_acquire);
  const uint32_t serial = exec->serial();
  const Resolved* r = nullptr;
  if (serial < Entry::kFast) {
    r = e->fast[serial].load(std::memory_order_acquire);
  } else {
    MutexLock lock(&e->owner->mu_);
    auto it = e->slow.find(serial);
    if (it != e->slow.end()) r = it->second;
  }
  if (r == nullptr || r->generation != generation) {
    RILL_ASSIGN_OR_RETURN(r, Resolve(*e, exec));
  }
  return &r->choice;
}

absl::StatusOr<KernelDef> OpRegistry::FindKernel(const OpDef& op, StreamExecutor* exec,
                                                 absl::Span<const DType> dtypes) {
  RILL_ASSIGN_OR_RETURN(const KernelChoice* choice, Choose(op, exec));
  for (const KernelDef& k : *choice) {
    bool takes_all = true;
    for (DType t : dtypes) takes_all &= k.dtypes == 0 || (k.dtypes & DTypeBit(t)) != 0;
    if (takes_all) return k;
  }
  std::vector<std::string> names;
  for (DType t : dtypes) names.push_back(DTypeName(t));
  return absl::UnimplementedError(absl::StrCat("op '", op.name(), "' on ", exec->DebugName(),
                                               " has no kernel for inputs of type ",
                                               absl::StrJoin(names, ", ")));
}

std::vector<KernelNeeds> OpRegistry::KernelNeedsOf(const OpDef& op) {
  std::vector<KernelNeeds> out;
  auto* e = static_cast<Entry*>(op.registry_entry_);
  if (e == nullptr) return out;
  MutexLock lock(&e->owner->mu_);
  for (const auto& [needs, k] : e->kernels) out.push_back(needs);
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
