#include "actors/ps/shards/remote_shard.hpp"

#include <algorithm>
#include <cstring>

#include "schema/errors.hpp"
#include "schema/shard_parts.hpp"

namespace cleave {

namespace {

bool all_zero(const const_view<float>& v) {
  for (int64_t r = 0; r < v.rows; ++r)
    for (int64_t c = 0; c < v.cols; ++c)
      if (v.data[r * v.ld + c] != 0.0f) return false;
  return true;
}

void copy_to(const tensor& from, mut_view<float> to) {
  for (int64_t r = 0; r < to.rows; ++r)
    std::copy(from.data() + r * to.cols, from.data() + (r + 1) * to.cols, to.data + r * to.ld);
}

}  // namespace

caf::expected<std::unique_ptr<transport::frame_client>> remote_shard::open(caf::actor_system& sys,
                                                                             const std::string& host, uint16_t port,
                                                                             caf::timespan connect_timeout,
                                                                             std::shared_ptr<const transport::tls_context> tls) {
  transport::bulk_options opts;
  opts.connect_timeout = connect_timeout;
  opts.tls = std::move(tls);
  opts.max_payload_for_kind = [max = opts.max_payload](uint16_t kind) { return shard_frame_cap(kind, max); };
  auto client = transport::frame_client::connect(sys, host, port, opts);
  if (!client) return fail("cannot reach the PS shard at " + host + ":" + std::to_string(port) + ": " + describe(client.error()));
  return client;
}

caf::expected<std::unique_ptr<remote_shard>> remote_shard::connect(caf::actor_system& sys, const std::string& host,
                                                                   uint16_t port, caf::timespan connect_timeout,
                                                                   caf::timespan call_timeout,
                                                                   std::shared_ptr<const transport::tls_context> tls) {
  auto client = open(sys, host, port, connect_timeout, tls);
  if (!client) return client.error();
  return std::unique_ptr<remote_shard>(
    new remote_shard(sys, std::move(*client), host, port, call_timeout, std::move(tls)));
}

caf::error remote_shard::reconnect(caf::timespan connect_timeout) {
  auto client = open(sys_, host_, port_, connect_timeout, tls_);
  if (!client) return client.error();
  before_client_ = traffic();
  client_ = std::move(*client);
  return {};
}

caf::expected<transport::bulk_frame> remote_shard::exchange(shard_kind kind, std::vector<char> payload) {
  auto frame = client_->call(static_cast<uint16_t>(kind), ++tag_, std::move(payload), call_timeout_);
  if (!frame) {
    // A link whose two ends disagree about TLS closes before the first answer.
    const char* hint = client_->bytes_received() > 0 ? ""
                       : tls_ ? " (a coordinator with --tls-* takes only shards started with --tls-*)"
                              : " (a shard started with --tls-* takes only a coordinator with --tls-*)";
    return fail("the PS shard at " + address_ + ": " + describe(frame.error()) + hint);
  }
  if (frame->kind == static_cast<uint16_t>(shard_kind::refused)) {
    auto why = decode_shard_refusal(frame->payload.data(), frame->payload.size());
    return fail("the PS shard at " + address_ + " refused: " + (why ? *why : describe(why.error())));
  }
  if (frame->tag != tag_) return fail("the PS shard at " + address_ + " answered out of turn (tag)");
  return frame;
}

caf::expected<transport::bulk_frame> remote_shard::send_in_parts(shard_kind kind, const std::vector<char>& payload) {
  for (uint64_t offset = 0;; offset += shard_part_bytes) {
    auto answer = exchange(shard_kind::part, encode_shard_part(static_cast<uint16_t>(kind), payload, offset));
    if (!answer || offset + shard_part_bytes >= payload.size()) return answer;
    if (answer->kind != static_cast<uint16_t>(shard_kind::done))
      return fail("the PS shard at " + address_ + " answered a part with kind " + std::to_string(answer->kind));
  }
}

caf::expected<transport::bulk_frame> remote_shard::fetch_parts(transport::bulk_frame first) {
  shard_part_assembler whole;
  for (auto frame = std::move(first);;) {
    auto part = decode_shard_part(frame.payload.data(), frame.payload.size());
    caf::error why = part ? whole.add(*part) : part.error();
    if (!why && !shard_kind_in_parts(whole.kind())) why = fail("an answer of kind " + std::to_string(whole.kind()) + " in parts");
    if (why) return fail("the PS shard at " + address_ + ": " + describe(why));
    if (whole.complete()) {
      frame.kind = whole.kind();
      frame.payload = whole.take();
      return frame;
    }
    auto next = exchange(shard_kind::next_part, {});
    if (!next) return next.error();
    if (next->kind != static_cast<uint16_t>(shard_kind::part))
      return fail("the PS shard at " + address_ + " broke off an answer in parts (kind " + std::to_string(next->kind) + ")");
    frame = std::move(*next);
  }
}

caf::expected<transport::bulk_frame> remote_shard::call(shard_kind kind, std::vector<char> payload,
                                                        shard_kind expected) {
  return answer(payload.size() > shard_part_bytes ? send_in_parts(kind, payload) : exchange(kind, std::move(payload)),
                expected);
}

caf::expected<transport::bulk_frame> remote_shard::call_gathered(shard_kind kind, const gathered_message& request,
                                                                 shard_kind expected) {
  gathered_reader reader(request);
  if (request.total <= shard_part_bytes) {
    std::vector<char> whole(request.total);
    reader.copy(0, request.total, whole.data());
    return call(kind, std::move(whole), expected);
  }
  for (uint64_t offset = 0;; offset += shard_part_bytes) {
    auto frame = exchange(shard_kind::part,
                          encode_shard_part(static_cast<uint16_t>(kind), request, reader, offset, shard_part_bytes));
    if (!frame || offset + shard_part_bytes >= request.total) return answer(std::move(frame), expected);
    if (frame->kind != static_cast<uint16_t>(shard_kind::done))
      return fail("the PS shard at " + address_ + " answered a part with kind " + std::to_string(frame->kind));
  }
}

caf::expected<transport::bulk_frame> remote_shard::answer(caf::expected<transport::bulk_frame> frame,
                                                          shard_kind expected) {
  if (frame && frame->kind == static_cast<uint16_t>(shard_kind::part)) frame = fetch_parts(std::move(*frame));
  if (!frame) return frame.error();
  if (frame->kind != static_cast<uint16_t>(expected))
    return fail("the PS shard at " + address_ + " answered out of turn (kind " + std::to_string(frame->kind) + ")");
  return frame;
}

caf::expected<std::vector<tensor>> remote_shard::call_for_tensors(
  shard_kind kind, std::vector<char> payload, const std::vector<std::pair<int64_t, int64_t>>& shapes) {
  auto frame = call(kind, std::move(payload), shard_kind::tensors);
  if (!frame) return frame.error();
  auto tensors = decode_shard_tensors(frame->payload.data(), frame->payload.size());
  if (!tensors) return fail("the PS shard at " + address_ + ": " + describe(tensors.error()));
  bool fits = tensors->size() == shapes.size();
  for (size_t i = 0; fits && i < shapes.size(); ++i)
    fits = (*tensors)[i].rows() == shapes[i].first && (*tensors)[i].cols() == shapes[i].second;
  if (!fits) return fail("the PS shard at " + address_ + " answered tensors of the wrong number or shape");
  return tensors;
}

void remote_shard::take_cut(const std::vector<parameter*>& params, const std::vector<shard_slice>& mine) {
  mine_ = mine;
  params_ = params;
  slice_shapes_.clear();
  bytes_ = 0;
  for (size_t id = 0; id < params.size(); ++id) {
    const parameter& p = *params[id];
    const int64_t extent = mine[id].range.size();
    const bool columns = mine[id].axis == shard_axis::columns;
    slice_shapes_.emplace_back(columns ? p.value.rows() : extent, columns ? extent : p.value.cols());
    bytes_ += 4 * static_cast<uint64_t>(slice_shapes_.back().first * slice_shapes_.back().second) * sizeof(float);
  }
}

caf::error remote_shard::attach(const std::vector<parameter*>& params, const std::vector<shard_slice>& mine) {
  if (restored_) {
    restored_ = false;
    bool same = mine.size() == mine_.size();
    for (size_t id = 0; same && id < mine.size(); ++id)
      same = mine[id].axis == mine_[id].axis && mine[id].range.begin == mine_[id].range.begin
             && mine[id].range.end == mine_[id].range.end;
    // The coordinator's whole moments are not current after a restore: only the shard's file has them.
    if (!same) return fail("the PS shard at " + address_ + " loaded its file for another cut than this attach's");
    take_cut(params, mine);
    after_attach_ = traffic();
    return {};
  }
  take_cut(params, mine);
  // The frame is read from the whole tensors where they are. A moment the
  // coordinator does not hold (none yet) is zeros: one row of them for every row.
  int64_t widest = 0;
  for (const auto& shape : slice_shapes_) widest = std::max(widest, shape.second);
  const std::vector<float> zeros(static_cast<size_t>(widest), 0.0f);
  auto moment = [&](const tensor& whole, size_t id) {
    return whole.empty() ? const_view<float>{zeros.data(), slice_shapes_[id].first, slice_shapes_[id].second, 0}
                         : window(whole, mine[id]);
  };
  std::vector<shard_attach_view> entries(params.size());
  for (size_t id = 0; id < params.size(); ++id) {
    const parameter& p = *params[id];
    auto& e = entries[id];
    e.axis = static_cast<uint8_t>(mine[id].axis);
    e.decay = p.decay;
    e.full_rows = p.value.rows();
    e.full_cols = p.value.cols();
    e.begin = mine[id].range.begin;
    e.end = mine[id].range.end;
    e.value = window(p.value, mine[id]);
    e.adam_m = moment(p.adam_m, id);
    e.adam_v = moment(p.adam_v, id);
  }
  auto done = call_gathered(shard_kind::attach, gather_shard_attach(entries), shard_kind::done);
  after_attach_ = traffic();
  return done ? caf::error{} : done.error();
}

caf::error remote_shard::zero_grads() {
  auto done = call(shard_kind::zero_grads, {}, shard_kind::done);
  return done ? caf::error{} : done.error();
}

caf::error remote_shard::run(const std::vector<slice_product>& products,
                             const std::vector<gemm_job<float>>& whole) {
  std::vector<shard_product_ref> refs;
  std::vector<mut_view<float>> outs;
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (const auto& p : products) {
    shard_product_ref r;
    r.kind = static_cast<uint8_t>(p.kind);
    r.weight = p.tag.weight;
    r.layer = p.tag.layer;
    r.role = static_cast<uint8_t>(p.tag.role);
    r.trans_a = p.trans_a;
    r.trans_b = p.trans_b;
    r.trans_w = p.trans_w;
    r.beta = p.beta;
    r.a = p.a;
    r.b = p.b;
    if (p.kind == slice_product::kind_t::times_slice) {
      r.c_in = p.out;  // sent only when beta != 0
      outs.push_back(p.out);
      shapes.emplace_back(p.out.rows, p.out.cols);
    }
    refs.push_back(r);
  }
  // The whole products are the coordinator's own; they are independent of the shard's.
  if (!whole.empty()) default_gemm_engine<float>().gemm_batch(whole);
  if (refs.empty()) return {};
  auto outputs = call_for_tensors(shard_kind::products, encode_shard_products(refs), shapes);
  if (!outputs) return outputs.error();
  for (size_t i = 0; i < outs.size(); ++i) copy_to((*outputs)[i], outs[i]);
  return {};
}

caf::expected<double> remote_shard::add_grads(const std::vector<parameter*>& params) {
  // A window of zeros (a weight whose gradient the shard made itself) adds nothing: not sent.
  std::vector<const_view<float>> windows;
  // Nor is a gradient the coordinator does not keep (a product weight's).
  for (size_t id = 0; id < params.size(); ++id) {
    const tensor& grad = params[id]->grad;
    const auto w = grad.empty() ? const_view<float>{} : window(grad, mine_[id]);
    windows.push_back(grad.empty() || all_zero(w) ? const_view<float>{} : w);
  }
  auto frame = call(shard_kind::add_grads, encode_shard_tensors(windows), shard_kind::sum_of_squares);
  if (!frame) return frame.error();
  auto sq = decode_shard_double(frame->payload.data(), frame->payload.size());
  if (!sq) return fail("the PS shard at " + address_ + ": " + describe(sq.error()));
  return *sq;
}

caf::error remote_shard::update(const adamw_config& cfg, int64_t t, double grad_scale) {
  // The values are read into the parameters as their parts arrive: the
  // answer is as large as the slices, and never held whole here.
  std::vector<mut_view<float>> into;
  for (size_t id = 0; id < params_.size(); ++id) into.push_back(window(params_[id]->value, mine_[id]));
  shard_tensors_sink values(std::move(into));
  auto first = exchange(shard_kind::update, encode(shard_update_msg{cfg, t, grad_scale}));
  if (!first) return first.error();
  return receive_tensors(std::move(*first), values);
}

caf::error remote_shard::receive_tensors(transport::bulk_frame first, shard_tensors_sink& sink) {
  const std::string who = "the PS shard at " + address_;
  if (first.kind == static_cast<uint16_t>(shard_kind::tensors)) {
    if (auto why = sink.add(first.payload.data(), first.payload.size())) return fail(who + ": " + describe(why));
  } else if (first.kind != static_cast<uint16_t>(shard_kind::part)) {
    return fail(who + " answered out of turn (kind " + std::to_string(first.kind) + ")");
  } else {
    uint64_t received = 0;
    for (auto frame = std::move(first);;) {
      auto part = decode_shard_part(frame.payload.data(), frame.payload.size());
      if (!part) return fail(who + ": " + describe(part.error()));
      if (part->kind != static_cast<uint16_t>(shard_kind::tensors) || part->total != sink.total()
          || part->offset != received)
        return fail(who + " answered with a part of another message, or out of order");
      if (auto why = sink.add(part->data, part->size)) return fail(who + ": " + describe(why));
      received += part->size;
      if (received == part->total) break;
      auto next = exchange(shard_kind::next_part, {});
      if (!next) return next.error();
      if (next->kind != static_cast<uint16_t>(shard_kind::part))
        return fail(who + " broke off an answer in parts (kind " + std::to_string(next->kind) + ")");
      frame = std::move(*next);
    }
  }
  if (!sink.complete()) return fail(who + " answered fewer tensors than its slices");
  return {};
}

caf::error remote_shard::gather_moments(const std::vector<parameter*>& params) {
  std::vector<std::pair<int64_t, int64_t>> shapes;
  for (const auto& s : slice_shapes_) shapes.insert(shapes.end(), {s, s});
  auto moments = call_for_tensors(shard_kind::moments, {}, shapes);
  if (!moments) return moments.error();
  for (size_t id = 0; id < params.size(); ++id) {
    copy_in((*moments)[2 * id], mine_[id], params[id]->adam_m);
    copy_in((*moments)[2 * id + 1], mine_[id], params[id]->adam_v);
  }
  return {};
}

caf::error remote_shard::has_checkpoint_dir() {
  auto done = call(shard_kind::has_checkpoint_dir, {}, shard_kind::done);
  return done ? caf::error{} : done.error();
}

caf::expected<shard_file_ref> remote_shard::checkpoint(const shard_checkpoint_request& q) {
  const auto& h = q.header;
  auto frame = call(shard_kind::checkpoint, encode(q), shard_kind::checkpoint_file);
  if (!frame) return frame.error();
  auto file = decode_shard_file_ref(frame->payload.data(), frame->payload.size());
  if (!file) return fail("the PS shard at " + address_ + ": " + describe(file.error()));
  if (file->name != shard_checkpoint_name(h.step, h.shard, h.shards))
    return fail("the PS shard at " + address_ + " wrote " + file->name + ", not the file asked for");
  return file;
}

caf::error remote_shard::restore(const shard_checkpoint_header& h, const shard_file_ref& file,
                                 const std::vector<parameter*>& params, const std::vector<shard_slice>& mine) {
  restored_ = false;
  shard_restore_request q{h, file, {}};
  for (size_t id = 0; id < params.size(); ++id)
    q.slices.push_back({static_cast<uint8_t>(mine[id].axis), params[id]->value.rows(), params[id]->value.cols(),
                        mine[id].range.begin, mine[id].range.end});
  auto done = call(shard_kind::restore, encode(q), shard_kind::done);
  if (!done) return done.error();
  take_cut(params, mine);
  restored_ = true;
  return {};
}

caf::error remote_shard::finish() {
  if (lost()) return fail("the PS shard at " + address_ + " is gone");
  // Short: the job is over whatever the shard says, and a hung one must not hold this process.
  auto frame = client_->call(static_cast<uint16_t>(shard_kind::finish), ++tag_, {}, std::chrono::seconds(10));
  if (!frame) return fail("the PS shard at " + address_ + ": " + describe(frame.error()));
  if (frame->kind != static_cast<uint16_t>(shard_kind::done))
    return fail("the PS shard at " + address_ + " answered the end of the job with kind " + std::to_string(frame->kind));
  return {};
}

caf::expected<shard_stats> remote_shard::stats() {
  auto frame = call(shard_kind::stats, {}, shard_kind::stats_answer);
  if (!frame) return frame.error();
  return decode_shard_stats(frame->payload.data(), frame->payload.size());
}

}  // namespace cleave
