// TensorRT-LLM's assert.h macros on getSMVersion().
__global__ void launched_kernel(float* out) { out[0] = 0.0f; }

void launch() {
  TLLM_CHECK(getSMVersion() >= 90);
  TLLM_CHECK_WITH_INFO(getSMVersion() < 120, "this kernel has no sm_12x path");
  launched_kernel<<<1, 1>>>(nullptr);
}
