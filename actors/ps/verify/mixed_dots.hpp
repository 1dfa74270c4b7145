#pragma once
// The check's inner loops: float data, double accumulation. Written with
// AVX2 and FMA where the build targets them (the default, -march=native),
// since the compiler does not vectorise a float-to-double reduction well by
// itself; plain loops otherwise. Pure.

#include <cstdint>

namespace cleave {

// Σ x_i².
double sum_of_squares(const float* x, int64_t n);
// Σ x_i·y0_i, Σ x_i·y1_i and Σ |x_i|, in one pass over x.
void dots_and_magnitude(const float* x, const double* y0, const double* y1, int64_t n,
                        double& dot0, double& dot1, double& magnitude);
// The same, copying x to `copy_to` in the pass that reads it.
void dots_and_magnitude_copy(const float* x, const double* y0, const double* y1, int64_t n,
                             double& dot0, double& dot1, double& magnitude, float* copy_to);
// Σ x_i·y0_i, Σ x_i·y1_i and Σ x_i², in one pass over x.
void dots_and_squares(const float* x, const double* y0, const double* y1, int64_t n,
                      double& dot0, double& dot1, double& squares);
// out0_i += s0·x_i, out1_i += s1·x_i and, when `squares` is not null,
// squares_i += x_i², in one pass over x.
void axpy2(double s0, double s1, const float* x, double* out0, double* out1, double* squares,
           int64_t n);
// The same for two rows x and z at once (scales s0, s1 and t0, t1): the
// outputs are read and written once for both.
void axpy2_two_rows(double s0, double s1, const float* x, double t0, double t1, const float* z,
                    double* out0, double* out1, double* squares, int64_t n);

}  // namespace cleave
