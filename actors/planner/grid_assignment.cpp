#include "actors/planner/grid_assignment.hpp"

#include <algorithm>
#include <utility>

namespace cleave::grid {

grid_sim::result grid_sim::run(const dim_split& dm, const dim_split& dn, const dim_split& dk,
                               double bound, std::vector<assignment>& out) {
  result res;
  const int64_t gm = dm.g, gn = dn.g, gk = dk.g;
  const uint64_t ws =
      gemm_element_bytes *
      static_cast<uint64_t>(dm.smax * dk.smax + dk.smax * dn.smax + dm.smax * dn.smax);
  eligible_.clear();
  const int64_t tiles = gm * gn * gk;
  // What the devices and the links may take: the PS's work per tile comes on top.
  bound -= static_cast<double>(tiles) * cfg_.ps_tile_seconds;
  if (!(bound > 0)) return res;
  for (uint32_t d = 0; d < devs_.size(); ++d)
    if (devs_[d].memory >= ws && dominators_[d] < tiles) eligible_.push_back(d);
  if (eligible_.empty()) return res;
  state_.assign(devs_.size(), dev_state{{}, 0, -1, -1});
  for (uint32_t d : eligible_) state_[d].at = {devs_[d].ready, devs_[d].ready, devs_[d].ready};
  const bool pipelined = cfg_.pipelined_devices;
  // A device's own finish for a tile, the PS's link aside: the heaps' keys.
  auto alone = [&](uint32_t d, uint64_t down, double fl, uint64_t up) {
    return pass(devs_[d], state_[d], down, fl, up, -inf, pipelined).finish;
  };
  heap_a_.resize(static_cast<size_t>(gm * gk));
  heap_b_.resize(static_cast<size_t>(gk * gn));
  for (auto& h : heap_a_) h.clear();
  for (auto& h : heap_b_) h.clear();
  out.clear();
  out.reserve(static_cast<size_t>(gm * gn * gk));
  relays_.begin(cfg_.relays.size(), static_cast<size_t>(gm * gk), static_cast<size_t>(gk * gn));

  // Size classes per dimension (largest first), then shape groups by flops.
  auto classes = [](const dim_split& s) {
    std::vector<std::pair<int64_t, std::vector<int64_t>>> cl;  // size, indices
    for (int64_t p = 0; p < s.g; ++p) {
      int64_t len = s.edges[p + 1] - s.edges[p];
      auto it = std::find_if(cl.begin(), cl.end(), [&](auto& c) { return c.first == len; });
      if (it == cl.end())
        cl.push_back({len, {p}});
      else
        it->second.push_back(p);
    }
    std::sort(cl.begin(), cl.end(), [](auto& x, auto& y) { return x.first > y.first; });
    return cl;
  };
  auto cm = classes(dm), cn = classes(dn), ck = classes(dk);
  struct group {
    int64_t flops;
    size_t a, b, c;  // class indices in m, n, k
  };
  std::vector<group> groups;
  for (size_t a = 0; a < cm.size(); ++a)
    for (size_t b = 0; b < cn.size(); ++b)
      for (size_t c = 0; c < ck.size(); ++c)
        groups.push_back({2 * cm[a].first * cn[b].first * ck[c].first, a, b, c});
  std::stable_sort(groups.begin(), groups.end(),
                   [](const group& x, const group& y) { return x.flops > y.flops; });

  const double egress_bound = bound * cfg_.ps_egress;  // bytes_down beyond this lose
  std::vector<bool> used(devs_.size(), false);
  entry_after after;
  for (const group& gr : groups) {
    const int64_t sm = cm[gr.a].first, sn = cn[gr.b].first, sk = ck[gr.c].first;
    const uint64_t ab = element_bytes_ * static_cast<uint64_t>(sm * sk);
    const uint64_t bb = element_bytes_ * static_cast<uint64_t>(sk * sn);
    const uint64_t cb = result_element_bytes_ * static_cast<uint64_t>(sm * sn);
    const uint64_t a_mem = gemm_element_bytes * static_cast<uint64_t>(sm * sk);
    const uint64_t b_mem = gemm_element_bytes * static_cast<uint64_t>(sk * sn);
    const double fl = static_cast<double>(2 * sm * sn * sk);
    // Rebuild the heaps for this shape.
    global_.clear();
    for (int64_t i : touched_a_) heap_a_[static_cast<size_t>(i)].clear();
    for (int64_t i : touched_b_) heap_b_[static_cast<size_t>(i)].clear();
    touched_a_.clear();
    touched_b_.clear();
    for (uint32_t d : eligible_) {
      const dev_state& s = state_[d];
      global_.push_back({alone(d, ab + bb, fl, cb), d, s.ver});
      if (s.last_a >= 0) {
        heap_a_[static_cast<size_t>(s.last_a)].push_back({alone(d, bb, fl, cb), d, s.ver});
        touched_a_.push_back(s.last_a);
      }
      if (s.last_b >= 0) {
        heap_b_[static_cast<size_t>(s.last_b)].push_back({alone(d, ab, fl, cb), d, s.ver});
        touched_b_.push_back(s.last_b);
      }
    }
    std::make_heap(global_.begin(), global_.end(), after);
    std::sort(touched_a_.begin(), touched_a_.end());
    touched_a_.erase(std::unique(touched_a_.begin(), touched_a_.end()), touched_a_.end());
    std::sort(touched_b_.begin(), touched_b_.end());
    touched_b_.erase(std::unique(touched_b_.begin(), touched_b_.end()), touched_b_.end());
    for (int64_t i : touched_a_)
      std::make_heap(heap_a_[static_cast<size_t>(i)].begin(),
                     heap_a_[static_cast<size_t>(i)].end(), after);
    for (int64_t i : touched_b_)
      std::make_heap(heap_b_[static_cast<size_t>(i)].begin(),
                     heap_b_[static_cast<size_t>(i)].end(), after);

    auto top = [&](std::vector<entry>& h) -> const entry* {
      while (!h.empty() && h.front().ver != state_[h.front().dev].ver) {
        std::pop_heap(h.begin(), h.end(), after);
        h.pop_back();
      }
      return h.empty() ? nullptr : &h.front();
    };
    auto push = [&](std::vector<entry>& h, entry e) {
      h.push_back(e);
      std::push_heap(h.begin(), h.end(), after);
    };

    for (int64_t l : ck[gr.c].second)
      for (int64_t i : cm[gr.a].second)
        for (int64_t j : cn[gr.b].second) {
          const int64_t ai = l * gm + i, bi = l * gn + j;
          auto& ha = heap_a_[static_cast<size_t>(ai)];
          auto& hb = heap_b_[static_cast<size_t>(bi)];
          // Candidates: the earliest finish with nothing cached, and the
          // earliest among the holders of the A block and of the B block.
          // Each heap's top is also the best of its kind by the objective
          // below, since within a heap the bytes sent are equal.
          uint32_t d = 0;
          double finish = inf, obj = inf;
          bool any = false;
          const entry* tops[] = {top(global_), top(ha), top(hb)};
          for (int c = 0; c < 3; ++c) {
            const entry* e = tops[c];
            if (!e) continue;
            const uint64_t bytes = relays_.ps_bytes(devs_[e->dev].relay, c != 1, c != 2,
                                                    static_cast<size_t>(ai), static_cast<size_t>(bi), ab, bb);
            // A device process gets the tile once the PS sent it (in plan
            // order), and still computes and returns it: with the device's
            // own tail in the objective the heaps' tops are the best of
            // their kind only among devices of equal latency, FLOP/s and
            // uplink (a heuristic on mixed fleets).
            const double sent = static_cast<double>(res.bytes_down + bytes) / cfg_.ps_egress;
            const double o =
                std::max(e->key, pipelined ? sent + devs_[e->dev].cost(0, fl, cb) : sent);
            if (!any || o < obj ||
                (o == obj && (e->key < finish || (e->key == finish && e->dev < d)))) {
              any = true;
              d = e->dev;
              obj = o;
              finish = e->key;
            }
          }
          dev_state& s = state_[d];
          const bool a_cached = s.last_a == ai, b_cached = s.last_b == bi;
          const uint64_t down = (a_cached ? 0 : ab) + (b_cached ? 0 : bb);
          const uint64_t sent = relays_.send(devs_[d].relay, !a_cached, !b_cached, static_cast<size_t>(ai),
                                             static_cast<size_t>(bi), ab, bb, cb);
          const tile_pass done =
              pass(devs_[d], s, down, fl, cb,
                   static_cast<double>(res.bytes_down + sent) / cfg_.ps_egress, pipelined);
          finish = done.finish;
          res.bytes_down += sent;
          res.bytes_up += cb;
          res.max_finish = std::max(res.max_finish, finish);
          res.tail = std::min(res.tail, devs_[d].cost(0, fl, cb));
          if (!(res.max_finish < bound) || !(static_cast<double>(res.bytes_down) < egress_bound))
            return result{};  // cannot beat the bound
          if (!used[d]) {
            used[d] = true;
            ++res.devices_used;
          }
          s.at = done.after;
          ++s.ver;
          // A device process's cache (least recently used out, float32
          // blocks) meets A, then B, of each tile: a block stays for the
          // next tile only when both fit (the next tile's A arrives before
          // its B is looked up). Emulated devices' plans keep the rule the
          // live calibration was made with: the previous tile's blocks.
          const bool a_fits = !pipelined || a_mem + b_mem <= devs_[d].cache;
          const bool b_fits = a_fits;
          const int64_t keeps_a = a_fits ? ai : -1;
          const int64_t keeps_b = b_fits ? bi : -1;
          if (s.last_a != keeps_a) {
            s.last_a = keeps_a;
            if (keeps_a >= 0) touched_a_.push_back(ai);
          }
          if (s.last_b != keeps_b) {
            s.last_b = keeps_b;
            if (keeps_b >= 0) touched_b_.push_back(bi);
          }
          assignment as;
          as.t = tile{dm.edges[i],     dm.edges[i + 1], dn.edges[j],
                      dn.edges[j + 1], dk.edges[l],     dk.edges[l + 1]};
          as.device = devs_[d].id;
          as.predicted_finish = finish;
          as.a_cached = a_cached;
          as.b_cached = b_cached;
          out.push_back(as);
          push(global_, {alone(d, ab + bb, fl, cb), d, s.ver});
          if (keeps_a >= 0) push(ha, {alone(d, bb, fl, cb), d, s.ver});
          if (keeps_b >= 0) push(hb, {alone(d, ab, fl, cb), d, s.ver});
        }
  }
  res.predicted = std::max(split_seconds(res.max_finish, res.bytes_down, res.bytes_up, out.size(),
                                         out.empty() ? 0 : res.tail, cfg_),
                           relays_.link_seconds(cfg_.relays));
  if (!(res.predicted - static_cast<double>(tiles) * cfg_.ps_tile_seconds < bound)) return result{};
  return res;
}

}  // namespace cleave::grid
