#include "rill/plugins/collectives/mpi/mpi_communicator.h"

#include <malloc.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "rill/base/env_settings.h"
#include "rill/base/logging.h"
#include "rill/executor/device_memory.h"
#include "rill/plugins/collectives/mpi/mpi_transfer.h"

// LeakSanitizer (ASan's leak check): an abandoned communicator is kept on
// purpose.
#if defined(__SANITIZE_ADDRESS__)
#define RILL_LEAK_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define RILL_LEAK_CHECKED 1
#endif
#endif
#ifndef RILL_LEAK_CHECKED
#define RILL_LEAK_CHECKED 0
#endif
#if RILL_LEAK_CHECKED
#include <sanitizer/lsan_interface.h>
#endif

namespace rill::mpi_collectives {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kOrderTag = 0x52;  // On the order communicator only.
// How long the order check polls without sleeping.
constexpr std::chrono::microseconds kSpinTime{200};

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// What a rank says it issues as collective number `seq`; compared field by
// field across ranks before the data moves.
struct Descriptor {
  uint64_t seq = 0;
  int64_t count = 0;
  int32_t kind = 0, type = 0, op = 0, root = 0;
  int32_t valid = 0;  // 0: this rank's arguments were refused.
  char name[44] = {};
};
static_assert(std::is_trivially_copyable_v<Descriptor>);

Descriptor Describe(uint64_t seq, const CollectiveArgs& a, bool valid) {
  Descriptor d;
  d.seq = seq;
  d.count = a.count;
  d.kind = static_cast<int32_t>(a.kind);
  d.type = static_cast<int32_t>(a.type);
  d.op = static_cast<int32_t>(a.op);
  d.root = a.root;
  d.valid = valid ? 1 : 0;
  std::memcpy(d.name, a.name.data(), std::min(a.name.size(), sizeof d.name - 1));
  return d;
}

bool Same(const Descriptor& a, const Descriptor& b) {
  return a.seq == b.seq && a.count == b.count && a.kind == b.kind && a.type == b.type &&
         a.op == b.op && a.root == b.root && a.valid == b.valid &&
         std::strncmp(a.name, b.name, sizeof a.name) == 0;
}

std::string ToString(const Descriptor& d) {
  if (d.valid == 0) return "a collective whose arguments it refused";
  CollectiveArgs a;
  a.kind = static_cast<CollectiveKind>(d.kind);
  a.type = static_cast<DataType>(d.type);
  a.op = static_cast<ReduceOp>(d.op);
  a.count = d.count;
  a.root = d.root;
  a.name.assign(d.name, strnlen(d.name, sizeof d.name));
  return a.ToString();
}

// The descriptors MPI received, copied out once the receives completed.
// MPI may write them from any thread that drives its progress (another
// communicator's, under MPI_THREAD_MULTIPLE) and orders that write before
// the completion with its own atomics, which ThreadSanitizer cannot see:
// this is the one read of that memory, named in scripts/tsan.supp.
__attribute__((noinline)) std::vector<Descriptor> TakeReceived(
    const std::vector<Descriptor>& received) {
  return received;
}

std::string RankList(const std::vector<int>& ranks) {
  return absl::StrCat(ranks.size() == 1 ? "rank " : "ranks ", absl::StrJoin(ranks, ", "));
}

}  // namespace

struct MpiCommunicator::Impl {
  struct Op {
    uint64_t seq = 0;
    CollectiveArgs args;
    absl::Status refused;  // This rank's argument error, sent as an invalid descriptor.
    CollectiveDone done;
  };

  int rank = 0, size = 1;
  CommunicatorOptions options;
  MPI_Comm data = MPI_COMM_NULL, order = MPI_COMM_NULL;
  // The order check's buffers: owned here, not on a stack, because a check
  // abandoned at its timeout leaves receives that MPI may still complete.
  Descriptor mine;
  std::vector<Descriptor> theirs;
  std::vector<MPI_Request> requests;

