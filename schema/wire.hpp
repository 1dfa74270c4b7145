#pragma once
// One field list per frame. A frame's struct is described once, as the
// ordered list of its wire fields,
//
//   template <class M, class Io>
//   wire::fields_of<M, tile_miss> wire_fields(M& m, Io& io) {
//     return io(m.key, m.device, m.operand_key);
//   }
//
// and two walkers read that one list: wire::writer (the bytes, or, writing
// nowhere, their count) and wire::reader (the checks, then the value).
// M is the struct or its const, so the same list serves both ways.
//
// Why our own table and not Cap'n Proto (which the checkpoint file uses):
// the frames' layout is fixed little-endian fields packed back to back, and
// it must stay byte for byte what devices and shard processes already speak;
// Cap'n Proto's layout (a segment table, 8-byte words, pointers) is another
// one, and its reader's traversal limits are not the per-field caps and
// exact-length checks these decoders make before they size anything.
//
// Field kinds:
//   integers, floats, enums  fixed width, as they lie in memory (little-endian)
//   bool                     one byte, 0 or 1; any other byte is invalid()
//   text(s, cap)             a u16 length, then the bytes; cut to cap on the
//                            way out, refused over cap on the way in
//   list<N>(v, cap)          a count of type N, then the items; a count over
//                            cap, or over what the bytes left can hold at the
//                            items' smallest size, is refused before the
//                            vector is sized
//   texts<N>(v, cap, text_cap)  a count, then texts; both cut or refused as text's
//   list<N>(v, cap, as)      the same, each item's fields being as(item)
//   each(v, as)              as(item) for every item of v, no count
//   counted(v, count)        v's items, count() of them (a count read before)
//   group(fields...)         several fields as one (what `as` returns)
//   tail(present, fields...)  fields a later version appended (see tail_field)
//   a struct with wire_fields  its fields, in place
//   a custom_field           its own put() and get(), for what a
//                            table cannot say (a shape checked before its floats)
//
// Reading stops at the first field that does not fit the bytes left; why()
// says which. Values out of range that do not stop the reading (a bool byte
// of 2) are reported by invalid() once the list is read, so a frame that is
// both truncated and wrong is called truncated, as before.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <caf/expected.hpp>

#include "schema/byte_io.hpp"
#include "schema/errors.hpp"

namespace cleave::wire {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "frames copy fields as they lie in memory");

// The return type of T's field list, for M = T and M = const T.
template <class M, class T>
using fields_of = std::enable_if_t<std::is_same_v<std::remove_const_t<M>, T>, bool>;

// The same for any X of a template's Tmpl<X> (a wire-side view of a
// message that holds the message's tensors by reference).
template <class T, template <class> class Tmpl>
inline constexpr bool is_instance = false;
template <class X, template <class> class Tmpl>
inline constexpr bool is_instance<Tmpl<X>, Tmpl> = true;
template <class M, template <class> class Tmpl>
using fields_of_any = std::enable_if_t<is_instance<std::remove_const_t<M>, Tmpl>, bool>;

template <class T>
inline constexpr bool is_fixed = std::is_arithmetic_v<T> || std::is_enum_v<T>;

// A field with its own put(writer&) and get(reader&).
struct custom_field {};
template <class T>
inline constexpr bool is_custom = std::is_base_of_v<custom_field, T>;

template <class S>
struct text_field {
  S& s;
  size_t cap;  // at most what a u16 length can say
  size_t cut() const { return std::min({s.size(), cap, size_t{UINT16_MAX}}); }
};
template <class S>
text_field<S> text(S& s, size_t cap) { return {s, cap}; }

// The most bytes a text of at most `cap` bytes takes.
inline constexpr size_t max_text_bytes(size_t cap) { return sizeof(uint16_t) + cap; }

// A count of type N, then that many texts: cut to cap texts of text_cap
// bytes on the way out, refused over either on the way in.
template <class N, class V>
struct texts_field {
  V& v;
  size_t cap;
  size_t text_cap;
  size_t count() const { return std::min(v.size(), cap); }
};
template <class N, class V>
texts_field<N, V> texts(V& v, size_t cap, size_t text_cap) { return {v, cap, text_cap}; }

// An item as itself: described by its own wire_fields.
struct itself {
  template <class T>
  T& operator()(T& x) const { return x; }
};

template <class N, class V, class As>
struct list_field {
  V& v;
  size_t cap;
  As as;  // an item's fields: as(item)
};
// A vector of numbers (not bools) travels as one block.
template <class V, class As>
inline constexpr bool is_bulk = std::is_same_v<As, itself> && is_fixed<typename V::value_type>
                                && !std::is_same_v<typename V::value_type, bool>;

template <class N, class V, class As = itself>
list_field<N, V, As> list(V& v, size_t cap, As as = {}) { return {v, cap, as}; }

