#pragma once
// The content key of a block of floats: what the PS and a device both name an
// operand by, so a block sent for the forward pass is found again in the
// device's cache by the backward pass (actors/device/block_cache.hpp), and the
// simulator's operand cache counts the same hits.

#include <cstdint>

namespace cleave {

// 64-bit content key of a rows x cols block (row stride ld) of floats. With
// copy_to, the block is also copied there (row stride copy_ld) in the same
// pass over memory.
uint64_t block_key(const float* data, int64_t rows, int64_t cols, int64_t ld,
                   float* copy_to = nullptr, int64_t copy_ld = 0);

}  // namespace cleave
