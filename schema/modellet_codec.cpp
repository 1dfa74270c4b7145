#include "schema/modellet_codec.hpp"

#include <cmath>
#include <limits>

#include "schema/byte_io.hpp"
#include "schema/errors.hpp"

namespace cleave {

namespace {

constexpr size_t sampling_bytes = 1 + 4 * 4 + 8 + 4 + 1 + 8 + 8 + 8 + 4 + 8;
constexpr size_t state_fixed_bytes = 4 + 4 + 8 + 8;

caf::error bad(const char* what, const std::string& why) {
  return fail(std::string(what) + " frame: " + why);
}

void put_tensor(byte_writer& w, const tensor& t) { w.raw(t.data(), static_cast<size_t>(t.size()) * 4); }

bool get_tensor(byte_reader& r, tensor& t, int64_t rows, int64_t cols) {
  std::vector<float> v;
  if (!r.floats(v, rows * cols)) return false;
  t.resize(rows, cols);
  std::copy(v.begin(), v.end(), t.data());
  return true;
}

size_t state_bytes(const modellet_state& s) {
  const auto rows = static_cast<size_t>(s.end - s.begin);
  return state_fixed_bytes + 4 * rows * (3 * static_cast<size_t>(s.hidden) + 3);
}

void put_state(byte_writer& w, const modellet_state& s) {
  w.put(s.begin);
  w.put(s.end);
  w.put(s.hidden);
  w.put(s.step);
  for (const tensor* t : {&s.w, &s.b, &s.m_w, &s.v_w, &s.m_b, &s.v_b}) put_tensor(w, *t);
}

caf::expected<modellet_state> get_state(byte_reader& r, const char* what) {
  modellet_state s;
  if (!r.get(s.begin) || !r.get(s.end) || !r.get(s.hidden) || !r.get(s.step))
    return bad(what, "truncated header");
  if (s.begin < 0 || s.end <= s.begin) return bad(what, "empty or negative range");
  if (s.hidden <= 0 || s.hidden > max_modellet_hidden) return bad(what, "hidden width out of range");
  if (s.step < 0) return bad(what, "negative step");
  const int64_t rows = static_cast<int64_t>(s.end) - s.begin;
  // Checked before any tensor is sized: the six tensors must be in the frame.
  if (static_cast<uint64_t>(rows) * static_cast<uint64_t>(3 * s.hidden + 3) > r.left() / 4)
    return bad(what, "the range's tensors do not fit the frame");
  if (!get_tensor(r, s.w, rows, s.hidden) || !get_tensor(r, s.b, rows, 1)
      || !get_tensor(r, s.m_w, rows, s.hidden) || !get_tensor(r, s.v_w, rows, s.hidden)
      || !get_tensor(r, s.m_b, rows, 1) || !get_tensor(r, s.v_b, rows, 1))
    return bad(what, "truncated tensors");
  return s;
}

}  // namespace

std::vector<char> encode(const ml_place_msg& m) {
  std::vector<char> out(sampling_bytes + state_bytes(m.state));
  byte_writer w(out.data());
  const auto& s = m.sampling;
  w.put(static_cast<uint8_t>(s.lsh.family));
  w.put(s.lsh.hashes);
  w.put(s.lsh.tables);
  w.put(s.lsh.bin_size);
  w.put(s.lsh.simhash_sparsity);
  w.put(s.lsh.seed);
  w.put(s.bucket_size);
  w.put(static_cast<uint8_t>(s.policy));
  w.put(s.schedule.rehash_every);
  w.put(s.schedule.rebuild_every);
  w.put(s.schedule.rebuild_growth);
  w.put(s.min_active);
  w.put(s.seed);
  put_state(w, m.state);
  return out;
}

caf::expected<ml_place_msg> decode_ml_place(const char* data, size_t size) {
  byte_reader r(data, size);
  ml_place_msg m;
  auto& s = m.sampling;
  uint8_t family = 0, policy = 0;
  if (!r.get(family) || !r.get(s.lsh.hashes) || !r.get(s.lsh.tables) || !r.get(s.lsh.bin_size)
      || !r.get(s.lsh.simhash_sparsity) || !r.get(s.lsh.seed) || !r.get(s.bucket_size) || !r.get(policy)
      || !r.get(s.schedule.rehash_every) || !r.get(s.schedule.rebuild_every)
      || !r.get(s.schedule.rebuild_growth) || !r.get(s.min_active) || !r.get(s.seed))
    return bad("ml_place", "truncated sampling settings");
  if (family > static_cast<uint8_t>(lsh_family::dwta)) return bad("ml_place", "unknown hash family");
  if (policy > static_cast<uint8_t>(bucket_policy::reservoir)) return bad("ml_place", "unknown bucket policy");
  s.lsh.family = static_cast<lsh_family>(family);
  s.policy = static_cast<bucket_policy>(policy);
  // The index sizes its tables from these: bounded before the model-let is built.
  if (s.lsh.tables <= 0 || s.lsh.tables > 1024 || s.lsh.hashes <= 0 || s.lsh.hashes > 32
      || s.bucket_size <= 0 || s.bucket_size > 4096 || s.min_active < 0)
    return bad("ml_place", "sampling settings out of range");
  if (s.schedule.rehash_every < 0 || s.schedule.rebuild_every < 0 || !(s.schedule.rebuild_growth >= 1))
    return bad("ml_place", "refresh schedule out of range");
  auto st = get_state(r, "ml_place");
  if (!st) return st.error();
  if (r.left() != 0) return bad("ml_place", "trailing bytes");
  m.state = std::move(*st);
  return m;
}

std::vector<char> encode_ml_state(const modellet_state& s) {
  std::vector<char> out(state_bytes(s));
  byte_writer w(out.data());
  put_state(w, s);
  return out;
}

caf::expected<modellet_state> decode_ml_state(const char* data, size_t size) {
  byte_reader r(data, size);
  auto st = get_state(r, "ml_state");
  if (st && r.left() != 0) return bad("ml_state", "trailing bytes");
  return st;
}

std::vector<char> encode_ml_forward(int64_t step, const tensor& h, const label_rows& labels,
                                    int32_t begin, int32_t end) {
  std::vector<uint32_t> counts(static_cast<size_t>(labels.n), 0);
  std::vector<int32_t> ids;
  for (int64_t r = 0; r < labels.n; ++r)
    for (int64_t e = labels.offsets[r]; e < labels.offsets[r + 1]; ++e)
      if (labels.ids[e] >= begin && labels.ids[e] < end) {
        ids.push_back(labels.ids[e]);
        ++counts[static_cast<size_t>(r)];
      }
  std::vector<char> out(8 + 4 + 4 + static_cast<size_t>(h.size()) * 4 + counts.size() * 4 + 4 + ids.size() * 4);
  byte_writer w(out.data());
  w.put(step);
  w.put(static_cast<uint32_t>(h.rows()));
  w.put(static_cast<uint32_t>(h.cols()));
  put_tensor(w, h);
  w.raw(counts.data(), counts.size() * 4);
  w.put(static_cast<uint32_t>(ids.size()));
  w.raw(ids.data(), ids.size() * 4);
  return out;
}

caf::expected<ml_forward_msg> decode_ml_forward(const char* data, size_t size) {
  byte_reader r(data, size);
  ml_forward_msg m;
  uint32_t n = 0, hidden = 0, total = 0;
  if (!r.get(m.step) || !r.get(n) || !r.get(hidden)) return bad("ml_forward", "truncated header");
  if (m.step < 0) return bad("ml_forward", "negative step");
  if (n == 0 || n > max_modellet_samples) return bad("ml_forward", "sample count out of range");
  if (hidden == 0 || hidden > max_modellet_hidden) return bad("ml_forward", "hidden width out of range");
  if (static_cast<uint64_t>(n) * (hidden + 1) > r.left() / 4)
    return bad("ml_forward", "activations do not fit the frame");
  if (!get_tensor(r, m.h, n, hidden)) return bad("ml_forward", "truncated activations");
  m.label_offsets.assign(static_cast<size_t>(n) + 1, 0);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t c = 0;
    r.get(c);  // fits: checked with the activations
    m.label_offsets[i + 1] = m.label_offsets[i] + c;
  }
  if (!r.get(total) || static_cast<uint64_t>(total) != static_cast<uint64_t>(m.label_offsets.back()))
    return bad("ml_forward", "label counts do not add up");
  if (total > r.left() / 4) return bad("ml_forward", "labels do not fit the frame");
  m.label_ids.resize(total);
  for (auto& id : m.label_ids) r.get(id);
  for (int32_t id : m.label_ids)
    if (id < 0) return bad("ml_forward", "negative label id");
  if (r.left() != 0) return bad("ml_forward", "trailing bytes");
  return m;
}

