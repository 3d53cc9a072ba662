#ifndef RILL_IO_TESTING_IDX_TESTING_H_
#define RILL_IO_TESTING_IDX_TESTING_H_

// Helpers for the io tests: a temporary directory, IDX bytes, and writing
// them raw or gzip-compressed (zlib's gzopen/gzwrite).

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace rill::io::testing {

using Bytes = std::vector<uint8_t>;

// A fresh directory, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "rill_io_XXXXXX").string();
    const char* made = mkdtemp(templ.data());
    EXPECT_NE(made, nullptr) << "mkdtemp failed";
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// An IDX file's bytes: magic {0, 0, type, dims.size()}, big-endian dims, payload.
inline Bytes IdxBytes(const std::vector<uint32_t>& dims, const Bytes& payload,
                      uint8_t type = 0x08) {
  Bytes out{0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    out.push_back(static_cast<uint8_t>(d >> 24));
    out.push_back(static_cast<uint8_t>(d >> 16));
    out.push_back(static_cast<uint8_t>(d >> 8));
    out.push_back(static_cast<uint8_t>(d));
  }
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

inline void WriteRaw(const std::string& path, const Bytes& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << "writing " << path;
}

inline void WriteGzip(const std::string& path, const Bytes& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << "gzopen " << path;
  if (!bytes.empty()) {
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
  }
  ASSERT_EQ(gzclose(f), Z_OK);
}

// Writes gzip-compressed when `gzip`, raw otherwise.
inline void WriteIdx(const std::string& path, const Bytes& bytes, bool gzip) {
  if (gzip) {
    WriteGzip(path, bytes);
  } else {
    WriteRaw(path, bytes);
  }
}

inline Bytes ReadBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace rill::io::testing

#endif  // RILL_IO_TESTING_IDX_TESTING_H_
