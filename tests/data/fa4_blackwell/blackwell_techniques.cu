// Not a candidate (no entry points): what FlashAttention-4 uses on Blackwell, in one translation
// unit, for the static checks at sm_100a (tests/test_target_folders.py): tensor memory allocated
// and freed (tcgen05.alloc/dealloc), an MMA into it in the 2-CTA form across a cluster pair
// (tcgen05.mma.cta_group::2), its completion on an mbarrier (tcgen05.commit), a load back to registers
// (tcgen05.ld, tcgen05.wait), a TMA tensor map encoded on the host, and a cluster launch.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

__global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(128, 1)
    techniques(const __grid_constant__ CUtensorMap map, uint64_t a_desc, uint64_t b_desc,
               uint32_t idesc, float* out) {
  __shared__ __align__(16) uint32_t tmem_base;
  __shared__ __align__(8) uint64_t bar;
  const uint32_t slot = static_cast<uint32_t>(__cvta_generic_to_shared(&tmem_base));
  const uint32_t b = static_cast<uint32_t>(__cvta_generic_to_shared(&bar));
  if (threadIdx.x / 32 == 0) {  // one warp owns the tensor-memory allocation
    asm volatile("tcgen05.alloc.cta_group::2.sync.aligned.shared::cta.b32 [%0], 64;\n" ::"r"(slot)
                 : "memory");
    asm volatile("tcgen05.relinquish_alloc_permit.cta_group::2.sync.aligned;\n");
  }
  __syncthreads();
  const uint32_t tmem = tmem_base;
  if (threadIdx.x == 0) {  // one thread issues the MMA and its commit
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.b32 p, %4, 0;\n"
        " tcgen05.mma.cta_group::2.kind::f16 [%0], %1, %2, %3, p;\n}\n" ::"r"(tmem),
        "l"(a_desc), "l"(b_desc), "r"(idesc), "r"(1));
    asm volatile(
        "tcgen05.commit.cta_group::2.mbarrier::arrive::one.shared::cluster.b64 [%0];\n" ::"r"(b)
        : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&map)) : "memory");
  }
  uint32_t value;
  asm volatile("tcgen05.ld.sync.aligned.32x32b.x1.b32 {%0}, [%1];\n" : "=r"(value) : "r"(tmem));
  asm volatile("tcgen05.wait::ld.sync.aligned;\n" ::: "memory");
  out[threadIdx.x] = __uint_as_float(value);
  __syncthreads();
  if (threadIdx.x / 32 == 0) {
    asm volatile("tcgen05.dealloc.cta_group::2.sync.aligned.b32 %0, 64;\n" ::"r"(tmem));
  }
}

void run(void* global, float* out, cudaStream_t stream) {
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
  config.gridDim = dim3(2), config.blockDim = dim3(128), config.stream = stream;
  config.attrs = attr, config.numAttrs = 1;
  cudaLaunchKernelEx(&config, techniques, map, uint64_t{0}, uint64_t{0}, 0u, out);
}