  std::mutex mu;
  std::condition_variable cv;  // Work or stop, for the worker.
  std::map<uint64_t, Op> pending;
  uint64_t next_run = 0;
  bool stop = false;
  absl::Status health;
  CommunicatorStats stats;
  // The collective the worker runs, watched by the monitor: its order check
  // ends itself at the timeout (naming the missing ranks), so the monitor
  // takes over only a check stuck inside MPI past the timeout and a grace
  // period, or a transfer past the timeout.
  bool in_op = false, checking = false;
  Clock::time_point op_start;
  CollectiveDone* op_done = nullptr;
  std::string op_what;  // "collective #12 allreduce(sum) float x1024 'bucket 0'"
  // The worker was left inside MPI (a transfer past its timeout) or a check
  // left requests behind: MPI may still touch this object, so it is never
  // freed and MPI is not finalized.
  bool abandoned = false;
  std::condition_variable monitor_cv;
  bool monitor_stop = false;
  bool worker_exited = false;
  std::condition_variable exit_cv;  // worker_exited or abandoned, for Shutdown.
  std::thread worker, monitor;

  void Fail(const absl::Status& s) {
    if (health.ok()) health = s;
  }
  void WorkerLoop();
  void MonitorLoop();
  // Empties `pending` (with mu held) / completes `ops` with health.
  std::map<uint64_t, Op> TakePendingLocked();
  void FailAll(std::map<uint64_t, Op>& ops);
  // Runs `op`; false when the monitor took it over (the worker must leave).
  bool RunOne(Op& op);
  absl::Status Check(const Op& op);
  // Marks the communicator abandoned (MPI may still complete requests into
  // this object) and returns `s`.
  absl::Status Abandon(absl::Status s) {
    std::lock_guard<std::mutex> l(mu);
    abandoned = true;
    return s;
  }
  void Shutdown();
};

