// Links every target of an installed Rill (tests/consumer_all/CMakeLists.txt
// defines RILL_HAVE_<COMPONENT> for each) and touches each: every plugin
// component must have registered itself for its platform, every backend
// must be registered (with or without devices), and every layer library
// runs one small call (layers.cc). Prints OK and exits 0, or prints what
// failed and exits 1.
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_split.h"
#include "rill/rill.h"

namespace rill_consumer_all {
absl::Status TouchLayers();  // layers.cc
}  // namespace rill_consumer_all

namespace {

// Plugin components and how they register: (component, registered name,
// platform, kind). The OpenCL Philox registers as "philox", like the host's.
struct PluginComponent {
  const char* component;
  const char* name;
  const char* platform;
  rill::PluginKind kind;
};
constexpr PluginComponent kPlugins[] = {
    {"openblas", "openblas", "host", rill::PluginKind::kBlas},
    {"blis", "blis", "host", rill::PluginKind::kBlas},
    {"onednn", "onednn", "host", rill::PluginKind::kDnn},
    {"philox", "philox", "host", rill::PluginKind::kRng},
    {"fftw", "fftw", "host", rill::PluginKind::kFft},
    {"clblast", "clblast", "opencl", rill::PluginKind::kBlas},
    {"philox_cl", "philox", "opencl", rill::PluginKind::kRng},
    {"clfft", "clfft", "opencl", rill::PluginKind::kFft},
    {"cublas", "cublas", "cuda", rill::PluginKind::kBlas},
    {"cudnn", "cudnn", "cuda", rill::PluginKind::kDnn},
    {"curand", "curand", "cuda", rill::PluginKind::kRng},
    {"cufft", "cufft", "cuda", rill::PluginKind::kFft},
    {"mpi", "mpi", "host", rill::PluginKind::kCollectives},
    {"nccl", "nccl", "cuda", rill::PluginKind::kCollectives},
};
constexpr std::string_view kBackends[] = {"host", "opencl", "cuda"};
constexpr std::string_view kLayers[] = {"core",       "engine", "tensor", "ops",     "graph",
                                        "graph_onnx", "io",     "dist",   "kvstore", "train"};

template <typename List>
bool Contains(const List& list, std::string_view name) {
  for (const auto& item : list) {
    if (std::string_view(item) == name) return true;
  }
  return false;
}

int Run() {
  int failures = 0;
  auto fail = [&](const std::string& what) {
    std::fprintf(stderr, "rill_consumer_all: FAILED: %s\n", what.c_str());
    ++failures;
  };

  const std::vector<rill::PluginRegistry::Entry> entries = rill::PluginRegistry::Default().List();
  std::printf("rill_consumer_all: %zu plugin registrations:\n", entries.size());
  for (const auto& e : entries) {
    std::printf("  %-7s %-4s %-10s%s\n", e.platform->name, rill::PluginKindName(e.kind),
                e.name.c_str(), e.is_default ? " (default)" : "");
  }

  std::vector<std::string> components = absl::StrSplit(RILL_COMPONENTS, ',');
  for (const std::string& comp : components) {
    bool checked = false;
    for (const PluginComponent& p : kPlugins) {
      if (comp != p.component) continue;
      checked = true;
      bool registered = false;
      for (const auto& e : entries) {
        registered |= e.name == p.name && std::string_view(e.platform->name) == p.platform &&
                      e.kind == p.kind;
      }
      if (!registered) {
        fail("rill::" + comp + " is linked but no " + rill::PluginKindName(p.kind) + " plugin '" +
             p.name + "' is registered for platform " + p.platform);
      }
    }
    if (Contains(kBackends, comp)) {
      checked = true;
      auto platform = rill::PlatformManager::Default().PlatformWithName(comp);
      if (!platform.ok()) {
        fail("rill::" + comp +
             " is linked but its platform is not registered: " + platform.status().ToString());
      } else {
        std::printf("rill_consumer_all: platform %s registered, %d device(s)\n", comp.c_str(),
                    (*platform)->VisibleDeviceCount());
      }
    }
    checked |= Contains(kLayers, comp);
    if (!checked) {
      std::printf("rill_consumer_all: rill::%s linked (no check for it here)\n", comp.c_str());
    }
  }

  if (absl::Status s = rill_consumer_all::TouchLayers(); !s.ok()) fail(s.ToString());
  if (failures != 0) return 1;
  std::printf("rill_consumer_all: %zu components linked and checked\nOK\n", components.size());
  return 0;
}

}  // namespace

int main() { return Run(); }
