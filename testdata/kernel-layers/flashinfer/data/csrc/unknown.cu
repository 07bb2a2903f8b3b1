// A body behind a macro only the build flags can define.
__global__ void fancy_kernel(float* out) {
#if defined(ENABLE_FANCY) && __CUDA_ARCH__ >= 1000
  out[0] = 3.0f;
#endif
}
