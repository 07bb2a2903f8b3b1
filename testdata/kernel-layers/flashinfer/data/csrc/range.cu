// A whole kernel body under an arch range (flashinfer 0.5.0 trtllm_allreduce.cuh's shape).
__global__ void range_kernel(float* out) {
#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && (__CUDA_ARCH__ < 1200))
  out[threadIdx.x] = 1.0f;
#endif
}
