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

void relay_books::drop(uint64_t device) { devices_.erase(device); }

void relay_books::keep(const operand& op) {
  cached_block block{op.rows, op.cols, op.shared, op.offset, op.ld, {}};
  if (!op.data.empty()) block = cached_block{op.rows, op.cols, std::make_shared<const std::vector<float>>(op.data), 0, 0, {}};
  store_.put(op.key, std::move(block));
  ++counters_.blocks_in;
  counters_.bytes_in += value_bytes(op);
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

tile_task relay_books::pass_down(uint64_t device, tile_task task) {
  store_.enter_step(task.key.step);
  auto it = devices_.find(device);
  if (it == devices_.end()) return task;  // not admitted: passed on as it came
  auto& books = it->second;
  books.held.enter_step(task.key.step);
  for (operand* op : {&task.a, &task.b}) {
    if (op->carries_values()) {
      keep(*op);
      books.held.put(op->key, shape_of(*op));
    } else if (books.held.get(op->key) != nullptr) {
      ++counters_.blocks_named;
    } else if (fill(*op)) {
      books.held.put(op->key, shape_of(*op));
    }
    // else: neither holds it; the device's miss will say so.
  }
  if (books.tasks.size() >= max_tasks_per_device) books.tasks.erase(books.tasks.begin());
  books.tasks.insert_or_assign(task.key, tile_task{task.key, task.wire, without_values(task.a), without_values(task.b), 0});
  return task;
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
