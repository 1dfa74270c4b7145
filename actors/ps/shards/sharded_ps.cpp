#include "actors/ps/shards/sharded_ps.hpp"

#include <algorithm>
#include <stdexcept>

#include "schema/errors.hpp"
#include "training/elapsed.hpp"

namespace cleave {

namespace {

std::vector<std::unique_ptr<ps_shard>> local_shards(const std::vector<gemm_engine<float>*>& engines) {
  if (engines.empty()) throw std::invalid_argument("sharded_ps: no shard engines");
  std::vector<std::unique_ptr<ps_shard>> out;
  for (auto* e : engines) out.push_back(std::make_unique<local_shard>(*e));
  return out;
}

}  // namespace

sharded_ps::sharded_ps(std::vector<gemm_engine<float>*> engines)
    : sharded_ps(shard_list{local_shards(engines)}) {}

sharded_ps::sharded_ps(shard_list list)
    : shards_(std::move(list.shards)), pool_(static_cast<int>(shards_.size())) {
  if (shards_.empty()) throw std::invalid_argument("sharded_ps: no shards");
}

void sharded_ps::on_every_shard(const char* what, const std::function<caf::error(int)>& call) {
  std::vector<caf::error> errors(shards_.size());
  pool_.run([&](int s) { errors[static_cast<size_t>(s)] = call(s); });
  for (size_t s = 0; s < errors.size(); ++s)
    if (errors[s])
      throw std::runtime_error("PS shard " + std::to_string(s) + " " + what + ": " + describe(errors[s]));
}

void sharded_ps::on_attach() {
  split_.attach(params_, shards());
  on_every_shard("attach", [&](int s) {
    std::vector<shard_slice> mine;
    for (size_t id = 0; id < params_.size(); ++id) mine.push_back(split_.slice(id, static_cast<size_t>(s)));
    return shards_[static_cast<size_t>(s)]->attach(params_, mine);
  });
  forget_moments();
}

void sharded_ps::forget_moments() {
  for (parameter* p : params_) {
    p->adam_m = tensor();
    p->adam_v = tensor();
  }
}

std::vector<uint64_t> sharded_ps::shard_bytes() const {
  std::vector<uint64_t> out;
  for (const auto& s : shards_) out.push_back(s->bytes());
  return out;
}

void sharded_ps::zero_grads() {
  for (parameter* p : params_) p->grad.zero();
  on_every_shard("zeroing gradients", [&](int s) { return shards_[static_cast<size_t>(s)]->zero_grads(); });
}

double sharded_ps::reduce_gradients() {
  const auto t0 = clock_type::now();
  std::vector<double> squares(shards_.size(), 0.0);
  on_every_shard("adding gradients", [&](int s) -> caf::error {
    auto sq = shards_[static_cast<size_t>(s)]->add_grads(params_);
    if (!sq) return sq.error();
    squares[static_cast<size_t>(s)] = *sq;
    return {};
  });
  exchange_seconds_ += seconds_since(t0);
  double total = 0;
  for (double sq : squares) total += sq;  // shard order: the same sum every run
  return total;
}

void sharded_ps::update(const adamw_config& cfg, int64_t t, double grad_scale) {
  on_every_shard("updating", [&](int s) { return shards_[static_cast<size_t>(s)]->update(cfg, t, grad_scale); });
  const auto t0 = clock_type::now();
  pool_.run([&](int s) { shards_[static_cast<size_t>(s)]->gather_values(params_); });
  exchange_seconds_ += seconds_since(t0);
}

void sharded_ps::gather_moments() {
  for (parameter* p : params_) {
    p->adam_m.resize(p->value.rows(), p->value.cols());
    p->adam_v.resize(p->value.rows(), p->value.cols());
  }
  on_every_shard("gathering moments",
                 [&](int s) { return shards_[static_cast<size_t>(s)]->gather_moments(params_); });
}

void sharded_ps::gemm(gemm_tag tag, const_view<float> a, bool trans_a, const_view<float> b,
                      bool trans_b, mut_view<float> c, float beta) {
  gemm_batch({{tag, a, trans_a, b, trans_b, c, beta}});
}

bool sharded_ps::computes_here(gemm_tag tag, int64_t m, int64_t n, int64_t k) {
  const bool weight_role = tag.role == gemm_role::forward || tag.role == gemm_role::grad_input ||
                           tag.role == gemm_role::grad_weight;
  return !weight_role && shards_[0]->computes_here(tag, m, n, k);
}

void sharded_ps::add_local_seconds(double seconds, int64_t products) {
  shards_[0]->add_local_seconds(seconds, products);
}

void sharded_ps::gemm_batch(const std::vector<gemm_job<float>>& jobs) {
  split_.split(jobs, batch_);
  static const std::vector<gemm_job<float>> none;
  const bool only_first = std::all_of(batch_.per_shard.begin() + 1, batch_.per_shard.end(),
                                      [](const auto& v) { return v.empty(); });
  if (only_first) {
    if (auto err = shards_[0]->run(batch_.per_shard[0], batch_.whole))
      throw std::runtime_error("PS shard 0 multiplying: " + describe(err));
  } else {
    on_every_shard("multiplying", [&](int s) -> caf::error {
      const auto& mine = batch_.per_shard[static_cast<size_t>(s)];
      const auto& whole = s == 0 ? batch_.whole : none;
      if (mine.empty() && whole.empty()) return {};
      return shards_[static_cast<size_t>(s)]->run(mine, whole);
    });
  }
  const auto t0 = clock_type::now();
  if (split_.reduce()) exchange_seconds_ += seconds_since(t0);
}

}  // namespace cleave
