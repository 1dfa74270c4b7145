#pragma once
// Model-let frames of the device edge (edge_codec.hpp lists the exchange):
// fixed little-endian fields (wire.hpp). Every decoder checks each count
// against its limit and against the bytes left before it sizes a vector, so
// a hostile frame costs at most its own (already capped) length.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <caf/expected.hpp>

#include "kernels/ops.hpp"
#include "kernels/sparse/modellet.hpp"
#include "schema/edge_codec.hpp"

namespace cleave {

inline constexpr int64_t max_modellet_hidden = 1 << 16;
inline constexpr uint32_t max_modellet_samples = 1 << 20;

struct ml_place_msg {
  modellet_sampling sampling;
  modellet_state state;
};

struct ml_forward_msg {
  int64_t step = 0;
  tensor h;                           // [n, hidden]
  std::vector<int64_t> label_offsets;  // n + 1: the labels in the range only
  std::vector<int32_t> label_ids;
  label_rows labels() const {
    return {label_offsets.data(), label_ids.data(), static_cast<int64_t>(label_offsets.size()) - 1};
  }
};

struct ml_hidden_grad_msg {
  tensor dh;  // [n, hidden]
  double sum_of_squares = 0;
};

struct ml_update_msg {
  int64_t t = 0;
  adamw_config cfg;
  double grad_scale = 1;
};

std::vector<char> encode(const ml_place_msg& m);
caf::expected<ml_place_msg> decode_ml_place(const char* data, size_t size);

std::vector<char> encode_ml_state(const modellet_state& s);
caf::expected<modellet_state> decode_ml_state(const char* data, size_t size);

// h's rows, and each sample's labels cut to [begin, end).
std::vector<char> encode_ml_forward(int64_t step, const tensor& h, const label_rows& labels,
                                    int32_t begin, int32_t end);
caf::expected<ml_forward_msg> decode_ml_forward(const char* data, size_t size);

std::vector<char> encode(const modellet_scores& s);
caf::expected<modellet_scores> decode_ml_scores(const char* data, size_t size);

std::vector<char> encode_ml_grads(const std::vector<float>& dlogits);
caf::expected<std::vector<float>> decode_ml_grads(const char* data, size_t size);

std::vector<char> encode(const ml_hidden_grad_msg& m);
caf::expected<ml_hidden_grad_msg> decode_ml_hidden_grad(const char* data, size_t size);

std::vector<char> encode(const ml_update_msg& m);
caf::expected<ml_update_msg> decode_ml_update(const char* data, size_t size);

std::vector<char> encode_ml_done(int64_t value);
caf::expected<int64_t> decode_ml_done(const char* data, size_t size);

}  // namespace cleave
