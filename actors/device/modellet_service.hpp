#pragma once
// A device's model-let (D-SLIDE), behind the device edge's frames: decodes
// each model-let frame (edge_codec.hpp lists them), calls the pure
// modellet, and encodes the answer. Pure, so the device actor stays a thin
// shell and the decoding can be fuzzed without actors. Every frame is held
// to its kind's cap before it is decoded, in process as over a socket.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/sparse/modellet.hpp"

namespace cleave {

// The cap of the model-let kinds that carry tensors: the device edge's
// default tile cap (edge_gateway_options::max_tile_bytes).
inline constexpr uint64_t default_modellet_frame_cap = uint64_t{64} << 20;

struct ml_frame {
  uint16_t kind = 0;
  std::vector<char> payload;
};

class modellet_service {
 public:
  // max_frame_bytes: the cap of the kinds that carry tensors (edge_payload_cap).
  explicit modellet_service(uint64_t max_frame_bytes) : cap_(max_frame_bytes) {}

  // The answer to one frame: its reply kind, or edge_ml_error with the reason.
  ml_frame handle(uint16_t kind, const std::vector<char>& payload);

  bool holds() const { return static_cast<bool>(ml_); }
  const modellet* held() const { return ml_.get(); }

 private:
  ml_frame error(const std::string& why) const;
  ml_frame reply(uint16_t kind, std::vector<char> payload) const;

  uint64_t cap_;
  std::unique_ptr<modellet> ml_;
};

}  // namespace cleave
