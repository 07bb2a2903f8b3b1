// A launcher with TVM_FFI_ICHECK on the major.
__global__ void launched_kernel(float* out) { out[0] = 0.0f; }

void launch(int major) {
  TVM_FFI_ICHECK(major == 10 || major == 12) << "sm100 or sm120 only";
  launched_kernel<<<1, 1>>>(nullptr);
}
