#include "actors/simulator/relay_tier.hpp"

namespace cleave {

bool relay_store::touch(uint64_t key) {
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  lru_.splice(lru_.begin(), lru_, it->second);
  return true;
}

void relay_store::put(const relay_block& b) {
  if (touch(b.key) || b.bytes > capacity_) return;
  while (bytes_ + b.bytes > capacity_) {
    bytes_ -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  lru_.push_front(b);
  index_[b.key] = lru_.begin();
  bytes_ += b.bytes;
}

void relay_store::clear() {
  lru_.clear();
  index_.clear();
  bytes_ = 0;
}

relay_tier::relay_tier(std::vector<relay_profile> relays, uint32_t shards)
    : relays_(std::move(relays)), shards_(shards), fetched_(relays_.size()),
      waiting_(relays_.size()), lanes_(relays_.size() * shards), counts_(relays_.size()) {
  stores_.reserve(relays_.size());
  for (const auto& r : relays_) stores_.emplace_back(r.memory_bytes);
}

void relay_tier::begin_step() {
  for (auto& s : stores_) s.clear();
  for (auto& f : fetched_) f.clear();
}

uint32_t relay_tier::need(uint32_t r, uint32_t shard, uint32_t entry, const relay_block* blocks,
                          size_t n, uint64_t priority) {
  if (entry >= missing_.size()) missing_.resize(entry + 1, 0);
  uint32_t missing = 0;
  for (size_t i = 0; i < n; ++i) {
    const relay_block& b = blocks[i];
    if (stores_[r].touch(b.key)) continue;
    ++missing;
    auto [it, fresh] = waiting_[r].try_emplace(b.key);
    it->second.entries.push_back(entry);
    if (!fresh) continue;  // on its way for another device
    lanes_[r * shards_ + shard].queued.emplace_back(b, priority);
  }
  missing_[entry] = missing;
  return missing;
}

bool relay_tier::next_fetch(uint32_t r, uint32_t shard, relay_block& out, uint64_t& priority) {
  lane& l = lanes_[r * shards_ + shard];
  if (l.fetching || l.queued.empty()) return false;
  std::tie(out, priority) = l.queued.front();
  l.queued.pop_front();
  l.fetching = true;
  l.landing.push_back(out);
  counts_[r].bytes_in += out.bytes;
  if (fetched_[r].insert(out.key).second) counts_[r].unique_bytes += out.bytes;
  return true;
}

void relay_tier::fetched(uint32_t r, uint32_t shard) { lanes_[r * shards_ + shard].fetching = false; }

void relay_tier::landed(uint32_t r, uint32_t shard, std::vector<uint32_t>& ready) {
  lane& l = lanes_[r * shards_ + shard];
  const relay_block b = l.landing.front();
  l.landing.pop_front();
  stores_[r].put(b);
  auto it = waiting_[r].find(b.key);
  if (it == waiting_[r].end()) return;
  for (uint32_t e : it->second.entries)
    if (e < missing_.size() && missing_[e] > 0 && --missing_[e] == 0) ready.push_back(e);
  waiting_[r].erase(it);
}

void relay_tier::store(uint32_t r, const relay_block& b) {
  if (stores_[r].touch(b.key)) return;
  stores_[r].put(b);
  fetched_[r].insert(b.key);  // its bytes are counted with the instance's, scaled
}

bool relay_tier::next_upload(uint32_t r, uint32_t shard, result& out) {
  lane& l = lanes_[r * shards_ + shard];
  if (l.uploading || l.up.empty()) return false;
  out = l.up.front();
  l.uploading = true;
  counts_[r].results += out.bytes;
  return true;
}

relay_tier::result relay_tier::uploaded(uint32_t r, uint32_t shard) {
  lane& l = lanes_[r * shards_ + shard];
  l.uploading = false;
  result out = l.up.front();
  l.up.pop_front();
  return out;
}

void relay_tier::end_run() {
  for (auto& w : waiting_) w.clear();
  for (auto& l : lanes_) {
    l.queued.clear();
    l.landing.clear();
    l.up.clear();
    l.fetching = l.uploading = false;
  }
  missing_.clear();
}

}  // namespace cleave
