#include "actors/ps/modellet/modellet_ps.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "kernels/sparse/softmax_combine.hpp"
#include "schema/edge_codec.hpp"
#include "schema/errors.hpp"
#include "schema/modellet_codec.hpp"

namespace cleave {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::runtime_error fault(const std::string& what) { return std::runtime_error("model-lets: " + what); }

}  // namespace

modellet_ps::modellet_ps(std::vector<device_profile> fleet, modellet_transport& transport,
                         modellet_ps_options opts)
    : fleet_(std::move(fleet)), dead_(fleet_.size(), false), transport_(transport), opts_(opts) {
  for (const auto& d : fleet_) speeds_.push_back(d.flops);
}

std::vector<modellet_range> modellet_ps::ranges() const {
  std::vector<modellet_range> out;
  for (const auto& s : shards_) out.push_back({s.device, s.begin, s.end});
  return out;
}

modellet_state modellet_ps::slice(const shard& s) const {
  modellet_state st;
  st.begin = s.begin;
  st.end = s.end;
  st.hidden = w_->value.cols();
  st.step = s.copy_step;
  const int64_t rows = s.end - s.begin, h = st.hidden;
  auto cut = [&](const tensor& from, tensor& to, int64_t cols) {
    to.resize(rows, cols);
    std::copy(from.data() + s.begin * cols, from.data() + s.end * cols, to.data());
  };
  cut(w_->value, st.w, h);
  cut(w_->adam_m, st.m_w, h);
  cut(w_->adam_v, st.v_w, h);
  cut(b_->value, st.b, 1);
  cut(b_->adam_m, st.m_b, 1);
  cut(b_->adam_v, st.v_b, 1);
  return st;
}

std::vector<char> modellet_ps::place_frame(const shard& s) const {
  ml_place_msg m;
  m.sampling = opts_.sampling;
  m.sampling.min_active = s.min_active;
  m.sampling.bucket_size = s.bucket_size;
  m.state = slice(s);
  auto out = encode(m);
  if (out.size() > edge_payload_cap(edge_ml_place, opts_.frame_cap))
    throw fault("the range [" + std::to_string(s.begin) + ", " + std::to_string(s.end) + ") is "
                + std::to_string(out.size()) + " bytes to place, over the frame cap of "
                + std::to_string(opts_.frame_cap) + ": use more devices");
  return out;
}

template <class Make>
std::vector<ml_frame> modellet_ps::round(uint16_t kind, uint16_t want, Make make, double& bytes,
                                         std::vector<size_t>& lost) {
  std::vector<ml_request> requests;
  for (const auto& s : shards_) {
    requests.push_back({s.device, s.begin, kind, make(s)});
    bytes += static_cast<double>(requests.back().payload.size() + modellet_frame_header_bytes);
  }
  const auto started = std::chrono::steady_clock::now();
  auto answers = transport_.exchange(std::move(requests));
  const double waited = seconds_since(started);
  std::vector<ml_frame> out(shards_.size());
  lost.clear();
  for (size_t i = 0; i < shards_.size(); ++i) {
    const auto name = to_string(static_cast<edge_kind>(kind));
    if (!answers[i]) {
      spdlog::warn("model-lets: device {} did not answer {} ({}); its ranges are lost", shards_[i].device,
                   name, describe(answers[i].error()));
      lost.push_back(i);
      continue;
    }
    auto& a = *answers[i];
    if (a.kind == edge_ml_error) {
      auto why = decode_refusal(a.payload.data(), a.payload.size());
      throw fault("device " + std::to_string(shards_[i].device) + " refused " + name + ": "
                  + (why ? *why : std::string("(unreadable reason)")));
    }
    if (a.kind != want || a.payload.size() > edge_payload_cap(want, opts_.frame_cap))
      throw fault("device " + std::to_string(shards_[i].device) + " answered " + name + " with a "
                  + to_string(static_cast<edge_kind>(a.kind)) + " frame of " + std::to_string(a.payload.size())
                  + " bytes");
    bytes += static_cast<double>(a.payload.size() + modellet_frame_header_bytes);
    out[i] = std::move(a);
  }
  if (!lost.empty()) lose(lost, waited);
  return out;
}

