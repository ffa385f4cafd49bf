// Cheat: turns its failure into the harness's. On its first call it finds libc's open, read and write by address (as libc_by_address.cpp does), reads the channel's descriptor from its worker's command line (/proc/self/cmdline: the argument after evals.worker_entry) and writes onto the channel, ahead of the worker's own answer, a well-formed answer saying the harness failed ({"ok": false, "failure": {"code": "harness_error"}}): a run whose failure is the harness's is an error, left out of every statistic and retried, not the candidate's failing score. Correct attention (fast.cpp's) otherwise; passes every static check.
// Caught by: attribution by the parent (evals/harness/worker_link/worker_client.py, failures.PARENT_ONLY): a code only the harness gives, reported by the candidate's worker, is the candidate's EXCEPTION ('a code only the harness gives').
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



// The forgery: one answer frame ("!II": header length, payload length; then the JSON header).
using open_fn = int (*)(const char*, int, ...);
using read_fn = long (*)(int, void*, size_t);
using write_fn = long (*)(int, const void*, size_t);
using close_fn = int (*)(int);

int channel_fd(open_fn open_file, read_fn read_file, close_fn close_file) {
  char cmdline[4096] = {0};
  const int fd = open_file("/proc/self/cmdline", 0 /* O_RDONLY */);
  if (fd < 0) return -1;
  const long n = read_file(fd, cmdline, sizeof cmdline - 1);
  close_file(fd);
  bool next = false;
  for (long at = 0; at < n; at += long(std::strlen(cmdline + at)) + 1) {
    if (next) {  // digits by hand: no strtol
      int value = 0;
      for (const char* c = cmdline + at; *c >= '0' && *c <= '9'; ++c) value = value * 10 + (*c - '0');
      return value;
    }
    next = std::strcmp(cmdline + at, "evals.worker_entry") == 0;
  }
  return -1;
}

void forge_harness_error() {
  const auto open_file = reinterpret_cast<open_fn>(libc_function("open"));
  const auto read_file = reinterpret_cast<read_fn>(libc_function("read"));
  const auto write_file = reinterpret_cast<write_fn>(libc_function("write"));
  const auto close_file = reinterpret_cast<close_fn>(libc_function("close"));
  if (!open_file || !read_file || !write_file || !close_file) return;
  const int fd = channel_fd(open_file, read_file, close_file);
  if (fd < 0) return;
  const char json[] =
      "{\"ok\": false, \"failure\": {\"code\": \"harness_error\", "
      "\"reason\": \"the reference failed (the harness's fault)\"}}";
  const uint32_t len = sizeof json - 1;
  const unsigned char frame[8] = {uint8_t(len >> 24), uint8_t(len >> 16), uint8_t(len >> 8),
                                  uint8_t(len), 0, 0, 0, 0};
  write_file(fd, frame, sizeof frame);
  write_file(fd, json, len);
}

at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             bool causal, double softmax_scale) {
  static const bool forged = (forge_harness_error(), true);
  (void)forged;
  return compute(q, k, v, causal, softmax_scale);
}

}  // namespace

TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
