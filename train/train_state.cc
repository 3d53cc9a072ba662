#include "rill/train/train_state.h"

#include <sys/stat.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "rill/base/checked_math.h"
#include "rill/base/status_macros.h"
#include "rill/base/untrusted_file.h"

namespace rill::train {
namespace {

constexpr char kMagic[8] = {'R', 'I', 'L', 'L', 'T', 'R', 'N', '1'};
constexpr size_t kHeaderBytes = sizeof(kMagic) + 4;  // Magic and version.
constexpr size_t kChecksumBytes = 8;
constexpr size_t kChunkBytes = 1 << 16;  // Read/write buffer; a multiple of 4.

// FNV-1a, 64 bits.
class Fnv1a64 {
 public:
  void Update(const unsigned char* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h_ = (h_ ^ p[i]) * 1099511628211ull;
  }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 14695981039346656037ull;
};

void PutLE(std::string* out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLE(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// The fields both sides check, so that we never write what we would refuse.
absl::Status CheckScalars(int64_t step, int64_t epoch, int64_t next_batch, int64_t world_size) {
  if (step < 0) return absl::InvalidArgumentError(absl::StrCat("step ", step, " is negative"));
  if (epoch < 0) return absl::InvalidArgumentError(absl::StrCat("epoch ", epoch, " is negative"));
  if (next_batch < 0) {
    return absl::InvalidArgumentError(absl::StrCat("next_batch ", next_batch, " is negative"));
  }
  if (world_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat("world_size ", world_size, " is below 1"));
  }
  return absl::OkStatus();
}

absl::Status CheckName(size_t index, std::string_view name) {
  if (name.empty() || name.size() > kMaxTrainStateNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat("tensor #", index, " has a name of ",
                                                   name.size(), " bytes (allowed: 1 to ",
                                                   kMaxTrainStateNameBytes, ")"));
  }
  return absl::OkStatus();
}

// The element count of tensor `name` of `shape`, checked so that its byte
// size fits in 64 bits.
absl::StatusOr<int64_t> ElementCount(std::string_view name, const std::vector<int64_t>& shape) {
  if (shape.size() > kMaxTrainStateRank) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", AsAbsl(name), "' has ", shape.size(),
                                                   " dimensions (at most ", kMaxTrainStateRank,
                                                   ")"));
  }
  CheckedInt<int64_t> bytes = sizeof(float);
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(absl::StrCat("tensor '", AsAbsl(name), "' has shape ",
                                                     ShapeString(shape), " with a negative size"));
    }
    bytes *= d;
  }
  RILL_ASSIGN_OR_RETURN(int64_t b, bytes.Get(absl::StrCat("tensor '", AsAbsl(name), "' of shape ",
                                                          ShapeString(shape))));
  return b / static_cast<int64_t>(sizeof(float));
}

absl::Status CheckState(const TrainState& s) {
  RILL_RETURN_IF_ERROR(CheckScalars(s.step, s.epoch, s.next_batch, s.world_size));
  if (s.model.size() > kMaxTrainStateModelBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the model description has ", s.model.size(),
                                                   " bytes (at most ", kMaxTrainStateModelBytes,
                                                   ")"));
  }
  if (s.tensors.size() > kMaxTrainStateTensors) {
    return absl::InvalidArgumentError(
        absl::StrCat(s.tensors.size(), " tensors (at most ", kMaxTrainStateTensors, ")"));
  }
  absl::flat_hash_set<std::string_view> names;
  for (size_t i = 0; i < s.tensors.size(); ++i) {
    const StateTensor& t = s.tensors[i];
    RILL_RETURN_IF_ERROR(CheckName(i, t.name));
    if (!names.insert(t.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("tensor name '", t.name, "' appears twice"));
    }
    RILL_ASSIGN_OR_RETURN(int64_t n, ElementCount(t.name, t.shape));
    if (static_cast<uint64_t>(n) != t.data.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", t.name, "' has shape ", ShapeString(t.shape), " (", n,
                       " elements) but ", t.data.size(), " data elements"));
    }
  }
  return absl::OkStatus();
}

// Buffers the encoded file, hashes it and writes it to `f` (borrowed for the
// writer's life). The first failing fwrite's errno is kept. Thread-compatible.
class Sink {
 public:
  explicit Sink(std::FILE* f) : f_(f) {}