namespace {

// Open MPI's large-message reductions allocate temporary buffers of the
// message's size per call; past glibc's mmap threshold every call maps and
// faults in fresh pages, and the heap that served them is trimmed after
// each call (TOOLCHAIN.md measured a 64 MB all-reduce 7x slower so). Before
// MPI starts, the thresholds go up so that such buffers stay in the heap
// between calls: the mmap threshold to 256 MB and the trim threshold to
// 1 GB (with the 16 MB pieces of mpi_transfer.cc, also on the communicator's thread).
// Skipped when the user tuned malloc (MALLOC_MMAP_THRESHOLD_,
// MALLOC_TRIM_THRESHOLD_, GLIBC_TUNABLES) or set RILL_MPI_MALLOC_TUNING=0.
// A RILL_MPI_MALLOC_TUNING the table of settings refuses
// (base/env_settings.cc) is logged and counts as unset.
void TuneMalloc() {
  const absl::StatusOr<std::optional<bool>> on = EnvBool("RILL_MPI_MALLOC_TUNING");
  if (!on.ok()) {
    RILL_LOG(WARNING) << "collectives (mpi): " << on.status().message()
                      << "; tuning malloc as by default";
  }
  if ((on.ok() && !on->value_or(true)) || std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr ||
      std::getenv("MALLOC_TRIM_THRESHOLD_") != nullptr ||
      std::getenv("GLIBC_TUNABLES") != nullptr) {
    return;
  }
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

// The process's MPI: initialized by the first communicator, finalized at
// exit after every live communicator's thread has stopped, unless one was
// abandoned inside MPI (then finalizing would hang; the launcher sees the
// failed rank instead).
struct Runtime {
  std::mutex mu;
  bool initialized_here = false;
  std::vector<MpiCommunicator::Impl*> live;

  static Runtime& Get() {
    static Runtime* r = new Runtime();  // Never destroyed: used at exit.
    return *r;
  }

  absl::Status Init() {
    std::lock_guard<std::mutex> l(mu);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return absl::FailedPreconditionError("MPI: already finalized in this process");
    int initialized = 0;
    MPI_Initialized(&initialized);
    int provided = MPI_THREAD_SINGLE;
    if (!initialized) {
      TuneMalloc();
      const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
      if (rc != MPI_SUCCESS) return MpiError("MPI_Init_thread", rc);
      initialized_here = true;
      std::atexit([] { Get().AtExit(); });
    } else {
      MPI_Query_thread(&provided);
    }
    if (provided < MPI_THREAD_MULTIPLE) {
      return absl::FailedPreconditionError(absl::StrCat(
          "MPI: thread level ", provided,
          " (MPI_THREAD_MULTIPLE is needed: each communicator has its own thread calling MPI",
          initialized_here ? "; this MPI library does not offer it"
                           : "; the program initialized MPI with a lower level",
          ")"));
    }
    return absl::OkStatus();
  }

  void AtExit() {
    std::vector<MpiCommunicator::Impl*> comms;
    {
      std::lock_guard<std::mutex> l(mu);
      comms = live;
    }
    bool abandoned = false;
    for (MpiCommunicator::Impl* c : comms) {
      c->Shutdown();
      std::lock_guard<std::mutex> l(c->mu);
      abandoned |= c->abandoned;
    }
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (initialized_here && !abandoned && !finalized) MPI_Finalize();
  }
};

}  // namespace

void MpiCommunicator::Impl::WorkerLoop() {
  std::unique_lock<std::mutex> l(mu);
  // Every way out but the monitor's abandoning tells Shutdown.
  struct Exit {
    Impl* impl;
    std::unique_lock<std::mutex>* lock;
    bool abandoned_here = false;
    ~Exit() {
      if (abandoned_here) return;
      if (!lock->owns_lock()) lock->lock();
      impl->worker_exited = true;
      impl->exit_cv.notify_all();
    }
  } exit{this, &l};
  Clock::time_point gap_since{};  // When later numbers began to wait for a missing one.
  while (true) {
    // A number taken but never issued (its engine function was skipped or
    // cancelled, a stream dropped its work) would hold every later one:
    // past the timeout the communicator fails, naming it.
    cv.wait_for(l, options.timeout, [&] { return stop || pending.count(next_run) > 0; });
    // Shutdown: what is issued in order still runs (the peers wait for it;
    // the monitor bounds each), the rest fails.
    if (stop && pending.count(next_run) == 0) return;
    auto it = pending.find(next_run);
    if (it == pending.end()) {
      if (pending.empty() || !health.ok()) {
        gap_since = {};
        continue;
      }
      if (gap_since == Clock::time_point{}) gap_since = Clock::now();
      if (Clock::now() - gap_since < options.timeout) continue;
      Fail(absl::DeadlineExceededError(absl::StrCat(
          "collectives (mpi): rank ", rank, ": collective #", next_run,
          " was numbered but never issued on this rank within ", options.timeout.count() / 1000.0,
          " s (its engine function was skipped after an earlier error, or its stream failed)")));
      std::map<uint64_t, Op> queued = TakePendingLocked();
      l.unlock();
      FailAll(queued);
      l.lock();
      continue;
    }
    gap_since = {};
    Op op = std::move(it->second);
    pending.erase(it);
    ++next_run;
    const absl::Status h = health;
    l.unlock();
    if (!h.ok()) {
      std::move(op.done)(h);
    } else if (!RunOne(op)) {
      exit.abandoned_here = true;
      return;  // Abandoned by the monitor; touches nothing more.
    }
    l.lock();
  }
}

std::map<uint64_t, MpiCommunicator::Impl::Op> MpiCommunicator::Impl::TakePendingLocked() {
  std::map<uint64_t, Op> out;
  out.swap(pending);
  return out;
}

void MpiCommunicator::Impl::FailAll(std::map<uint64_t, Op>& ops) {
  absl::Status s;
  {
    std::lock_guard<std::mutex> l(mu);
    s = health;
  }
  for (auto& [seq, op] : ops) std::move(op.done)(s);
  ops.clear();
}

bool MpiCommunicator::Impl::RunOne(Op& op) {
  std::map<uint64_t, Op> queued;
  const Clock::time_point t0 = Clock::now();
  {
    std::lock_guard<std::mutex> l(mu);
    in_op = checking = true;
    op_start = t0;
    op_done = &op.done;
    op_what = absl::StrCat("collective #", op.seq, " ", op.args.ToString());
  }
  absl::Status s = op.refused;
  if (size > 1 && options.check_order) {
    absl::Status c = Check(op);
    if (s.ok()) s = c;
  }
  const Clock::time_point t1 = Clock::now();
  {
    std::lock_guard<std::mutex> l(mu);
    if (!in_op) return false;  // The monitor failed it.
    checking = false;
    op_start = t1;
  }
  if (s.ok()) s = Transfer(op.args, data, rank, size);
  const Clock::time_point t2 = Clock::now();
  {
    std::lock_guard<std::mutex> l(mu);
    if (!in_op) return false;  // The monitor failed it past the timeout.
    in_op = false;
    op_done = nullptr;
    ++stats.collectives;
    stats.bytes += op.args.bytes();
    stats.wait_seconds += Seconds(t1 - t0);
    stats.transfer_seconds += Seconds(t2 - t1);
    if (!s.ok()) {
      Fail(s);
      queued = TakePendingLocked();  // Out of step now: everything queued fails at once.
    }
  }
  std::move(op.done)(s);
  FailAll(queued);
  return true;
}

absl::Status MpiCommunicator::Impl::Check(const Op& op) {
  mine = Describe(op.seq, op.args, op.refused.ok());
  theirs.assign(size, Descriptor{});
  requests.assign(2 * (size - 1), MPI_REQUEST_NULL);
  std::vector<int> peer;  // Of each receive request.
  int n = 0;
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    peer.push_back(p);
    int rc =
        MPI_Irecv(&theirs[p], sizeof(Descriptor), MPI_BYTE, p, kOrderTag, order, &requests[n++]);
    if (rc != MPI_SUCCESS) return Abandon(MpiError("MPI_Irecv (order check)", rc));
  }
  for (int p = 0; p < size; ++p) {
    if (p == rank) continue;
    int rc = MPI_Isend(&mine, sizeof(Descriptor), MPI_BYTE, p, kOrderTag, order, &requests[n++]);
    if (rc != MPI_SUCCESS) return Abandon(MpiError("MPI_Isend (order check)", rc));
  }
  const std::string what = absl::StrCat("collective #", op.seq, " ", op.args.ToString());
  const Clock::time_point start = Clock::now();
  auto missing = [&] {
    std::vector<int> out;
    for (size_t i = 0; i < peer.size(); ++i) {
      int done = 0;
      MPI_Request_get_status(requests[i], &done, MPI_STATUS_IGNORE);
      if (!done) out.push_back(peer[i]);
    }
    return out;
  };
  bool warned = false;
  for (int spins = 0;; ++spins) {
    int done = 0;
    int rc = MPI_Testall(n, requests.data(), &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) {
      // A peer's connection broke (TCP): name who had not joined.
      const std::string lost = RankList(missing());
      return Abandon(MpiError(
          absl::StrCat("MPI_Testall (order check of ", what, "; ", lost, " had not joined: lost?)"),
          rc));
    }
    if (done) break;
    const Clock::duration waited = Clock::now() - start;
    if (!warned && waited >= options.stall_warning) {
      warned = true;
      RILL_LOG(WARNING) << "collectives (mpi): rank " << rank << " has waited "
                        << absl::StrFormat("%.1f", Seconds(waited)) << " s in " << what << " for "
                        << RankList(missing()) << " to join (timeout after "
                        << options.timeout.count() / 1000.0 << " s)";
    }
    if (waited >= options.timeout) {
      const std::vector<int> lost = missing();
      for (size_t i = 0; i < peer.size(); ++i) {
        if (requests[i] != MPI_REQUEST_NULL) MPI_Cancel(&requests[i]);
      }
      std::lock_guard<std::mutex> l(mu);
      abandoned = true;  // Sends and receives may still complete into this object.
      return absl::DeadlineExceededError(absl::StrCat(
          "collectives (mpi): rank ", rank, " of ", size, ": ", RankList(lost), " did not join ",
          what, " within ", options.timeout.count() / 1000.0,
          " s (the rank was lost -- it died or was killed -- or is stuck before this collective)"));
    }
    if (spins > 200) {
      // Past the first moments (peers that issue together meet within them),
      // poll gently: the peers are still computing, and on a rank bound to
      // one core every poll is taken from that computation.
      std::this_thread::sleep_for(std::chrono::microseconds(waited < kSpinTime ? 0 : 50));
    }
  }
  const std::vector<Descriptor> peers = TakeReceived(theirs);
  for (int p = 0; p < size; ++p) {
    if (p == rank || Same(mine, peers[p])) continue;
    return absl::FailedPreconditionError(absl::StrCat(
        "collectives (mpi): the ranks issued different collectives as #", op.seq, ": rank ", rank,
        " issued ", ToString(mine), ", rank ", p, " issued ", ToString(peers[p]),
        peers[p].seq != mine.seq ? absl::StrCat(" (as its #", peers[p].seq, ")") : "",
        ". Every rank must issue the same collectives in the same order (same model, same "
        "parameters, same shapes)"));
  }
  return absl::OkStatus();
}

