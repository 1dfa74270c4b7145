#pragma once
// Tile tasks and results as frames of the device edge (edge_codec.hpp): fixed
// little-endian fields followed by the float payloads, so a 4 MiB operand
// crosses the wire as one memcpy instead of CAF's element-wise serialisation.
// Decoding checks every length against the frame before touching a byte.

#include <cstddef>
#include <cstdint>

#include <caf/expected.hpp>

#include "schema/messages.hpp"

namespace cleave {

size_t encoded_size(const tile_task& t);
void encode(const tile_task& t, char* out);
caf::expected<tile_task> decode_task(const char* data, size_t size);

size_t encoded_size(const tile_result& r);
void encode(const tile_result& r, char* out);
caf::expected<tile_result> decode_result(const char* data, size_t size);

size_t encoded_size(const tile_miss& m);
void encode(const tile_miss& m, char* out);
caf::expected<tile_miss> decode_miss(const char* data, size_t size);

}  // namespace cleave
