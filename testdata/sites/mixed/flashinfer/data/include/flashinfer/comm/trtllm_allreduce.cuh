// flashinfer 0.5.0's include/flashinfer/comm/trtllm_allreduce.cuh, reduced: `< 1200` in the
// guards compiles the lamport kernel to an empty body on sm_120.
#pragma once

namespace flashinfer {

template <typename T>
__global__ void rms_norm_kernel(T* out, int n) {
#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && (__CUDA_ARCH__ < 1200))
  cudaGridDependencySynchronize();
#endif
  out[threadIdx.x] = T(n);
}

template <typename T>
__global__ void lamport_style_one_shot_all_reduce_norm_kernel(T* out, int n) {
#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900) && (__CUDA_ARCH__ < 1200))
  out[threadIdx.x] = T(n);
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

inline void launch(long tokens) {
  rms_norm_kernel<float><<<1, 128>>>(nullptr, 0);
  lamport_style_one_shot_all_reduce_norm_kernel<float><<<1, 128>>>(nullptr, 0);
}

}  // namespace flashinfer
