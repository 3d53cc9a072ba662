// A libFuzzer target for the IDX reader (io/idx_reader.h) and dataset
// loading (io/dataset.h): the input's first byte picks how the rest is
// stored (bit 0: gzip-compressed by zlib, else as it is; a raw input may
// itself be a gzip stream) and, bit 1, whether it is loaded as the images
// file of a dataset (with a labels file that matches when the images read).
// Any file may be refused; none may crash, hang, allocate past the cap or
// read out of bounds (tests/fuzz/README.md).

#include <unistd.h>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rill/base/untrusted_file.h"
#include "rill/io/dataset.h"
#include "rill/io/idx_reader.h"

namespace {

// What one input may make the reader allocate: far below -rss_limit_mb.
constexpr uint64_t kCap = uint64_t{64} << 20;

std::string TempPath(const char* name) {
  return "/tmp/rill_idx_fuzz." + std::to_string(::getpid()) + "." + name;
}

void WriteFile(const std::string& path, const uint8_t* data, size_t size, bool gzip) {
  if (gzip) {
    gzFile f = gzopen(path.c_str(), "wb");
    if (f == nullptr) return;
    if (size > 0) gzwrite(f, data, static_cast<unsigned>(size));
    gzclose(f);
    return;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return;
  if (size > 0) std::fwrite(data, 1, size, f);
  std::fclose(f);
}

// A labels file of `n` labels, i % 10.
void WriteLabels(const std::string& path, int64_t n) {
  std::vector<uint8_t> b{0,
                         0,
                         8,
                         1,
                         static_cast<uint8_t>(n >> 24),
                         static_cast<uint8_t>(n >> 16),
                         static_cast<uint8_t>(n >> 8),
                         static_cast<uint8_t>(n)};
  for (int64_t i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(i % 10));
  WriteFile(path, b.data(), b.size(), /*gzip=*/false);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  rill::SetFileAllocationCap(kCap);
  const uint8_t mode = data[0];
  const std::string images = TempPath("images");
  WriteFile(images, data + 1, size - 1, (mode & 1) != 0);
  absl::StatusOr<rill::io::IdxArray> got = rill::io::ReadIdx(images);
  if (got.ok()) {
    // What it read is what it claims.
    uint64_t n = 1;
    for (int64_t d : got->dims) n *= static_cast<uint64_t>(d);
    if (n != got->data.size()) __builtin_trap();
    if ((mode & 2) != 0 && got->dims.size() == 3 && got->dims[0] <= 100000) {
      const std::string labels = TempPath("labels");
      WriteLabels(labels, got->dims[0]);
      absl::StatusOr<rill::io::Dataset> ds =
          rill::io::LoadIdxDataset(images, labels, /*limit=*/(mode >> 2) % 4);
      if (ds.ok() && (ds->images.size() != static_cast<uint64_t>(ds->size * ds->rows * ds->cols) ||
                      ds->labels.size() != static_cast<uint64_t>(ds->size))) {
        __builtin_trap();
      }
      std::remove(labels.c_str());
    }
  }
  std::remove(images.c_str());
  return 0;
}
