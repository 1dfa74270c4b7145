#include "schema/modellet_codec.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "schema/errors.hpp"
#include "schema/wire.hpp"

namespace cleave {

namespace {

// Labels and gradients are bounded by the frame alone (edge_payload_cap).
constexpr size_t no_cap_but_the_frame = std::numeric_limits<uint32_t>::max();

caf::error bad(const char* what, const std::string& why) {
  return fail(std::string(what) + " frame: " + why);
}

void put_tensor(byte_writer& w, const tensor& t) { w.raw(t.data(), static_cast<size_t>(t.size()) * sizeof(float)); }

bool get_tensor(byte_reader& r, tensor& t, int64_t rows, int64_t cols) {
  t.resize(rows, cols);
  return r.raw(t.data(), static_cast<size_t>(rows * cols) * sizeof(float));
}

// A range's six tensors after its header, [rows, hidden] or [rows, 1] each
// (rows = end - begin): the header is checked, and the tensors' bytes
// against the frame, before any is sized.
template <class S>
struct state_tensors : wire::custom_field {
  S& s;
  explicit state_tensors(S& x) : s(x) {}
  template <class St>
  static auto in_order(St& s) {
    const int64_t h = s.hidden;
    return std::array<std::pair<decltype(&s.w), int64_t>, 6>{
        {{&s.w, h}, {&s.b, 1}, {&s.m_w, h}, {&s.v_w, h}, {&s.m_b, 1}, {&s.v_b, 1}}};
  }
  void put(wire::writer& w) const {
    for (auto [t, cols] : in_order(s)) put_tensor(w.bytes(), *t);
  }
  bool get(wire::reader& r) {
    if (s.begin < 0 || s.end <= s.begin) return r.fail("empty or negative range");
    if (s.hidden <= 0 || s.hidden > max_modellet_hidden) return r.fail("hidden width out of range");
    if (s.step < 0) return r.fail("negative step");
    const int64_t rows = static_cast<int64_t>(s.end) - s.begin;
    if (static_cast<uint64_t>(rows) * static_cast<uint64_t>(3 * s.hidden + 3) > r.left() / sizeof(float))
      return r.fail("the range's tensors do not fit the frame");
    for (auto [t, cols] : in_order(s))
      if (!get_tensor(r.bytes(), *t, rows, cols)) return r.fail("truncated tensors");
    return true;
  }
};

// A batch's rows: n, hidden (u32), then n x hidden floats. Both within
// their caps, and n x (hidden + per_row) floats within the frame, before it
// is sized (per_row: what else the frame carries per sample).
template <class T>
struct batch_rows : wire::custom_field {
  T& t;
  uint32_t per_row;
  batch_rows(T& x, uint32_t extra) : t(x), per_row(extra) {}
  void put(wire::writer& w) const {
    w(static_cast<uint32_t>(t.rows()), static_cast<uint32_t>(t.cols()));
    put_tensor(w.bytes(), t);
  }
  bool get(wire::reader& r) {
    uint32_t n = 0, hidden = 0;
    if (!r(n, hidden)) return r.fail("truncated header");
    if (n == 0 || n > max_modellet_samples) return r.fail("sample count out of range");
    if (hidden == 0 || hidden > max_modellet_hidden) return r.fail("hidden width out of range");
    if (static_cast<uint64_t>(n) * (hidden + per_row) > r.left() / sizeof(float))
      return r.fail("the rows do not fit the frame");
    return get_tensor(r.bytes(), t, n, hidden);
  }
};

// ml_forward on the wire: each sample's count of labels in the range after
// the activations (one per row), then the labels.
template <class H>
struct forward_wire {
  int64_t step = 0;
  H& h;
  std::vector<uint32_t> counts;
  std::vector<int32_t> ids;
};

template <class M, class Io>
wire::fields_of_any<M, forward_wire> wire_fields(M& f, Io& io) {
  using H = std::remove_reference_t<decltype(f.h)>;
  return io(f.step, batch_rows<H>(f.h, 1), wire::counted(f.counts, [&f] { return f.h.rows(); }),
            wire::list<uint32_t>(f.ids, no_cap_but_the_frame));
}

// ml_scores on the wire: each sample's count of pairs, the ids as gaps
// (put_varint), the logits, each sample's softmax stats.
template <class S>
struct scores_wire {
  std::vector<uint32_t> counts;
  std::vector<char> id_bytes;
  S& s;
};

template <class M, class Io>
wire::fields_of_any<M, scores_wire> wire_fields(M& f, Io& io) {
  const auto pairs = [&f] {
    uint64_t n = 0;
    for (uint32_t c : f.counts) n += c;
    return n;
  };
  return io(wire::list<uint32_t>(f.counts, max_modellet_samples), wire::list<uint32_t>(f.id_bytes, no_cap_but_the_frame),
            wire::counted(f.s.logits, pairs), wire::counted(f.s.stats, [&f] { return f.counts.size(); }));
}

}  // namespace

template <class M, class Io>
wire::fields_of<M, lsh_config> wire_fields(M& c, Io& io) {
  return io(c.family, c.hashes, c.tables, c.bin_size, c.simhash_sparsity, c.seed);
}

template <class M, class Io>
wire::fields_of<M, lsh_schedule> wire_fields(M& s, Io& io) {
  return io(s.rehash_every, s.rebuild_every, s.rebuild_growth);
}

template <class M, class Io>
wire::fields_of<M, modellet_sampling> wire_fields(M& s, Io& io) {
  return io(s.lsh, s.bucket_size, s.policy, s.schedule, s.min_active, s.seed);
}

template <class M, class Io>
wire::fields_of<M, modellet_state> wire_fields(M& s, Io& io) {
  return io(s.begin, s.end, s.hidden, s.step, state_tensors<M>(s));
}

template <class M, class Io>
wire::fields_of<M, ml_place_msg> wire_fields(M& m, Io& io) {
  return io(m.sampling, m.state);
}

template <class M, class Io>
wire::fields_of<M, softmax_stats> wire_fields(M& st, Io& io) {
  return io(st.max, st.sum);
}

template <class M, class Io>
wire::fields_of<M, ml_hidden_grad_msg> wire_fields(M& m, Io& io) {
  using T = std::remove_reference_t<decltype((m.dh))>;
  return io(batch_rows<T>(m.dh, 0), m.sum_of_squares);
}

template <class M, class Io>
wire::fields_of<M, ml_update_msg> wire_fields(M& m, Io& io) {
  return io(m.t, m.cfg.lr, m.cfg.beta1, m.cfg.beta2, m.cfg.eps, m.cfg.weight_decay, m.cfg.clip_norm, m.grad_scale);
}

std::vector<char> encode(const ml_place_msg& m) { return wire::encode(m); }

caf::expected<ml_place_msg> decode_ml_place(const char* data, size_t size) {
  auto m = wire::read_whole<ml_place_msg>(data, size, "ml_place frame");
  if (!m) return m;
  const auto& s = m->sampling;
  if (s.lsh.family > lsh_family::dwta) return bad("ml_place", "unknown hash family");
  if (s.policy > bucket_policy::reservoir) return bad("ml_place", "unknown bucket policy");
  // The index sizes its tables from these: bounded before the model-let is built.
  if (s.lsh.tables <= 0 || s.lsh.tables > 1024 || s.lsh.hashes <= 0 || s.lsh.hashes > 32
      || s.bucket_size <= 0 || s.bucket_size > 4096 || s.min_active < 0)
    return bad("ml_place", "sampling settings out of range");
  if (s.schedule.rehash_every < 0 || s.schedule.rebuild_every < 0 || !(s.schedule.rebuild_growth >= 1))
    return bad("ml_place", "refresh schedule out of range");
  return m;
}

std::vector<char> encode_ml_state(const modellet_state& s) { return wire::encode(s); }

caf::expected<modellet_state> decode_ml_state(const char* data, size_t size) {
  return wire::read_whole<modellet_state>(data, size, "ml_state frame");
}

std::vector<char> encode_ml_forward(int64_t step, const tensor& h, const label_rows& labels,
                                    int32_t begin, int32_t end) {
  forward_wire<const tensor> f{step, h, std::vector<uint32_t>(static_cast<size_t>(labels.n), 0), {}};
  for (int64_t r = 0; r < labels.n; ++r)
    for (int64_t e = labels.offsets[r]; e < labels.offsets[r + 1]; ++e)
      if (labels.ids[e] >= begin && labels.ids[e] < end) {
        f.ids.push_back(labels.ids[e]);
        ++f.counts[static_cast<size_t>(r)];
      }
  return wire::encode(f);
}

caf::expected<ml_forward_msg> decode_ml_forward(const char* data, size_t size) {
  ml_forward_msg m;
  wire::reader r(data, size);
  forward_wire<tensor> f{0, m.h, {}, {}};
  if (!r(f)) return bad("ml_forward", r.why());
  if (r.left() != 0) return bad("ml_forward", "trailing bytes");
  if (f.step < 0) return bad("ml_forward", "negative step");
  m.step = f.step;
  m.label_offsets.assign(f.counts.size() + 1, 0);
  for (size_t i = 0; i < f.counts.size(); ++i) m.label_offsets[i + 1] = m.label_offsets[i] + f.counts[i];
  if (static_cast<uint64_t>(m.label_offsets.back()) != f.ids.size())
    return bad("ml_forward", "label counts do not add up");
  for (int32_t id : f.ids)
    if (id < 0) return bad("ml_forward", "negative label id");
  m.label_ids = std::move(f.ids);
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
  scores_wire<const modellet_scores> f{{}, {}, s};
  f.id_bytes.reserve(s.ids.size() * 2);
  for (int64_t r = 0; r < s.samples(); ++r) {
    f.counts.push_back(static_cast<uint32_t>(s.offsets[r + 1] - s.offsets[r]));
    int64_t prev = -1;
    for (int64_t j = s.offsets[r]; j < s.offsets[r + 1]; ++j) {
      const int32_t id = s.ids[static_cast<size_t>(j)];
      put_varint(f.id_bytes, static_cast<uint32_t>(id - prev - 1));
      prev = id;
    }
  }
  return wire::encode(f);
}

caf::expected<modellet_scores> decode_ml_scores(const char* data, size_t size) {
  modellet_scores s;
  scores_wire<modellet_scores> f{{}, {}, s};
  wire::reader r(data, size);
  if (!r(f)) return bad("ml_scores", r.why());
  if (r.left() != 0) return bad("ml_scores", "trailing bytes");
  const size_t n = f.counts.size();
  if (n == 0) return bad("ml_scores", "sample count out of range");
  s.offsets.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i) s.offsets[i + 1] = s.offsets[i] + f.counts[i];
  const auto total = static_cast<uint64_t>(s.offsets.back());
  // Each id takes a byte at least: the ids bound the count before it sizes anything.
  if (total > f.id_bytes.size()) return bad("ml_scores", "pair counts do not match the frame's length");
  const auto* p = reinterpret_cast<const unsigned char*>(f.id_bytes.data());
  const auto* end = p + f.id_bytes.size();
  s.ids.resize(total);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
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
  for (const auto& st : s.stats)
    if (!(st.sum >= 0) || std::isnan(st.max)) return bad("ml_scores", "softmax stats are not numbers");
  return s;
}