// as(item) for each item of v, without a count: v was sized by a list before.
template <class V, class As>
struct each_field {
  V& v;
  As as;
};
template <class V, class As>
each_field<V, As> each(V& v, As as) { return {v, as}; }

// A vector whose count the frame gave before it (count(), of what was read
// so far), with no count of its own; within the bytes left before it is sized.
template <class V, class Count>
struct counted_field {
  V& v;
  Count count;
};
template <class V, class Count>
counted_field<V, Count> counted(V& v, Count count) { return {v, count}; }

class writer {
 public:
  // out == nullptr: a writer that only counts, which is how a frame is sized.
  explicit writer(char* out) : w_(out) {}
  // A writer that gathers: large() bytes stay where they are and become
  // parts of their own between the runs of the other bytes, which go to
  // `out` (sized for those alone); finish() adds the last run.
  writer(char* out, std::vector<std::string_view>& parts) : w_(out), parts_(&parts), run_(out) {}
  template <class... F>
  bool operator()(const F&... f) {
    (put(f), ...);
    return true;
  }
  // For custom fields: the bytes they put as they are.
  byte_writer& bytes() { return w_; }
  size_t written() const { return w_.written(); }
  // For custom fields: bytes a gathering writer need not copy (a tensor's floats).
  void large(const void* data, size_t n) {
    if (parts_ == nullptr) return w_.raw(data, n);
    finish();
    parts_->emplace_back(static_cast<const char*>(data), n);
  }
  void finish() {
    if (parts_ == nullptr) return;
    parts_->emplace_back(run_, static_cast<size_t>(w_.position() - run_));
    run_ = w_.position();
  }

 private:
  template <class T>
  void put(const T& x) {
    if constexpr (std::is_same_v<T, bool>) w_.put(static_cast<uint8_t>(x ? 1 : 0));
    else if constexpr (is_fixed<T>) w_.put(x);
    else if constexpr (is_custom<T>) x.put(*this);
    else wire_fields(x, *this);
  }
  template <class S>
  void put(const text_field<S>& t) {
    w_.put(static_cast<uint16_t>(t.cut()));
    w_.raw(t.s.data(), t.cut());
  }
  template <class N, class V, class As>
  void put(const list_field<N, V, As>& l) {
    w_.put(static_cast<N>(l.v.size()));
    put_items(l.v, l.as);
  }
  template <class V, class As>
  void put(const each_field<V, As>& l) { put_items(l.v, l.as); }
  template <class V, class Count>
  void put(const counted_field<V, Count>& l) { put_items(l.v, itself{}); }
  template <class V, class As>
  void put_items(const V& v, const As& as) {
    if constexpr (is_bulk<V, As>) w_.raw(v.data(), v.size() * sizeof(typename V::value_type));
    else for (const auto& item : v) put(as(item));
  }
  template <class N, class V>
  void put(const texts_field<N, V>& l) {
    w_.put(static_cast<N>(l.count()));
    for (size_t i = 0; i < l.count(); ++i) put(text(l.v[i], l.text_cap));
  }

  byte_writer w_;
  std::vector<std::string_view>* parts_ = nullptr;
  const char* run_ = nullptr;
};

class reader {
 public:
  reader(const char* data, size_t size) : r_(data, size) {}
  template <class... F>
  bool operator()(F&&... f) {
    return (get(f) && ...);
  }
  size_t left() const { return r_.left(); }
  // Why the reading stopped.
  const std::string& why() const { return why_; }
  // The first value read that is out of its range, or nullptr.
  const char* invalid() const { return invalid_; }
  // For custom fields: stop the reading, saying why.
  bool fail(std::string why) {
    why_ = std::move(why);
    return false;
  }
  // For custom fields: a value out of its range; the reading goes on.
  void mark_invalid(const char* what) {
    if (invalid_ == nullptr) invalid_ = what;
  }
  byte_reader& bytes() { return r_; }

