#pragma once
// tensor <-> Tensor (schema/tensor.capnp).

#include <caf/expected.hpp>

#include "kernels/tensor.hpp"
#include "schema/tensor.capnp.h"

namespace cleave {

// Below Cap'n Proto's 2^29-byte Data limit, and small enough that one chunk
// never dominates a reader's memory.
inline constexpr size_t max_chunk_bytes = size_t{64} << 20;

// Largest tensor a reader accepts (elements); checked before allocating.
inline constexpr uint64_t max_tensor_elements = uint64_t{1} << 32;

void encode_tensor(const tensor& t, Tensor::Builder out);

// Refuses shapes past max_tensor_elements and chunk lengths that do not add
// up to rows * cols * 4 bytes; `what` names the tensor in the error.
caf::expected<tensor> decode_tensor(Tensor::Reader in, const std::string& what);

}  // namespace cleave
