// PS shard frames (schema/shard_codec.hpp) and a shard process's service
// (actors/ps/shards/shard_service.hpp): each message round-trips (strided windows
// included); every truncation and every lying count or shape is an error,
// never a crash or a large allocation; the service refuses requests out of
// order or that do not fit its slices, and computes the products the
// in-process shard would, bit for bit.

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "actors/ps/shards/ps_shard.hpp"
#include "actors/ps/shards/shard_service.hpp"
#include "kernels/random.hpp"
#include "schema/byte_io.hpp"
#include "schema/errors.hpp"
#include "schema/shard_codec.hpp"
#include "tests/test_util.hpp"

using namespace cleave;
using cleave::testing::random_tensor;

namespace {

bool same(const tensor& a, const tensor& b) {
  return a.rows() == b.rows() && a.cols() == b.cols()
         && (a.size() == 0 || std::memcmp(a.data(), b.data(), static_cast<size_t>(a.size()) * 4) == 0);
}

// Parameter 0: 6x10 split by columns [3, 8); parameter 1: 10x4 split by rows [0, 5).
std::vector<shard_attach_entry> two_slices() {
  std::vector<shard_attach_entry> out(2);
  out[0] = {0, true, 6, 10, 3, 8, random_tensor(6, 5, 1), random_tensor(6, 5, 2), random_tensor(6, 5, 3)};
  out[1] = {1, false, 10, 4, 0, 5, random_tensor(5, 4, 4), random_tensor(5, 4, 5), random_tensor(5, 4, 6)};
  for (auto& e : out) e.adam_v.map() = e.adam_v.map().cwiseAbs();
  return out;
}

// Every proper prefix of a valid frame is refused by its decoder.
template <class Decode>
void every_truncation_fails(const std::vector<char>& frame, Decode decode) {
  for (size_t n = 0; n < frame.size(); ++n) EXPECT_FALSE(decode(frame.data(), n)) << "prefix of " << n << " bytes";
}

TEST(shard_codec, attach_round_trips_and_every_truncation_fails) {
  const auto entries = two_slices();
  const auto frame = encode_shard_attach(entries);
  auto back = decode_shard_attach(frame.data(), frame.size());
  ASSERT_TRUE(back) << describe(back.error());
  ASSERT_EQ(back->size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const auto &a = entries[i], &b = (*back)[i];
    EXPECT_EQ(a.axis, b.axis);
    EXPECT_EQ(a.decay, b.decay);
    EXPECT_EQ(a.begin, b.begin);
    EXPECT_EQ(a.end, b.end);
    EXPECT_TRUE(same(a.value, b.value) && same(a.adam_m, b.adam_m) && same(a.adam_v, b.adam_v));
  }
  every_truncation_fails(frame, [](const char* d, size_t n) { return bool(decode_shard_attach(d, n)); });
}

TEST(shard_codec, attach_refuses_ranges_and_tensors_that_do_not_fit_the_parameter) {
  auto entries = two_slices();
  entries[0].end = 11;  // past the 10 columns
  auto frame = encode_shard_attach(entries);
  auto err = decode_shard_attach(frame.data(), frame.size());
  ASSERT_FALSE(err);
  EXPECT_NE(describe(err.error()).find("out of bounds"), std::string::npos) << describe(err.error());
  entries = two_slices();
  entries[1].adam_m = random_tensor(4, 4, 9);  // not the slice's 5x4
  frame = encode_shard_attach(entries);
  EXPECT_FALSE(decode_shard_attach(frame.data(), frame.size()));
}

TEST(shard_codec, products_round_trip_from_strided_windows) {
  const tensor x = random_tensor(4, 9, 10), dy = random_tensor(4, 5, 11), acc = random_tensor(4, 6, 12);
  shard_product_ref times;  // a window of x's columns [2, 8) times W
  times.kind = 0;
  times.weight = 1;
  times.trans_w = true;
  times.beta = 1.0f;
  times.a = x.cols_view(2, 6);
  times.c_in = acc.view();
  shard_product_ref grad;
  grad.kind = 1;
  grad.weight = 0;
  grad.trans_a = true;
  grad.beta = 0.0f;
  grad.a = x.view();
  grad.b = dy.view();
  const auto frame = encode_shard_products({times, grad});
  auto back = decode_shard_products(frame.data(), frame.size());
  ASSERT_TRUE(back) << describe(back.error());
  ASSERT_EQ(back->size(), 2u);
  const auto& t = (*back)[0];
  EXPECT_TRUE(t.trans_w && !t.trans_a && t.beta == 1.0f && t.weight == 1);
  tensor window;
  window.resize(4, 6);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 6; ++c) window.at(r, c) = x.at(r, c + 2);
  EXPECT_TRUE(same(t.a, window));
  EXPECT_TRUE(same(t.c_in, acc));
  const auto& g = (*back)[1];
  EXPECT_TRUE(g.kind == 1 && g.trans_a && same(g.a, x) && same(g.b, dy) && g.c_in.size() == 0);
  every_truncation_fails(frame, [](const char* d, size_t n) { return bool(decode_shard_products(d, n)); });
}