 private:
  template <class T>
  bool get(T& x) {
    if constexpr (std::is_same_v<T, bool>) {
      uint8_t b = 0;
      if (!r_.get(b)) return fail("truncated");
      if (b > 1) mark_invalid("a flag that is not 0 or 1");
      x = b == 1;
      return true;
    } else if constexpr (is_fixed<T>) {
      return r_.get(x) || fail("truncated");
    } else if constexpr (is_custom<T>) {
      return x.get(*this);
    } else {
      return wire_fields(x, *this);
    }
  }
  template <class S>
  bool get(text_field<S>& t) {
    return r_.text(t.s, t.cap) || fail("truncated, or a text over its cap of " + std::to_string(t.cap) + " bytes");
  }
  template <class N, class V, class As>
  bool get(list_field<N, V, As>& l) {
    N n = 0;
    if (!r_.get(n)) return fail("truncated count");
    if (n > l.cap) return fail("count " + std::to_string(n) + " exceeds the cap or the frame");
    return get_items(l.v, l.as, n);
  }
  template <class V, class As>
  bool get(each_field<V, As>& l) { return get_each(l.v, l.as); }
  template <class V, class Count>
  bool get(counted_field<V, Count>& l) { return get_items(l.v, itself{}, l.count()); }
  // n items into v: within the bytes left (at the items' smallest size) before v is sized.
  template <class V, class As>
  bool get_items(V& v, const As& as, uint64_t n) {
    typename V::value_type empty{};
    if (n > r_.left() / std::max<size_t>(size_of_one(as(empty)), 1))
      return fail("count " + std::to_string(n) + " exceeds the cap or the frame");
    v.resize(n);
    if constexpr (is_bulk<V, As>) return r_.raw(v.data(), n * sizeof(typename V::value_type));
    else return get_each(v, as);
  }
  template <class V, class As>
  bool get_each(V& v, const As& as) {
    for (auto& item : v) {
      auto&& f = as(item);
      if (!get(f)) return false;
    }
    return true;
  }
  template <class T>
  static size_t size_of_one(const T& x) {
    writer counter(nullptr);
    counter(x);
    return counter.written();
  }
  template <class N, class V>
  bool get(texts_field<N, V>& l) {
    N n = 0;
    if (!r_.get(n)) return fail("truncated count");
    if (n > l.cap || n > r_.left() / sizeof(uint16_t))
      return fail("count " + std::to_string(n) + " exceeds the cap or the frame");
    l.v.resize(n);
    for (auto& item : l.v) {
      auto t = text(item, l.text_cap);
      if (!get(t)) return false;
    }
    return true;
  }

  byte_reader r_;
  std::string why_;
  const char* invalid_ = nullptr;
};

template <class... F>
size_t size_of(const F&... fields) {
  writer counter(nullptr);
  counter(fields...);
  return counter.written();
}

// Writes `fields` to out, which holds size_of(fields...) bytes.
template <class... F>
void write(char* out, const F&... fields) {
  writer w(out);
  w(fields...);
}

// The frame of `fields`, sized and written from the one list.
template <class... F>
std::vector<char> encode(const F&... fields) {
  std::vector<char> out(size_of(fields...));
  write(out.data(), fields...);
  return out;
}

// Several fields as one, for a list's items described other than by their
// own wire_fields (list(v, cap, as) with as returning a group).
template <class... F>
struct group_field : custom_field {
  std::tuple<F...> fields;
  explicit group_field(F&&... f) : fields(std::forward<F>(f)...) {}
  void put(writer& w) const { std::apply([&](const auto&... f) { w(f...); }, fields); }
  bool get(reader& r) { return std::apply([&](auto&... f) { return r(f...); }, fields); }
};
template <class... F>
group_field<F...> group(F&&... fields) { return group_field<F...>(std::forward<F>(fields)...); }

// Fields at a frame's end that not every frame has: written when present()
// says so, read when bytes are left, and then present() must hold of what
// was read (a tail that says nothing is not a frame the writer makes).
// present is a function of the value, or flag(b): a bool the tail's
// presence sets when reading.
template <class B>
struct flag_field {
  B& b;  // bool, or const bool when writing
  bool operator()() const { return b; }
};
template <class B>
flag_field<B> flag(B& b) { return {b}; }
template <class P>
inline constexpr bool is_flag = false;
template <class B>
inline constexpr bool is_flag<flag_field<B>> = true;

template <class Present, class... F>
struct tail_field : custom_field {
  Present present;
  std::tuple<F...> fields;
  tail_field(Present p, F&&... f) : present(p), fields(std::forward<F>(f)...) {}
  void put(writer& w) const {
    if (present()) std::apply([&](const auto&... f) { w(f...); }, fields);
  }
  bool get(reader& r) {
    const bool there = r.left() > 0;
    if constexpr (is_flag<Present>) present.b = there;
    if (!there) return true;
    if (!std::apply([&](auto&... f) { return r(f...); }, fields)) return false;
    return present() || r.fail("an empty tail");
  }
};
template <class Present, class... F>
tail_field<Present, F...> tail(Present present, F&&... fields) {
  return tail_field<Present, F...>(present, std::forward<F>(fields)...);
}

// T read from the whole frame, or why not: "<what>: <the reason>". A value
// out of its range, or bytes after the last field, make it malformed.
template <class T>
caf::expected<T> read_whole(const char* data, size_t size, const std::string& what) {
  reader r(data, size);
  T x;
  if (!r(x)) return fail(what + ": " + r.why());
  if (r.invalid() != nullptr) return fail(what + ": " + r.invalid());
  if (r.left() != 0) return fail(what + ": " + std::to_string(r.left()) + " trailing bytes");
  return x;
}

// Reads `fields` from exactly `size` bytes: false when they do not fit, a
// flag is not 0 or 1, or bytes are left over.
template <class... F>
bool decode_exact(const char* data, size_t size, F&&... fields) {
  reader r(data, size);
  return r(fields...) && r.invalid() == nullptr && r.left() == 0;
}

}  // namespace cleave::wire
