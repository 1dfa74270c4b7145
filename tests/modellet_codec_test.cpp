// Model-let frames: each message round-trips, and the device's service
// answers every malformed frame with ml_error (never a crash, never a large
// allocation): truncations at every length, counts that lie, frames over
// their cap, requests out of order.

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "actors/device/modellet_service.hpp"
#include "kernels/random.hpp"
#include "schema/edge_codec.hpp"
#include "schema/modellet_codec.hpp"

using namespace cleave;

namespace {

constexpr uint64_t cap = 1 << 20;

ml_place_msg a_place(int32_t begin, int32_t end, int64_t hidden) {
  ml_place_msg m;
  m.sampling.lsh.family = lsh_family::simhash;
  m.sampling.lsh.hashes = 4;
  m.sampling.lsh.tables = 4;
  m.sampling.bucket_size = 8;
  m.sampling.min_active = 2;
  auto& s = m.state;
  s.begin = begin;
  s.end = end;
  s.hidden = hidden;
  rng r(1);
  const int64_t rows = end - begin;
  for (tensor* t : {&s.w, &s.m_w, &s.v_w}) t->resize(rows, hidden);
  for (tensor* t : {&s.b, &s.m_b, &s.v_b}) t->resize(rows, 1);
  fill_normal(s.w, 0.5, r);
  fill_normal(s.b, 0.5, r);
  for (tensor* t : {&s.m_w, &s.v_w, &s.m_b, &s.v_b}) t->zero();
  return m;
}

}  // namespace

TEST(modellet_codec, messages_round_trip) {
  const auto place = a_place(10, 30, 8);
  auto p = decode_ml_place(encode(place).data(), encode(place).size());
  ASSERT_TRUE(p);
  EXPECT_EQ(p->state.begin, 10);
  EXPECT_EQ(p->state.end, 30);
  EXPECT_EQ(p->sampling.lsh.family, lsh_family::simhash);
  EXPECT_EQ(std::memcmp(p->state.w.data(), place.state.w.data(), 20 * 8 * 4), 0);

  tensor h(2, 8);
  for (int64_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(i);
  const std::vector<int64_t> offs = {0, 2, 3};
  const std::vector<int32_t> ids = {5, 12, 29};
  auto bytes = encode_ml_forward(4, h, {offs.data(), ids.data(), 2}, 10, 30);
  auto f = decode_ml_forward(bytes.data(), bytes.size());
  ASSERT_TRUE(f);
  EXPECT_EQ(f->step, 4);
  EXPECT_EQ(f->label_ids, (std::vector<int32_t>{12, 29}));  // 5 is another range's
  EXPECT_EQ(f->label_offsets, (std::vector<int64_t>{0, 1, 2}));

  modellet_scores s;
  s.offsets = {0, 2, 2};
  s.ids = {11, 14};
  s.logits = {0.5f, -1};
  s.stats = {{0.5, 1.2}, {}};
  bytes = encode(s);
  auto d = decode_ml_scores(bytes.data(), bytes.size());
  ASSERT_TRUE(d);
  EXPECT_EQ(d->ids, s.ids);
  EXPECT_EQ(d->offsets, s.offsets);
  EXPECT_EQ(d->stats[0].sum, 1.2);

  ml_update_msg u;
  u.t = 3;
  u.grad_scale = 0.5;
  bytes = encode(u);
  EXPECT_EQ(bytes.size(), edge_payload_cap(edge_ml_update, cap));
  auto du = decode_ml_update(bytes.data(), bytes.size());
  ASSERT_TRUE(du);
  EXPECT_EQ(du->t, 3);
  EXPECT_EQ(du->grad_scale, 0.5);
}

TEST(modellet_codec, truncations_and_lying_counts_are_refused) {
  const auto place = encode(a_place(0, 16, 8));
  for (size_t n = 0; n < place.size(); n += 7) EXPECT_FALSE(decode_ml_place(place.data(), n)) << n;
  tensor h(3, 8);
  h.zero();
  const std::vector<int64_t> offs = {0, 1, 1, 2};
  const std::vector<int32_t> ids = {1, 2};
  auto fwd = encode_ml_forward(0, h, {offs.data(), ids.data(), 3}, 0, 16);
  for (size_t n = 0; n < fwd.size(); ++n) EXPECT_FALSE(decode_ml_forward(fwd.data(), n)) << n;
  // A sample count claiming a billion samples in a short frame.
  auto lie = fwd;
  const uint32_t huge = 1u << 30;
  std::memcpy(lie.data() + 8, &huge, 4);
  EXPECT_FALSE(decode_ml_forward(lie.data(), lie.size()));
  // A label count that does not add up.
  lie = fwd;
  const uint32_t three = 3;
  std::memcpy(lie.data() + 16 + 3 * 8 * 4 + 3 * 4, &three, 4);
  EXPECT_FALSE(decode_ml_forward(lie.data(), lie.size()));

  modellet_scores s;
  s.offsets = {0, 1};
  s.ids = {3};
  s.logits = {1};
  s.stats = {{1, 1}};
  auto sc = encode(s);
  for (size_t n = 0; n < sc.size(); ++n) EXPECT_FALSE(decode_ml_scores(sc.data(), n)) << n;
  auto big = sc;
  const uint32_t many = 1u << 31;
  std::memcpy(big.data() + 4, &many, 4);  // a per-sample count far past the frame
  EXPECT_FALSE(decode_ml_scores(big.data(), big.size()));
  // An id in a longer form than it needs (0x83 0x00 for 3), with the count of id bytes to match.
  auto longer = sc;
  const uint32_t two = 2;
  std::memcpy(longer.data() + 8, &two, 4);
  longer[12] = static_cast<char>(0x83);
  longer.insert(longer.begin() + 13, '\0');
  EXPECT_FALSE(decode_ml_scores(longer.data(), longer.size()));
  // Ids far apart, and many in one sample, round-trip.
  modellet_scores wide;
  wide.offsets = {0, 3};
  wide.ids = {0, 200, 2000000000};
  wide.logits = {1, 2, 3};
  wide.stats = {{3, 1.5}};
  auto wb = encode(wide);
  auto back = decode_ml_scores(wb.data(), wb.size());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->ids, wide.ids);
  auto grads = encode_ml_grads({1, 2, 3});
  EXPECT_FALSE(decode_ml_grads(grads.data(), grads.size() - 1));
  std::memcpy(grads.data(), &many, 4);
  EXPECT_FALSE(decode_ml_grads(grads.data(), grads.size()));
}

