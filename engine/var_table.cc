#include "engine/var_table.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "engine/opr_block.h"

namespace rill::engine::internal {

bool Var::AppendLocked(OprBlock* op, bool write) {
  if (waiting == 0 && !write_running && (!write || running_reads == 0)) {
    if (write) {
      write_running = true;
    } else {
      ++running_reads;
    }
    holders.push_back(op);
    return true;
  }
  if (ring == nullptr || waiting == ring_mask + 1) GrowLocked();
  ring[(head + waiting) & ring_mask] = Waiter{op, write};
  if (waiting++ == 0) head_op.store(op, std::memory_order_relaxed);
  return false;
}

void Var::GrowLocked() {
  const uint32_t capacity = ring == nullptr ? 8 : 2 * (ring_mask + 1);
  auto grown = std::make_unique<Waiter[]>(capacity);
  for (uint32_t i = 0; i < waiting; ++i) grown[i] = WaiterLocked(i);
  ring_storage = std::move(grown);
  ring = ring_storage.get();
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
      ring_storage.reset();
      ring = nullptr;
      ring_mask = 0;
      head = 0;
    }
    if (w.write) {
      write_running = true;
    } else {
      ++running_reads;
    }
    holders.push_back(w.op);
    granted->push_back(w.op);
    if (w.write) return;
  }
}

VarHandle VarTable::New() {
  Var* var;
  if (!free_.empty()) {
    var = vars_[free_.back()].get();
    free_.pop_back();
  } else {
    vars_.push_back(std::make_unique<Var>());
    var = vars_.back().get();
    var->index = static_cast<uint32_t>(vars_.size() - 1);
  }
  var->live = true;
  var->delete_pushed = false;
  return HandleOf(var);
}

VarHandle VarTable::HandleOf(const Var* var) const {
  return VarHandle::FromBits((uint64_t{tag_} << 48) | (uint64_t{var->generation & 0xffff} << 32) |
                             var->index);
}

absl::StatusOr<Var*> VarTable::Resolve(VarHandle handle, bool for_delete) {
  const uint64_t bits = handle.bits();
  const uint16_t tag = static_cast<uint16_t>(bits >> 48);
  const uint32_t generation = static_cast<uint32_t>(bits >> 32) & 0xffff;
  const uint32_t index = static_cast<uint32_t>(bits);
  if (handle.is_null()) return absl::InvalidArgumentError("var handle is null");
  if (tag != tag_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("var %#x belongs to another engine", bits));
  }
  Var* var = index < vars_.size() ? vars_[index].get() : nullptr;
  if (var == nullptr || (var->generation & 0xffff) != generation || !var->live) {
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
  ++var->generation;
  {
    SpinLockHolder var_lock(&var->mu);
    var->error = absl::OkStatus();
    var->write_fence.reset();
    var->read_fences.clear();
    var->has_state.store(false, std::memory_order_release);
  }
  free_.push_back(var->index);
}

std::vector<Var*> VarTable::Live() {
  std::vector<Var*> out;
  for (auto& v : vars_) {
    if (v->live) out.push_back(v.get());
  }
  return out;
}

}  // namespace rill::engine::internal