// A sample's ids are ascending: each is sent as its gap to the previous one
// (the first as itself), less one, in LEB128. Gaps inside a range of a few
// thousand neurons take one or two bytes instead of four.
void put_varint(std::vector<char>& out, uint32_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

std::vector<char> encode(const modellet_scores& s) {
  const auto n = static_cast<size_t>(s.samples());
  std::vector<char> ids;
  ids.reserve(s.ids.size() * 2);
  for (size_t r = 0; r < n; ++r) {
    int64_t prev = -1;
    for (int64_t j = s.offsets[r]; j < s.offsets[r + 1]; ++j) {
      const int32_t id = s.ids[static_cast<size_t>(j)];
      put_varint(ids, static_cast<uint32_t>(id - prev - 1));
      prev = id;
    }
  }
  std::vector<char> out(4 + 4 * n + 4 + ids.size() + 4 * s.logits.size() + 16 * n);
  byte_writer w(out.data());
  w.put(static_cast<uint32_t>(n));
  for (size_t r = 0; r < n; ++r) w.put(static_cast<uint32_t>(s.offsets[r + 1] - s.offsets[r]));
  w.put(static_cast<uint32_t>(ids.size()));
  w.raw(ids.data(), ids.size());
  w.floats(s.logits);
  for (const auto& st : s.stats) {
    w.put(st.max);
    w.put(st.sum);
  }
  return out;
}

caf::expected<modellet_scores> decode_ml_scores(const char* data, size_t size) {
  byte_reader r(data, size);
  uint32_t n = 0;
  if (!r.get(n)) return bad("ml_scores", "truncated header");
  if (n == 0 || n > max_modellet_samples) return bad("ml_scores", "sample count out of range");
  if (static_cast<uint64_t>(n) * 20 + 4 > r.left()) return bad("ml_scores", "counts do not fit the frame");
  modellet_scores s;
  s.offsets.assign(static_cast<size_t>(n) + 1, 0);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t c = 0;
    r.get(c);
    s.offsets[i + 1] = s.offsets[i] + c;
  }
  uint32_t id_bytes = 0;
  r.get(id_bytes);
  const auto total = static_cast<uint64_t>(s.offsets.back());
  // Each id takes a byte at least: the ids bound the count before it sizes anything.
  if (id_bytes > r.left() || total > id_bytes
      || static_cast<uint64_t>(id_bytes) + total * 4 + static_cast<uint64_t>(n) * 16 != r.left())
    return bad("ml_scores", "pair counts do not match the frame's length");
  const auto* p = reinterpret_cast<const unsigned char*>(data) + (size - r.left());
  const auto* end = p + id_bytes;
  s.ids.resize(total);
  size_t k = 0;
  for (uint32_t i = 0; i < n; ++i) {
    int64_t prev = -1;
    for (int64_t j = s.offsets[i]; j < s.offsets[i + 1]; ++j) {
      uint64_t v = 0;
      int shift = 0;
      for (;;) {
        if (p == end || shift > 28) return bad("ml_scores", "a truncated or overlong id");
        const unsigned char byte = *p++;
        v |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
          if (byte == 0 && shift > 0) return bad("ml_scores", "an id not in its shortest form");
          break;
        }
        shift += 7;
      }
      const int64_t id = prev + 1 + static_cast<int64_t>(v);
      if (id > std::numeric_limits<int32_t>::max()) return bad("ml_scores", "an id out of range");
      s.ids[k++] = static_cast<int32_t>(id);
      prev = id;
    }
  }
  if (p != end) return bad("ml_scores", "bytes left over after the ids");
  byte_reader rest(reinterpret_cast<const char*>(end), size - static_cast<size_t>(reinterpret_cast<const char*>(end) - data));
  if (!rest.floats(s.logits, static_cast<int64_t>(total))) return bad("ml_scores", "truncated logits");
  s.stats.resize(n);
  for (auto& st : s.stats) {
    rest.get(st.max);
    rest.get(st.sum);
    if (!(st.sum >= 0) || std::isnan(st.max)) return bad("ml_scores", "softmax stats are not numbers");
  }
  return s;
}

