#pragma once
// Split plans built by hand for the simulator's and the PS work model's tests.

#include <cstdint>

#include "actors/planner/plan.hpp"

namespace cleave::testing {

// C[m,n] = A[m,k] B[k,n] cut into gm x gn x gk tiles, tile i on device i
// (tiles in m, n, k order).
inline plan grid_plan(int64_t m, int64_t n, int64_t k, int gm, int gn, int gk) {
  plan p;
  p.local = false;
  p.problem.m = m;
  p.problem.n = n;
  p.problem.k = k;
  p.predicted_seconds = 1;
  int d = 0;
  for (int i = 0; i < gm; ++i)
    for (int j = 0; j < gn; ++j)
      for (int l = 0; l < gk; ++l) {
        assignment a;
        a.t = {m * i / gm, m * (i + 1) / gm, n * j / gn, n * (j + 1) / gn, k * l / gk, k * (l + 1) / gk};
        a.device = d++;
        p.tiles.push_back(a);
      }
  return p;
}

}  // namespace cleave::testing
