#include "schema/wire_precision.hpp"

#include "schema/errors.hpp"

namespace cleave {

const char* to_string(wire_precision w) {
  switch (w) {
    case wire_precision::fp32: return "fp32";
    case wire_precision::bf16: return "bf16";
    case wire_precision::bf16_operands: return "bf16-operands";
  }
  return "unknown";
}

caf::expected<wire_precision> parse_wire_precision(std::string_view text) {
  for (auto w : {wire_precision::fp32, wire_precision::bf16, wire_precision::bf16_operands})
    if (text == to_string(w)) return w;
  return fail("--wire must be fp32, bf16 or bf16-operands, not '" + std::string(text) + "'");
}

}  // namespace cleave
