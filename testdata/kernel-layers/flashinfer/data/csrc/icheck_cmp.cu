// Every comparison check macro once.
__global__ void launched_kernel(float* out) { out[0] = 0.0f; }

void launch(int major, int minor) {
  TVM_FFI_ICHECK_NE(major, 11) << "not on Thor";
  TVM_FFI_ICHECK_GT(major, 9);
  TVM_FFI_ICHECK_GE(major * 10 + minor, 100);
  TVM_FFI_ICHECK_LE(minor, 1);
  TVM_FFI_ICHECK_LT(major, 13);
  TVM_FFI_ICHECK_EQ(out.dtype(), dl_float32) << "not an SM check: ignored";
  launched_kernel<<<1, 1>>>(nullptr);
}
