#pragma once
// One attention tile: a layer's causal attention for a run of (sample, head)
// pairs [pair0, pair1), pair = sample * heads + head, computed whole in one
// place, as a device computes the tiles `plan_attention`
// (actors/planner/attention_plan.hpp) places. Forward returns each row's
// output and the log of its softmax sum (lse); backward returns dQ, dK and
// dV, recomputing the scores from Q, K and lse as FlashAttention does, so
// nothing of size seq x seq crosses a link. The layout is attention.cpp's:
// qkv [batch*seq, 3d] with Q, K, V in column blocks, head h in columns
// [h*dh, (h+1)*dh) of each; out and dout [batch*seq, d]. Pure math.

#include <cstdint>

namespace cleave {

struct attention_tile_shape {
  int64_t batch = 0, seq = 0, heads = 0, d = 0;  // d: the model width, dh = d / heads
  int64_t dh() const { return d / heads; }
  int64_t pairs() const { return batch * heads; }
  // Whether the shape is whole and [pair0, pair1) lies within it.
  bool valid(int64_t pair0, int64_t pair1) const {
    return batch > 0 && seq > 0 && heads > 0 && d > 0 && d % heads == 0 && 0 <= pair0 &&
           pair0 < pair1 && pair1 <= pairs();
  }
};

// out's rows and columns of the tile's pairs; lse[(pair - pair0) * seq + i]
// for row i of each pair. qkv's row stride is 3d, out's d.
template <class T>
void attention_tile_forward(const T* qkv, const attention_tile_shape& s, int64_t pair0,
                            int64_t pair1, T* out, T* lse);

// dqkv's rows and columns of the tile's pairs (each pair owns its own
// columns of Q, K and V: tiles never write the same element). out and lse
// are the forward's; dout the gradient of out.
template <class T>
void attention_tile_backward(const T* qkv, const T* out, const T* lse, const T* dout,
                             const attention_tile_shape& s, int64_t pair0, int64_t pair1,
                             T* dqkv);

}  // namespace cleave
