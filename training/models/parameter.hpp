#pragma once
// A trained parameter: its value, gradient and AdamW moments side by side,
// and how the PS shards may cut it.

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tensor.hpp"

namespace cleave {

// How --ps-shards cuts a parameter: by output columns, or by rows for the
// second matrix of a Megatron pair (its rows are the first matrix's columns).
enum class shard_axis : uint8_t { columns = 0, rows = 1 };

struct parameter {
  std::string name;
  int32_t id = -1;  // its index in registration order: gemm_tag::weight names it
  tensor value;
  tensor grad;
  tensor adam_m;
  tensor adam_v;
  bool decay = false;  // AdamW weight decay applies to matrices, not biases or norms
  shard_axis shard_split = shard_axis::columns;
  // Only products with its id read it and make its gradient (a linear
  // layer's matrix): with PS shards the coordinator keeps no gradient of it.
  bool product_weight = false;
  // Sparse mode: a step's gradient is zero outside `touched_rows` (listed
  // by the model as it adds into them, ascending and distinct), so the store
  // zeroes, sums and updates those rows alone and the step costs what it
  // touched. false: the whole tensor, every step.
  bool row_sparse = false;
  std::vector<int32_t> touched_rows;
  // The update zeroed touched_rows' gradients as it went (the next
  // zero_grads only forgets the list).
  bool touched_grads_zeroed = false;
};

}  // namespace cleave
