#pragma once
// The precision of the floats a tile carries on the wire (--wire): its
// operands down and its result up. Devices accumulate in float32 whatever the
// wire carries; the PS keeps its master weights, folds gradients and steps
// AdamW in float32. bf16 halves every byte that crosses a device link; fp32
// is the default where a run must equal the single-process reference bit for
// bit. bf16-operands sends the operands in bf16 and takes results in fp32:
// operands are most of a tile's bytes (A and B down, one C up), and a result
// left unrounded keeps Freivalds' check at fp32's resolution, where bf16
// results blur it (actors/ps/verify/freivalds.hpp).

#include <cstdint>
#include <string>
#include <string_view>

#include <caf/expected.hpp>

namespace cleave {

// A mode of the wire; fp32 and bf16 also name the precision of one frame's
// values (a result frame's is never bf16_operands).
enum class wire_precision : uint8_t { fp32 = 0, bf16 = 1, bf16_operands = 2 };

constexpr wire_precision last_wire_precision = wire_precision::bf16_operands;

// The precision a mode sends operands in, and takes results in.
constexpr wire_precision operand_precision(wire_precision w) {
  return w == wire_precision::fp32 ? wire_precision::fp32 : wire_precision::bf16;
}
constexpr wire_precision result_precision(wire_precision w) {
  return w == wire_precision::bf16 ? wire_precision::bf16 : wire_precision::fp32;
}

// Bytes one operand element, or one result element, takes on the wire: 4 or 2.
constexpr uint64_t operand_element_bytes(wire_precision w) {
  return operand_precision(w) == wire_precision::bf16 ? 2 : 4;
}
constexpr uint64_t result_element_bytes(wire_precision w) {
  return result_precision(w) == wire_precision::bf16 ? 2 : 4;
}

// "fp32", "bf16" or "bf16-operands".
const char* to_string(wire_precision w);

// One of to_string's names; anything else is refused with the choices named.
caf::expected<wire_precision> parse_wire_precision(std::string_view text);

}  // namespace cleave