  void U32(uint32_t v) { Put(v, 4); }
  void U64(uint64_t v) { Put(v, 8); }
  void Bytes(std::string_view s) {
    buf_.append(s);
    MaybeFlush();
  }
  void Floats(const std::vector<float>& data) {
    for (float x : data) Put(std::bit_cast<uint32_t>(x), 4);
  }
  // Writes what is buffered and the checksum; false (errno in err()) on failure.
  bool Finish() {
    Flush();
    std::string sum;
    PutLE(&sum, hash_.value(), 8);
    Write(sum);
    return ok_;
  }
  int err() const { return err_; }

 private:
  void Put(uint64_t v, int bytes) {
    PutLE(&buf_, v, bytes);
    MaybeFlush();
  }
  void MaybeFlush() {
    if (buf_.size() >= kChunkBytes) Flush();
  }
  void Flush() {
    hash_.Update(reinterpret_cast<const unsigned char*>(buf_.data()), buf_.size());
    Write(buf_);
    buf_.clear();
  }
  void Write(const std::string& bytes) {
    if (ok_ && std::fwrite(bytes.data(), 1, bytes.size(), f_) != bytes.size()) {
      ok_ = false;
      err_ = errno != 0 ? errno : EIO;
    }
  }

  std::FILE* f_;
  std::string buf_;
  Fnv1a64 hash_;
  bool ok_ = true;
  int err_ = 0;
};

void Encode(const TrainState& s, Sink* out) {
  out->Bytes(std::string_view(kMagic, sizeof(kMagic)));
  out->U32(kTrainStateVersion);
  out->U64(s.seed);
  out->U64(static_cast<uint64_t>(s.step));
  out->U32(static_cast<uint32_t>(s.epoch));
  out->U64(static_cast<uint64_t>(s.next_batch));
  out->U32(static_cast<uint32_t>(s.world_size));
  out->U32(static_cast<uint32_t>(s.model.size()));
  out->Bytes(s.model);
  out->U32(static_cast<uint32_t>(s.tensors.size()));
  for (const StateTensor& t : s.tensors) {
    out->U32(static_cast<uint32_t>(t.name.size()));
    out->Bytes(t.name);
    out->U32(static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape) out->U64(static_cast<uint64_t>(d));
    out->U64(t.data.size() * sizeof(float));
    out->Floats(t.data);
  }
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// Reads exactly `n` bytes from `f`: the errno error, or DataLoss when the
// file ends early (it shrank while we read it).
absl::Status ReadExact(std::FILE* f, void* dst, size_t n) {
  if (std::fread(dst, 1, n, f) == n) return absl::OkStatus();
  if (std::ferror(f)) return absl::ErrnoToStatus(errno, "read failed");
  return absl::DataLossError("the file ended early (did it shrink while being read?)");
}

// Reads the body between the header and the checksum, never past `end`,
// counting what it allocates against `budget`. Borrows `f` and `budget`.
// Thread-compatible.
class Source {
 public:
  Source(std::FILE* f, uint64_t pos, uint64_t end, FileBudget* budget)
      : f_(f), pos_(pos), end_(end), budget_(budget) {}

  // Records `bytes` about to be allocated for `what`.
  absl::Status Take(std::string_view what, uint64_t bytes) { return budget_->Take(what, bytes); }

  uint64_t remaining() const { return end_ - pos_; }

  // InvalidArgument unless `n` more bytes remain before the checksum.
  absl::Status Need(uint64_t n, std::string_view what) const {
    if (n <= remaining()) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(AsAbsl(what), " at byte ", pos_, " needs ", n,
                                                   " bytes but only ", remaining(),
                                                   " remain before the checksum"));
  }
  absl::Status Read(void* dst, uint64_t n, std::string_view what) {
    RILL_RETURN_IF_ERROR(Need(n, what));
    RILL_RETURN_IF_ERROR(ReadExact(f_, dst, n));
    pos_ += n;
    return absl::OkStatus();
  }
  absl::StatusOr<uint64_t> Uint(int bytes, std::string_view what) {
    unsigned char b[8];
    RILL_RETURN_IF_ERROR(Read(b, bytes, what));
    return GetLE(b, bytes);
  }
  absl::StatusOr<std::string> String(uint64_t n, std::string_view what) {
    RILL_RETURN_IF_ERROR(Need(n, what));  // Before allocating.
    RILL_RETURN_IF_ERROR(Take(what, n));
    std::string s(n, '\0');
    RILL_RETURN_IF_ERROR(Read(s.data(), n, what));
    return s;
  }
  // Reads `data->size()` little-endian floats.
  absl::Status Floats(std::vector<float>* data, std::string_view what) {
    std::vector<unsigned char> buf(std::min<size_t>(kChunkBytes, data->size() * sizeof(float)));
    for (size_t done = 0; done < data->size();) {
      const size_t n = std::min(data->size() - done, kChunkBytes / sizeof(float));
      RILL_RETURN_IF_ERROR(Read(buf.data(), n * sizeof(float), what));
      for (size_t i = 0; i < n; ++i) {
        (*data)[done + i] = std::bit_cast<float>(static_cast<uint32_t>(GetLE(&buf[4 * i], 4)));
      }
      done += n;
    }
    return absl::OkStatus();
  }

 private:
  std::FILE* f_;
  uint64_t pos_;
  uint64_t end_;
  FileBudget* budget_;
};

