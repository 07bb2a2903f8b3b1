// A kernel with a body on every arch, launched with 200 KiB of dynamic shared memory: more
// than one block may have on sm_120 (99 KiB), within sm_90's and sm_100's 227 KiB.
__global__ void bigtile_kernel(float* x) { x[0] = 0.0f; }

constexpr int kBigTileBytes = 200 * 1024;

void launch_bigtile(float* x) {
  cudaFuncSetAttribute(bigtile_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kBigTileBytes);
  bigtile_kernel<<<1, 1, kBigTileBytes>>>(x);
}
