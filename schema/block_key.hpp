#pragma once
// The content key of a block of floats: what the PS and a device both name an
// operand by, so a block sent for the forward pass is found again in the
// device's cache by the backward pass (actors/device/block_cache.hpp), and the
// simulator's operand cache counts the same hits.

#include <cstdint>

#include "schema/wire_precision.hpp"

namespace cleave {

// 64-bit content key of a rows x cols block (row stride ld) of floats. With
// copy_to, the block is also copied there (row stride copy_ld) in the same
// pass over memory.
uint64_t block_key(const float* data, int64_t rows, int64_t cols, int64_t ld,
                   float* copy_to = nullptr, int64_t copy_ld = 0);

// The key a block's values go by on a link of precision `w` (keyed from the
// values as sent: bf16 ones, rounded): fp32's is the key itself; bf16's is
// mixed with the precision, so a bf16 block and an fp32 one never share a
// key in a device's cache, even when rounding left the values unchanged.
uint64_t wire_block_key(uint64_t key, wire_precision w);

}  // namespace cleave