std::vector<char> encode_ml_grads(const std::vector<float>& dlogits) {
  return wire::encode(wire::list<uint32_t>(dlogits, no_cap_but_the_frame));
}

caf::expected<std::vector<float>> decode_ml_grads(const char* data, size_t size) {
  std::vector<float> v;
  if (!wire::decode_exact(data, size, wire::list<uint32_t>(v, no_cap_but_the_frame)))
    return bad("ml_grads", "count does not match the frame's length");
  return v;
}

std::vector<char> encode(const ml_hidden_grad_msg& m) { return wire::encode(m); }

caf::expected<ml_hidden_grad_msg> decode_ml_hidden_grad(const char* data, size_t size) {
  auto m = wire::read_whole<ml_hidden_grad_msg>(data, size, "ml_hidden_grad frame");
  if (m && !(m->sum_of_squares >= 0)) return bad("ml_hidden_grad", "sum of squares is not a number >= 0");
  return m;
}

std::vector<char> encode(const ml_update_msg& m) { return wire::encode(m); }

caf::expected<ml_update_msg> decode_ml_update(const char* data, size_t size) {
  auto m = wire::read_whole<ml_update_msg>(data, size, "ml_update frame");
  if (!m) return m;
  if (m->t < 1) return bad("ml_update", "step below 1");
  for (double v : {m->cfg.lr, m->cfg.beta1, m->cfg.beta2, m->cfg.eps, m->cfg.weight_decay, m->grad_scale})
    if (!std::isfinite(v)) return bad("ml_update", "a setting is not finite");
  return m;
}

std::vector<char> encode_ml_done(int64_t value) { return wire::encode(value); }

caf::expected<int64_t> decode_ml_done(const char* data, size_t size) {
  int64_t v = 0;
  if (!wire::decode_exact(data, size, v)) return bad("ml_done", "wrong length");
  return v;
}

}  // namespace cleave
