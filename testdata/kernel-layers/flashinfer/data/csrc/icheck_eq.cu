// flashinfer 0.5.0 trtllm_fused_moe_kernel_launcher.cu's shape.
__global__ void launched_kernel(float* out) { out[0] = 0.0f; }

void launch(int dev) {
  auto device_props = getDeviceComputeCapability(dev);
  TVM_FFI_ICHECK_EQ(std::get<0>(device_props), 10)
      << "This kernel requires 10.x architecture. Current device has SM "
      << std::get<0>(device_props) << std::get<1>(device_props);
  launched_kernel<<<1, 1>>>(nullptr);
}
