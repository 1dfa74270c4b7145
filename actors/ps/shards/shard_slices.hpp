#pragma once
// How --ps-shards=S cuts the model: every parameter is split into S
// contiguous ranges, by output columns, or by rows for the second matrix of
// a Megatron pair (whose rows are the first matrix's columns). Pure copies
// between a full tensor and a shard's own contiguous slice; no actor here.

#include <cstdint>
#include <vector>

#include "kernels/tensor.hpp"
#include "training/models/parameter.hpp"

namespace cleave {

struct index_range {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// n split into s contiguous ranges whose sizes differ by at most one (the
// first n % s get the extra); some are empty when n < s.
std::vector<index_range> split_evenly(int64_t n, int s);

struct shard_slice {
  shard_axis axis = shard_axis::columns;
  index_range range;
};

// The window of `full` a slice covers (a strided view for columns).
const_view<float> window(const tensor& full, const shard_slice& s);
mut_view<float> window(tensor& full, const shard_slice& s);

// part <- the slice of full (part is shaped to fit).
void copy_out(const tensor& full, const shard_slice& s, tensor& part);
// the slice of full <- part.
void copy_in(const tensor& part, const shard_slice& s, tensor& full);
// part <- the slice of a moment, or zeros shaped as value_part when the
// coordinator holds no whole moment (it starts at zero, or lives in the shards).
void moment_out(const tensor& full, const shard_slice& s, const tensor& value_part, tensor& part);
// part += the slice of full.
void add_out(const tensor& full, const shard_slice& s, tensor& part);

}  // namespace cleave
