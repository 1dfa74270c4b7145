#include "training/models/model.hpp"

#include "schema/errors.hpp"

namespace cleave {

std::unique_ptr<model> make_mlp(const model_config& cfg, uint64_t seed, gemm_engine<float>& eng);
std::unique_ptr<model> make_gpt(const model_config& cfg, uint64_t seed, gemm_engine<float>& eng);

int64_t model::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p.value.size();
  return n;
}

parameter& model::add_parameter(std::string name, int64_t rows, int64_t cols, bool decay) {
  auto& p = params_.emplace_back();
  p.name = std::move(name);
  p.id = static_cast<int32_t>(params_.size() - 1);
  p.value.resize(rows, cols);
  p.grad.resize(rows, cols);
  p.adam_m.resize(rows, cols);
  p.adam_v.resize(rows, cols);
  p.decay = decay;
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
  return fail("unknown model '" + cfg.kind + "' (expected mlp or gpt)");
}

}  // namespace

caf::expected<std::unique_ptr<model>> make_model(const model_config& cfg, uint64_t seed,
                                                 gemm_engine<float>& eng) {
  if (auto err = validate(cfg)) return err;
  if (cfg.kind == "mlp") return make_mlp(cfg, seed, eng);
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
