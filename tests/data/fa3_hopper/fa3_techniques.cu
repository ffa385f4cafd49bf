// Not a candidate (no entry points): what FlashAttention-3 uses, in one translation unit, for
// the static checks (tests/test_technique_parity.py): a tensor map encoded on the host, a
// cluster launch through cudaLaunchKernelEx, warp specialisation with setmaxnreg, a TMA load
// multicast across the cluster, events and a steady clock for autotuning.
#include <cuda.h>
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(256, 1)
    techniques(const __grid_constant__ CUtensorMap map, float* out) {
  __shared__ __align__(128) unsigned char tile[64 * 64 * 2];
  __shared__ __align__(8) uint64_t bar;
  const uint32_t t = static_cast<uint32_t>(__cvta_generic_to_shared(tile));
  const uint32_t b = static_cast<uint32_t>(__cvta_generic_to_shared(&bar));
  if (threadIdx.x / 128 == 0) {  // producer warpgroup: fewer registers
    asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
    if (threadIdx.x == 0) {
      uint16_t mask = 0x3;
      asm volatile(
          "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
          ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(t),
          "l"(reinterpret_cast<uint64_t>(&map)), "r"(0), "r"(0), "r"(b), "h"(mask)
          : "memory");
    }
  } else {  // consumer warpgroup: more registers
    asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
    out[threadIdx.x] = tile[threadIdx.x];
  }
}

float run(void* global, float* out, cudaStream_t stream) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {64, 64}, strides[1] = {128};
  const cuuint32_t box[2] = {64, 64}, elem[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, global, dims,
                                      strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  const char* why = nullptr;
  if (r != CUDA_SUCCESS) cuGetErrorString(r, &why);
  cudaLaunchConfig_t config = {};
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = 2, attr[0].val.clusterDim.y = 1, attr[0].val.clusterDim.z = 1;
  config.gridDim = dim3(2), config.blockDim = dim3(256), config.stream = stream;
  config.attrs = attr, config.numAttrs = 1;
  cudaEvent_t start, stop;
  cudaEventCreate(&start), cudaEventCreate(&stop);
  const auto t0 = std::chrono::steady_clock::now();
  cudaEventRecord(start, stream);
  cudaLaunchKernelEx(&config, techniques, map, out);
  cudaEventRecord(stop, stream);
  cudaEventSynchronize(stop);
  float ms = 0.f;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start), cudaEventDestroy(stop);
  return ms + std::chrono::duration<float>(std::chrono::steady_clock::now() - t0).count();
}
