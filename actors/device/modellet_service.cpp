#include "actors/device/modellet_service.hpp"

#include <stdexcept>

#include "schema/edge_codec.hpp"
#include "schema/errors.hpp"
#include "schema/modellet_codec.hpp"

namespace cleave {

ml_frame modellet_service::error(const std::string& why) const {
  return {edge_ml_error, encode_refusal(why)};
}

ml_frame modellet_service::reply(uint16_t kind, std::vector<char> payload) const {
  // An answer over its cap would be refused by the PS's channel: say so here.
  if (payload.size() > edge_payload_cap(kind, cap_))
    return error(std::string(to_string(static_cast<edge_kind>(kind))) + " answer of "
                 + std::to_string(payload.size()) + " bytes is over the cap of "
                 + std::to_string(edge_payload_cap(kind, cap_)));
  return {kind, std::move(payload)};
}

ml_frame modellet_service::handle(uint16_t kind, const std::vector<char>& payload) {
  const auto k = static_cast<edge_kind>(kind);
  if (payload.size() > edge_payload_cap(kind, cap_))
    return error(std::string(to_string(k)) + " frame of " + std::to_string(payload.size())
                 + " bytes is over its cap");
  const char* data = payload.data();
  const size_t size = payload.size();
  if (kind == edge_ml_place) {
    auto m = decode_ml_place(data, size);
    if (!m) return error(describe(m.error()));
    try {
      ml_ = std::make_unique<modellet>(std::move(m->state), m->sampling);
    } catch (const std::exception& e) {
      return error(std::string("cannot hold the model-let: ") + e.what());
    }
    return reply(edge_ml_done, encode_ml_done(ml_->end() - ml_->begin()));
  }
  if (!ml_) return error(std::string(to_string(k)) + " before any ml_place: this device holds no model-let");
  switch (kind) {
    case edge_ml_forward: {
      auto m = decode_ml_forward(data, size);
      if (!m) return error(describe(m.error()));
      if (m->h.cols() != ml_->hidden())
        return error("ml_forward: " + std::to_string(m->h.cols()) + " hidden units, the model-let has "
                     + std::to_string(ml_->hidden()));
      for (int32_t id : m->label_ids)
        if (id < ml_->begin() || id >= ml_->end())
          return error("ml_forward: label " + std::to_string(id) + " is outside this model-let");
      return reply(edge_ml_scores, encode(ml_->forward(m->h, m->labels(), m->step)));
    }
    case edge_ml_grads: {
      auto g = decode_ml_grads(data, size);
      if (!g) return error(describe(g.error()));
      ml_hidden_grad_msg out;
      if (auto err = ml_->backward(*g, out.dh, out.sum_of_squares); !err.empty()) return error(err);
      return reply(edge_ml_hidden_grad, encode(out));
    }
    case edge_ml_update: {
      auto u = decode_ml_update(data, size);
      if (!u) return error(describe(u.error()));
      ml_->update(u->cfg, u->t, u->grad_scale);
      return reply(edge_ml_done, encode_ml_done(ml_->rows_updated()));
    }
    case edge_ml_copy:
      if (size != 0) return error("ml_copy carries no payload");
      return reply(edge_ml_state, encode_ml_state(ml_->state()));
    default: return error("not a model-let request: frame kind " + std::to_string(kind));
  }
}

}  // namespace cleave