void MpiCommunicator::Impl::MonitorLoop() {
  // Wakes a few times per timeout (at most every second) instead of being
  // told of each transfer: the hot path stays free of notifications.
  const auto period = std::min<std::chrono::milliseconds>(
      std::chrono::seconds(1),
      std::max<std::chrono::milliseconds>(std::chrono::milliseconds(10), options.timeout / 4));
  constexpr auto kGrace = std::chrono::seconds(2);
  std::unique_lock<std::mutex> l(mu);
  while (!monitor_stop) {
    if (in_op &&
        Clock::now() - op_start >= options.timeout + (checking ? kGrace : Clock::duration{})) {
      // The worker is stuck inside MPI: fail its collective and everything
      // queued behind it, and leave it there.
      CollectiveDone done = std::move(*op_done);
      in_op = false;
      op_done = nullptr;
      abandoned = true;
      exit_cv.notify_all();
      Fail(absl::DeadlineExceededError(absl::StrCat(
          "collectives (mpi): rank ", rank, " of ", size, ": ",
          checking ? "the order check of " : "the transfer of ", op_what,
          checking ? " was stuck inside MPI for " : " did not finish within ",
          options.timeout.count() / 1000.0,
          checking ? " s" : " s after every rank had joined it (a rank was lost during it)")));
      const absl::Status s = health;
      std::map<uint64_t, Op> queued;
      queued.swap(pending);
      l.unlock();
      std::move(done)(s);
      for (auto& [seq, op] : queued) std::move(op.done)(s);
      l.lock();
      continue;
    }
    monitor_cv.wait_for(l, period);
  }
}