absl::StatusOr<StateTensor> ReadTensor(Source& in, size_t index) {
  StateTensor t;
  const std::string what = absl::StrCat("tensor #", index);
  RILL_ASSIGN_OR_RETURN(uint64_t name_len, in.Uint(4, absl::StrCat(what, "'s name length")));
  if (name_len == 0 || name_len > kMaxTrainStateNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " has a name of ", name_len, " bytes (allowed: 1 to ", kMaxTrainStateNameBytes, ")"));
  }
  RILL_ASSIGN_OR_RETURN(t.name, in.String(name_len, absl::StrCat(what, "'s name")));
  const std::string tname = absl::StrCat("tensor '", t.name, "'");
  RILL_ASSIGN_OR_RETURN(uint64_t ndim, in.Uint(4, absl::StrCat(tname, "'s rank")));
  if (ndim > kMaxTrainStateRank) {
    return absl::InvalidArgumentError(
        absl::StrCat(tname, " has ", ndim, " dimensions (at most ", kMaxTrainStateRank, ")"));
  }
  for (uint64_t d = 0; d < ndim; ++d) {
    RILL_ASSIGN_OR_RETURN(uint64_t dim, in.Uint(8, absl::StrCat(tname, "'s shape")));
    t.shape.push_back(static_cast<int64_t>(dim));
  }
  RILL_ASSIGN_OR_RETURN(int64_t elements, ElementCount(t.name, t.shape));
  const uint64_t bytes = static_cast<uint64_t>(elements) * sizeof(float);  // Checked above.
  RILL_ASSIGN_OR_RETURN(uint64_t stored, in.Uint(8, absl::StrCat(tname, "'s byte count")));
  if (stored != bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(tname, " has a byte count of ", stored, " but its shape ",
                     ShapeString(t.shape), " holds ", elements, " float32 (", bytes, " bytes)"));
  }
  if (bytes > in.remaining()) {  // Before allocating anything for it.
    return absl::InvalidArgumentError(
        absl::StrCat(tname, " of shape ", ShapeString(t.shape), " claims ", elements, " elements (",
                     bytes, " bytes) but only ", in.remaining(), " bytes remain in the file"));
  }
  RILL_RETURN_IF_ERROR(in.Take(absl::StrCat(tname, "'s data"), bytes));
  t.data.resize(static_cast<size_t>(elements));
  RILL_RETURN_IF_ERROR(in.Floats(&t.data, absl::StrCat(tname, "'s data")));
  return t;
}

absl::Status ReadBody(Source& in, TrainState* s) {
  RILL_ASSIGN_OR_RETURN(s->seed, in.Uint(8, "seed"));
  RILL_ASSIGN_OR_RETURN(uint64_t step, in.Uint(8, "step"));
  RILL_ASSIGN_OR_RETURN(uint64_t epoch, in.Uint(4, "epoch"));
  RILL_ASSIGN_OR_RETURN(uint64_t next_batch, in.Uint(8, "next_batch"));
  RILL_ASSIGN_OR_RETURN(uint64_t world_size, in.Uint(4, "world_size"));
  s->step = static_cast<int64_t>(step);
  s->epoch = static_cast<int32_t>(static_cast<uint32_t>(epoch));
  s->next_batch = static_cast<int64_t>(next_batch);
  s->world_size = static_cast<int32_t>(static_cast<uint32_t>(world_size));
  RILL_RETURN_IF_ERROR(CheckScalars(s->step, s->epoch, s->next_batch, s->world_size));
  RILL_ASSIGN_OR_RETURN(uint64_t model_len, in.Uint(4, "model description length"));
  if (model_len > kMaxTrainStateModelBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the model description has ", model_len,
                                                   " bytes (at most ", kMaxTrainStateModelBytes,
                                                   ")"));
  }
  RILL_ASSIGN_OR_RETURN(s->model, in.String(model_len, "model description"));
  RILL_ASSIGN_OR_RETURN(uint64_t count, in.Uint(4, "tensor count"));
  if (count > kMaxTrainStateTensors) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor count ", count, " exceeds the limit of ", kMaxTrainStateTensors));
  }
  absl::flat_hash_set<std::string> names;
  for (uint64_t i = 0; i < count; ++i) {
    RILL_ASSIGN_OR_RETURN(StateTensor t, ReadTensor(in, i));
    if (!names.insert(t.name).second) {
      return absl::InvalidArgumentError(absl::StrCat("tensor name '", t.name, "' appears twice"));
    }
    s->tensors.push_back(std::move(t));
  }
  if (in.remaining() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(in.remaining(), " unexpected bytes after the last tensor"));
  }
  return absl::OkStatus();
}

