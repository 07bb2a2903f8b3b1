// Launchers that ask for dynamic shared memory: a constant above what one block may have
// at a target makes the kernels they launch unable to run there (sm_120 and sm_121 allow
// 101,376 bytes, sm_90 and sm_100 232,448).
__global__ void big_tile_kernel(float* out) { out[0] = 0.0f; }

constexpr int kTileBytes = 200 * 1024;
static constexpr int kHopperBytes = 240 << 10;

void launch_big(int major, int smem_bytes) {
  cudaFuncSetAttribute(big_tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kTileBytes);
  if (major == 9) {
    // Above even sm_90's limit, but only asked for there.
    cudaFuncSetAttribute(big_tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                         kHopperBytes);
  }
  // A size known only at run time is not judged.
  cudaFuncSetAttribute(big_tile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes);
  big_tile_kernel<<<1, 1, kTileBytes>>>(nullptr);
}
