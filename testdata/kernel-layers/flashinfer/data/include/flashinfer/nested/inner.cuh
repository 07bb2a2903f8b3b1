// Nested guards, in an included header that includes another folder's header.
#pragma once
#include "common/defs.h"
#include "flashinfer/nested/cycle.cuh"

__global__ void nested_kernel(float* out) {
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 1000
#if __CUDA_ARCH__ != 1100
  out[0] = NESTED_VALUE;
#endif
#endif
#endif
}