TEST(shard_codec, small_messages_round_trip_and_truncations_fail) {
  shard_update_msg u;
  u.cfg.lr = 3e-4;
  u.cfg.weight_decay = 0.1;
  u.t = 17;
  u.grad_scale = 0.5;
  auto frame = encode(u);
  auto back = decode_shard_update(frame.data(), frame.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->cfg.lr, 3e-4);
  EXPECT_EQ(back->cfg.weight_decay, 0.1);
  EXPECT_EQ(back->t, 17);
  EXPECT_EQ(back->grad_scale, 0.5);
  every_truncation_fails(frame, [](const char* d, size_t n) { return bool(decode_shard_update(d, n)); });

  frame = encode(shard_stats{1, 2, 3});
  auto st = decode_shard_stats(frame.data(), frame.size());
  ASSERT_TRUE(st);
  EXPECT_EQ(st->peak_rss_bytes, 1u);
  EXPECT_EQ(st->bytes_out, 3u);
  every_truncation_fails(frame, [](const char* d, size_t n) { return bool(decode_shard_stats(d, n)); });

  frame = encode_shard_double(2.25);
  EXPECT_EQ(*decode_shard_double(frame.data(), frame.size()), 2.25);
  frame = encode_shard_refusal("no parameters attached yet");
  EXPECT_EQ(*decode_shard_refusal(frame.data(), frame.size()), "no parameters attached yet");
  every_truncation_fails(frame, [](const char* d, size_t n) { return bool(decode_shard_refusal(d, n)); });

  const tensor a = random_tensor(3, 2, 7);
  frame = encode_shard_tensors({a.view(), const_view<float>{}});
  auto ts = decode_shard_tensors(frame.data(), frame.size());
  ASSERT_TRUE(ts);
  ASSERT_EQ(ts->size(), 2u);
  EXPECT_TRUE(same((*ts)[0], a));
  EXPECT_EQ((*ts)[1].size(), 0);
  every_truncation_fails(frame, [](const char* d, size_t n) { return bool(decode_shard_tensors(d, n)); });
}

TEST(shard_codec, lying_counts_and_shapes_are_refused_before_anything_is_sized) {
  // A count of 60000 tensors in a 40-byte frame.
  std::vector<char> frame(4 + 40, 'x');
  byte_writer(frame.data()).put(uint32_t{60000});
  auto r = decode_shard_tensors(frame.data(), frame.size());
  ASSERT_FALSE(r);
  EXPECT_NE(describe(r.error()).find("count 60000"), std::string::npos) << describe(r.error());
  // One tensor claiming 2^24 x 2^24 floats with 8 bytes behind it.
  frame.assign(4 + 16 + 8, 0);
  byte_writer w(frame.data());
  w.put(uint32_t{1});
  w.put(int64_t{1} << 24);
  w.put(int64_t{1} << 24);
  r = decode_shard_tensors(frame.data(), frame.size());
  ASSERT_FALSE(r);
  EXPECT_NE(describe(r.error()).find("does not fit the frame"), std::string::npos) << describe(r.error());
  // Shapes beyond the cap, and negative ones.
  for (int64_t rows : {int64_t{-1}, (int64_t{1} << 24) + 1}) {
    byte_writer w2(frame.data());
    w2.put(uint32_t{1});
    w2.put(rows);
    w2.put(int64_t{1});
    EXPECT_FALSE(decode_shard_tensors(frame.data(), frame.size())) << rows;
  }
  // A product whose operand flags do not match its kind (kind 0, beta 0, but a b operand).
  shard_product_ref p;
  p.a = const_view<float>{};
  auto products = encode_shard_products({p});
  products[4 + 1 + 4 + 1 + 4] = 1;  // the operands byte: claims b
  EXPECT_FALSE(decode_shard_products(products.data(), products.size()));
  // Trailing bytes after a valid list.
  auto tensors = encode_shard_tensors({});
  tensors.push_back(0);
  EXPECT_FALSE(decode_shard_tensors(tensors.data(), tensors.size()));
}

