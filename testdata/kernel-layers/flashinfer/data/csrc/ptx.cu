// Kernels whose inline PTX only some targets assemble.
#include <cstdint>

// Hopper's warpgroup MMA, unguarded: only an sm_90a build assembles it.
__global__ void wgmma_kernel(float* out) {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  out[0] = 1.0f;
}

// The tensor memory of sm_100, behind its guard: other targets compile the fallback.
__global__ void guarded_tcgen05_kernel(float* out) {
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000) && (__CUDA_ARCH__ < 1200)
  asm volatile("{\n\ttcgen05.fence::before_thread_sync;\n}" ::: "memory");
#endif
  out[0] = 2.0f;
}

// A template: it fails to build only where the host code instantiates it.
template <int N>
__global__ void templated_tcgen05_kernel(float* out) {
  asm volatile("tcgen05.fence::after_thread_sync;");
  out[0] = float(N);
}

// Words in strings that are no such instruction.
__global__ void lookalike_kernel(float* out) {
  printf("my_wgmma.fence is not an instruction\n");
  out[0] = 3.0f;
}