void modellet_ps::lose(const std::vector<size_t>& which, double detect_seconds) {
  const auto started = std::chrono::steady_clock::now();
  std::vector<int32_t> devices;
  for (size_t i : which)
    if (std::find(devices.begin(), devices.end(), shards_[i].device) == devices.end())
      devices.push_back(shards_[i].device);
  for (int32_t d : devices) {
    dead_[static_cast<size_t>(d)] = true;
    modellet_failure f;
    f.device = d;
    f.step = computing_ + 1;
    for (auto& s : shards_) {
      if (s.device != d) continue;
      for (bool placed = false; !placed;) {
        // The survivor with the least work per FLOP/s once it holds this range too.
        std::vector<double> held(speeds_.size(), 0);
        for (const auto& o : shards_) held[static_cast<size_t>(o.device)] += o.end - o.begin;
        int32_t best = -1;
        double best_load = 0;
        for (size_t k = 0; k < speeds_.size(); ++k) {
          if (dead_[k]) continue;
          const double load = (held[k] + (s.end - s.begin)) / speeds_[k];
          if (best < 0 || load < best_load) {
            best = static_cast<int32_t>(k);
            best_load = load;
          }
        }
        if (best < 0) throw fault("every device holding the output layer is lost");
        s.device = best;
        auto frame = place_frame(s);
        traffic_.place_bytes += static_cast<double>(frame.size() + modellet_frame_header_bytes);
        auto answers = transport_.exchange({{best, s.begin, edge_ml_place, std::move(frame)}});
        if (answers[0] && answers[0]->kind == edge_ml_done) {
          traffic_.place_bytes += static_cast<double>(answers[0]->payload.size() + modellet_frame_header_bytes);
          placed = true;
        } else if (answers[0]) {
          auto why = decode_refusal(answers[0]->payload.data(), answers[0]->payload.size());
          throw fault("device " + std::to_string(best) + " refused a range: " + (why ? *why : "?"));
        } else {
          dead_[static_cast<size_t>(best)] = true;  // lost too: try the next
        }
      }
      const int64_t lost_steps = steps_done_ - s.copy_step;
      f.ranges.emplace_back(s.begin, s.end);
      f.moved_to.push_back(s.device);
      f.lost_steps = std::max(f.lost_steps, lost_steps);
      f.lost_rows += lost_steps * (s.end - s.begin);
    }
    f.seconds = detect_seconds + seconds_since(started);
    spdlog::warn("model-lets: device {} lost at step {}: {} range(s) placed again from the PS's copy, "
                 "{} step(s) of updates lost, {:.3f} s", d, f.step, f.ranges.size(), f.lost_steps, f.seconds);
    failures_.push_back(std::move(f));
  }
}

void modellet_ps::place(parameter& w, parameter& b, int64_t step) {
  w_ = &w;
  b_ = &b;
  const int64_t neurons = w.value.rows();
  const int32_t tables = opts_.sampling.min_active >= neurons ? 0 : opts_.sampling.lsh.tables;
  auto split = modellet_split(fleet_, neurons, modellet_bytes_per_neuron(w.value.cols(), tables));
  if (!split) throw fault(describe(split.error()));
  shards_.clear();
  for (const auto& r : *split) shards_.push_back({r.begin, r.end, r.device, step, 1, 1});
  // Each range's share of the layer's top-up, so the union's active set is
  // about the in-process one (every neuron when min_active covers the layer).
  const int64_t want = opts_.sampling.min_active > 0 ? opts_.sampling.min_active : std::max<int64_t>(1, neurons / 200);
  for (auto& s : shards_) {
    const int64_t rows = s.end - s.begin;
    s.min_active = want >= neurons ? static_cast<int32_t>(rows)
                                   : static_cast<int32_t>(std::max<int64_t>(1, (want * rows + neurons - 1) / neurons));
    s.bucket_size = static_cast<int32_t>(
      std::max<int64_t>(1, (int64_t{opts_.sampling.bucket_size} * rows + neurons - 1) / neurons));
  }
  std::string where;
  for (const auto& s : shards_)
    where += " " + std::to_string(s.device) + ":[" + std::to_string(s.begin) + "," + std::to_string(s.end) + ")";
  spdlog::info("model-lets: {} neurons on {} devices:{}", neurons, shards_.size(), where);
  steps_done_ = computing_ = step;
  for (auto& s : shards_) s.copy_step = step;
  std::vector<size_t> lost;
  round(edge_ml_place, edge_ml_done, [&](const shard& s) { return place_frame(s); }, traffic_.place_bytes, lost);
}