// Hashes the first size - 8 bytes of `f` and compares with the last 8.
absl::Status VerifyChecksum(std::FILE* f, uint64_t size) {
  if (std::fseek(f, 0, SEEK_SET) != 0) return absl::ErrnoToStatus(errno, "seek failed");
  Fnv1a64 hash;
  std::vector<unsigned char> buf(kChunkBytes);
  for (uint64_t left = size - kChecksumBytes; left > 0;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
    RILL_RETURN_IF_ERROR(ReadExact(f, buf.data(), n));
    hash.Update(buf.data(), n);
    left -= n;
  }
  RILL_RETURN_IF_ERROR(ReadExact(f, buf.data(), kChecksumBytes));
  const uint64_t stored = GetLE(buf.data(), 8);
  if (stored != hash.value()) {
    return absl::DataLossError(absl::StrCat("checksum mismatch (stored ", absl::Hex(stored),
                                            ", computed ", absl::Hex(hash.value()),
                                            "): the file is truncated or corrupted"));
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainState> ReadOpened(std::FILE* f, uint64_t size, FileBudget* budget) {
  unsigned char head[kHeaderBytes] = {};
  const size_t have = static_cast<size_t>(std::min<uint64_t>(size, kHeaderBytes));
  RILL_RETURN_IF_ERROR(ReadExact(f, head, have));
  if (std::memcmp(head, kMagic, std::min(have, sizeof(kMagic))) != 0) {
    return absl::InvalidArgumentError("not a Rill training state file (bad magic)");
  }
  if (size < kHeaderBytes + kChecksumBytes) {
    return absl::DataLossError(absl::StrCat("truncated: only ", size, " bytes"));
  }
  const uint64_t version = GetLE(head + sizeof(kMagic), 4);
  if (version != kTrainStateVersion) {
    return absl::UnimplementedError(absl::StrCat("format version ", version,
                                                 " is not supported (this build reads version ",
                                                 kTrainStateVersion, ")"));
  }
  RILL_RETURN_IF_ERROR(VerifyChecksum(f, size));
  if (std::fseek(f, kHeaderBytes, SEEK_SET) != 0) return absl::ErrnoToStatus(errno, "seek failed");
  Source in(f, kHeaderBytes, size - kChecksumBytes, budget);
  TrainState s;
  RILL_RETURN_IF_ERROR(ReadBody(in, &s));
  return s;
}

}  // namespace

absl::Status WriteTrainState(const std::string& path, const TrainState& state) {
  const std::string what = absl::StrCat("cannot write training state '", path, "'");
  RILL_RETURN_IF_ERROR(Annotate(CheckState(state), what));
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat(what, " (creating '", tmp, "')"));
  }
  Sink sink(f);
  Encode(state, &sink);
  bool ok = sink.Finish();
  int err = sink.err();
  if (ok && std::fflush(f) != 0) {
    ok = false;
    err = errno;
  }
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    std::remove(tmp.c_str());
    return absl::ErrnoToStatus(err, what);
  }
  return absl::OkStatus();
}

absl::StatusOr<TrainState> ReadTrainState(const std::string& path) {
  const std::string what = absl::StrCat("training state '", path, "'");
  // An untrusted file: refused before it is opened when it is not a regular
  // file (fopen would block on a FIFO), and what it makes us allocate is
  // capped.
  RILL_RETURN_IF_ERROR(UntrustedFileSize("training state", path).status());
  RILL_ASSIGN_OR_RETURN(FileBudget budget, FileBudget::Create("training state", path));
  File f(std::fopen(path.c_str(), "rb"));
  if (f == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", what));
  struct stat st;
  if (::fstat(::fileno(f.get()), &st) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot stat ", what));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is not a regular file"));
  }
  absl::StatusOr<TrainState> s = ReadOpened(f.get(), static_cast<uint64_t>(st.st_size), &budget);
  if (!s.ok() && s.status().code() == absl::StatusCode::kResourceExhausted) return s.status();
  if (!s.ok()) return Annotate(s.status(), what);
  return s;
}

}  // namespace rill::train
