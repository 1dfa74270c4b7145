#include "actors/relay/relay_books.hpp"

#include <memory>
#include <utility>

namespace cleave {

namespace {

// Tasks a device may have been given and not answered; past it the oldest
// are forgotten (a miss for one then goes up to the ps, which knows it).
constexpr size_t max_tasks_per_device = 4096;

uint64_t value_bytes(const operand& op) { return static_cast<uint64_t>(op.rows * op.cols) * sizeof(float); }

cached_block shape_of(const operand& op) { return cached_block{op.rows, op.cols, nullptr, 0, 0, {}}; }

operand without_values(const operand& op) {
  operand out;
  out.key = op.key;
  out.rows = op.rows;
  out.cols = op.cols;
  out.trans = op.trans;
  return out;
}

}  // namespace

void relay_books::admit(uint64_t device, uint64_t cache_bytes) {
  devices_.insert_or_assign(device, device_books{block_cache(cache_bytes), {}});
}

void relay_books::drop(uint64_t device) {
  devices_.erase(device);
  parked_.remove_if([&](const parked_task& p) { return p.device == device; });
}

void relay_books::enter_step(uint64_t step) {
  store_.enter_step(step);
  if (step == step_ || step + 1 == step_) return;
  met_.clear();
  step_ = step;
}

void relay_books::keep(const operand& op) {
  cached_block block{op.rows, op.cols, op.shared, op.offset, op.ld, {}};
  if (!op.data.empty()) block = cached_block{op.rows, op.cols, std::make_shared<const std::vector<float>>(op.data), 0, 0, {}};
  store_.put(op.key, std::move(block));
  met_.insert(op.key);
  ++counters_.blocks_in;
  counters_.bytes_in += value_bytes(op);
  // Tasks parked for it may go now.
  for (auto it = parked_.begin(); it != parked_.end();) {
    auto dev = devices_.find(it->device);
    if (dev != devices_.end() && complete(dev->second, it->task, true)) {
      remember(dev->second, it->task);
      released_.emplace_back(it->device, std::move(it->task));
      it = parked_.erase(it);
    } else {
      ++it;
    }
  }
}

bool relay_books::fill(operand& op) {
  const cached_block* have = store_.get(op.key);
  if (have == nullptr || have->data == nullptr || have->rows != op.rows || have->cols != op.cols) return false;
  op.data.clear();
  op.shared = have->data;
  op.offset = have->offset;
  op.ld = have->stride();
  ++counters_.blocks_served;
  counters_.bytes_served += value_bytes(op);
  return true;
}

bool relay_books::complete(device_books& books, tile_task& task, bool park_if_missing) {
  // First whether anything is on its way, so a parked task is filled once.
  if (park_if_missing)
    for (const operand* op : {&task.a, &task.b})
      if (!op->carries_values() && books.held.get(op->key) == nullptr && met_.count(op->key) == 0) return false;
  for (operand* op : {&task.a, &task.b}) {
    if (op->carries_values()) continue;
    if (books.held.get(op->key) != nullptr)
      ++counters_.blocks_named;
    else if (fill(*op))
      books.held.put(op->key, shape_of(*op));
    // else: met and evicted (or given up on); the device's miss will say so.
  }
  return true;
}

void relay_books::remember(device_books& books, const tile_task& task) {
  if (books.tasks.size() >= max_tasks_per_device) books.tasks.erase(books.tasks.begin());
  books.tasks.insert_or_assign(task.key, tile_task{task.key, task.wire, without_values(task.a), without_values(task.b), 0});
}

std::optional<tile_task> relay_books::pass_down(uint64_t device, tile_task task, double now) {
  enter_step(task.key.step);
  auto it = devices_.find(device);
  if (it == devices_.end()) return task;  // not admitted: passed on as it came
  auto& books = it->second;
  books.held.enter_step(task.key.step);
  for (const operand* op : {&task.a, &task.b})
    if (op->carries_values()) {
      keep(*op);
      books.held.put(op->key, shape_of(*op));
    }
  if (!complete(books, task, true)) {
    ++counters_.tasks_parked;
    parked_.push_back({device, std::move(task), now});
    return std::nullopt;
  }
  remember(books, task);
  return task;
}

std::vector<std::pair<uint64_t, tile_task>> relay_books::released() {
  std::vector<std::pair<uint64_t, tile_task>> out;
  out.swap(released_);
  return out;
}

std::vector<std::pair<uint64_t, tile_task>> relay_books::expire(double now, double patience) {
  std::vector<std::pair<uint64_t, tile_task>> out;
  for (auto it = parked_.begin(); it != parked_.end();) {
    if (now - it->since <= patience) {
      ++it;
      continue;
    }
    auto dev = devices_.find(it->device);
    if (dev != devices_.end()) {
      complete(dev->second, it->task, false);
      remember(dev->second, it->task);
      ++counters_.tasks_expired;
      out.emplace_back(it->device, std::move(it->task));
    }
    it = parked_.erase(it);
  }
  return out;
}

std::optional<tile_task> relay_books::answer_miss(uint64_t device, const tile_miss& miss) {
  auto dev = devices_.find(device);
  if (dev == devices_.end()) return std::nullopt;
  auto given = dev->second.tasks.find(miss.key);
  if (given == dev->second.tasks.end()) return std::nullopt;
  tile_task again = given->second;
  for (operand* op : {&again.a, &again.b}) {
    if (op->key != miss.operand_key) continue;
    if (!fill(*op)) {
      ++counters_.misses_up;
      return std::nullopt;
    }
    dev->second.held.put(op->key, shape_of(*op));
    ++counters_.misses_answered;
    return again;
  }
  return std::nullopt;  // a block the task does not name: the ps judges it
}

void relay_books::answered(uint64_t device, const tile_key& key) {
  auto dev = devices_.find(device);
  if (dev != devices_.end()) dev->second.tasks.erase(key);
}

}  // namespace cleave
