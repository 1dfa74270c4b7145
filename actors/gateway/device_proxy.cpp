#include "actors/gateway/device_proxy.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "actors/transport/bulk_channel.hpp"
#include "schema/edge_relay_codec.hpp"
#include "schema/errors.hpp"
#include "schema/tile_codec.hpp"

namespace cleave {

using namespace transport;

namespace {

using proxy_ptr = caf::stateful_actor<device_proxy_state>*;

// A buffer for a frame's payload of `bytes`, with room after it for the
// route a relay session's frames carry.
bulk_buffer frame_buffer(proxy_ptr self, size_t bytes) {
  return bulk_buffer(bytes + (self->state.opts.session != 0 ? edge_route_bytes : 0));
}

// A frame in a buffer from frame_buffer.
void send_frame(proxy_ptr self, edge_kind kind, bulk_buffer buf, uint64_t tag = 0) {
  auto& o = self->state.opts;
  uint16_t wire_kind = kind;
  if (o.session != 0) {
    write_route({o.session, kind, tag}, buf.payload() + buf.size() - edge_route_bytes);
    wire_kind = edge_routed;
    tag = 0;
  }
  self->request(o.channel, caf::infinite, bulk_send_atom::value, o.conn, wire_kind, tag, std::move(buf))
    .then([](bulk_buffer&) {},
          [=](caf::error& err) {
            spdlog::debug("edge: send to device {} failed: {}", self->state.id, describe(err));
          });
}

void send_small(proxy_ptr self, edge_kind kind, const std::vector<char>& payload) {
  auto buf = frame_buffer(self, payload.size());
  std::copy(payload.begin(), payload.end(), buf.payload());
  send_frame(self, kind, std::move(buf));
}

// A refused frame; past the limit the device is dropped.
void strike(proxy_ptr self, const std::string& why) {
  auto& st = self->state;
  ++st.strikes;
  spdlog::warn("edge: device {} ({}): {} (strike {} of {})", st.id, st.opts.peer, why, st.strikes,
               st.opts.max_strikes);
  if (st.strikes >= st.opts.max_strikes)
    self->quit(fail("dropped after " + std::to_string(st.strikes) + " " + proxy_strike_reason));
}

// Monitors `peer` until the proxy exits or unwatch() takes it back.
void watch(proxy_ptr self, const caf::actor& peer) {
  self->monitor(peer);
  self->state.monitoring->push_back(peer.address());
}

void unwatch(proxy_ptr self, const caf::actor& peer) {
  self->demonitor(peer);
  auto& m = *self->state.monitoring;
  m.erase(std::remove(m.begin(), m.end(), peer.address()), m.end());
}

// Asks the planner for a place in the fleet in the device's name.
void join_planner(proxy_ptr self, bool first) {
  auto& st = self->state;
  auto planner = st.opts.planner ? st.opts.planner() : caf::actor{};
  if (!planner) {
    send_small(self, edge_refused, encode_refusal("no planner is running; try again later"));
    self->quit(fail("no planner to join"));
    return;
  }
  if (planner != st.planner) {
    if (st.planner) unwatch(self, st.planner);
    st.planner = planner;
    watch(self, planner);  // a restarted planner is joined again (the down handler)
  }
  join_request req{st.join.schema_version, st.join.profile, -1, st.opts.relay};
  self->request(st.planner, std::chrono::seconds(30), join_atom::value, req)
    .then(
      [=](welcome_atom, int32_t id, caf::actor detector) {
        auto& s = self->state;
        if (s.id >= 0) spdlog::info("edge: device {} ({}) joined again as {}", s.id, s.opts.peer, id);
        s.id = id;
        s.detector = std::move(detector);
        if (first) {
          spdlog::info("edge: device {} ({}) joined from {}", id, s.join.profile.name, s.opts.peer);
          edge_welcome_msg w{id, s.opts.heartbeat_seconds, s.opts.certificate, {}, {}};
          if (!s.opts.shard_edges.empty() && s.opts.prove) {
            w.shard_edges = s.opts.shard_edges;
            w.proof = s.opts.prove(id);
          }
          send_small(self, edge_welcome, encode(w));
        }
      },
      [=](caf::error& err) {
        const auto reason = describe(err);
        spdlog::warn("edge: refused the device at {}: {}", self->state.opts.peer, reason);
        send_small(self, edge_refused, encode_refusal(reason));
        self->quit(fail(proxy_refusal_reason + reason));
      });
}

void on_result(proxy_ptr self, const bulk_frame& f) {
  auto& st = self->state;
  auto res = decode_result(f.payload.data(), f.payload.size());
  if (!res) return strike(self, describe(res.error()));
  auto it = st.pending.find(res->key);
  if (it == st.pending.end())
    return strike(self, "a result for a tile it was not given (step " + std::to_string(res->key.step)
                          + ", gemm " + std::to_string(res->key.gemm) + ", tile "
                          + std::to_string(res->key.tile) + ")");
  // A wrong answer to a real task (wrong shape, wrong values) is the
  // engine's to judge: it refuses it, moves the tile and keeps the score.
  res->device = st.id;
  self->send(it->second.engine, std::move(*res));
  st.pending.erase(it);
}

void on_miss(proxy_ptr self, const bulk_frame& f) {
  auto& st = self->state;
  auto miss = decode_miss(f.payload.data(), f.payload.size());
  if (!miss) return strike(self, describe(miss.error()));
  auto it = st.pending.find(miss->key);
  if (it == st.pending.end()
      || (miss->operand_key != it->second.a_key && miss->operand_key != it->second.b_key))
    return strike(self, "a miss for a tile or block it was not given");
  miss->device = st.id;
  self->send(it->second.engine, *miss);
  st.pending.erase(it);
}

bool is_modellet_answer(uint16_t kind) {
  return kind == edge_ml_scores || kind == edge_ml_hidden_grad || kind == edge_ml_done
         || kind == edge_ml_state || kind == edge_ml_error;
}

// A model-let answer: taken only for a frame this proxy sent and not yet
// answered (its tag), as a tile result is.
void on_modellet_answer(proxy_ptr self, bulk_frame& f) {
  auto& pending = *self->state.modellets;
  auto it = pending.find(f.tag);
  if (it == pending.end())
    return strike(self, std::string{"an "} + to_string(static_cast<edge_kind>(f.kind))
                          + " frame answering nothing it was sent");
  it->second.deliver(f.kind, std::vector<char>(f.payload.begin(), f.payload.end()));
  pending.erase(it);
}

}  // namespace

caf::behavior device_proxy(caf::stateful_actor<device_proxy_state>* self, proxy_options opts,
                           edge_join_msg join) {
  self->state.opts = std::move(opts);
  self->state.join = std::move(join);
  if (self->state.opts.gateway) watch(self, self->state.opts.gateway);
  self->attach_functor([self, monitoring = self->state.monitoring] {
    for (const auto& peer : *monitoring) self->demonitor(peer);
  });
  self->set_down_handler([=](const caf::down_msg& msg) {
    auto& st = self->state;
    if (msg.source == st.opts.gateway.address()) return self->quit(msg.reason);
    if (msg.source != st.planner.address()) return;
    spdlog::info("edge: device {}'s planner is gone; joining its successor", st.id);
    st.detector = nullptr;
    self->send(self, rejoin_atom::value, 0);
  });
  // Model-let frames in flight when the connection goes fail at once, not
  // at the PS's timeout.
  self->attach_functor([pending = self->state.modellets] {
    for (auto& [tag, promise] : *pending) promise.deliver(fail("the device's connection closed"));
    pending->clear();
  });
  join_planner(self, true);
  return {
    [=](bulk_frame_atom, bulk_frame& f) {
      if (f.kind == edge_result)
        on_result(self, f);
      else if (f.kind == edge_miss)
        on_miss(self, f);
      else if (is_modellet_answer(f.kind))
        on_modellet_answer(self, f);
      else
        strike(self, std::string{"an unexpected "} + to_string(static_cast<edge_kind>(f.kind)) + " frame");
      return std::move(f.payload);
    },
    [=](heartbeat_atom, int64_t received_ns, uint64_t peak_rss_bytes) {
      // With the time the edge read it: the detector judges the device by
      // when its heartbeat arrived, not by how long the ps took to pass it on.
      auto& st = self->state;
      if (st.detector && st.id >= 0)
        self->send(st.detector, heartbeat_atom::value, st.id, received_ns, peak_rss_bytes);
    },
    [=](tile_task& task) {
      auto& st = self->state;
      const int64_t m = task.a.trans ? task.a.cols : task.a.rows;
      const int64_t n = task.b.trans ? task.b.rows : task.b.cols;
      if (st.pending.size() >= st.opts.max_pending) st.pending.erase(st.pending.begin());
      st.pending[task.key] = pending_tile{caf::actor_cast<caf::actor>(self->current_sender()), m, n,
                                          task.a.key, task.b.key};
      auto buf = frame_buffer(self, encoded_size(task));
      encode(task, buf.payload());
      send_frame(self, edge_task, std::move(buf));
    },
    [=](modellet_atom, int32_t slot, uint16_t kind, std::vector<char>& payload,
        int64_t /*sent_at_ns: a remote device is not paced*/) -> caf::result<uint16_t, std::vector<char>> {
      auto& st = self->state;
      auto& pending = *st.modellets;
      if (pending.size() >= st.opts.max_pending) {
        pending.begin()->second.deliver(fail("forgotten: too many model-let frames in flight"));
        pending.erase(pending.begin());
      }
      const uint64_t tag = (++st.modellet_seq << 32) | static_cast<uint32_t>(slot);
      auto promise = self->make_response_promise();
      pending.emplace(tag, promise);
      auto buf = frame_buffer(self, payload.size());
      std::copy(payload.begin(), payload.end(), buf.payload());
      send_frame(self, static_cast<edge_kind>(kind), std::move(buf), tag);
      return caf::result<uint16_t, std::vector<char>>(caf::delegated<uint16_t, std::vector<char>>());
    },
    [=](quarantine_atom, const std::string& why) {
      const std::string reason = "quarantined: a result " + why;
      spdlog::warn("edge: device {} ({}) is {}", self->state.id, self->state.opts.peer, reason);
      send_small(self, edge_refused, encode_refusal(reason));
      self->quit(fail(proxy_refusal_reason + reason));
    },
    [=](run_over_atom) {
      send_small(self, edge_run_over, {});
      return caf::ok_atom::value;
    },
    [=](rejoin_atom, int attempt) {
      auto& st = self->state;
      auto next = st.opts.planner ? st.opts.planner() : caf::actor{};
      if (next && next != st.planner)
        join_planner(self, false);
      else if (attempt < 100)
        self->delayed_send(self, std::chrono::milliseconds(50), rejoin_atom::value, attempt + 1);
      else
        self->quit(fail("its planner is gone and none came back"));
    },
    [=](join_atom) {
      spdlog::info("edge: device {} was declared dead while connected; joining it again",
                   self->state.id);
      self->state.detector = nullptr;
      join_planner(self, false);
    },
  };
}

}  // namespace cleave
