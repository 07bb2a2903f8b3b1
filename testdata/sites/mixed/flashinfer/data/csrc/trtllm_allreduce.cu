// The launcher of the trtllm all-reduce kernels, in flashinfer 0.5.0's shape (written for
// gatefix's tests).
#include "flashinfer/comm/trtllm_allreduce.cuh"

void trtllm_custom_all_reduce(long tokens) { flashinfer::launch(tokens); }