std::vector<char> encode_ml_grads(const std::vector<float>& dlogits) {
  std::vector<char> out(4 + dlogits.size() * 4);
  byte_writer w(out.data());
  w.put(static_cast<uint32_t>(dlogits.size()));
  w.floats(dlogits);
  return out;
}

caf::expected<std::vector<float>> decode_ml_grads(const char* data, size_t size) {
  byte_reader r(data, size);
  uint32_t n = 0;
  std::vector<float> v;
  if (!r.get(n)) return bad("ml_grads", "truncated header");
  if (static_cast<uint64_t>(n) * 4 != r.left()) return bad("ml_grads", "count does not match the frame's length");
  r.floats(v, n);
  return v;
}

std::vector<char> encode(const ml_hidden_grad_msg& m) {
  std::vector<char> out(4 + 4 + static_cast<size_t>(m.dh.size()) * 4 + 8);
  byte_writer w(out.data());
  w.put(static_cast<uint32_t>(m.dh.rows()));
  w.put(static_cast<uint32_t>(m.dh.cols()));
  put_tensor(w, m.dh);
  w.put(m.sum_of_squares);
  return out;
}

caf::expected<ml_hidden_grad_msg> decode_ml_hidden_grad(const char* data, size_t size) {
  byte_reader r(data, size);
  uint32_t n = 0, hidden = 0;
  ml_hidden_grad_msg m;
  if (!r.get(n) || !r.get(hidden)) return bad("ml_hidden_grad", "truncated header");
  if (n == 0 || n > max_modellet_samples || hidden == 0 || hidden > max_modellet_hidden)
    return bad("ml_hidden_grad", "shape out of range");
  if (static_cast<uint64_t>(n) * hidden * 4 + 8 != r.left())
    return bad("ml_hidden_grad", "shape does not match the frame's length");
  get_tensor(r, m.dh, n, hidden);
  r.get(m.sum_of_squares);
  if (!(m.sum_of_squares >= 0)) return bad("ml_hidden_grad", "sum of squares is not a number >= 0");
  return m;
}

