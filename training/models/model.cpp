#include "training/models/model.hpp"

#include <stdexcept>

#include "schema/errors.hpp"

namespace cleave {

std::unique_ptr<model> make_mlp(const model_config& cfg, uint64_t seed, gemm_engine<float>& eng);
std::unique_ptr<model> make_gpt(const model_config& cfg, uint64_t seed, gemm_engine<float>& eng);
std::unique_ptr<model> make_xc(const model_config& cfg, uint64_t seed, gemm_engine<float>& eng,
                               const xc_settings& xc);

int64_t model::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p.value.size();
  return n;
}

parameter& model::add_parameter(std::string name, int64_t rows, int64_t cols, bool decay, bool product_weight) {
  auto& p = params_.emplace_back();
  p.name = std::move(name);
  p.id = static_cast<int32_t>(params_.size() - 1);
  p.value.resize(rows, cols);
  // With PS shards the moments, and a product weight's gradient, live in the
  // shards' slices alone: whole ones here would be the coordinator's largest cost.
  const bool elsewhere = gemm_->keeps_parameter_state();
  if (!elsewhere || !product_weight) p.grad.resize(rows, cols);
  if (!elsewhere) {
    p.adam_m.resize(rows, cols);
    p.adam_v.resize(rows, cols);
  }
  p.decay = decay;
  p.product_weight = product_weight;
  return p;
}

namespace {

// Bounds that keep a typo from allocating the machine away.
constexpr int64_t max_dim = int64_t{1} << 20;
constexpr int64_t max_params = int64_t{64} << 30;

caf::error check_dim(const char* what, int64_t v) {
  if (v <= 0 || v > max_dim)
    return fail(std::string{what} + " must be in [1, " + std::to_string(max_dim) + "], got "
                + std::to_string(v));
  return caf::none;
}

caf::error validate(const model_config& cfg) {
  if (cfg.kind == "mlp") {
    if (auto e = check_dim("mlp inputs", cfg.inputs)) return e;
    if (auto e = check_dim("mlp classes", cfg.classes)) return e;
    for (auto h : cfg.hidden)
      if (auto e = check_dim("mlp hidden width", h)) return e;
    return caf::none;
  }
  if (cfg.kind == "gpt") {
    for (auto [what, v] : {std::pair{"gpt vocab", cfg.vocab}, {"gpt context", cfg.context},
                           {"gpt d_model", cfg.d_model}, {"gpt layers", cfg.layers},
                           {"gpt heads", cfg.heads}, {"gpt ffn", cfg.ffn}})
      if (auto e = check_dim(what, v)) return e;
    if (cfg.d_model % cfg.heads != 0)
      return fail("gpt d_model (" + std::to_string(cfg.d_model) + ") must be divisible by heads ("
                  + std::to_string(cfg.heads) + ")");
    const double params = static_cast<double>(cfg.layers)
                            * (4.0 * cfg.d_model * cfg.d_model + 2.0 * cfg.d_model * cfg.ffn)
                          + 2.0 * cfg.vocab * cfg.d_model;
    if (params > static_cast<double>(max_params))
      return fail("gpt shape has " + std::to_string(params) + " parameters, over the limit");
    return caf::none;
  }
  if (cfg.kind == "xc") {
    if (auto e = check_dim("xc hidden width", cfg.hidden.size() == 1 ? cfg.hidden[0] : 0)) return e;
    // Features and labels come from the data, whose reader caps them.
    if (cfg.inputs <= 0 || cfg.classes <= 0) return fail("xc needs features and labels from its dataset");
    const double params = static_cast<double>(cfg.inputs + cfg.classes) * (cfg.hidden[0] + 1.0);
    if (params > static_cast<double>(max_params))
      return fail("xc shape has " + std::to_string(params) + " parameters, over the limit");
    return caf::none;
  }
  return fail("unknown model '" + cfg.kind + "' (expected mlp, gpt or xc)");
}

caf::error validate(const xc_settings& xc, int64_t hidden) {
  try {
    check_lsh_config(xc.lsh, hidden);
    refresh_due(xc.schedule, 1);
  } catch (const std::invalid_argument& e) {
    return fail(e.what());
  }
  if (xc.bucket_size <= 0) return fail("lsh: the bucket size must be positive");
  if (xc.min_active < 0) return fail("xc: the minimum active set cannot be negative");
  return caf::none;
}

}  // namespace

caf::expected<std::unique_ptr<model>> make_model(const model_config& cfg, uint64_t seed,
                                                 gemm_engine<float>& eng, const xc_settings& xc) {
  if (auto err = validate(cfg)) return err;
  if (cfg.kind == "mlp") return make_mlp(cfg, seed, eng);
  if (cfg.kind == "xc") {
    if (xc.sparse)
      if (auto err = validate(xc, cfg.hidden[0])) return err;
    return make_xc(cfg, seed, eng, xc);
  }
  return make_gpt(cfg, seed, eng);
}

caf::expected<model_config> gpt_preset(const std::string& name, int64_t vocab, int64_t context) {
  struct shape {
    const char* name;
    int64_t d, layers, heads, ffn;
  };
  static constexpr shape shapes[] = {
    {"small", 256, 4, 4, 1024},       {"opt-125m", 768, 12, 12, 3072},
    {"opt-350m", 1024, 24, 16, 4096}, {"opt-1.3b", 2048, 24, 32, 8192},
    {"opt-2.7b", 2560, 32, 32, 10240}, {"opt-6.7b", 4096, 32, 32, 16384},
    {"opt-13b", 5120, 40, 40, 20480}, {"opt-30b", 7168, 48, 56, 28672},
  };
  for (const auto& s : shapes) {
    if (name == s.name) {
      model_config cfg;
      cfg.kind = "gpt";
      cfg.vocab = vocab;
      cfg.context = context;
      cfg.d_model = s.d;
      cfg.layers = s.layers;
      cfg.heads = s.heads;
      cfg.ffn = s.ffn;
      return cfg;
    }
  }
  return fail("unknown gpt shape '" + name
              + "' (expected small, opt-125m, opt-350m, opt-1.3b, opt-2.7b, opt-6.7b, opt-13b or opt-30b)");
}

}  // namespace cleave