TEST(modellet_service, answers_a_step_and_refuses_what_is_wrong) {
  modellet_service svc(cap);
  // Nothing placed yet.
  EXPECT_EQ(svc.handle(edge_ml_copy, {}).kind, edge_ml_error);
  // Over the cap: refused before decoding.
  EXPECT_EQ(svc.handle(edge_ml_place, std::vector<char>(cap + 1)).kind, edge_ml_error);
  // Garbage.
  EXPECT_EQ(svc.handle(edge_ml_place, std::vector<char>(40, 'x')).kind, edge_ml_error);
  ASSERT_EQ(svc.handle(edge_ml_place, encode(a_place(10, 30, 8))).kind, edge_ml_done);

  tensor h(2, 8);
  for (int64_t i = 0; i < h.size(); ++i) h[i] = 0.1f * static_cast<float>(i);
  const std::vector<int64_t> offs = {0, 1, 1};
  const std::vector<int32_t> ids = {12};
  auto sc = svc.handle(edge_ml_forward, encode_ml_forward(0, h, {offs.data(), ids.data(), 2}, 10, 30));
  ASSERT_EQ(sc.kind, edge_ml_scores);
  auto scores = decode_ml_scores(sc.payload.data(), sc.payload.size());
  ASSERT_TRUE(scores);
  EXPECT_GE(scores->offsets[1], 2);  // its label and the top-up
  // Gradients of the wrong count, then the right one.
  EXPECT_EQ(svc.handle(edge_ml_grads, encode_ml_grads({1})).kind, edge_ml_error);
  auto hg = svc.handle(edge_ml_grads, encode_ml_grads(std::vector<float>(scores->ids.size(), 0.01f)));
  ASSERT_EQ(hg.kind, edge_ml_hidden_grad);
  auto dh = decode_ml_hidden_grad(hg.payload.data(), hg.payload.size());
  ASSERT_TRUE(dh);
  EXPECT_EQ(dh->dh.rows(), 2);
  ml_update_msg u;
  u.t = 1;
  EXPECT_EQ(svc.handle(edge_ml_update, encode(u)).kind, edge_ml_done);
  auto st = svc.handle(edge_ml_copy, {});
  ASSERT_EQ(st.kind, edge_ml_state);
  auto state = decode_ml_state(st.payload.data(), st.payload.size());
  ASSERT_TRUE(state);
  EXPECT_EQ(state->step, 1);
  // Wrong hidden width, and a label of another range.
  tensor h4(2, 4);
  h4.zero();
  EXPECT_EQ(svc.handle(edge_ml_forward, encode_ml_forward(1, h4, {offs.data(), ids.data(), 2}, 10, 30)).kind,
            edge_ml_error);
  const std::vector<int32_t> other = {3};
  EXPECT_EQ(svc.handle(edge_ml_forward, encode_ml_forward(1, h, {offs.data(), other.data(), 2}, 0, 40)).kind,
            edge_ml_error);
  // An unknown kind.
  EXPECT_EQ(svc.handle(edge_task, {}).kind, edge_ml_error);
}
