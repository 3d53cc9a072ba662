#include "rill/base/untrusted_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "rill/base/checked_math.h"
#include "rill/base/env_settings.h"
#include "rill/base/status_macros.h"

namespace rill {
namespace {

constexpr char kCapVariable[] = "RILL_MAX_FILE_BYTES";

std::atomic<uint64_t> cap_override{0};

absl::Status FileError(absl::StatusCode code, std::string_view kind, std::string_view file,
                       std::string_view what) {
  return absl::Status(code, absl::StrCat(AsAbsl(kind), " '", AsAbsl(file), "' ", AsAbsl(what)));
}

// Opens `path` read-only and checks that it is a regular file; the caller
// closes the descriptor.
absl::StatusOr<int> OpenRegular(std::string_view kind, std::string_view path, uint64_t* size) {
  const std::string p(path);
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    const std::string why = absl::StrCat("cannot be opened: ", std::strerror(err));
    if (err == ENOENT || err == ENOTDIR)
      return FileError(absl::StatusCode::kNotFound, kind, path, why);
    if (err == EACCES || err == EPERM)
      return FileError(absl::StatusCode::kPermissionDenied, kind, path, why);
    if (err == EISDIR)
      return FileError(absl::StatusCode::kInvalidArgument, kind, path,
                       "is a directory, not a file");
    return FileError(absl::StatusCode::kUnavailable, kind, path, why);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return FileError(absl::StatusCode::kUnavailable, kind, path,
                     absl::StrCat("cannot be examined: ", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return FileError(absl::StatusCode::kInvalidArgument, kind, path,
                     S_ISDIR(st.st_mode) ? "is a directory, not a file"
                                         : "is not a regular file (a device, a pipe or a socket)");
  }
  // Back to blocking reads (O_NONBLOCK only kept open() off a FIFO).
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

}  // namespace

absl::StatusOr<uint64_t> ParseFileAllocationCap(std::string_view text) {
  const std::optional<int64_t> bytes = ParseByteCount(text);
  if (!bytes.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kCapVariable, "='", AsAbsl(text),
                     "' is not a size: give a positive byte count, optionally with a K, M, G or T "
                     "suffix (powers of 1024), e.g. 8G"));
  }
  return static_cast<uint64_t>(*bytes);
}

absl::StatusOr<uint64_t> FileAllocationCap() {
  if (const uint64_t o = cap_override.load(std::memory_order_relaxed); o != 0) return o;
  const char* env = std::getenv(kCapVariable);
  if (env == nullptr) return kDefaultFileAllocationCap;
  return ParseFileAllocationCap(env);
}

void SetFileAllocationCap(uint64_t bytes) { cap_override.store(bytes, std::memory_order_relaxed); }

absl::Status CheckFitsInFile(std::string_view kind, std::string_view file, std::string_view what,
                             uint64_t count, uint64_t elem_size, uint64_t available) {
  const std::optional<uint64_t> bytes = CheckedMul<uint64_t>(count, elem_size);
  if (bytes.has_value() && *bytes <= available) return absl::OkStatus();
  return FileError(absl::StatusCode::kInvalidArgument, kind, file,
                   absl::StrCat("is malformed: ", AsAbsl(what), " claims ", count, " x ", elem_size,
                                " bytes, but only ", available, " bytes of the file are left"));
}

absl::StatusOr<FileBudget> FileBudget::Create(std::string_view kind, std::string_view file) {
  RILL_ASSIGN_OR_RETURN(const uint64_t cap, FileAllocationCap());
  return FileBudget(kind, file, cap);
}

FileBudget::FileBudget(std::string_view kind, std::string_view file, uint64_t cap)
    : kind_(kind), file_(file), cap_(cap) {}

absl::Status FileBudget::Take(std::string_view what, uint64_t bytes) {
  const std::optional<uint64_t> total = CheckedAdd<uint64_t>(used_, bytes);
  if (total.has_value() && *total <= cap_) {
    used_ = *total;
    return absl::OkStatus();
  }
  return FileError(absl::StatusCode::kResourceExhausted, kind_, file_,
                   absl::StrCat("would make Rill allocate ",
                                total.has_value() ? absl::StrCat(*total) : "more than 2^64",
                                " bytes (", AsAbsl(what), "), past the cap of ", cap_,
                                " bytes one file may make it allocate (set ", kCapVariable,
                                " or call rill::SetFileAllocationCap to raise it)"));
}

absl::StatusOr<uint64_t> UntrustedFileSize(std::string_view kind, std::string_view path) {
  uint64_t size = 0;
  RILL_ASSIGN_OR_RETURN(const int fd, OpenRegular(kind, path, &size));
  ::close(fd);
  return size;
}

absl::StatusOr<std::string> ReadUntrustedFile(std::string_view kind, std::string_view path,
                                              bool allow_empty) {
  uint64_t size = 0;
  RILL_ASSIGN_OR_RETURN(const int fd, OpenRegular(kind, path, &size));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (size == 0 && !allow_empty)
    return FileError(absl::StatusCode::kInvalidArgument, kind, path, "is empty");
  RILL_ASSIGN_OR_RETURN(FileBudget budget, FileBudget::Create(kind, path));
  RILL_RETURN_IF_ERROR(budget.Take("its length", size));
  std::string bytes(size, '\0');
  uint64_t got = 0;
  while (got < size) {
    const ssize_t n = ::read(fd, bytes.data() + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return FileError(absl::StatusCode::kDataLoss, kind, path,
                       absl::StrCat("could not be read: ", std::strerror(errno)));
    }
    if (n == 0) break;  // Shrank while read: keep what there is.
    got += static_cast<uint64_t>(n);
  }
  bytes.resize(got);
  return bytes;
}

}  // namespace rill
