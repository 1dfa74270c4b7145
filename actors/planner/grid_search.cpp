// The search over tile grids: each grid's lower bound, the seeds and the
// local search that decide which grids to price, and make_plan's entry
// point. Pricing a grid is its assignment's simulation (grid_assignment.hpp).

#include "actors/planner/grid_search.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "actors/planner/dominance.hpp"
#include "actors/planner/grid_assignment.hpp"
#include "actors/planner/grid_parts.hpp"

namespace cleave {

namespace {

using namespace grid;

std::string fmt(const char* format, double a, double b = 0, double c = 0) {
  return format_numbers(format, a, b, c);
}

// Part counts worth trying for one dimension: every count up to 16, then
// counts whose largest part is at least 6% smaller than the last one kept
// (every distinct largest part once parts are 16 units or fewer), and the
// counts in `extra` (fractions and multiples of the fleet size).
std::vector<dim_split> dim_candidates(int64_t size, int64_t align, int64_t max_parts,
                                      const std::vector<int64_t>& extra = {}) {
  std::vector<dim_split> out;
  int64_t units = ceil_div(size, align);
  int64_t gmax = std::min(units, max_parts);
  int64_t last = std::numeric_limits<int64_t>::max();
  for (int64_t g = 1; g <= gmax; ++g) {
    int64_t per = ceil_div(units, g);
    bool keep = g <= 16 || (per < last && (per <= 16 || per * 100 <= last * 94)) ||
                std::find(extra.begin(), extra.end(), g) != extra.end();
    if (!keep) continue;
    out.push_back(make_dim_split(size, g, align));
    last = per;
  }
  return out;
}

// The limits a grid's lower bound is made of, by the search's index.
constexpr plan_bound bound_kinds[] = {plan_bound::compute,         plan_bound::ps_egress,
                                      plan_bound::ps_ingress,      plan_bound::device_downlink,
                                      plan_bound::device_uplink,   plan_bound::one_tile,
                                      plan_bound::latency,         plan_bound::ps_tiles};
constexpr int ps_tiles_kind = 7;
static_assert(bound_kinds[ps_tiles_kind] == plan_bound::ps_tiles);

// The search over grids: lower bounds, seeds, local search, simulation.
class grid_search {
 public:
  struct found {
    int64_t gm, gn, gk;
    grid_sim::result r;
  };

  grid_search(const gemm_problem& g, const std::vector<dev>& devs, const planner_config& cfg)
      : g_(g), devs_(devs), cfg_(cfg), sim_(devs, dominators_, cfg, g.element_bytes, g.result_element_bytes) {
    const size_t nd = devs.size();
    auto prefix_desc = [&](auto field) {
      std::vector<double> v;
      for (const auto& d : devs) v.push_back(field(d));
      std::sort(v.begin(), v.end(), std::greater<>());
      std::vector<double> pre(nd + 1, 0);
      for (size_t i = 0; i < nd; ++i) pre[i + 1] = pre[i] + v[i];
      return pre;
    };
    pre_f_ = prefix_desc([](const dev& d) { return d.flops; });
    pre_dl_ = prefix_desc([](const dev& d) { return d.downlink; });
    pre_ul_ = prefix_desc([](const dev& d) { return d.uplink; });
    lat_min_ = ready_min_ = inf;
    for (const auto& d : devs) {
      mem_sorted_.push_back(d.memory);
      lat_min_ = std::min(lat_min_, d.latency);
      ready_min_ = std::min(ready_min_, d.ready);
    }
    std::sort(mem_sorted_.begin(), mem_sorted_.end());
    max_tiles_ = static_cast<int64_t>(nd) * std::max<int64_t>(1, cfg.max_tiles_per_device);
    const int64_t align = std::max<int64_t>(1, cfg.tile_align);
    const auto nd64 = static_cast<int64_t>(nd);
    const std::vector<int64_t> extra{nd64 / 8, nd64 / 4, nd64 / 2, nd64, 2 * nd64, 4 * nd64};
    dm_ = dim_candidates(g.m, align, max_tiles_, extra);
    dn_ = dim_candidates(g.n, align, max_tiles_, extra);
    dk_ = g.role == gemm_role::grad_weight ? dim_candidates(g.k, align, max_tiles_, extra)
                                           : std::vector<dim_split>{make_dim_split(g.k, 1, align)};
    // Dominance counts (see grid_sim), capped at the largest tile count.
    std::vector<device_figures> figures;
    figures.reserve(nd);
    for (const auto& d : devs)
      figures.push_back({d.ready, d.latency, d.flops, d.downlink, d.uplink, d.memory});
    dominators_ = dominator_counts(figures, max_tiles_);
  }

