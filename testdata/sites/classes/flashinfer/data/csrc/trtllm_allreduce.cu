// The launcher of the trtllm all-reduce kernels, in flashinfer 0.7.2's shape (written for
// gatefix's tests).
#include <cstdint>

#include "flashinfer/comm/trtllm_allreduce.cuh"

void trtllm_custom_all_reduce(int64_t tokens) {
  flashinfer::trtllm_allreduce::launch(tokens);
}
