#pragma once
// A binary min-heap of items 0..capacity-1 keyed by double, with the
// position of each item kept so that any item can be re-keyed or removed in
// O(log n). All memory is taken at construction: nothing is allocated per
// operation, which is what the simulator's inner loop needs.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cleave {

class indexed_heap {
 public:
  explicit indexed_heap(size_t capacity = 0) { reset(capacity); }

  void reset(size_t capacity) {
    heap_.clear();
    heap_.reserve(capacity);
    pos_.assign(capacity, absent);
    key_.assign(capacity, 0.0);
  }
  size_t capacity() const { return pos_.size(); }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  bool contains(uint32_t item) const { return pos_[item] != absent; }
  uint32_t top() const { return heap_.front(); }
  double top_key() const { return key_[heap_.front()]; }
  double key(uint32_t item) const { return key_[item]; }

  // Inserts the item, or re-keys it when present.
  void set(uint32_t item, double key) {
    if (contains(item)) {
      const double old = key_[item];
      key_[item] = key;
      if (key < old) up(pos_[item]);
      else down(pos_[item]);
      return;
    }
    key_[item] = key;
    pos_[item] = static_cast<uint32_t>(heap_.size());
    heap_.push_back(item);
    up(pos_[item]);
  }

  void remove(uint32_t item) {
    const uint32_t at = pos_[item];
    if (at == absent) return;
    const uint32_t last = heap_.back();
    heap_.pop_back();
    pos_[item] = absent;
    if (last == item) return;
    heap_[at] = last;
    pos_[last] = at;
    up(at);
    down(pos_[last]);
  }

  uint32_t pop() {
    const uint32_t item = heap_.front();
    remove(item);
    return item;
  }

 private:
  static constexpr uint32_t absent = ~uint32_t{0};

  bool less(uint32_t a, uint32_t b) const {
    // Ties go to the lower item: the order of equal keys is reproducible.
    return key_[a] < key_[b] || (key_[a] == key_[b] && a < b);
  }
  void place(uint32_t at, uint32_t item) {
    heap_[at] = item;
    pos_[item] = at;
  }
  void up(uint32_t at) {
    const uint32_t item = heap_[at];
    while (at > 0) {
      const uint32_t parent = (at - 1) / 2;
      if (!less(item, heap_[parent])) break;
      place(at, heap_[parent]);
      at = parent;
    }
    place(at, item);
  }
  void down(uint32_t at) {
    const uint32_t item = heap_[at];
    const uint32_t n = static_cast<uint32_t>(heap_.size());
    while (true) {
      uint32_t child = 2 * at + 1;
      if (child >= n) break;
      if (child + 1 < n && less(heap_[child + 1], heap_[child])) ++child;
      if (!less(heap_[child], item)) break;
      place(at, heap_[child]);
      at = child;
    }
    place(at, item);
  }

  std::vector<uint32_t> heap_;
  std::vector<uint32_t> pos_;
  std::vector<double> key_;
};

}  // namespace cleave
