// Cheat: write_escape.cu's writes (a .pth into the running torch's site-packages, a file into the build cache, one into /tmp) from a static initialiser, so they run wherever its library is loaded: by the build, as cpp_extension.load did, outside every sandbox as the harness's own user; correct attention otherwise.
// Caught by: the build links and never loads it (the first dlopen is in the confined worker, where Landlock confines writes to its private folder); the footprint, recorded before the build, fails a run whose candidate changed a protected place (SANDBOX_VIOLATION).
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
// The escape, tried once: libc's file functions by address, the places worth writing found in
// the process's own /proc files.
using open_fn = int (*)(const char*, int, ...);
using read_fn = long (*)(int, void*, size_t);
using write_fn = long (*)(int, const void*, size_t);
using close_fn = int (*)(int);
using pid_fn = int (*)();
open_fn open_file = nullptr;
read_fn read_file = nullptr;
write_fn write_file = nullptr;
close_fn close_file = nullptr;

// The whole of a /proc file (they report no size), at most 1 MiB.
std::string slurp(const char* path) {
  std::string text;
  const int fd = open_file(path, 0 /* O_RDONLY */);
  if (fd < 0) return text;
  char chunk[4096];
  for (long n; text.size() < (1u << 20) && (n = read_file(fd, chunk, sizeof chunk)) > 0;) text.append(chunk, size_t(n));
  close_file(fd);
  return text;
}

// Creates (or truncates) ``path`` and writes ``content``; says in the worker's log what happened.
void plant(const std::string& path, const char* content) {
  const int fd = open_file(path.c_str(), 01 | 0100 | 01000 /* O_WRONLY | O_CREAT | O_TRUNC */, 0644);
  long written = -1;
  if (fd >= 0) {
    written = write_file(fd, content, std::strlen(content));
    close_file(fd);
  }
  std::printf("kernelseek-cheat: wrote %s: fd %d, %ld bytes\n", path.c_str(), fd, written);
}

// Where ``needle`` first occurs in ``text``, or the text's size (no memchr: not allowed).
size_t find(const std::string& text, const char* needle) {
  const size_t n = std::strlen(needle);
  for (size_t at = 0; at + n <= text.size(); ++at)
    if (std::strncmp(text.c_str() + at, needle, n) == 0) return at;
  return text.size();
}

// The folder that holds the running torch (its site-packages), from the loaded libtorch's path.
std::string site_packages() {
  const std::string maps = slurp("/proc/self/maps");
  const size_t lib = find(maps, "/torch/lib/libtorch");
  size_t start = lib;
  while (start > 0 && maps[start - 1] != ' ') --start;
  return lib == maps.size() ? "" : maps.substr(start, lib - start);
}

// The build cache's builds folder: $KERNELSEEK_CACHE or ~/.cache/kernelseek, as the harness
// finds it, read from the process's environment (entries end with a zero byte).
std::string build_cache() {
  const std::string environ = slurp("/proc/self/environ");
  std::string cache, home;
  for (const char* entry = environ.c_str(); entry < environ.c_str() + environ.size(); entry += std::strlen(entry) + 1) {
    if (std::strncmp(entry, "KERNELSEEK_CACHE=", 17) == 0) cache = entry + 17;
    if (std::strncmp(entry, "HOME=", 5) == 0) home = entry + 5;
  }
  if (cache.empty() && !home.empty()) cache = home + "/.cache/kernelseek";
  return cache.empty() ? "" : cache + "/builds";
}

void escape() {
  open_file = reinterpret_cast<open_fn>(libc_function("open"));
  read_file = reinterpret_cast<read_fn>(libc_function("read"));
  write_file = reinterpret_cast<write_fn>(libc_function("write"));
  close_file = reinterpret_cast<close_fn>(libc_function("close"));
  const auto pid = reinterpret_cast<pid_fn>(libc_function("getpid"));
  if (!open_file || !read_file || !write_file || !close_file || !pid) return;
  // a comment line: a .pth file's lines run at every Python start, this one does nothing
  const std::string site = site_packages();
  if (!site.empty()) plant(site + "/kernelseek_escape_probe.pth", "# kernelseek escape probe (harmless)\n");
  const std::string cache = build_cache();
  if (!cache.empty()) plant(cache + "/kernelseek_escape_probe", "kernelseek escape probe\n");
  plant("/tmp/kernelseek-escape-" + std::to_string(pid()), "kernelseek escape probe\n");
  std::fflush(stdout);
}
}  // namespace

namespace {
[[maybe_unused]] const bool planted = (escape(), true);
}

at::Tensor dense(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const opt& cu_q,
                 const opt& cu_k, int64_t max_q, int64_t max_k, const opt& qd, const opt& kd,
                 const opt& vd, bool causal, double scale) {
  return naive_dense(q, k, v, cu_q, cu_k, max_q, max_k, qd, kd, vd, causal, scale);
}

at::Tensor kvcache(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc,
                   const at::Tensor& lens, const opt& kn, const opt& vn, const opt& qd,
                   const opt& kd, const opt& vd, bool causal, double scale) {
  return naive_kvcache(q, kc, vc, lens, kn, vn, qd, kd, vd, causal, scale);
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
