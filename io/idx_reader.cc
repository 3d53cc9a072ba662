#include "rill/io/idx_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "rill/base/checked_math.h"
#include "rill/base/status_macros.h"
#include "rill/base/untrusted_file.h"

namespace rill::io {
namespace {

// Payload bytes read per gzread call; the vector grows as data arrives.
constexpr uint64_t kChunk = uint64_t{1} << 20;
constexpr char kKind[] = "IDX file";

const char* IdxTypeName(uint8_t type) {
  switch (type) {
    case 0x08:
      return "unsigned byte";
    case 0x09:
      return "signed byte";
    case 0x0B:
      return "int16";
    case 0x0C:
      return "int32";
    case 0x0D:
      return "float32";
    case 0x0E:
      return "float64";
    default:
      return "not an IDX type";
  }
}

std::string DimsString(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

// One open IDX file: the gzFile, and errors that name the file. Closes the
// file on destruction.
class IdxFile {
 public:
  explicit IdxFile(const std::string& path) : path_(path) {}
  ~IdxFile() {
    if (file_ != nullptr) gzclose(file_);
  }
  IdxFile(const IdxFile&) = delete;
  IdxFile& operator=(const IdxFile&) = delete;

  absl::Status Open();
  // Reads up to `len` bytes; fewer only at the end of the data. DataLoss
  // when zlib reports an error (a corrupt or cut gzip stream, a read error);
  // `at` says where, for the message.
  absl::StatusOr<uint64_t> Read(void* buf, uint64_t len, std::string_view at);

  absl::Status Error(absl::StatusCode code, std::string_view what) const {
    return absl::Status(code, absl::StrCat("IDX file '", path_, "': ", AsAbsl(what)));
  }

  const std::string& path() const { return path_; }
  // The file's length on disk (after Open).
  uint64_t file_size() const { return file_size_; }
  // Whether the file is read as it is (not gzip-compressed); valid after
  // the first Read.
  bool raw() const { return gzdirect(file_) == 1; }

 private:
  const std::string path_;
  gzFile file_ = nullptr;
  uint64_t file_size_ = 0;
};

absl::Status IdxFile::Open() {
  // Refuses what is not a regular file (a directory, a device, a FIFO)
  // before zlib reads from it.
  absl::StatusOr<uint64_t> size = UntrustedFileSize(kKind, path_);
  if (!size.ok()) {
    if (size.status().code() == absl::StatusCode::kNotFound) {
      return Error(absl::StatusCode::kNotFound, "not found");
    }
    return size.status();
  }
  file_size_ = *size;
  const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    const std::string why = absl::StrCat("cannot open (", std::strerror(err), ")");
    if (err == ENOENT || err == ENOTDIR) return Error(absl::StatusCode::kNotFound, "not found");
    if (err == EACCES || err == EPERM) return Error(absl::StatusCode::kPermissionDenied, why);
    return Error(absl::StatusCode::kUnavailable, why);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {  // Replaced since it was checked.
    ::close(fd);
    return Error(absl::StatusCode::kInvalidArgument, "is not a regular file");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  file_ = gzdopen(fd, "rb");
  if (file_ == nullptr) {
    ::close(fd);
    return Error(absl::StatusCode::kResourceExhausted, "zlib could not allocate its state");
  }
  gzbuffer(file_, 1 << 17);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> IdxFile::Read(void* buf, uint64_t len, std::string_view at) {
  uint64_t got = 0;
  char* dst = static_cast<char*>(buf);
  while (got < len) {
    const unsigned ask = static_cast<unsigned>(std::min<uint64_t>(len - got, INT_MAX));
    const int n = gzread(file_, dst + got, ask);
    if (n > 0) got += static_cast<uint64_t>(n);
    if (n == static_cast<int>(ask)) continue;
    int zerr = Z_OK;
    const char* msg = gzerror(file_, &zerr);
    if (zerr == Z_OK) break;  // The end of the data.
    const std::string detail = zerr == Z_ERRNO ? std::strerror(errno) : (msg ? msg : "unknown");
    if (zerr == Z_ERRNO) {
      return Error(absl::StatusCode::kDataLoss,
                   absl::StrCat("read error in ", AsAbsl(at), ": ", detail));
    }
    if (zerr == Z_MEM_ERROR) {
      return Error(absl::StatusCode::kResourceExhausted, absl::StrCat("zlib: ", detail));
    }
    if (zerr == Z_BUF_ERROR) {  // gzread's "unexpected end of file".
      return Error(absl::StatusCode::kDataLoss,
                   absl::StrCat("truncated gzip stream in ", AsAbsl(at), " (", detail, ")"));
    }
    return Error(absl::StatusCode::kDataLoss,
                 absl::StrCat("corrupt gzip stream in ", AsAbsl(at), " (", detail, ")"));
  }
  return got;
}

// The dimensions, after the magic has been checked. Overflow-checked.
absl::StatusOr<std::vector<int64_t>> ReadDims(IdxFile& file, int ndims, int64_t* total) {
  uint8_t raw[4 * kMaxIdxDims];
  const uint64_t want = 4 * static_cast<uint64_t>(ndims);
  RILL_ASSIGN_OR_RETURN(uint64_t got, file.Read(raw, want, "the header"));
  if (got < want) {
    return file.Error(absl::StatusCode::kDataLoss,
                      absl::StrCat("truncated header: ", 4 + got, " of ", 4 + want, " bytes (",
                                   ndims, " dimensions)"));
  }
  std::vector<int64_t> dims(ndims);
  CheckedInt<int64_t> product = 1;
  for (int i = 0; i < ndims; ++i) {
    const uint8_t* b = raw + 4 * i;
    dims[i] = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | int64_t{b[3]};
    product *= dims[i];
  }
  for (int i = 0; i < ndims; ++i) {
    if (dims[i] == 0) {
      return file.Error(absl::StatusCode::kInvalidArgument,
                        absl::StrCat("dimension ", i, " of ", DimsString(dims),
                                     " is 0: an IDX file must hold at least one element"));
    }
  }
  if (!product.ok()) {
    return file.Error(absl::StatusCode::kInvalidArgument,
                      absl::StrCat("dimensions ", DimsString(dims),
                                   " overflow: their product does not fit in 63 bits"));
  }
  *total = product.value();
  return dims;
}

// Reads exactly `total` payload bytes, then checks that nothing follows.
// The claim is checked before anything is allocated for it: against the
// file's length when it is stored raw, and against the allocation cap
// (FileBudget) whatever it is stored as, so that a small gzip file cannot
// make the reader allocate what it claims or inflates to.
absl::Status ReadPayload(IdxFile& file, const std::vector<int64_t>& dims, int64_t total,
                         std::vector<uint8_t>* data) {
  const uint64_t want = static_cast<uint64_t>(total);
  const uint64_t header = 4 + 4 * static_cast<uint64_t>(dims.size());
  if (file.raw()) {
    const uint64_t left = file.file_size() > header ? file.file_size() - header : 0;
    RILL_RETURN_IF_ERROR(CheckFitsInFile(
        kKind, file.path(), absl::StrCat("the payload of dimensions ", DimsString(dims)), want, 1,
        left));
  }
  RILL_ASSIGN_OR_RETURN(FileBudget budget, FileBudget::Create(kKind, file.path()));
  RILL_RETURN_IF_ERROR(
      budget.Take(absl::StrCat("the payload of dimensions ", DimsString(dims)), want));
  uint64_t done = 0;
  while (done < want) {
    const uint64_t chunk = std::min(kChunk, want - done);
    data->resize(done + chunk);
    RILL_ASSIGN_OR_RETURN(
        uint64_t got,
        file.Read(data->data() + done, chunk, absl::StrCat("the payload after ", done, " bytes")));
    done += got;
    if (got < chunk) {
      return file.Error(absl::StatusCode::kDataLoss,
                        absl::StrCat("truncated payload: ", done, " of ", want,
                                     " bytes for dimensions ", DimsString(dims)));
    }
  }
  // Reading past the payload also makes zlib check the gzip trailer (CRC).
  // One buffer is enough to tell: a stream that inflates on and on is not
  // inflated to its end.
  char scratch[4096];
  RILL_ASSIGN_OR_RETURN(uint64_t trailing,
                        file.Read(scratch, sizeof(scratch), "the bytes after the payload"));
  if (trailing > 0) {
    return file.Error(absl::StatusCode::kDataLoss,
                      absl::StrCat(trailing == sizeof(scratch) ? "at least " : "", trailing,
                                   " trailing bytes after the ", want,
                                   "-byte payload for dimensions ", DimsString(dims)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<IdxArray> ReadIdx(const std::string& path) {
  IdxFile file(path);
  RILL_RETURN_IF_ERROR(file.Open());
  uint8_t magic[4];
  RILL_ASSIGN_OR_RETURN(uint64_t got, file.Read(magic, 4, "the header"));
  if (got < 4) {
    return file.Error(absl::StatusCode::kDataLoss,
                      absl::StrCat("truncated header: ", got, " of 4 magic bytes"));
  }
  if (magic[0] != 0 || magic[1] != 0) {
    return file.Error(
        absl::StatusCode::kInvalidArgument,
        absl::StrFormat("wrong magic %02x %02x %02x %02x: the first two bytes must be zero "
                        "(not an IDX file)",
                        magic[0], magic[1], magic[2], magic[3]));
  }
  if (magic[2] != 0x08) {
    return file.Error(
        absl::StatusCode::kInvalidArgument,
        absl::StrFormat("unsupported element type 0x%02x (%s): only 0x08 (unsigned byte) is "
                        "supported",
                        magic[2], IdxTypeName(magic[2])));
  }
  const int ndims = magic[3];
  if (ndims == 0 || ndims > kMaxIdxDims) {
    return file.Error(absl::StatusCode::kInvalidArgument,
                      absl::StrCat(ndims, " dimensions: 1 to ", kMaxIdxDims, " are supported"));
  }
  IdxArray out;
  int64_t total = 0;
  RILL_ASSIGN_OR_RETURN(out.dims, ReadDims(file, ndims, &total));
  RILL_RETURN_IF_ERROR(ReadPayload(file, out.dims, total, &out.data));
  return out;
}

}  // namespace rill::io