  uint64_t largest_memory() const { return mem_sorted_.back(); }

  // The smallest working set over the allowed grids (finest split of M and N
  // for each K split).
  uint64_t smallest_working_set() const {
    uint64_t best = std::numeric_limits<uint64_t>::max();
    for (const auto& K : dk_)
      for (const auto& M : dm_) {
        if (K.g * M.g > max_tiles_) break;
        const dim_split* N = nullptr;
        for (const auto& c : dn_)
          if (K.g * M.g * c.g <= max_tiles_) N = &c;
        if (N) best = std::min(best, working_set(M, *N, K));
      }
    return best;
  }
  bool any_fits() const { return smallest_working_set() <= largest_memory(); }

  void run(double local_seconds) {
    best_bound_ = local_seconds;  // a distributed plan must beat the PS
    budget_ = cfg_.search_budget > 0 ? cfg_.search_budget : std::numeric_limits<int32_t>::max();
    if (cfg_.search_budget <= 0) return exhaustive();
    // 1. Seeds: on a coarse sub-lattice of the part counts, the grid with the
    //    lowest bound for each (tile count within sqrt 2, K split within 2).
    //    When memory rules out the whole sub-lattice, the full lattice.
    std::map<std::tuple<int, int, int>, std::pair<double, uint64_t>> buckets;
    auto scan = [&](const std::vector<uint32_t>& ks, const std::vector<uint32_t>& ms,
                    const std::vector<uint32_t>& ns) {
      for (uint32_t ik : ks)
        for (uint32_t im : ms) {
          if (dk_[ik].g * dm_[im].g > max_tiles_) break;
          for (uint32_t in : ns) {
            const int64_t T = dk_[ik].g * dm_[im].g * dn_[in].g;
            if (T > max_tiles_) break;
            const info& f = lookup(im, in, ik);
            if (!f.feasible) continue;
            // Strips (one part along M or along N) form their own buckets: they
            // let a device keep one operand across its tiles.
            const int shape = dm_[im].g == 1 ? 0 : dn_[in].g == 1 ? 1 : 2;
            std::tuple<int, int, int> b{static_cast<int>(std::floor(2 * std::log2(double(T)))),
                                        static_cast<int>(std::floor(std::log2(double(dk_[ik].g)))),
                                        shape};
            auto it = buckets.find(b);
            if (it == buckets.end() || f.lb < it->second.first)
              buckets[b] = {f.lb, key(im, in, ik)};
          }
        }
    };
    scan(coarse(dk_), coarse(dm_), coarse(dn_));
    if (buckets.empty()) scan(all(dk_), all(dm_), all(dn_));
    std::vector<std::pair<double, uint64_t>> seeds;
    for (const auto& [b, v] : buckets) seeds.push_back(v);
    std::sort(seeds.begin(), seeds.end());
    const int32_t seed_budget = std::max<int32_t>(1, budget_ / 2);
    for (const auto& [lb, k] : seeds) {
      if (!(lb < best_bound_) || evaluated_ >= seed_budget) break;
      simulate(k);
    }
    // 2. Local search: expand the best grid's neighbourhood until it stops
    //    improving, then the neighbourhoods of the next seeds.
    std::set<uint64_t> expanded;
    size_t next_seed = 0;
    const size_t max_centers = 12;
    while (evaluated_ < budget_) {
      uint64_t center;
      if (best_ && !expanded.count(best_key_)) {
        center = best_key_;
      } else {
        while (next_seed < seeds.size() && expanded.count(seeds[next_seed].second)) ++next_seed;
        if (next_seed >= seeds.size() || next_seed >= max_centers) break;
        center = seeds[next_seed].second;
      }
      expanded.insert(center);
      expand(center);
    }
  }

  const found* best() const { return best_ ? &best_found_ : nullptr; }
  std::vector<assignment> take_tiles() { return std::move(best_tiles_); }
  int32_t evaluated() const { return evaluated_; }
  int32_t considered() const { return static_cast<int32_t>(memo_.size()); }
  double lowest_bound() const { return lowest_lb_; }
  int lowest_bound_kind() const { return lowest_kind_; }

 private:
  struct info {
    double lb = inf;
    int kind = 0;
    bool feasible = false;
    bool simulated = false;
  };

