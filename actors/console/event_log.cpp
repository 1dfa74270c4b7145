#include "actors/console/event_log.hpp"

#include <algorithm>
#include <utility>

namespace cleave {

// A zero capacity would make push() divide by zero: keep at least one.
event_log::event_log(size_t capacity) : ring_(std::max<size_t>(1, capacity)) {}

void event_log::push(console_event ev) {
  ring_[next_] = std::move(ev);
  next_ = (next_ + 1) % ring_.size();
  if (count_ < ring_.size())
    ++count_;
  else
    ++dropped_;
}

std::vector<console_event> event_log::events() const {
  std::vector<console_event> out;
  out.reserve(count_);
  const size_t first = (next_ + ring_.size() - count_) % ring_.size();
  for (size_t i = 0; i < count_; ++i) out.push_back(ring_[(first + i) % ring_.size()]);
  return out;
}

}  // namespace cleave
