#include "kernels/sparse/softmax_combine.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/reproducible.hpp"

namespace cleave {

namespace {

std::string check_part(const modellet_scores& p, size_t index, int64_t n) {
  const std::string name = "model-let answer " + std::to_string(index);
  if (p.samples() != n || static_cast<int64_t>(p.stats.size()) != n)
    return name + " covers " + std::to_string(p.samples()) + " samples, not " + std::to_string(n);
  if (p.offsets.front() != 0 || static_cast<size_t>(p.offsets.back()) != p.ids.size()
      || p.ids.size() != p.logits.size())
    return name + " has offsets that do not match its " + std::to_string(p.ids.size()) + " pairs";
  for (int64_t r = 0; r < n; ++r) {
    const int64_t a = p.offsets[static_cast<size_t>(r)], z = p.offsets[static_cast<size_t>(r) + 1];
    if (z < a) return name + ": sample " + std::to_string(r) + " has a negative count";
    for (int64_t j = a + 1; j < z; ++j)
      if (p.ids[static_cast<size_t>(j)] <= p.ids[static_cast<size_t>(j) - 1])
        return name + ": sample " + std::to_string(r) + "'s ids are not ascending";
  }
  return {};
}

}  // namespace

std::string combine_softmax(const std::vector<const modellet_scores*>& parts,
                            const label_rows& labels, float scale, combined_softmax& out) {
  const int64_t n = labels.n;
  for (size_t i = 0; i < parts.size(); ++i)
    if (auto err = check_part(*parts[i], i, n); !err.empty()) return err;
  out.dlogits.resize(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) out.dlogits[i].assign(parts[i]->ids.size(), 0.0f);
  std::vector<double> loss(static_cast<size_t>(n), 0.0);
  std::vector<std::string> errors(static_cast<size_t>(n));
#pragma omp parallel for num_threads(compute_threads()) schedule(static)
  for (int64_t r = 0; r < n; ++r) {
    const auto k = static_cast<size_t>(r);
    softmax_stats whole;
    for (const auto* p : parts) whole = merge(whole, p->stats[k]);
    const double log_z = whole.max + std::log(whole.sum);
    for (size_t i = 0; i < parts.size(); ++i) {
      const int64_t a = parts[i]->offsets[k], z = parts[i]->offsets[k + 1];
      for (int64_t j = a; j < z; ++j)
        out.dlogits[i][static_cast<size_t>(j)] = static_cast<float>(
          scale * std::exp(static_cast<double>(parts[i]->logits[static_cast<size_t>(j)]) - log_z));
    }
    const int64_t first = labels.offsets[r], last = labels.offsets[r + 1];
    if (first == last) continue;
    const double target = 1.0 / static_cast<double>(last - first);
    for (int64_t e = first; e < last; ++e) {
      const int32_t label = labels.ids[e];
      bool found = false;
      for (size_t i = 0; i < parts.size() && !found; ++i) {
        const auto* p = parts[i];
        auto lo = p->ids.begin() + p->offsets[k], hi = p->ids.begin() + p->offsets[k + 1];
        auto it = std::lower_bound(lo, hi, label);
        if (it == hi || *it != label) continue;
        const auto j = static_cast<size_t>(it - p->ids.begin());
        loss[k] -= target * (static_cast<double>(p->logits[j]) - log_z);
        out.dlogits[i][j] -= static_cast<float>(scale * target);
        found = true;
      }
      if (!found)
        errors[k] = "sample " + std::to_string(r) + "'s label " + std::to_string(label)
                    + " is in no model-let's active set";
    }
  }
  for (const auto& e : errors)
    if (!e.empty()) return e;
  // Parts must not overlap: a neuron counted twice would skew the softmax.
  // Ranges are disjoint by construction at the PS; check the first sample's
  // ids cheaply against the others' bounds.
  for (size_t i = 0; i < parts.size(); ++i)
    for (size_t j = i + 1; j < parts.size(); ++j)
      for (int64_t r = 0; r < n; ++r) {
        const auto k = static_cast<size_t>(r);
        const auto *p = parts[i], *q = parts[j];
        if (p->offsets[k] == p->offsets[k + 1] || q->offsets[k] == q->offsets[k + 1]) continue;
        const int32_t p_lo = p->ids[static_cast<size_t>(p->offsets[k])],
                      p_hi = p->ids[static_cast<size_t>(p->offsets[k + 1]) - 1];
        const int32_t q_lo = q->ids[static_cast<size_t>(q->offsets[k])],
                      q_hi = q->ids[static_cast<size_t>(q->offsets[k + 1]) - 1];
        if (p_lo <= q_hi && q_lo <= p_hi)
          return "model-let answers " + std::to_string(i) + " and " + std::to_string(j)
                 + " overlap on sample " + std::to_string(r);
      }
  out.loss_sum = 0;
  for (double l : loss) out.loss_sum += l;
  return {};
}

}  // namespace cleave