TEST(shard_codec, small_request_kinds_have_small_caps) {
  const uint64_t max = uint64_t{256} << 20;
  for (auto k : {shard_kind::zero_grads, shard_kind::update, shard_kind::moments, shard_kind::stats,
                 shard_kind::sum_of_squares, shard_kind::refused})
    EXPECT_EQ(shard_frame_cap(static_cast<uint16_t>(k), max), small_shard_frame_bytes);
  for (auto k : {shard_kind::attach, shard_kind::products, shard_kind::add_grads, shard_kind::tensors})
    EXPECT_EQ(shard_frame_cap(static_cast<uint16_t>(k), max), max);
  EXPECT_EQ(shard_frame_cap(0x7777, max), small_shard_frame_bytes);  // unknown kinds: small
}

std::string refusal_of(const shard_answer& a) {
  if (a.kind != shard_kind::refused) return {};
  auto why = decode_shard_refusal(a.payload.data(), a.payload.size());
  return why ? *why : "?";
}

TEST(shard_service, refuses_out_of_order_hostile_and_misfit_requests_without_throwing) {
  shard_service svc;
  EXPECT_EQ(refusal_of(svc.handle(static_cast<uint16_t>(shard_kind::zero_grads), nullptr, 0)),
            "no parameters attached yet");
  EXPECT_NE(refusal_of(svc.handle(0x7777, nullptr, 0)).find("unknown request kind"), std::string::npos);
  const std::vector<char> junk(100, '\xff');
  for (auto k : {shard_kind::attach, shard_kind::products, shard_kind::update})
    EXPECT_FALSE(refusal_of(svc.handle(static_cast<uint16_t>(k), junk.data(), junk.size())).empty());
  const auto attach = encode_shard_attach(two_slices());
  ASSERT_EQ(svc.handle(static_cast<uint16_t>(shard_kind::attach), attach.data(), attach.size()).kind,
            shard_kind::done);
  // A product naming a parameter the shard does not have, and one whose operand does not fit.
  const tensor x = random_tensor(4, 7, 1);
  shard_product_ref p;
  p.weight = 2;
  p.a = x.view();
  auto frame = encode_shard_products({p});
  EXPECT_NE(refusal_of(svc.handle(static_cast<uint16_t>(shard_kind::products), frame.data(), frame.size()))
              .find("names parameter 2 of 2"), std::string::npos);
  p.weight = 0;  // W_0 is 6x5: a 4x7 operand does not fit
  frame = encode_shard_products({p});
  EXPECT_NE(refusal_of(svc.handle(static_cast<uint16_t>(shard_kind::products), frame.data(), frame.size()))
              .find("does not fit slice 6x5"), std::string::npos);
  // Gradients for the wrong number of slices, or of the wrong shape.
  const tensor g = random_tensor(6, 5, 3);
  frame = encode_shard_tensors({g.view()});
  EXPECT_NE(refusal_of(svc.handle(static_cast<uint16_t>(shard_kind::add_grads), frame.data(), frame.size()))
              .find("1 gradients for 2 slices"), std::string::npos);
  frame = encode_shard_tensors({g.view(), g.view()});
  EXPECT_FALSE(refusal_of(svc.handle(static_cast<uint16_t>(shard_kind::add_grads), frame.data(), frame.size()))
                 .empty());
}

// A coordinator that vanished (coordinator_lost): the slices stay, but
// nothing touches them until a coordinator attaches (or restores) again, and
// a request left half in parts is dropped. `finish` is answered done.
TEST(shard_service, a_lost_coordinator_leaves_the_slices_unused_until_the_next_attach) {
  shard_service svc;
  const auto attach = encode_shard_attach(two_slices());
  ASSERT_EQ(svc.handle(static_cast<uint16_t>(shard_kind::attach), attach.data(), attach.size()).kind,
            shard_kind::done);
  ASSERT_EQ(svc.handle(static_cast<uint16_t>(shard_kind::zero_grads), nullptr, 0).kind, shard_kind::done);
  // Half a request in parts, then the coordinator is gone.
  const auto first = encode_shard_part(static_cast<uint16_t>(shard_kind::attach), attach, 0, 16);
  ASSERT_EQ(svc.handle(static_cast<uint16_t>(shard_kind::part), first.data(), first.size()).kind, shard_kind::done);
  svc.coordinator_lost();
  EXPECT_FALSE(svc.attached());
  EXPECT_EQ(svc.store().size(), 2u);  // kept
  for (auto k : {shard_kind::zero_grads, shard_kind::moments, shard_kind::checkpoint})
    EXPECT_EQ(refusal_of(svc.handle(static_cast<uint16_t>(k), nullptr, 0)), "no parameters attached yet");
  // The next coordinator's attach is whole, not the rest of the dropped parts.
  ASSERT_EQ(svc.handle(static_cast<uint16_t>(shard_kind::attach), attach.data(), attach.size()).kind,
            shard_kind::done);
  EXPECT_TRUE(svc.attached());
  EXPECT_EQ(svc.handle(static_cast<uint16_t>(shard_kind::zero_grads), nullptr, 0).kind, shard_kind::done);
  EXPECT_EQ(svc.handle(static_cast<uint16_t>(shard_kind::finish), nullptr, 0).kind, shard_kind::done);
  EXPECT_EQ(shard_frame_cap(static_cast<uint16_t>(shard_kind::finish), 1 << 30), small_shard_frame_bytes);
}

