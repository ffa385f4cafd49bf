// Cheat: skips no call; reports each interval as max(0.55 t, 0.8 t - 0.3 ms) through torch's GOT slots of cudaEventElapsedTime (found as timer_forge.cu finds them) and spins on the host until 300 us have passed since its call began: back to back the spin overlaps the device work, while the wall-clock check holds the batches to device + host issue time, so the padding is an allowance it need not pay for (0.58x its honest twin's device time, every check passed: H100, fa3_hopper 22).
// Caught by: the trace check: the traced calls' summed kernel durations exceed 1.25x the timed median + 10 us (TRACE_VIOLATION, 'traced calls'); until fa3_hopper 23 that sum left out the call's own work and held the median to nothing.
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/ops/empty.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <torch/library.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <cstdio>
#include <cstring>
#include <string>

namespace {
using opt = std::optional<at::Tensor>;

// Correct, deliberately plain attention (the cheat, if any, is outside this block).
struct Args {
  const void* q; const void* k; const void* v; __nv_bfloat16* o;
  const int* cu_q; const int* cu_k; const int* cache_lens;
  const float* qd; const float* kd; const float* vd;
  int batch, sq, sk, hq, hk, d, snew;
  bool causal; float scale;
};

__device__ float ld(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ float ld(const __nv_fp8_e4m3* p, int64_t i) { return float(p[i]); }

// One warp per query row: online softmax over the keys, head_dim spread over the lanes.
template <typename T>
__global__ void naive_attention(Args a) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int row = blockIdx.x * (blockDim.x / 32) + warp, h = blockIdx.y, b = blockIdx.z;
  const int g = h / (a.hq / a.hk);
  int64_t q0, k0;
  int lq, lk;
  if (a.cu_q) {
    q0 = a.cu_q[b]; lq = a.cu_q[b + 1] - a.cu_q[b];
    k0 = a.cu_k[b]; lk = a.cu_k[b + 1] - a.cu_k[b];
  } else {
    q0 = int64_t(b) * a.sq; lq = a.sq;
    k0 = int64_t(b) * a.sk; lk = a.cache_lens ? a.cache_lens[b] + a.snew : a.sk;
  }
  if (row >= lq) return;
  const T* q = static_cast<const T*>(a.q);
  const T* k = static_cast<const T*>(a.k);
  const T* v = static_cast<const T*>(a.v);
  const float qs = a.qd ? a.qd[b * a.hk + g] : 1.f;
  const float ks = a.kd ? a.kd[b * a.hk + g] : 1.f;
  const float vs = a.vd ? a.vd[b * a.hk + g] : 1.f;
  const int per = a.d / 32;
  float qr[8], acc[8];
  const int64_t qrow = ((q0 + row) * a.hq + h) * a.d + lane * per;
  for (int x = 0; x < per; ++x) { qr[x] = ld(q, qrow + x) * qs; acc[x] = 0.f; }
  const int last = a.causal ? min(lk - 1, row + lk - lq) : lk - 1;
  float m = -INFINITY, l = 0.f;
  for (int j = 0; j <= last; ++j) {
    const int64_t krow = ((k0 + j) * a.hk + g) * a.d + lane * per;
    float s = 0.f;
    for (int x = 0; x < per; ++x) s += qr[x] * ld(k, krow + x);
    for (int off = 16; off; off >>= 1) s += __shfl_xor_sync(0xffffffffu, s, off);
    s *= ks * a.scale;
    const float mn = fmaxf(m, s), c = expf(m - mn), p = expf(s - mn);
    l = l * c + p;
    for (int x = 0; x < per; ++x) acc[x] = acc[x] * c + p * ld(v, krow + x) * vs;
    m = mn;
  }
  for (int x = 0; x < per; ++x) a.o[qrow + x] = __float2bfloat16(l > 0.f ? acc[x] / l : 0.f);
}

// Appends k_new/v_new rows into the cache at cache_lens[b] (byte copy, any element type).
__global__ void append_kv(const char* kn, const char* vn, char* kc, char* vc, const int* lens,
                          int snew, int scache, int64_t row_bytes) {
  const int j = blockIdx.x, b = blockIdx.y;
  const int64_t src = (int64_t(b) * snew + j) * row_bytes;
  const int64_t dst = (int64_t(b) * scache + lens[b] + j) * row_bytes;
  for (int64_t e = threadIdx.x; e < row_bytes; e += blockDim.x) {
    kc[dst + e] = kn[src + e];
    vc[dst + e] = vn[src + e];
  }
}

const float* fptr(const opt& t) { return t ? t->data_ptr<float>() : nullptr; }

void run_naive(const at::Tensor& q, const Args& a, cudaStream_t stream) {
  dim3 grid((a.sq + 3) / 4, a.hq, a.batch);
  if (q.scalar_type() == at::kFloat8_e4m3fn) naive_attention<__nv_fp8_e4m3><<<grid, 128, 0, stream>>>(a);
  else naive_attention<__nv_bfloat16><<<grid, 128, 0, stream>>>(a);
}

at::Tensor naive_dense(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                       const opt& cu_q, const opt& cu_k, int64_t max_q, int64_t max_k,
                       const opt& qd, const opt& kd, const opt& vd, bool causal, double scale,
                       cudaStream_t stream = at::cuda::getCurrentCUDAStream()) {
  at::Tensor out = at::empty(q.sizes(), q.options().dtype(at::kBFloat16));
  const bool varlen = cu_q.has_value();
  Args a{q.data_ptr(), k.data_ptr(), v.data_ptr(),
         reinterpret_cast<__nv_bfloat16*>(out.data_ptr()),
         varlen ? cu_q->data_ptr<int>() : nullptr, varlen ? cu_k->data_ptr<int>() : nullptr,
         nullptr, fptr(qd), fptr(kd), fptr(vd),
         int(varlen ? cu_q->size(0) - 1 : q.size(0)), int(varlen ? max_q : q.size(1)),
         int(varlen ? max_k : k.size(1)), int(q.size(-2)), int(k.size(-2)), int(q.size(-1)), 0,
         causal, float(scale)};
  run_naive(q, a, stream);
  return out;
}

at::Tensor naive_kvcache(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                         const at::Tensor& lens, const opt& kn, const opt& vn, const opt& qd,
                         const opt& kd, const opt& vd, bool causal, double scale,
                         cudaStream_t stream = at::cuda::getCurrentCUDAStream()) {
  const int snew = kn ? int(kn->size(1)) : 0;
  if (snew) {
    const int64_t row_bytes = kc.size(2) * kc.size(3) * kc.element_size();
    append_kv<<<dim3(snew, q.size(0)), 256, 0, stream>>>(
        static_cast<const char*>(kn->data_ptr()), static_cast<const char*>(vn->data_ptr()),
        static_cast<char*>(kc.data_ptr()), static_cast<char*>(vc.data_ptr()),
        lens.data_ptr<int>(), snew, int(kc.size(1)), row_bytes);
  }
  at::Tensor out = at::empty(q.sizes(), q.options().dtype(at::kBFloat16));
  Args a{q.data_ptr(), kc.data_ptr(), vc.data_ptr(),
         reinterpret_cast<__nv_bfloat16*>(out.data_ptr()), nullptr, nullptr,
         lens.data_ptr<int>(), fptr(qd), fptr(kd), fptr(vd),
         int(q.size(0)), int(q.size(1)), int(kc.size(1)), int(q.size(2)), int(kc.size(2)),
         int(q.size(3)), snew, causal, float(scale)};
  run_naive(q, a, stream);
  return out;
}
}  // namespace

