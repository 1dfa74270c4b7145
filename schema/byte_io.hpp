#pragma once
// Fixed little-endian fields in and out of a frame's payload: what the
// field lists of schema/wire.hpp are written and read with. The reader checks every length
// against what is left before it sizes anything: a frame's bytes come from a
// socket.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <string>
#include <vector>

namespace cleave {

static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE-754 floats");

class byte_writer {
 public:
  // out == nullptr: a writer that only counts what it would write.
  explicit byte_writer(char* out) : p_(out) {}
  template <class T>
  void put(T v) {
    raw(&v, sizeof(T));
  }
  void raw(const void* src, size_t n) {
    if (p_ != nullptr && n > 0) std::memcpy(p_ + n_, src, n);
    n_ += n;
  }
  void floats(const std::vector<float>& v) { raw(v.data(), v.size() * sizeof(float)); }
  // A u16 length, then the bytes (callers keep strings under their caps).
  void text(const std::string& s) {
    put(static_cast<uint16_t>(s.size()));
    raw(s.data(), s.size());
  }
  char* position() { return p_ == nullptr ? nullptr : p_ + n_; }
  size_t written() const { return n_; }

 private:
  char* p_;
  size_t n_ = 0;
};

// Floats stored at any alignment, read through memcpy: what a vector is
// built from in one pass (resize then copy would zero it first, a second
// pass over every result a PS takes in).
class unaligned_floats {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = float;
  using difference_type = std::ptrdiff_t;
  using pointer = const float*;
  using reference = float;
  explicit unaligned_floats(const char* p) : p_(p) {}
  float operator*() const {
    float f;
    std::memcpy(&f, p_, sizeof(f));
    return f;
  }
  float operator[](difference_type i) const { return *(*this + i); }
  unaligned_floats& operator++() { p_ += sizeof(float); return *this; }
  unaligned_floats operator++(int) { auto old = *this; ++*this; return old; }
  unaligned_floats& operator--() { p_ -= sizeof(float); return *this; }
  unaligned_floats operator--(int) { auto old = *this; --*this; return old; }
  unaligned_floats& operator+=(difference_type n) { p_ += n * static_cast<difference_type>(sizeof(float)); return *this; }
  unaligned_floats& operator-=(difference_type n) { return *this += -n; }
  friend unaligned_floats operator+(unaligned_floats a, difference_type n) { return a += n; }
  friend unaligned_floats operator+(difference_type n, unaligned_floats a) { return a += n; }
  friend unaligned_floats operator-(unaligned_floats a, difference_type n) { return a -= n; }
  friend difference_type operator-(const unaligned_floats& a, const unaligned_floats& b) {
    return (a.p_ - b.p_) / static_cast<difference_type>(sizeof(float));
  }
  friend bool operator==(const unaligned_floats& a, const unaligned_floats& b) { return a.p_ == b.p_; }
  friend bool operator!=(const unaligned_floats& a, const unaligned_floats& b) { return a.p_ != b.p_; }
  friend bool operator<(const unaligned_floats& a, const unaligned_floats& b) { return a.p_ < b.p_; }
  friend bool operator>(const unaligned_floats& a, const unaligned_floats& b) { return a.p_ > b.p_; }
  friend bool operator<=(const unaligned_floats& a, const unaligned_floats& b) { return a.p_ <= b.p_; }
  friend bool operator>=(const unaligned_floats& a, const unaligned_floats& b) { return a.p_ >= b.p_; }

 private:
  const char* p_;
};

class byte_reader {
 public:
  byte_reader(const char* data, size_t size) : p_(data), left_(size) {}
  template <class T>
  bool get(T& v) {
    if (left_ < sizeof(T)) return false;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    left_ -= sizeof(T);
    return true;
  }
  bool floats(std::vector<float>& v, int64_t n) {
    if (n < 0 || static_cast<uint64_t>(n) > left_ / sizeof(float)) return false;
    v.assign(unaligned_floats(p_), unaligned_floats(p_) + n);
    p_ += n * sizeof(float);
    left_ -= static_cast<size_t>(n) * sizeof(float);
    return true;
  }
  // n bytes straight into dst (sized by the caller after checking left()).
  bool raw(void* dst, size_t n) {
    if (n > left_) return false;
    if (n > 0) std::memcpy(dst, p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  // A u16 length of at most max_bytes, then the bytes.
  bool text(std::string& s, size_t max_bytes) {
    uint16_t n = 0;
    if (!get(n) || n > max_bytes || n > left_) return false;
    s.assign(p_, n);
    p_ += n;
    left_ -= n;
    return true;
  }
  // Passes over n bytes the caller takes from position().
  bool skip(size_t n) {
    if (n > left_) return false;
    p_ += n;
    left_ -= n;
    return true;
  }
  const char* position() const { return p_; }
  size_t left() const { return left_; }

 private:
  const char* p_;
  size_t left_;
};

}  // namespace cleave