void MpiCommunicator::Impl::Shutdown() {
  std::map<uint64_t, Op> left;
  bool leave_worker;
  {
    std::unique_lock<std::mutex> l(mu);
    if (stop) return;
    stop = true;
    cv.notify_all();
    // The worker ends its collective in flight (its order check is bounded
    // by the timeout); the monitor keeps watching it meanwhile and gives up
    // on a transfer stuck inside MPI.
    exit_cv.wait(l, [&] { return worker_exited || abandoned; });
    leave_worker = !worker_exited;
    monitor_stop = true;
  }
  monitor_cv.notify_all();
  if (monitor.joinable()) monitor.join();
  if (worker.joinable()) {
    if (leave_worker)
      worker.detach();  // Stuck inside MPI; it may never return.
    else
      worker.join();
  }
  {
    std::lock_guard<std::mutex> l(mu);
    left.swap(pending);
  }
  for (auto& [seq, op] : left) {
    std::move(op.done)(absl::CancelledError(absl::StrCat(
        "collectives (mpi): communicator shut down before collective #", seq, " ran")));
  }
}

MpiCommunicator::MpiCommunicator(int rank, int size, std::unique_ptr<Impl> impl)
    : Communicator(rank, size), options_(impl->options), impl_(std::move(impl)) {}