std::vector<char> encode(const ml_update_msg& m) {
  std::vector<char> out(ml_update_bytes);
  byte_writer w(out.data());
  w.put(m.t);
  for (double v : {m.cfg.lr, m.cfg.beta1, m.cfg.beta2, m.cfg.eps, m.cfg.weight_decay, m.cfg.clip_norm})
    w.put(v);
  w.put(m.grad_scale);
  return out;
}

caf::expected<ml_update_msg> decode_ml_update(const char* data, size_t size) {
  if (size != ml_update_bytes) return bad("ml_update", "wrong length");
  byte_reader r(data, size);
  ml_update_msg m;
  r.get(m.t);
  for (double* v : {&m.cfg.lr, &m.cfg.beta1, &m.cfg.beta2, &m.cfg.eps, &m.cfg.weight_decay, &m.cfg.clip_norm})
    r.get(*v);
  r.get(m.grad_scale);
  if (m.t < 1) return bad("ml_update", "step below 1");
  for (double v : {m.cfg.lr, m.cfg.beta1, m.cfg.beta2, m.cfg.eps, m.cfg.weight_decay, m.grad_scale})
    if (!std::isfinite(v)) return bad("ml_update", "a setting is not finite");
  return m;
}

std::vector<char> encode_ml_done(int64_t value) {
  std::vector<char> out(8);
  byte_writer w(out.data());
  w.put(value);
  return out;
}

caf::expected<int64_t> decode_ml_done(const char* data, size_t size) {
  if (size != 8) return bad("ml_done", "wrong length");
  int64_t v = 0;
  byte_reader r(data, size);
  r.get(v);
  return v;
}

}  // namespace cleave