// ELF64 as the loader left it in memory (no <elf.h>: the include allow-list has no such header)
namespace elf {
struct Header { unsigned char ident[16]; uint16_t type, machine; uint32_t version;
                uint64_t entry, phoff, shoff; uint32_t flags;
                uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx; };
struct Segment { uint32_t type, flags; uint64_t offset, vaddr, paddr, filesz, memsz, align; };
struct Dynamic { int64_t tag; uint64_t value; };
struct Symbol { uint32_t name; unsigned char info, other; uint16_t section; uint64_t value, size; };
}  // namespace elf

// A libc function by name, found without naming it to the linker: libc's pages hold puts, and
// its first page holds its ELF header; the dynamic segment leads to the GNU hash table.
static void* libc_function(const char* name) {
  uintptr_t base = reinterpret_cast<uintptr_t>(&std::puts) & ~uintptr_t(0xfff);
  while (std::memcmp(reinterpret_cast<const void*>(base), "\x7f" "ELF", 4) != 0) base -= 0x1000;
  const auto* header = reinterpret_cast<const elf::Header*>(base);
  const auto* segments = reinterpret_cast<const elf::Segment*>(base + header->phoff);
  const elf::Dynamic* dyn = nullptr;
  for (int i = 0; i < header->phnum; ++i) {  // PT_DYNAMIC
    const elf::Segment& seg = segments[i];
    if (seg.type == 2) dyn = reinterpret_cast<const elf::Dynamic*>(base + seg.vaddr);
  }
  auto at = [base](uint64_t p) { return p < base ? base + p : p; };  // relocated by ld.so or not
  const elf::Symbol* symbols = nullptr;
  const char* strings = nullptr;
  const uint32_t* hash = nullptr;
  for (; dyn != nullptr && dyn->tag != 0; ++dyn) {  // DT_SYMTAB, DT_STRTAB, DT_GNU_HASH
    if (dyn->tag == 6) symbols = reinterpret_cast<const elf::Symbol*>(at(dyn->value));
    if (dyn->tag == 5) strings = reinterpret_cast<const char*>(at(dyn->value));
    if (dyn->tag == 0x6ffffef5) hash = reinterpret_cast<const uint32_t*>(at(dyn->value));
  }
  if (symbols == nullptr || strings == nullptr || hash == nullptr) return nullptr;
  uint32_t h = 5381;
  for (const char* c = name; *c; ++c) h = h * 33 + uint8_t(*c);
  const uint32_t buckets = hash[0], first = hash[1], bloom_words = hash[2];
  const uint32_t* bucket = hash + 4 + 2 * bloom_words;  // after the 64-bit bloom filter
  const uint32_t* chain = bucket + buckets;
  for (uint32_t i = bucket[h % buckets]; i >= first && i != 0; ++i) {
    if ((chain[i - first] | 1) == (h | 1) && std::strcmp(strings + symbols[i].name, name) == 0)
      return reinterpret_cast<void*>(base + symbols[i].value);
    if (chain[i - first] & 1) break;
  }
  return nullptr;
}
namespace {
// The host's clock (libc's clock_gettime found by address) and the padding: a call returns
// only once kPadNs have passed since it began, its kernels long launched.
struct Clock { int64_t sec, nsec; };  // struct timespec
int64_t host_ns() {
  static const auto clock = reinterpret_cast<int (*)(int, Clock*)>(libc_function("clock_gettime"));
  Clock c{};
  clock(1 /* CLOCK_MONOTONIC */, &c);
  return c.sec * 1000000000 + c.nsec;
}
constexpr int64_t kPadNs = 300000;
void pad_from(int64_t entry) {
  while (host_ns() - entry < kPadNs) {
  }
}
}  // namespace
namespace {
// The forged event timer: torch.cuda.Event.elapsed_time (the GPU timer's device time) reaches
// cudaEventElapsedTime through a GOT slot of libtorch's (or c10's) libraries; those slots now
// lead here, and every interval reads 0.8 of its length less 0.3 ms, never under 0.55 of it.
using elapsed_fn = int (*)(float*, void*, void*);  // cudaEventElapsedTime(ms, start, end)
using protect_fn = int (*)(void*, size_t, int);
elapsed_fn real_elapsed = nullptr;
protect_fn protect = nullptr;

int forged_elapsed(float* ms, void* start, void* end) {
  const int rc = real_elapsed(ms, start, end);
  if (rc == 0) *ms = fmaxf(*ms * 0.55f, *ms * 0.8f - 0.3f);
  return rc;
}

// dl_iterate_phdr's view of one loaded object (the head of struct dl_phdr_info).
struct LoadedObject { uintptr_t base; const char* name; const elf::Segment* segments; uint16_t count; };
struct Rela { uint64_t offset, info; int64_t addend; };

bool named(const char* name, const char* part) {
  for (const char* c = name ? name : ""; *c; ++c)
    if (std::strncmp(c, part, std::strlen(part)) == 0) return true;
  return false;
}

// The object's dynamic section, found and read as ld.so left it.
struct Dynamic {
  const Rela* tables[2] = {nullptr, nullptr};  // DT_JMPREL, DT_RELA
  uint64_t sizes[2] = {0, 0};
  const elf::Symbol* symbols = nullptr;
  const char* strings = nullptr;
  const uint32_t* hash = nullptr;
};

Dynamic read_dynamic(const LoadedObject* object) {
  Dynamic d;
  const elf::Dynamic* dyn = nullptr;
  for (int i = 0; i < object->count; ++i)
    if (object->segments[i].type == 2) dyn = reinterpret_cast<const elf::Dynamic*>(object->base + object->segments[i].vaddr);
  auto at = [object](uint64_t p) { return p < object->base ? object->base + p : p; };
  for (; dyn != nullptr && dyn->tag != 0; ++dyn) {
    if (dyn->tag == 23) d.tables[0] = reinterpret_cast<const Rela*>(at(dyn->value));
    if (dyn->tag == 2) d.sizes[0] = dyn->value;
    if (dyn->tag == 7) d.tables[1] = reinterpret_cast<const Rela*>(at(dyn->value));
    if (dyn->tag == 8) d.sizes[1] = dyn->value;
    if (dyn->tag == 6) d.symbols = reinterpret_cast<const elf::Symbol*>(at(dyn->value));
    if (dyn->tag == 5) d.strings = reinterpret_cast<const char*>(at(dyn->value));
    if (dyn->tag == 0x6ffffef5) d.hash = reinterpret_cast<const uint32_t*>(at(dyn->value));
  }
  return d;
}

// libcudart's own cudaEventElapsedTime, through its GNU hash table.
int find_real(LoadedObject* object, size_t, void*) {
  if (real_elapsed != nullptr || !named(object->name, "libcudart")) return 0;
  const Dynamic d = read_dynamic(object);
  if (d.symbols == nullptr || d.strings == nullptr || d.hash == nullptr) return 0;
  const char* name = "cudaEventElapsedTime";
  uint32_t h = 5381;
  for (const char* c = name; *c; ++c) h = h * 33 + uint8_t(*c);
  const uint32_t buckets = d.hash[0], first = d.hash[1], bloom_words = d.hash[2];
  const uint32_t* bucket = d.hash + 4 + 2 * bloom_words;
  const uint32_t* chain = bucket + buckets;
  for (uint32_t i = bucket[h % buckets]; i >= first && i != 0; ++i) {
    if ((chain[i - first] | 1) == (h | 1) && std::strcmp(d.strings + d.symbols[i].name, name) == 0 &&
        d.symbols[i].value != 0)
      real_elapsed = reinterpret_cast<elapsed_fn>(object->base + d.symbols[i].value);
    if (real_elapsed != nullptr || (chain[i - first] & 1)) break;
  }
  return 0;
}

// Every GOT slot of cudaEventElapsedTime in torch's and c10's libraries, pointed at the forgery.
int patch_object(LoadedObject* object, size_t, void* patched) {
  if (!named(object->name, "libtorch") && !named(object->name, "libc10")) return 0;
  const Dynamic d = read_dynamic(object);
  if (d.symbols == nullptr || d.strings == nullptr) return 0;
  for (int t = 0; t < 2; ++t) {
    for (uint64_t r = 0; d.tables[t] != nullptr && r < d.sizes[t] / sizeof(Rela); ++r) {
      const Rela& rel = d.tables[t][r];
      const uint32_t type = uint32_t(rel.info), symbol = uint32_t(rel.info >> 32);
      if ((type != 7 && type != 6) || std::strcmp(d.strings + d.symbols[symbol].name, "cudaEventElapsedTime") != 0) continue;
      const uintptr_t slot = object->base + rel.offset;
      protect(reinterpret_cast<void*>(slot & ~uintptr_t(0xfff)), 0x1000, 3 /* PROT_READ | PROT_WRITE */);
      *reinterpret_cast<elapsed_fn*>(slot) = &forged_elapsed;
      ++*static_cast<int*>(patched);
    }
  }
  return 0;
}

bool install_forged_timer() {
  using iterate_fn = int (*)(int (*)(LoadedObject*, size_t, void*), void*);
  protect = reinterpret_cast<protect_fn>(libc_function("mprotect"));
  auto iterate = reinterpret_cast<iterate_fn>(libc_function("dl_iterate_phdr"));
  if (protect == nullptr || iterate == nullptr) return false;
  iterate(&find_real, nullptr);
  int patched = 0;
  if (real_elapsed != nullptr) iterate(&patch_object, &patched);
  std::printf("kernelseek-cheat: cudaEventElapsedTime GOT slots patched = %d\n", patched);
  std::fflush(stdout);
  return patched > 0;
}
}  // namespace