  uint64_t key(uint64_t im, uint64_t in, uint64_t ik) const {
    return (ik * dm_.size() + im) * dn_.size() + in;
  }
  void unkey(uint64_t k, uint32_t& im, uint32_t& in, uint32_t& ik) const {
    in = static_cast<uint32_t>(k % dn_.size());
    k /= dn_.size();
    im = static_cast<uint32_t>(k % dm_.size());
    ik = static_cast<uint32_t>(k / dm_.size());
  }

  static uint64_t working_set(const dim_split& M, const dim_split& N, const dim_split& K) {
    return gemm_element_bytes *
           static_cast<uint64_t>(M.smax * K.smax + K.smax * N.smax + M.smax * N.smax);
  }

  // Indices of a geometric subsequence (ratio about 1.5) of a part-count list.
  static std::vector<uint32_t> coarse(const std::vector<dim_split>& list) {
    std::vector<uint32_t> out;
    double target = 1;
    for (uint32_t i = 0; i < list.size(); ++i)
      if (static_cast<double>(list[i].g) >= target || i + 1 == list.size()) {
        out.push_back(i);
        target = std::max(target * 1.5, static_cast<double>(list[i].g) + 1);
      }
    return out;
  }

  static std::vector<uint32_t> all(const std::vector<dim_split>& list) {
    std::vector<uint32_t> out(list.size());
    for (uint32_t i = 0; i < list.size(); ++i) out[i] = i;
    return out;
  }

  const info& lookup(uint32_t im, uint32_t in, uint32_t ik) {
    auto [it, fresh] = memo_.try_emplace(key(im, in, ik));
    if (fresh) it->second = bound(dm_[im], dn_[in], dk_[ik]);
    return it->second;
  }

  // A lower bound on the predicted time of any assignment of this grid. The
  // assignment uses some number u of devices; the PS's traffic grows with u
  // (each device's first tile brings both operands) while the devices' share
  // of the work shrinks with u: minimise over u by bisection.
  info bound(const dim_split& M, const dim_split& N, const dim_split& K) {
    info f;
    const int64_t T = M.g * N.g * K.g;
    const uint64_t ws = working_set(M, N, K);
    const size_t fits = static_cast<size_t>(
        mem_sorted_.end() - std::lower_bound(mem_sorted_.begin(), mem_sorted_.end(), ws));
    if (T > max_tiles_ || fits == 0) return f;
    f.feasible = true;
    const double E = static_cast<double>(g_.element_bytes);
    const double R = static_cast<double>(g_.result_element_bytes);
    const double md = double(g_.m), nd = double(g_.n), kd = double(g_.k), T_ = double(T);
    const double total = g_.flops();
    const double up = R * md * nd * double(K.g);
    const double a_min = E * double(M.smin * K.smin), b_min = E * double(K.smin * N.smin);
    const double once = E * (md * kd + kd * nd);     // every block at least once
    const double per_tile = std::min(a_min, b_min);  // at most one operand cached
    const double down_min = std::max(once, T_ * per_tile);
    const double bm = double(M.smax), bn = double(N.smax), bk = double(K.smax);
    // The first tile issued is a largest one, with nothing cached.
    const double one_tile = ready_min_ + lat_min_ + E * bk * (bm + bn) / pre_dl_[1] +
                            2 * bm * bn * bk / pre_f_[1] + R * bm * bn / pre_ul_[1];
    const double ingress = up / cfg_.ps_ingress;
    // After the last byte out, the smallest tile on the best device (split_seconds' tail).
    const double tail = !cfg_.pipelined_devices ? 0
                        : 2 * lat_min_ + 2 * double(M.smin * N.smin * K.smin) / pre_f_[1] +
                              R * double(M.smin * N.smin) / pre_ul_[1];
    // Behind relays a block leaves the PS once per relay, however many of
    // its devices read it: only `once` bounds the PS's bytes.
    const bool relayed = !cfg_.relays.empty();
    auto egress = [&](size_t u) {
      const double ud = double(u);
      const double sent = relayed ? once : std::max(once, ud * (a_min + b_min) + (T_ - ud) * per_tile);
      return sent / cfg_.ps_egress + tail;
    };
    auto device_side = [&](size_t u, int* which) {
      const double v[] = {total / pre_f_[u], down_min / pre_dl_[u], up / pre_ul_[u],
                          ready_min_ + double(ceil_div(T, static_cast<int64_t>(u))) * lat_min_};
      int w = 0;
      for (int b = 1; b < 4; ++b)
        if (v[b] > v[w]) w = b;
      if (which) *which = w;
      return v[w];
    };
    size_t lo = 1, hi = std::min(static_cast<size_t>(T), fits);
    while (lo < hi) {  // smallest u with egress(u) >= device_side(u)
      size_t mid = (lo + hi) / 2;
      if (egress(mid) >= device_side(mid, nullptr))
        hi = mid;
      else
        lo = mid + 1;
    }
    size_t u = lo;
    if (u > 1 && std::max(egress(u - 1), device_side(u - 1, nullptr)) <
                     std::max(egress(u), device_side(u, nullptr)))
      --u;
    int dev_which = 0;
    const double dev_lb = device_side(u, &dev_which);
    const int dev_kinds[] = {0, 3, 4, 6};
    const double lbs[] = {dev_lb, egress(u), ingress, one_tile};
    const int kinds[] = {dev_kinds[dev_which], 1, 2, 5};
    int w = 0;
    for (int b = 1; b < 4; ++b)
      if (lbs[b] > lbs[w]) w = b;
    const double per_tiles = T_ * cfg_.ps_tile_seconds;
    f.lb = lbs[w] + per_tiles;
    f.kind = per_tiles > lbs[w] ? ps_tiles_kind : kinds[w];
    if (f.lb < lowest_lb_) {
      lowest_lb_ = f.lb;
      lowest_kind_ = f.kind;
    }
    return f;
  }

