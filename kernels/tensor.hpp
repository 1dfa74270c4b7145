#pragma once
// Row-major dense matrices. Every activation, weight and gradient in Cleave is
// a 2-D row-major matrix; higher-rank data (batch x time x features) is folded
// into rows, which is also the layout the sub-GEMM tiler cuts.

#include <algorithm>
#include <cstdint>
#include <vector>

#include <Eigen/Core>

namespace cleave {

template <class T>
using row_matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// A read-only window into row-major storage with a leading dimension, so that
// a head's columns inside a [tokens, d_model] matrix can be used in place.
template <class T>
struct const_view {
  const T* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;  // elements between the starts of two consecutive rows

  auto map() const {
    using stride = Eigen::OuterStride<>;
    return Eigen::Map<const row_matrix<T>, 0, stride>(data, rows, cols, stride(ld));
  }
};

template <class T>
struct mut_view {
  T* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 0;

  auto map() const {
    using stride = Eigen::OuterStride<>;
    return Eigen::Map<row_matrix<T>, 0, stride>(data, rows, cols, stride(ld));
  }
  operator const_view<T>() const { return {data, rows, cols, ld}; }
};

template <class T>
class basic_tensor {
 public:
  basic_tensor() = default;
  basic_tensor(int64_t rows, int64_t cols)
      : rows_(rows), cols_(cols), data_(static_cast<size_t>(rows * cols), T(0)) {}

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t size() const { return rows_ * cols_; }
  bool empty() const { return data_.empty(); }

  T* data() { return data_.data(); }
  const T* data() const { return data_.data(); }
  T& operator[](int64_t i) { return data_[static_cast<size_t>(i)]; }
  const T& operator[](int64_t i) const { return data_[static_cast<size_t>(i)]; }
  T& at(int64_t r, int64_t c) { return data_[static_cast<size_t>(r * cols_ + c)]; }
  const T& at(int64_t r, int64_t c) const { return data_[static_cast<size_t>(r * cols_ + c)]; }

  // Reshapes and zero-fills only when the shape changes; callers that rely on
  // zeros must call zero() themselves.
  void resize(int64_t rows, int64_t cols) {
    if (rows == rows_ && cols == cols_) return;
    rows_ = rows;
    cols_ = cols;
    data_.assign(static_cast<size_t>(rows * cols), T(0));
  }
  void zero() { std::fill(data_.begin(), data_.end(), T(0)); }

  const_view<T> view() const { return {data_.data(), rows_, cols_, cols_}; }
  mut_view<T> view() { return {data_.data(), rows_, cols_, cols_}; }
  // Columns [c0, c0 + n) of every row.
  const_view<T> cols_view(int64_t c0, int64_t n) const { return {data_.data() + c0, rows_, n, cols_}; }
  mut_view<T> cols_view(int64_t c0, int64_t n) { return {data_.data() + c0, rows_, n, cols_}; }
  // Rows [r0, r0 + n).
  const_view<T> rows_view(int64_t r0, int64_t n) const { return {data_.data() + r0 * cols_, n, cols_, cols_}; }
  mut_view<T> rows_view(int64_t r0, int64_t n) { return {data_.data() + r0 * cols_, n, cols_, cols_}; }

  auto map() { return view().map(); }
  auto map() const { return view().map(); }

  std::vector<T>& storage() { return data_; }
  const std::vector<T>& storage() const { return data_; }

 private:
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  std::vector<T> data_;
};

using tensor = basic_tensor<float>;

}  // namespace cleave