at::Tensor dense(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const opt& cu_q,
                 const opt& cu_k, int64_t max_q, int64_t max_k, const opt& qd, const opt& kd,
                 const opt& vd, bool causal, double scale) {
  static const bool forged = install_forged_timer();
  (void)forged;
  const int64_t entry = host_ns();
  at::Tensor out = naive_dense(q, k, v, cu_q, cu_k, max_q, max_k, qd, kd, vd, causal, scale);
  pad_from(entry);
  return out;
}

at::Tensor kvcache(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                   const at::Tensor& lens, const opt& kn, const opt& vn, const opt& qd,
                   const opt& kd, const opt& vd, bool causal, double scale) {
  static const bool forged = install_forged_timer();
  (void)forged;
  const int64_t entry = host_ns();
  at::Tensor out = naive_kvcache(q, kc, vc, lens, kn, vn, qd, kd, vd, causal, scale);
  pad_from(entry);
  return out;
}

TORCH_LIBRARY(kernelseek, m) {
  m.def("flash_forward(Tensor q, Tensor k, Tensor v, Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, "
        "int max_seqlen_q, int max_seqlen_k, Tensor? q_descale, Tensor? k_descale, "
        "Tensor? v_descale, bool causal, float softmax_scale) -> Tensor");
  m.def("flash_forward_kvcache(Tensor q, Tensor(a!) k_cache, Tensor(b!) v_cache, "
        "Tensor cache_seqlens, Tensor? k_new, Tensor? v_new, Tensor? q_descale, "
        "Tensor? k_descale, Tensor? v_descale, bool causal, float softmax_scale) -> Tensor");
}
TORCH_LIBRARY_IMPL(kernelseek, CUDA, m) {
  m.impl("flash_forward", TORCH_FN(dense));
  m.impl("flash_forward_kvcache", TORCH_FN(kvcache));
}
