#pragma once
// The distributed engine's tests against real actors in one process share
// this: a detector and a planner in an actor system, devices joined on
// demand, and the products a step issues checked against the local GEMM.

#include <chrono>
#include <cmath>
#include <thread>
#include <utility>
#include <vector>

#include <caf/all.hpp>
#include <gtest/gtest.h>

#include "actors/detector/detector_actor.hpp"
#include "actors/device/device_actor.hpp"
#include "actors/planner/planner_actor.hpp"
#include "actors/ps/engine/distributed_gemm.hpp"
#include "kernels/random.hpp"

namespace cleave::runtime_testing {

inline engine_options timeout(double seconds, double speculate = 0) {
  engine_options o;
  o.schedule.tile_timeout_seconds = seconds;
  o.schedule.speculate_factor = speculate;
  return o;
}

// A planner that splits even test-sized GEMMs: a PS link so fast and a PS
// so slow that tiles always pay.
inline planner_options splitting_planner() {
  planner_options po;
  po.cost.ps_egress = 1e12;
  po.cost.ps_flops = 1e9;
  po.cost.min_split_flops = 1;
  return po;
}

struct config : caf::actor_system_config {
  config() {
    add_cleave_message_types(*this);
    add_planner_message_types(*this);
  }
};

class runtime : public ::testing::Test {
 protected:
  void SetUp() override {
    detector = sys.spawn(detector_actor, detector_options{});
    auto po = splitting_planner();
    po.min_devices = 0;
    planner = sys.spawn(planner_actor, po, detector);
  }
  void TearDown() override {
    for (auto& a : spawned) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(planner, caf::exit_reason::user_shutdown);
    caf::anon_send_exit(detector, caf::exit_reason::user_shutdown);
  }

  void add_device(const device_profile& p, uint64_t cache_bytes = 0) {
    device_options o;
    o.profile = p;
    o.paced = false;
    o.cache_bytes = cache_bytes;
    spawned.push_back(sys.spawn(device_actor, o, planner));
  }

  // `odd` joins first (device 0, first in line for tiles), then three good
  // devices (declaring `good`); returns when all four are in the fleet.
  void lead_three_good_devices(caf::actor odd, device_profile good = *preset_profile("fast")) {
    spawned.push_back(std::move(odd));
    expect_fleet(1);
    for (int i = 0; i < 3; ++i) add_device(good);
    expect_fleet(4);
  }

  // Waits until the planner has n devices.
  void expect_fleet(size_t n) {
    caf::scoped_actor self{sys};
    for (int i = 0; i < 200; ++i) {
      size_t have = 0;
      self->request(planner, caf::infinite, fleet_atom::value)
        .receive([&](uint64_t, std::vector<fleet_member>& m) { have = m.size(); },
                 [](caf::error&) {});
      if (have == n) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    FAIL() << "fleet never reached " << n << " devices";
  }

  config cfg;
  caf::actor_system sys{cfg};
  detector_handle detector;
  caf::actor planner;
  std::vector<caf::actor> spawned;
};

inline tensor random_matrix(int64_t r, int64_t c, uint64_t seed) {
  tensor t(r, c);
  rng g(seed);
  fill_normal(t, 1.0, g);
  return t;
}

// Runs C = A B (and the two backward shapes, as one batch) through the
// engine and compares with the local product.
inline void check_products(distributed_gemm& eng, double tol) {
  ASSERT_FALSE(eng.begin_step(1));
  const tensor x = random_matrix(96, 80, 1), w = random_matrix(80, 64, 2), dy = random_matrix(96, 64, 3);
  tensor y(96, 64), y_ref(96, 64), dx(96, 80), dx_ref(96, 80), dw(80, 64), dw_ref(80, 64);
  eng.gemm({0, gemm_role::forward}, x.view(), false, w.view(), false, y.view(), 0.0f);
  // The backward pair in flight together, as linear_backward issues it: a
  // failure mid-batch moves tiles of both products.
  eng.gemm_batch({{{0, gemm_role::grad_input}, dy.view(), false, w.view(), true, dx.view(), 0.0f},
                  {{0, gemm_role::grad_weight}, x.view(), true, dy.view(), false, dw.view(), 0.0f}});
  gemm_local<float>(x.view(), false, w.view(), false, y_ref.view(), 0.0f);
  gemm_local<float>(dy.view(), false, w.view(), true, dx_ref.view(), 0.0f);
  gemm_local<float>(x.view(), true, dy.view(), false, dw_ref.view(), 0.0f);
  // Accumulating into C (beta 1, as gradients do) and scaling it first.
  tensor acc = random_matrix(80, 64, 4), acc_ref = acc, half = acc, half_ref = acc;
  eng.gemm({0, gemm_role::grad_weight}, x.view(), true, dy.view(), false, acc.view(), 1.0f);
  eng.gemm({0, gemm_role::grad_weight}, x.view(), true, dy.view(), false, half.view(), 0.5f);
  gemm_local<float>(x.view(), true, dy.view(), false, acc_ref.view(), 1.0f);
  gemm_local<float>(x.view(), true, dy.view(), false, half_ref.view(), 0.5f);
  for (auto [got, want] :
       {std::pair{&y, &y_ref}, {&dx, &dx_ref}, {&dw, &dw_ref}, {&acc, &acc_ref}, {&half, &half_ref}})
    for (int64_t i = 0; i < got->size(); ++i)
      ASSERT_NEAR((*got)[i], (*want)[i], tol * (1 + std::abs((*want)[i]))) << i;
}

}  // namespace cleave::runtime_testing
