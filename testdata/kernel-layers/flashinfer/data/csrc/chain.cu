// An #if / #elif chain: every branch but sm_110's has a body.
__global__ void chain_kernel(float* out) {
#if __CUDA_ARCH__ >= 1200
  out[0] = 12.0f;
#elif (__CUDA_ARCH__ >= 1000) && (__CUDA_ARCH__ < 1100)
  out[0] = 10.0f;
#elif __CUDA_ARCH__ == 900
  out[0] = 9.0f;
#else
  // nothing for other archs
#endif
}