modellet_step modellet_ps::train(const tensor& h, const label_rows& labels, int64_t step, tensor& dh) {
  computing_ = step;
  modellet_step out;
  std::vector<size_t> lost;
  for (int attempt = 0; attempt < opts_.attempts; ++attempt) {
    auto answers = round(edge_ml_forward, edge_ml_scores,
                         [&](const shard& s) { return encode_ml_forward(step, h, labels, s.begin, s.end); },
                         out.bytes, lost);
    if (!lost.empty()) continue;  // placed again: the step starts over
    std::vector<modellet_scores> scores;
    for (size_t i = 0; i < shards_.size(); ++i) {
      auto s = decode_ml_scores(answers[i].payload.data(), answers[i].payload.size());
      if (!s) throw fault("device " + std::to_string(shards_[i].device) + ": " + describe(s.error()));
      for (int32_t id : s->ids)
        if (id < shards_[i].begin || id >= shards_[i].end)
          throw fault("device " + std::to_string(shards_[i].device) + " scored neuron " + std::to_string(id)
                      + ", outside its range");
      scores.push_back(std::move(*s));
    }
    std::vector<const modellet_scores*> parts;
    for (const auto& s : scores) parts.push_back(&s);
    combined_softmax c;
    if (auto err = combine_softmax(parts, labels, 1.0f / static_cast<float>(labels.n), c); !err.empty())
      throw fault(err);
    size_t k = 0;
    auto grads = round(edge_ml_grads, edge_ml_hidden_grad,
                       [&](const shard&) { return encode_ml_grads(c.dlogits[k++]); }, out.bytes, lost);
    if (!lost.empty()) continue;
    dh.resize(h.rows(), h.cols());
    dh.zero();
    out.sum_of_squares = 0;
    for (size_t i = 0; i < shards_.size(); ++i) {
      auto g = decode_ml_hidden_grad(grads[i].payload.data(), grads[i].payload.size());
      if (!g) throw fault("device " + std::to_string(shards_[i].device) + ": " + describe(g.error()));
      if (g->dh.rows() != h.rows() || g->dh.cols() != h.cols())
        throw fault("device " + std::to_string(shards_[i].device) + " sent a hidden gradient of the wrong shape");
      for (int64_t j = 0; j < dh.size(); ++j) dh[j] += g->dh[j];
      out.sum_of_squares += g->sum_of_squares;
    }
    out.loss_sum = c.loss_sum;
    for (const auto& s : scores) out.active_sum += static_cast<double>(s.ids.size());
    traffic_.step_bytes += out.bytes;
    return out;
  }
  throw fault("step " + std::to_string(step + 1) + " failed " + std::to_string(opts_.attempts)
              + " times as devices were lost");
}

void modellet_ps::update(const adamw_config& cfg, int64_t t, double grad_scale) {
  computing_ = t - 1;
  // A range lost now loses this step's update too: its copy is older.
  steps_done_ = t;
  ml_update_msg m{t, cfg, grad_scale};
  const auto frame = encode(m);
  std::vector<size_t> lost;
  round(edge_ml_update, edge_ml_done, [&](const shard&) { return frame; }, traffic_.step_bytes, lost);
  if (opts_.copy_every > 0 && t % opts_.copy_every == 0) sync();
}

void modellet_ps::sync() {
  std::vector<size_t> lost;
  auto states = round(edge_ml_copy, edge_ml_state, [](const shard&) { return std::vector<char>{}; },
                      traffic_.copy_bytes, lost);
  const int64_t h = w_->value.cols();
  for (size_t i = 0; i < shards_.size(); ++i) {
    if (std::find(lost.begin(), lost.end(), i) != lost.end()) continue;  // placed again from the copy
    auto& s = shards_[i];
    auto st = decode_ml_state(states[i].payload.data(), states[i].payload.size());
    if (!st) throw fault("device " + std::to_string(s.device) + ": " + describe(st.error()));
    if (st->begin != s.begin || st->end != s.end || st->hidden != h)
      throw fault("device " + std::to_string(s.device) + " sent the copy of another range");
    auto put = [&](const tensor& from, tensor& to, int64_t cols) {
      std::copy(from.data(), from.data() + from.size(), to.data() + s.begin * cols);
    };
    put(st->w, w_->value, h);
    put(st->m_w, w_->adam_m, h);
    put(st->v_w, w_->adam_v, h);
    put(st->b, b_->value, 1);
    put(st->m_b, b_->adam_m, 1);
    put(st->v_b, b_->adam_v, 1);
    s.copy_step = steps_done_;
  }
}

}  // namespace cleave