absl::StatusOr<std::shared_ptr<MpiCommunicator>> MpiCommunicator::Create(
    CommunicatorOptions options) {
  absl::StatusOr<CommunicatorOptions> resolved = ResolveCommunicatorOptions(options);
  if (!resolved.ok()) return resolved.status();
  absl::Status s = Runtime::Get().Init();
  if (!s.ok()) return s;
  auto impl = std::make_unique<Impl>();
  impl->options = *resolved;
  for (MPI_Comm* c : {&impl->data, &impl->order}) {
    int rc = MPI_Comm_dup(MPI_COMM_WORLD, c);
    if (rc != MPI_SUCCESS) return MpiError("MPI_Comm_dup", rc);
    MPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN);
  }
  MPI_Comm_rank(impl->data, &impl->rank);
  MPI_Comm_size(impl->data, &impl->size);
  Impl* raw = impl.get();
  raw->worker = std::thread([raw] { raw->WorkerLoop(); });
  raw->monitor = std::thread([raw] { raw->MonitorLoop(); });
  {
    Runtime& rt = Runtime::Get();
    std::lock_guard<std::mutex> l(rt.mu);
    rt.live.push_back(raw);
  }
  const int rank = raw->rank, size = raw->size;
  return std::shared_ptr<MpiCommunicator>(new MpiCommunicator(rank, size, std::move(impl)));
}

MpiCommunicator::~MpiCommunicator() {
  impl_->Shutdown();
  {
    Runtime& rt = Runtime::Get();
    std::lock_guard<std::mutex> l(rt.mu);
    rt.live.erase(std::remove(rt.live.begin(), rt.live.end(), impl_.get()), rt.live.end());
  }
  bool abandoned;
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    abandoned = impl_->abandoned;
  }
  if (abandoned) {
    // MPI or the stuck worker may still touch it: kept, and not a leak.
    Impl* kept = impl_.release();
#if RILL_LEAK_CHECKED
    __lsan_ignore_object(kept);
#else
    (void)kept;
#endif
    return;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    MPI_Comm_free(&impl_->data);
    MPI_Comm_free(&impl_->order);
  }
}

std::string LibraryVersion() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  if (MPI_Get_library_version(text, &len) != MPI_SUCCESS) return "MPI";
  std::string v(text, len);
  return v.substr(0, v.find_first_of(",\n"));
}

std::string MpiCommunicator::Version() const { return LibraryVersion(); }

std::string MpiCommunicator::Algorithm() const {
  return absl::StrCat("MPI blocking collectives, order check ",
                      options_.check_order ? "on" : "off");
}

absl::Status MpiCommunicator::health() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->health;
}

CommunicatorStats MpiCommunicator::stats() const {
  std::lock_guard<std::mutex> l(impl_->mu);
  return impl_->stats;
}

void MpiCommunicator::Issue(uint64_t seq, CollectiveArgs args, Stream* stream,
                            CollectiveDone done) {
  (void)stream;  // Host memory: the worker thread runs it.
  Impl::Op op;
  op.seq = seq;
  op.refused = CheckCollectiveArgs(args, size());
  op.args = std::move(args);
  op.done = std::move(done);
  absl::Status refused;
  {
    std::lock_guard<std::mutex> l(impl_->mu);
    if (!impl_->health.ok()) {
      refused = impl_->health;  // Failed for good: fail at once.
    } else if (impl_->stop || seq < impl_->next_run || impl_->pending.count(seq) > 0) {
      refused = absl::FailedPreconditionError(absl::StrCat(
          "collectives (mpi): collective #", seq,
          impl_->stop ? " issued after the communicator shut down" : " was issued twice"));
    } else {
      impl_->pending.emplace(seq, std::move(op));
    }
  }
  if (!refused.ok()) {
    std::move(op.done)(refused);
    return;
  }
  impl_->cv.notify_one();
}

}  // namespace rill::mpi_collectives
