// Kernels that trap where their arch branch is missing.
__global__ void only_sm120_kernel(float* out) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 1200
  out[0] = 1.0f;
#else
  asm("trap;");
#endif
}

__global__ void blackwell_kernel(float* out) {
#if __CUDA_ARCH__ < 1000
  __trap();
#else
  out[0] = 2.0f;
#endif
}
