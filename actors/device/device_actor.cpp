#include "actors/device/device_actor.hpp"

#include <chrono>

#include <spdlog/spdlog.h>

#include "actors/planner/cost_model.hpp"
#include "kernels/bf16.hpp"
#include "kernels/gemm.hpp"
#include "schema/errors.hpp"
#include "schema/pacing.hpp"

namespace cleave {

namespace {

using seconds_d = std::chrono::duration<double>;
using device_actor_ptr = caf::stateful_actor<device_state>*;

// Resolves an operand to its data: the payload if sent (and cached for
// later), else the cached block. Null when the block is unknown or malformed.
const cached_block* resolve(device_state& st, operand& op, cached_block& scratch, bool& hit) {
  hit = false;
  if (op.rows < 0 || op.cols < 0 || op.rows * op.cols > max_block_elements) return nullptr;
  if (!op.carries_values() && op.rows * op.cols > 0) {
    const cached_block* b = st.cache.get(op.key);
    if (b == nullptr || b->rows != op.rows || b->cols != op.cols) return nullptr;
    hit = true;
    if (b->data != nullptr) return b;
    // Lent: held while the tile is computed, in case the PS lets go meanwhile.
    scratch = b->held();
    return scratch.data != nullptr ? &scratch : nullptr;
  }
  scratch.rows = op.rows;
  scratch.cols = op.cols;
  if (op.data.empty() && op.shared != nullptr) {  // a window of the PS's snapshot, in-process
    if (!op.window_valid()) return nullptr;
    scratch.data = std::move(op.shared);
    scratch.offset = op.offset;
    scratch.ld = op.ld;
    st.cache.lend(op.key, scratch);
  } else {
    if (static_cast<int64_t>(op.data.size()) != op.rows * op.cols) return nullptr;
    scratch.data = std::make_shared<const std::vector<float>>(std::move(op.data));
    st.cache.put(op.key, scratch);
  }
  return &scratch;
}

void answer(device_actor_ptr self, const caf::actor& to, tile_result res, caf::timespan delay) {
  if (delay > caf::timespan{0})
    self->delayed_send(to, delay, std::move(res));
  else
    self->send(to, std::move(res));
}

void run_task(device_actor_ptr self, tile_task& task, const caf::actor& to) {
  auto& s = self->state;
  s.cache.enter_step(task.key.step);
  cached_block a_scratch, b_scratch;
  bool a_hit = false, b_hit = false;
  const cached_block* a = resolve(s, task.a, a_scratch, a_hit);
  const cached_block* b = resolve(s, task.b, b_scratch, b_hit);
  for (auto [blk, op] : {std::pair{a, &task.a}, {b, &task.b}}) {
    if (blk == nullptr && !op->carries_values()) {
      spdlog::debug("device {}: block {:x} of step {} gemm {} tile {} is not in its cache", s.id, op->key, task.key.step, task.key.gemm, task.key.tile);
      self->send(to, tile_miss{task.key, s.id, op->key});
      return;
    }
  }
  const int64_t m = task.a.trans ? task.a.cols : task.a.rows;
  const int64_t k = task.a.trans ? task.a.rows : task.a.cols;
  const int64_t kb = task.b.trans ? task.b.cols : task.b.rows;
  const int64_t n = task.b.trans ? task.b.rows : task.b.cols;
  if (a == nullptr || b == nullptr || k != kb || m * n > max_block_elements) {
    spdlog::warn("device {}: refusing malformed task (step {}, gemm {}, tile {})", s.id,
                 task.key.step, task.key.gemm, task.key.tile);
    return;
  }
  const auto start = caf::make_timestamp();
  const auto sent = caf::timestamp{caf::timestamp::duration{task.sent_at_ns}};
  tile_result res;
  res.key = task.key;
  res.device = s.id;
  res.rows = m;
  res.cols = n;
  res.data.resize(static_cast<size_t>(m * n));
  gemm_local<float>({a->values(), a->rows, a->cols, a->stride()}, task.a.trans,
                    {b->values(), b->rows, b->cols, b->stride()}, task.b.trans,
                    {res.data.data(), m, n, n}, 0.0f);
  res.cache_hits = static_cast<uint32_t>(a_hit) + static_cast<uint32_t>(b_hit);
  const auto now = caf::make_timestamp();
  auto delay = caf::timespan{0};
  if (s.opts.paced) {
    // The planner's own cost model: a device emulates its declared profile
    // exactly as the planner predicts it, its bytes at the wire's width.
    const double paced =
      s.slowdown * predict_tile(tile{0, m, 0, n, 0, k}, operand_element_bytes(task.wire),
                                   result_element_bytes(task.wire), s.opts.profile, a_hit, b_hit).seconds;
    // A task sent long ago waited on the shared host, not on this device.
    const auto arrived = task.sent_at_ns > 0 ? std::min(start, sent) : start;
    const auto span = pace(arrived, s.busy_until, now, paced);
    s.busy_until = span.finish;
    delay = span.finish - now;
    res.busy_seconds = std::chrono::duration_cast<seconds_d>(span.finish - span.begin).count();
  } else {
    res.busy_seconds = std::chrono::duration_cast<seconds_d>(now - start).count();
  }
  if (s.lies && s.lies->apply(res))
    spdlog::debug("device {}: lying about step {}, gemm {}, tile {}", s.id, res.key.step,
                  res.key.gemm, res.key.tile);
  // Rounded here, after any lie, so an in-process device answers the values
  // a remote one's frame would carry.
  res.wire = result_precision(task.wire);
  if (res.wire == wire_precision::bf16) round_bf16(res.data.data(), res.data.data(), res.data.size());
  answer(self, to, std::move(res), delay);
}

// One model-let frame to the model-let in `slot`. Paced (an emulated
// device), its answer leaves when the device's links and its work say:
// the request down, the compute (this host's: a model-let's work has no FLOP
// count as a tile has, so the time it really took is what the device takes),
// the answer up, each frame paying the latency; after the device's earlier
// work, tiles and frames alike. Pacing only delays the answer: its bytes are
// what the service computed.
caf::result<uint16_t, std::vector<char>> run_modellet_frame(device_actor_ptr self, int32_t slot, uint16_t kind,
                                                            const std::vector<char>& payload, int64_t sent_at_ns) {
  auto& s = self->state;
  const auto start = caf::make_timestamp();
  auto it = s.modellets.try_emplace(slot, default_modellet_frame_cap).first;
  auto answer = it->second.handle(kind, payload);
  if (!s.opts.paced) return {answer.kind, std::move(answer.payload)};
  const auto now = caf::make_timestamp();
  const double compute = std::chrono::duration_cast<seconds_d>(now - start).count();
  const double seconds =
    s.slowdown * (modellet_link_seconds(s.opts.profile, payload.size(), answer.payload.size()) + compute);
  // A frame sent long ago waited on the shared host, not on this device.
  const auto sent = caf::timestamp{caf::timestamp::duration{sent_at_ns}};
  const auto arrived = sent_at_ns > 0 ? std::min(start, sent) : start;
  const auto span = pace(arrived, s.busy_until, now, seconds);
  s.busy_until = span.finish;
  if (span.finish <= now) return {answer.kind, std::move(answer.payload)};
  const uint64_t id = ++s.paced_seq;
  auto promise = self->make_response_promise<uint16_t, std::vector<char>>();
  s.paced_answers.emplace(id, device_state::paced_answer{promise, std::move(answer)});
  self->delayed_send(self, span.finish - now, modellet_due_atom::value, id);
  return promise;
}

// Asks `planner` for a place in the fleet; heartbeats start on the welcome.
void join(device_actor_ptr self, caf::actor planner) {
  auto& st = self->state;
  st.planner = planner;
  self->monitor(planner);
  self->request(planner, caf::infinite, join_atom::value,
                join_request{message_schema_version, st.opts.profile, st.opts.fleet_index, {}})
    .then(
      [=](welcome_atom, int32_t id, caf::actor detector) {
        auto& s = self->state;
        s.id = id;
        s.detector = detector;
        spdlog::debug("device {} ({}) joined", id, s.opts.profile.name);
        if (!s.ticking) {
          s.ticking = true;
          self->send(self, tick_atom::value);
        }
      },
      [=](const caf::error& err) {
        spdlog::error("device: join refused: {}", self->system().render(err));
        self->quit(err);
      });
}

}  // namespace

caf::behavior device_actor(device_actor_ptr self, device_options opts, caf::actor planner) {
  auto& st = self->state;
  st.opts = opts;
  const uint64_t cap =
    opts.cache_bytes != 0 ? opts.cache_bytes : default_cache_bytes(opts.profile.memory_bytes);
  st.cache = block_cache{cap};
  st.busy_until = caf::make_timestamp();
  if (!opts.lies.empty()) {
    st.lies = std::make_shared<liar>(opts.lies, opts.lie_seed, std::max(opts.fleet_index, 0));
    // What it told, when it goes: a run's log then says how much verification had to catch.
    const std::string who = opts.fleet_index >= 0 ? "emulated device " + std::to_string(opts.fleet_index)
                                                   : std::string{"this device"};
    self->attach_functor([l = st.lies, who] {
      spdlog::info("{} told {} lies ({})", who, l->told(), l->summary());
    });
  }
  self->set_down_handler([=](const caf::down_msg& msg) {
    auto& s = self->state;
    if (msg.source != s.planner.address()) return;
    if (!s.opts.find_planner) {
      spdlog::info("device {}: planner is gone, leaving", s.id);
      self->quit(msg.reason);
      return;
    }
    // In-process: the supervisor restarts the planner; join the new one.
    spdlog::info("device {}: planner is gone, looking for its successor", s.id);
    self->send(self, rejoin_atom::value, 0);
  });
  join(self, planner);
  return {
    [=](rejoin_atom, int attempt) {
      auto& s = self->state;
      auto next = s.opts.find_planner();
      if (next && next != s.planner) {
        s.detector = nullptr;  // heartbeats resume once the new planner welcomes us
        join(self, next);
      } else if (attempt < 100) {
        self->delayed_send(self, std::chrono::milliseconds(50), rejoin_atom::value, attempt + 1);
      } else {
        spdlog::info("device {}: no planner came back; leaving", s.id);
        self->quit(caf::exit_reason::user_shutdown);
      }
    },
    [=](join_atom) {  // the detector gave up on us: join again under a new id
      auto& s = self->state;
      spdlog::info("device {}: declared dead while alive; joining again", s.id);
      s.detector = nullptr;
      join(self, s.planner);
    },
    [=](tick_atom) {
      auto& s = self->state;
      if (s.hung) return;
      if (s.detector) self->send(s.detector, heartbeat_atom::value, s.id);
      self->delayed_send(self, std::chrono::duration_cast<caf::timespan>(seconds_d{s.opts.heartbeat_seconds}),
                         tick_atom::value);
    },
    [=](tile_task& task) {
      if (self->state.hung) return;
      if (self->state.crash_on_task) {
        spdlog::debug("device {}: crashing with tile {} in hand (emulated)", self->state.id,
                      task.key.tile);
        self->quit(caf::exit_reason::kill);
        return;
      }
      run_task(self, task, caf::actor_cast<caf::actor>(self->current_sender()));
    },
    [=](modellet_atom, int32_t slot, uint16_t kind, std::vector<char>& payload,
        int64_t sent_at_ns) -> caf::result<uint16_t, std::vector<char>> {
      auto& s = self->state;
      // Hung: never answered, as a silent device's frames would not be.
      if (s.hung) return self->make_response_promise<uint16_t, std::vector<char>>();
      if (s.crash_on_task) {
        spdlog::debug("device {}: crashing with a model-let frame in hand (emulated)", s.id);
        self->quit(caf::exit_reason::kill);
        return fail("device crashed");
      }
      return run_modellet_frame(self, slot, kind, payload, sent_at_ns);
    },
    [=](modellet_due_atom, uint64_t id) {
      auto& s = self->state;
      auto it = s.paced_answers.find(id);
      if (it == s.paced_answers.end()) return;
      // Hung meanwhile: the answer is never sent, as a silent device's would not be.
      if (!s.hung) it->second.promise.deliver(it->second.answer.kind, std::move(it->second.answer.payload));
      s.paced_answers.erase(it);
    },
    [=](heartbeat_atom, double seconds) {  // the job's interval, from the edge's welcome
      if (seconds > 0 && seconds <= 60) self->state.opts.heartbeat_seconds = seconds;
    },
    [=](caf::get_atom) { return self->state.id; },
    [=](run_over_atom) {
      // The sender is whoever holds this device's handle: the ps that
      // trained with it, through its planner's registry.
      spdlog::log(self->state.opts.paced ? spdlog::level::debug : spdlog::level::info,
                  "device {}: the run is over", self->state.id);
      self->quit(caf::exit_reason::normal);
      return caf::ok_atom::value;
    },
    [=](quarantine_atom, const std::string& why) {
      // The planner: this device's results failed their checks too often.
      spdlog::info("device {}: quarantined (a result {}); leaving", self->state.id, why);
      self->quit(fail("quarantined: a result " + why));
    },
    [=](hang_atom) {
      if (!self->state.opts.paced) {
        spdlog::warn("device {}: ignoring emulated churn (a real device)", self->state.id);
        return;
      }
      self->state.hung = true;
    },
    [=](crash_atom) {
      if (!self->state.opts.paced) {
        spdlog::warn("device {}: ignoring emulated churn (a real device)", self->state.id);
        return;
      }
      self->state.crash_on_task = true;
    },
    [=](slow_atom, double factor) {
      if (!self->state.opts.paced || !(factor >= 1 && factor <= 1000)) {
        spdlog::warn("device {}: ignoring emulated slowdown {}", self->state.id, factor);
        return;
      }
      self->state.slowdown = factor;
    },
  };
}

}  // namespace cleave
