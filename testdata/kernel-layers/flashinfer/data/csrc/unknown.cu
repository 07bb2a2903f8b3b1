// A body behind a macro only the build flags can define.
__global__ void fancy_kernel(float* out) {
#if defined(ENABLE_FANCY) && __CUDA_ARCH__ >= 1000
  out[0] = 3.0f;
#endif
}

// A body behind a build-flag macro alone: the same at every target, so not an arch guard.
__global__ void fp8_kernel(float* out) {
#ifdef ENABLE_FP8
  out[0] = 8.0f;
#endif
}