// The service's products, gradients and update against a local_shard given
// the same slices: the same bits (a shard process and a shard thread agree).
TEST(shard_service, computes_what_the_in_process_shard_computes) {
  const auto entries = two_slices();
  shard_service svc;
  const auto attach = encode_shard_attach(entries);
  ASSERT_EQ(svc.handle(static_cast<uint16_t>(shard_kind::attach), attach.data(), attach.size()).kind,
            shard_kind::done);
  // The same slices in a local_shard, through whole parameters.
  std::vector<parameter> params(2);
  for (size_t i = 0; i < 2; ++i) {
    auto& p = params[i];
    const auto& e = entries[i];
    p.shard_split = static_cast<shard_axis>(e.axis);
    p.decay = e.decay;
    for (tensor* t : {&p.value, &p.grad, &p.adam_m, &p.adam_v}) t->resize(e.full_rows, e.full_cols);
    const shard_slice where{p.shard_split, {e.begin, e.end}};
    copy_in(e.value, where, p.value);
    copy_in(e.adam_m, where, p.adam_m);
    copy_in(e.adam_v, where, p.adam_v);
  }
  std::vector<parameter*> ptrs{&params[0], &params[1]};
  local_shard local(default_gemm_engine<float>());
  ASSERT_FALSE(local.attach(ptrs, {{shard_axis::columns, {3, 8}}, {shard_axis::rows, {0, 5}}}));

  // y = x W_0 (x: 30x6), with an accumulator (beta 1); dW_1 = x1^T dy (x1: 30x5, dy: 30x4).
  const tensor x = random_tensor(30, 6, 20), acc = random_tensor(30, 5, 21);
  const tensor x1 = random_tensor(30, 5, 22), dy = random_tensor(30, 4, 23);
  tensor y_local = acc;
  slice_product times;
  times.tag.weight = 0;
  times.a = x.view();
  times.out = y_local.view();
  times.beta = 1.0f;
  slice_product grad;
  grad.kind = slice_product::kind_t::into_grad;
  grad.tag.weight = 1;
  grad.a = x1.view();
  grad.trans_a = true;
  grad.b = dy.view();
  ASSERT_FALSE(local.run({times, grad}, {}));

  shard_product_ref t{0, 0, false, false, false, 1.0f, x.view(), {}, acc.view()};
  shard_product_ref g{1, 1, true, false, false, 0.0f, x1.view(), dy.view(), {}};
  auto frame = encode_shard_products({t, g});
  auto answer = svc.handle(static_cast<uint16_t>(shard_kind::products), frame.data(), frame.size());
  ASSERT_EQ(answer.kind, shard_kind::tensors) << refusal_of(answer);
  auto outs = decode_shard_tensors(answer.payload.data(), answer.payload.size());
  ASSERT_TRUE(outs);
  ASSERT_EQ(outs->size(), 1u);
  EXPECT_TRUE(same((*outs)[0], y_local));

  // The coordinator's gradient for parameter 0 (its slice's window), then AdamW.
  params[0].grad = random_tensor(6, 10, 30);
  const auto sq_local = local.add_grads(ptrs);
  tensor window;
  copy_out(params[0].grad, {shard_axis::columns, {3, 8}}, window);
  frame = encode_shard_tensors({window.view(), const_view<float>{}});
  answer = svc.handle(static_cast<uint16_t>(shard_kind::add_grads), frame.data(), frame.size());
  ASSERT_EQ(answer.kind, shard_kind::sum_of_squares) << refusal_of(answer);
  EXPECT_EQ(*decode_shard_double(answer.payload.data(), answer.payload.size()), *sq_local);

  adamw_config cfg;
  ASSERT_FALSE(local.update(cfg, 1, 0.7));
  frame = encode(shard_update_msg{cfg, 1, 0.7});
  answer = svc.handle(static_cast<uint16_t>(shard_kind::update), frame.data(), frame.size());
  ASSERT_EQ(answer.kind, shard_kind::tensors) << refusal_of(answer);
  auto values = decode_shard_tensors(answer.payload.data(), answer.payload.size());
  ASSERT_TRUE(values);
  local.gather_values(ptrs);
  for (size_t i = 0; i < 2; ++i) {
    tensor mine;
    copy_out(params[i].value, {params[i].shard_split, {entries[i].begin, entries[i].end}}, mine);
    EXPECT_TRUE(same((*values)[i], mine)) << "parameter " << i;
  }
}

}  // namespace
