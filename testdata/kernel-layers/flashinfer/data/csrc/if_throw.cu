// `if (...) throw` on the major, and a check that runs only on one branch.
__global__ void launched_kernel(float* out) { out[0] = 0.0f; }

void launch(int major, int minor) {
  if (major < 10) {
    throw std::runtime_error("needs sm_100 or newer");
  }
  if (major == 12) {
    TVM_FFI_ICHECK_EQ(minor, 0) << "sm_120 only among 12.x";
  }
  if (use_fancy_mode()) {
    TVM_FFI_ICHECK_EQ(major, 9) << "fancy mode is sm_90 only: closes that path only";
  }
#ifdef __CUDA_ARCH__
  TVM_FFI_ICHECK(major == 99);  // device pass only: not a host check
#endif
  launched_kernel<<<1, 1>>>(nullptr);
}
