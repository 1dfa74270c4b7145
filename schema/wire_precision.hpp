#pragma once
// The precision of the floats a tile carries on the wire (--wire): its
// operands down and its result up. Devices accumulate in float32 whatever the
// wire carries; the PS keeps its master weights, folds gradients and steps
// AdamW in float32. bf16 halves every byte that crosses a device link; fp32
// is the default where a run must equal the single-process reference bit for
// bit.

#include <cstdint>
#include <string>
#include <string_view>

#include <caf/expected.hpp>

namespace cleave {

enum class wire_precision : uint8_t { fp32 = 0, bf16 = 1 };

// Bytes one element takes on the wire: 4 or 2.
constexpr uint64_t wire_element_bytes(wire_precision w) {
  return w == wire_precision::bf16 ? 2 : 4;
}

const char* to_string(wire_precision w);

// "fp32" or "bf16"; anything else is refused with the choices named.
caf::expected<wire_precision> parse_wire_precision(std::string_view text);

}  // namespace cleave
