#include "actors/ps/shards/shard_service.hpp"

#include <string>

#include "schema/errors.hpp"
#include "schema/shard_checkpoint_file.hpp"
#include "training/process_memory.hpp"

namespace cleave {

namespace {

shard_answer tensors_answer(const std::vector<const_view<float>>& views) {
  return {shard_kind::tensors, encode_shard_tensors(views)};
}

std::string shape(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// Why a decoded product does not fit the slice it names ("" if it does).
std::string misfit(const shard_product_msg& p, const slice_state& st) {
  const tensor& w = st.value;
  if (p.kind == 0) {  // out = a * op(W)
    const int64_t k = p.trans_w ? w.cols() : w.rows();
    const int64_t n = p.trans_w ? w.rows() : w.cols();
    if (p.trans_a || p.a.cols() != k) return "operand " + shape(p.a.rows(), p.a.cols()) + " does not fit slice " + shape(w.rows(), w.cols());
    if (p.beta != 0.0f && (p.c_in.rows() != p.a.rows() || p.c_in.cols() != n)) return "accumulator shape " + shape(p.c_in.rows(), p.c_in.cols());
    return {};
  }
  const int64_t m = p.trans_a ? p.a.cols() : p.a.rows(), k = p.trans_a ? p.a.rows() : p.a.cols();
  const int64_t kb = p.trans_b ? p.b.cols() : p.b.rows(), n = p.trans_b ? p.b.rows() : p.b.cols();
  if (k != kb || m != w.rows() || n != w.cols())
    return "gradient product " + shape(m, k) + " by " + shape(kb, n) + " does not fit slice " + shape(w.rows(), w.cols());
  return {};
}

}  // namespace

shard_answer shard_service::handle(uint16_t kind, const char* data, size_t size) {
  bytes_in_ += size;
  shard_answer answer;
  if (kind == static_cast<uint16_t>(shard_kind::next_part)) {
    answer = next_part();
  } else {
    outgoing_ = {};  // a new request: an answer not fetched to its end is dropped
    if (kind == static_cast<uint16_t>(shard_kind::part)) {
      answer = take_part(data, size);
    } else if (incoming_.started()) {
      incoming_.reset();
      answer = {shard_kind::refused, encode_shard_refusal("a request came before the last parts of the one before it")};
    } else {
      answer = send(answer_to(kind, data, size));
    }
  }
  bytes_out_ += answer.payload.size();
  return answer;
}

void shard_service::coordinator_lost() {
  attached_ = false;
  incoming_.reset();
  outgoing_ = {};
  outgoing_offset_ = 0;
}

shard_answer shard_service::take_part(const char* data, size_t size) {
  auto refuse = [](const caf::error& why) { return shard_answer{shard_kind::refused, encode_shard_refusal(describe(why))}; };
  auto part = decode_shard_part(data, size);
  if (!part) {
    incoming_.reset();
    return refuse(part.error());
  }
  if (!shard_kind_in_parts(part->kind) || part->kind == static_cast<uint16_t>(shard_kind::tensors)) {
    incoming_.reset();
    return refuse(fail("a request of kind " + std::to_string(part->kind) + " does not come in parts"));
  }
  if (auto why = incoming_.add(*part)) return refuse(why);
  if (!incoming_.complete()) return {};
  const uint16_t kind = incoming_.kind();
  const std::vector<char> whole = incoming_.take();
  return send(answer_to(kind, whole.data(), whole.size()));
}

shard_answer shard_service::send(shard_answer whole) {
  if (whole.payload.size() <= part_bytes_) return whole;
  outgoing_ = std::move(whole);
  outgoing_offset_ = 0;
  return next_part();
}

shard_answer shard_service::next_part() {
  if (outgoing_offset_ >= outgoing_.payload.size())
    return {shard_kind::refused, encode_shard_refusal("no answer in parts is being sent")};
  shard_answer part{shard_kind::part, encode_shard_part(static_cast<uint16_t>(outgoing_.kind), outgoing_.payload,
                                                        outgoing_offset_, part_bytes_)};
  outgoing_offset_ += part.payload.size() - shard_part_header_bytes;
  if (outgoing_offset_ >= outgoing_.payload.size()) outgoing_ = {};  // the last part: nothing is kept
  return part;
}

shard_answer shard_service::answer_to(uint16_t kind, const char* data, size_t size) {
  caf::expected<shard_answer> answer = fail("unknown request kind " + std::to_string(kind));
  const auto k = static_cast<shard_kind>(kind);
  if (k != shard_kind::attach && k != shard_kind::stats && !attached_
      && (k == shard_kind::zero_grads || k == shard_kind::products || k == shard_kind::add_grads
          || k == shard_kind::update || k == shard_kind::moments || k == shard_kind::checkpoint))
    answer = fail("no parameters attached yet");
  else
    switch (k) {
      case shard_kind::attach: answer = attach(data, size); break;
      case shard_kind::zero_grads:
        store_.zero_grads();
        answer = shard_answer{};
        if (devices_)
          if (auto err = devices_->begin_step()) answer = err;
        break;
      case shard_kind::products: answer = products(data, size); break;
      case shard_kind::add_grads: answer = add_grads(data, size); break;
      case shard_kind::update: answer = update(data, size); break;
      case shard_kind::moments: answer = moments(); break;
      case shard_kind::checkpoint: answer = checkpoint(data, size); break;
      case shard_kind::restore: answer = restore(data, size); break;
      case shard_kind::finish: answer = shard_answer{}; break;
      case shard_kind::has_checkpoint_dir:
        if (checkpoint_dir_.empty()) answer = fail("this shard has no --checkpoint-dir");
        else answer = shard_answer{};
        break;
      case shard_kind::stats: {
        shard_stats stats{peak_rss_bytes(), bytes_in_, bytes_out_};
        if (devices_) devices_->add_stats(stats);
        answer = shard_answer{shard_kind::stats_answer, encode(stats)};
        break;
      }
      case shard_kind::fleet:
        if (!devices_)
          answer = fail("this shard process feeds no devices: start it with --edge=HOST:PORT");
        else if (auto edge = devices_->configure(data, size))
          answer = shard_answer{shard_kind::fleet_answer, std::move(*edge)};
        else
          answer = edge.error();
        break;
      default: break;
    }
  if (!answer) return {shard_kind::refused, encode_shard_refusal(describe(answer.error()))};
  return std::move(*answer);
}

caf::expected<shard_answer> shard_service::attach(const char* data, size_t size) {
  auto entries = decode_shard_attach(data, size);
  if (!entries) return entries.error();
  std::vector<slice_state> slices(entries->size());
  std::vector<std::pair<int64_t, int64_t>> full_shapes;
  for (size_t i = 0; i < slices.size(); ++i) {
    auto& e = (*entries)[i];
    auto& st = slices[i];
    st.where = {static_cast<shard_axis>(e.axis), {e.begin, e.end}};
    st.decay = e.decay;
    st.value = std::move(e.value);
    st.adam_m = std::move(e.adam_m);
    st.adam_v = std::move(e.adam_v);
    full_shapes.emplace_back(e.full_rows, e.full_cols);
  }
  full_shapes_ = std::move(full_shapes);
  store_.attach(std::move(slices));
  attached_ = true;
  return shard_answer{};
}

caf::expected<shard_answer> shard_service::products(const char* data, size_t size) {
  auto msgs = decode_shard_products(data, size);
  if (!msgs) return msgs.error();
  std::vector<slice_product> products(msgs->size());
  std::vector<tensor> outputs;
  outputs.reserve(msgs->size());
  for (size_t i = 0; i < msgs->size(); ++i) {
    auto& m = (*msgs)[i];
    if (static_cast<size_t>(m.weight) >= store_.size())
      return fail("product " + std::to_string(i) + " names parameter " + std::to_string(m.weight) + " of "
                  + std::to_string(store_.size()));
    const auto& st = store_.slice(static_cast<size_t>(m.weight));
    if (auto why = misfit(m, st); !why.empty()) return fail("product " + std::to_string(i) + ": " + why);
    auto& p = products[i];
    p.tag.weight = m.weight;
    p.tag.layer = m.layer;
    p.tag.role = static_cast<gemm_role>(m.role);
    p.kind = static_cast<slice_product::kind_t>(m.kind);
    p.a = m.a.view();
    p.trans_a = m.trans_a;
    p.beta = m.beta;
    if (m.kind == 0) {
      p.trans_w = m.trans_w;
      if (m.beta != 0.0f)
        outputs.push_back(std::move(m.c_in));
      else
        outputs.emplace_back(m.a.rows(), m.trans_w ? st.value.rows() : st.value.cols());
      p.out = outputs.back().view();
    } else {
      p.b = m.b.view();
      p.trans_b = m.trans_b;
    }
  }
  const auto jobs = store_.jobs_for(products);
  auto* engine = devices_ ? devices_->engine() : nullptr;
  if (!jobs.empty()) (engine ? *engine : default_gemm_engine<float>()).gemm_batch(jobs);
  std::vector<const_view<float>> views;
  for (const auto& t : outputs) views.push_back(t.view());
  return tensors_answer(views);
}

caf::expected<shard_answer> shard_service::add_grads(const char* data, size_t size) {
  auto grads = decode_shard_tensors(data, size);
  if (!grads) return grads.error();
  if (grads->size() != store_.size())
    return fail(std::to_string(grads->size()) + " gradients for " + std::to_string(store_.size()) + " slices");
  for (size_t id = 0; id < grads->size(); ++id) {
    const tensor& g = (*grads)[id];
    const tensor& mine = store_.slice(id).grad;
    if (g.size() != 0 && (g.rows() != mine.rows() || g.cols() != mine.cols()))
      return fail("gradient " + std::to_string(id) + " is " + shape(g.rows(), g.cols()) + ", its slice "
                  + shape(mine.rows(), mine.cols()));
  }
  for (size_t id = 0; id < grads->size(); ++id) {
    const tensor& g = (*grads)[id];
    tensor& mine = store_.slice(id).grad;
    for (int64_t i = 0; i < g.size(); ++i) mine[i] += g[i];  // as add_out: element by element
  }
  return shard_answer{shard_kind::sum_of_squares, encode_shard_double(store_.sum_of_squares())};
}

caf::expected<shard_answer> shard_service::update(const char* data, size_t size) {
  auto m = decode_shard_update(data, size);
  if (!m) return m.error();
  store_.update(m->cfg, m->t, m->grad_scale);
  std::vector<const_view<float>> views;
  for (size_t id = 0; id < store_.size(); ++id) views.push_back(store_.slice(id).value.view());
  return tensors_answer(views);
}

shard_answer shard_service::moments() const {
  std::vector<const_view<float>> views;
  for (size_t id = 0; id < store_.size(); ++id) {
    views.push_back(store_.slice(id).adam_m.view());
    views.push_back(store_.slice(id).adam_v.view());
  }
  return tensors_answer(views);
}

caf::expected<shard_answer> shard_service::checkpoint(const char* data, size_t size) {
  if (checkpoint_dir_.empty()) return fail("this shard has no --checkpoint-dir");
  auto q = decode_shard_checkpoint_request(data, size);
  if (!q) return q.error();
  std::vector<shard_checkpoint_slice> slices;
  for (size_t id = 0; id < store_.size(); ++id) {
    const auto& st = store_.slice(id);
    slices.push_back({static_cast<uint8_t>(st.where.axis), st.decay, full_shapes_[id].first, full_shapes_[id].second,
                      st.where.range.begin, st.where.range.end, &st.value, &st.adam_m, &st.adam_v});
  }
  auto written = write_shard_checkpoint(checkpoint_dir_, q->header, slices,
                                       q->listed ? std::optional(q->kept_steps) : std::nullopt);
  if (!written) return written.error();
  return shard_answer{shard_kind::checkpoint_file, encode(*written)};
}

caf::expected<shard_answer> shard_service::restore(const char* data, size_t size) {
  if (checkpoint_dir_.empty()) return fail("this shard has no --checkpoint-dir to restore from");
  auto q = decode_shard_restore_request(data, size);
  if (!q) return q.error();
  const std::string expected = shard_checkpoint_name(q->header.step, q->header.shard, q->header.shards);
  if (q->file.name != expected) return fail("shard file " + q->file.name + " is not named " + expected);
  auto file = read_shard_checkpoint(checkpoint_dir_ + "/" + q->file.name);
  if (!file) return file.error();
  const auto& h = file->header;
  if (file->file.checksum != q->file.checksum || file->file.bytes != q->file.bytes)
    return fail(q->file.name + " has checksum " + std::to_string(file->file.checksum) + " and "
                + std::to_string(file->file.bytes) + " bytes, its set names " + std::to_string(q->file.checksum)
                + " and " + std::to_string(q->file.bytes));
  if (h.step != q->header.step || h.set_id != q->header.set_id || h.shard != q->header.shard
      || h.shards != q->header.shards)
    return fail(q->file.name + " was written for another set (step, set id or shard)");
  if (file->slices.size() != q->slices.size())
    return fail(q->file.name + " holds " + std::to_string(file->slices.size()) + " parameters, the model has "
                + std::to_string(q->slices.size()));
  std::vector<slice_state> slices(file->slices.size());
  std::vector<std::pair<int64_t, int64_t>> full_shapes;
  for (size_t i = 0; i < slices.size(); ++i) {
    auto& e = file->slices[i];
    if (!(shard_slice_geometry{e.axis, e.full_rows, e.full_cols, e.begin, e.end} == q->slices[i]))
      return fail(q->file.name + ": parameter " + std::to_string(i) + " is not cut as the coordinator cuts it");
    slices[i].where = {static_cast<shard_axis>(e.axis), {e.begin, e.end}};
    slices[i].decay = e.decay;
    slices[i].value = std::move(e.value);
    slices[i].adam_m = std::move(e.adam_m);
    slices[i].adam_v = std::move(e.adam_v);
    full_shapes.emplace_back(e.full_rows, e.full_cols);
  }
  full_shapes_ = std::move(full_shapes);
  store_.attach(std::move(slices));
  attached_ = true;
  return shard_answer{};
}

}  // namespace cleave
