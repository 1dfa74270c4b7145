#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "kernels/ops.hpp"

namespace cleave {

namespace {

void check_ids(const std::vector<int32_t>& ids, int64_t vocab, const char* what) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      throw std::out_of_range(std::string(what) + ": token id " + std::to_string(ids[i]) +
                              " at position " + std::to_string(i) + " is outside [0, " +
                              std::to_string(vocab) + ")");
}

}  // namespace

template <class T>
void embedding_forward(const std::vector<int32_t>& ids, const basic_tensor<T>& table,
                       basic_tensor<T>& y) {
  const int64_t n = static_cast<int64_t>(ids.size()), d = table.cols();
  check_ids(ids, table.rows(), "embedding_forward");
  y.resize(n, d);
  const T* tp = table.data();
  T* yp = y.data();
  const int nt = compute_threads();
#pragma omp parallel for num_threads(nt) schedule(static) if (n * d > (1 << 16))
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(yp + i * d, tp + static_cast<int64_t>(ids[i]) * d, sizeof(T) * d);
}

template <class T>
void embedding_backward(const std::vector<int32_t>& ids, const basic_tensor<T>& dy,
                        basic_tensor<T>& dtable) {
  const int64_t n = static_cast<int64_t>(ids.size()), d = dy.cols();
  if (dy.rows() != n) throw std::invalid_argument("embedding_backward: dy rows != ids size");
  if (dtable.cols() != d)
    throw std::invalid_argument("embedding_backward: dtable columns != dy columns");
  check_ids(ids, dtable.rows(), "embedding_backward");
  const T* gp = dy.data();
  T* tp = dtable.data();
  // Column blocks: each thread owns a slice of every table row, and visits
  // the tokens in order, so repeated ids accumulate without races and in a
  // fixed order.
  constexpr int64_t blk = 64;
  const int64_t nblk = (d + blk - 1) / blk;
  const int nt = compute_threads();
#pragma omp parallel for num_threads(nt) schedule(static) if (n * d > (1 << 15) && nblk > 1)
  for (int64_t ib = 0; ib < nblk; ++ib) {
    const int64_t c0 = ib * blk;
    const int64_t w = std::min(blk, d - c0);
    for (int64_t i = 0; i < n; ++i) {
      T* dst = tp + static_cast<int64_t>(ids[i]) * d + c0;
      const T* src = gp + i * d + c0;
#pragma omp simd
      for (int64_t c = 0; c < w; ++c) dst[c] += src[c];
    }
  }
}

#define CLEAVE_INST(T)                                                                     \
  template void embedding_forward<T>(const std::vector<int32_t>&, const basic_tensor<T>&,  \
                                     basic_tensor<T>&);                                    \
  template void embedding_backward<T>(const std::vector<int32_t>&, const basic_tensor<T>&, \
                                      basic_tensor<T>&);
CLEAVE_INST(float)
CLEAVE_INST(double)
#undef CLEAVE_INST

}  // namespace cleave
