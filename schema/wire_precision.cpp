#include "schema/wire_precision.hpp"

#include "schema/errors.hpp"

namespace cleave {

const char* to_string(wire_precision w) {
  return w == wire_precision::bf16 ? "bf16" : "fp32";
}

caf::expected<wire_precision> parse_wire_precision(std::string_view text) {
  if (text == "fp32") return wire_precision::fp32;
  if (text == "bf16") return wire_precision::bf16;
  return fail("--wire must be fp32 or bf16, not '" + std::string(text) + "'");
}

}  // namespace cleave
