#include "rill/engine/var_table.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "rill/base/logging.h"
#include "rill/engine/opr_block.h"

namespace rill::engine::internal {

bool Var::AppendLocked(OprBlock* op, bool write) {
  if (waiting == 0 && !write_running && (!write || running_reads == 0) &&
      pending.load(std::memory_order_relaxed) == 0) {
    if (write) {
      write_running = true;
    } else {
      ++running_reads;
    }
    if (write || holders.size() < kNamedHolders) holders.push_back(op);
    return true;
  }
  // Busy with a full buffer: empty it first, to keep push order.
  if ((pending.load(std::memory_order_relaxed) & kBusy) != 0) DrainPendLocked();
  PushWaiterLocked(op, write);
  if (waiting >= kBusyAt && pending.load(std::memory_order_relaxed) == 0) {
    if (pend == nullptr) pend = std::make_unique<Waiter[]>(kPendCapacity);
    pending.store(kBusy, std::memory_order_release);
  }
  return false;
}

void Var::PushWaiterLocked(OprBlock* op, bool write) {
  if (ring == nullptr || waiting == ring_mask + 1) GrowLocked();
  ring[(head + waiting) & ring_mask] = Waiter{op, write};
  if (waiting++ == 0) head_op.store(op, std::memory_order_relaxed);
}

void Var::DrainPendLocked() {
  uint32_t p = pending.load(std::memory_order_acquire);
  uint32_t copied = 0;
  for (;;) {
    for (; copied < (p >> 1); ++copied) PushWaiterLocked(pend[copied].op, pend[copied].write);
    // The pusher may have added one meanwhile: then copy it too.
    if (pending.compare_exchange_weak(p, kBusy, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
      return;
    }
  }
}

void Var::TakePendingLocked() {
  if ((pending.load(std::memory_order_relaxed) & kBusy) != 0) DrainPendLocked();
}

bool Var::RefillLocked() {
  uint32_t p = pending.load(std::memory_order_acquire);
  while (p == kBusy) {
    // Nothing pending: not busy any more, unless the pusher adds one now.
    if (pending.compare_exchange_weak(p, 0, std::memory_order_acq_rel, std::memory_order_acquire)) {
      return false;
    }
  }
  if (p == 0) return false;  // Was not busy.
  DrainPendLocked();
  return true;
}

void Var::GrowLocked() {
  const uint32_t capacity = ring == nullptr ? 8 : 2 * (ring_mask + 1);
  auto grown = std::make_unique<Waiter[]>(capacity);
  for (uint32_t i = 0; i < waiting; ++i) grown[i] = WaiterLocked(i);
  ring = std::move(grown);
  ring_mask = capacity - 1;
  head = 0;
}

void Var::CompleteLocked(OprBlock* op, bool write, ReadyList* granted) {
  auto it = std::find(holders.begin(), holders.end(), op);
  if (it != holders.end()) {
    *it = holders.back();
    holders.pop_back();
  }
  if (write) {
    write_running = false;
  } else {
    --running_reads;
  }
  if (running_reads == 0 && !write_running) GrantFrontLocked(granted);
}

void Var::GrantFrontLocked(ReadyList* granted) {
  // Grant the reads at the front together, or the single write there.
  while (waiting > 0) {
    const Waiter w = ring[head];
    if (w.write && (running_reads > 0 || write_running)) return;
    head = (head + 1) & ring_mask;
    --waiting;
    head_op.store(waiting > 0 ? ring[head].op : nullptr, std::memory_order_relaxed);
    if (waiting == 0 && ring_mask + 1 > kKeptRing) {
      ring.reset();
      ring_mask = 0;
      head = 0;
    }
    if (w.write) {
      write_running = true;
    } else {
      ++running_reads;
    }
    if (w.write || holders.size() < kNamedHolders) holders.push_back(w.op);
    granted->push_back(w.op);
    // The ring emptied: what was pushed meanwhile comes next (or the var
    // stops being busy).
    if (waiting == 0 && !RefillLocked()) return;
    if (w.write) return;
  }
}

VarHandle VarTable::New() {
  Var* var;
  if (!free_.empty()) {
    var = vars_[free_.back()].get();
    free_.pop_back();
  } else {
    if (vars_.size() >= kMaxVars) {
      RILL_LOG(ERROR) << "engine: NewVariable: the var table is full (" << kMaxVars
                      << " vars live or retired); returning a null handle";
      return VarHandle();
    }
    vars_.push_back(std::make_unique<Var>());
    var = vars_.back().get();
    var->index = static_cast<uint32_t>(vars_.size() - 1);
  }
  var->live = true;
  var->delete_pushed = false;
  return HandleOf(var);
}

VarHandle VarTable::HandleOf(const Var* var) const {
  return VarHandle::FromBits((uint64_t{tag_} << (kGenerationBits + kIndexBits)) |
                             (uint64_t{var->generation} << kIndexBits) | var->index);
}

absl::StatusOr<Var*> VarTable::Resolve(VarHandle handle, bool for_delete) {
  const uint64_t bits = handle.bits();
  const uint64_t tag = bits >> (kGenerationBits + kIndexBits);
  const uint32_t generation = static_cast<uint32_t>(bits >> kIndexBits) & kMaxGeneration;
  const uint32_t index = static_cast<uint32_t>(bits) & (kMaxVars - 1);
  if (handle.is_null()) return absl::InvalidArgumentError("var handle is null");
  if (tag != tag_) {
    return absl::InvalidArgumentError(absl::StrFormat("var %#x belongs to another engine", bits));
  }
  Var* var = index < vars_.size() ? vars_[index].get() : nullptr;
  if (var == nullptr || var->generation != generation || !var->live) {
    return absl::InvalidArgumentError(absl::StrFormat("var %#x was deleted", bits));
  }
  if (var->delete_pushed) {
    return absl::InvalidArgumentError(
        absl::StrFormat("var %#x is being deleted (DeleteVariable was pushed)", bits));
  }
  if (for_delete) var->delete_pushed = true;
  return var;
}

void VarTable::Free(Var* var) {
  var->live = false;
  // At its last generation the slot is retired: its handles stay refused
  // (it is never live again) and no later var can take one of them.
  const bool retire = var->generation >= max_generation_;
  if (!retire) ++var->generation;
  {
    SpinLockHolder var_lock(&var->mu);
    var->pending.store(0, std::memory_order_relaxed);  // Deleted last: nothing waits.
    var->error = absl::OkStatus();
    var->write_fence.reset();
    var->read_fences.clear();
    var->has_state.store(false, std::memory_order_release);
  }
  if (!retire) free_.push_back(var->index);
}

std::vector<Var*> VarTable::Live() {
  std::vector<Var*> out;
  for (auto& v : vars_) {
    if (v->live) out.push_back(v.get());
  }
  return out;
}

}  // namespace rill::engine::internal