  // Simulates a grid unless its bound cannot beat the best; true if it did.
  bool simulate(uint64_t k) {
    uint32_t im, in, ik;
    unkey(k, im, in, ik);
    info& f = memo_[k];
    if (f.simulated || !f.feasible || !(f.lb < best_bound_) || evaluated_ >= budget_) return false;
    f.simulated = true;
    ++evaluated_;
    auto r = sim_.run(dm_[im], dn_[in], dk_[ik], best_bound_, work_);
    if (!(r.predicted < best_bound_)) return false;
    best_bound_ = r.predicted;
    best_ = true;
    best_key_ = k;
    best_found_ = found{dm_[im].g, dn_[in].g, dk_[ik].g, r};
    std::swap(best_tiles_, work_);
    return true;
  }

  // Moves of 1, 2, 4, 8 places along each dimension's list of part counts,
  // and diagonal moves that trade parts between two dimensions; simulated in
  // order of their bounds.
  void expand(uint64_t center) {
    uint32_t im, in, ik;
    unkey(center, im, in, ik);
    std::vector<std::pair<double, uint64_t>> moves;
    auto add = [&](int64_t dm, int64_t dn, int64_t dk) {
      const int64_t a = im + dm, b = in + dn, c = ik + dk;
      if (a < 0 || b < 0 || c < 0 || a >= int64_t(dm_.size()) || b >= int64_t(dn_.size()) ||
          c >= int64_t(dk_.size()))
        return;
      const info& f = lookup(uint32_t(a), uint32_t(b), uint32_t(c));
      if (f.feasible && !f.simulated && f.lb < best_bound_)
        moves.push_back({f.lb, key(uint64_t(a), uint64_t(b), uint64_t(c))});
    };
    const bool k_axis = dk_.size() > 1;
    for (int64_t st : {1, 2, 4, 8, 16})
      for (int64_t sg : {-1, 1}) {
        const int64_t d = st * sg;
        add(d, 0, 0);
        add(0, d, 0);
        add(d, -d, 0);
        if (k_axis) {
          add(0, 0, d);
          add(d, 0, -d);
          add(0, d, -d);
        }
      }
    std::sort(moves.begin(), moves.end());
    moves.erase(std::unique(moves.begin(), moves.end()), moves.end());
    for (const auto& [lb, k] : moves) simulate(k);
  }

  // Every grid, in bound order, until the bound reaches the best time.
  void exhaustive() {
    std::vector<std::pair<double, uint64_t>> all;
    for (uint32_t ik = 0; ik < dk_.size(); ++ik)
      for (uint32_t im = 0; im < dm_.size(); ++im) {
        if (dk_[ik].g * dm_[im].g > max_tiles_) break;
        for (uint32_t in = 0; in < dn_.size(); ++in) {
          if (dk_[ik].g * dm_[im].g * dn_[in].g > max_tiles_) break;
          const info& f = lookup(im, in, ik);
          if (f.feasible) all.push_back({f.lb, key(im, in, ik)});
        }
      }
    std::sort(all.begin(), all.end());
    for (const auto& [lb, k] : all) {
      if (!(lb < best_bound_)) break;
      simulate(k);
    }
  }

