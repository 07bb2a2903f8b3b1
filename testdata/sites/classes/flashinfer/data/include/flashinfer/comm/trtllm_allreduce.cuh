// flashinfer 0.7.2's include/flashinfer/comm/trtllm_allreduce.cuh, reduced: the guards are
// `>= 900` (0.5.0 had `>= 900 && < 1200`, which compiles the lamport kernel out on sm_120).
#pragma once

namespace flashinfer {
namespace trtllm_allreduce {

template <typename T>
__global__ void lamport_style_one_shot_all_reduce_norm_kernel(T* out, T const* in, int n) {
#if (defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900))
  cudaGridDependencySynchronize();
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    out[i] = in[i];
  }
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}

inline void launch(long tokens) {
  lamport_style_one_shot_all_reduce_norm_kernel<float><<<1, 128>>>(nullptr, nullptr, 0);
}

}  // namespace trtllm_allreduce
}  // namespace flashinfer