  const gemm_problem& g_;
  const std::vector<dev>& devs_;
  const planner_config& cfg_;
  std::vector<int64_t> dominators_;
  grid_sim sim_;
  std::vector<double> pre_f_, pre_dl_, pre_ul_;
  std::vector<uint64_t> mem_sorted_;
  double lat_min_ = 0, ready_min_ = 0;
  int64_t max_tiles_ = 1;
  std::vector<dim_split> dm_, dn_, dk_;
  std::unordered_map<uint64_t, info> memo_;
  double best_bound_ = inf;
  int32_t budget_ = 0, evaluated_ = 0;
  bool best_ = false;
  uint64_t best_key_ = 0;
  found best_found_{};
  std::vector<assignment> work_, best_tiles_;
  double lowest_lb_ = inf;
  int lowest_kind_ = 0;
};

}  // namespace

std::vector<int64_t> split_edges(int64_t size, int64_t parts, int64_t align) {
  size = std::max<int64_t>(size, 0);
  parts = std::max<int64_t>(1, std::min(parts, std::max<int64_t>(size, 1)));
  align = std::max<int64_t>(align, 1);
  int64_t units = ceil_div(size, align);
  if (parts > units) {  // cannot align that finely: plain even split
    units = size;
    align = 1;
  }
  std::vector<int64_t> edges(static_cast<size_t>(parts + 1));
  for (int64_t p = 0; p < parts; ++p) edges[static_cast<size_t>(p)] = align * (p * units / parts);
  edges[static_cast<size_t>(parts)] = size;
  return edges;
}

plan search_grids(const gemm_problem& g, const std::vector<device_view>& devices,
                  const planner_config& cfg) {
  const double total = g.flops();
  const double local_seconds = total / cfg.ps_flops;
  if (g.m <= 0 || g.n <= 0 || g.k <= 0) return local_plan(g, local_seconds, plan_bound::none, "empty product");
  if (total < cfg.min_split_flops)
    return local_plan(g, local_seconds, plan_bound::threshold,
                      fmt("%.3g FLOPs below the split threshold %.3g", total, cfg.min_split_flops));

  // Usable devices, by relay and id: the order ties are broken in, the same
  // however a fleet's ids interleave its relays.
  std::vector<dev> devs;
  devs.reserve(devices.size());
  for (const auto& v : devices) {
    if (!usable(v.profile) || !std::isfinite(v.ready_at)) continue;
    const bool relayed = v.relay >= 0 && static_cast<size_t>(v.relay) < cfg.relays.size();
    devs.emplace_back(v.id, v.profile, std::max(0.0, v.ready_at), relayed ? v.relay : -1);
  }
  std::stable_sort(devs.begin(), devs.end(),
                   [](const dev& x, const dev& y) { return std::tie(x.relay, x.id) < std::tie(y.relay, y.id); });
  if (devs.empty()) return local_plan(g, local_seconds, plan_bound::no_device, "no usable device");

  grid_search search(g, devs, cfg);
  if (!search.any_fits())
    return local_plan(g, local_seconds, plan_bound::memory,
                      fmt("no device can hold a tile: the smallest needs %.3g bytes, the largest "
                          "device memory is %.3g bytes",
                          static_cast<double>(search.smallest_working_set()),
                          static_cast<double>(search.largest_memory())));
  search.run(local_seconds);
  const auto* best = search.best();
  if (!best) {
    const plan_bound bound = bound_kinds[search.lowest_bound_kind()];
    plan p = local_plan(g, local_seconds, bound,
                        "distributed is not faster than local " + fmt("%.3g s", local_seconds) +
                            fmt(" (lowest bound found %.3g s: ", search.lowest_bound()) +
                            to_string(bound) + ")");
    p.grids_considered = search.considered();
    p.grids_evaluated = search.evaluated();
    return p;
  }
  plan p;
  p.local = false;
  p.problem = g;
  p.grid_m = best->gm;
  p.grid_n = best->gn;
  p.grid_k = best->gk;
  p.tiles = search.take_tiles();
  p.predicted_seconds = best->r.predicted;
  p.local_seconds = local_seconds;
  p.bytes_down = best->r.bytes_down;
  p.bytes_up = best->r.bytes_up;
  p.devices_used = best->r.devices_used;
  p.grids_considered = search.considered();
  p.grids_evaluated = search.evaluated();
  p.bound = split_bound(p, devices, cfg);
  p.reason = split_reason(p);
  return p;
}

}  // namespace cleave
