// Cheat: at its first call finds libc's clock_gettime, mprotect and dl_iterate_phdr by address (as libc_by_address.cpp does), walks the loaded objects to libpython's GOT slot of clock_gettime and points it at its own clock, which runs at a sixth of the real pace while a call runs: time.perf_counter_ns, the worker's timer, sees every timed call at a sixth of its length (a forge claiming less than the CPU wall-clock check's 2.5x tolerance is THREATS.md's known limit: at a third this one was accepted in about half the runs). The parent's wall-clock batches would show the truth, so calls that enter within 12 us of the previous return with a new q (back to back, as only a batch makes them) skip the work and hand back the previous output's values. Correct attention (fast.cpp's) on every other call; passes every static check.
// Caught by: the probe, whose calls after its in-place rewrite run back to back (a skipped call there: STALE_RESULT, 'same data in new buffers'); the parent's check of a random call of each wall-clock batch (STALE_RESULT, 'wall-clock'); batches that did their work take the true time, which the forged sixth no longer explains (TIMING_MISMATCH); the round audit on the parent's clock. Before integrity III it was accepted at 2.2x the same kernel's geomean on smoke.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/BFloat16.h>
#include <torch/library.h>

#include <algorithm>
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


// The skip. The parent's wall-clock check makes its calls back to back: each enters a few
// microseconds after the previous one returned (2-3 us, up to ~16 us on a busy host), with a
// q of its own. A timed call follows the refill of its q and the timer's own work (over 20
// us), and the probes' repeated calls reuse the previous q. Nobody checks a batch's outputs:
// a skipped call hands back the previous output's values in a fresh tensor.
constexpr int64_t kBackToBackNs = 12000;
std::vector<unsigned char> last_output;  // the bytes of the last output computed
const void* last_q = nullptr;
int64_t last_return_ns = 0;

bool back_to_back(const at::Tensor& q, int64_t entry_ns) {
  return last_return_ns != 0 && entry_ns - last_return_ns < kBackToBackNs &&
         q.data_ptr() != last_q && q.nbytes() == last_output.size();
}

at::Tensor replay(const at::Tensor& q) {
  // the tests' record of a skipped call (a busy host may give it none to skip)
  std::printf("kernelseek-cheat: skipped a back-to-back call\n");
  std::fflush(stdout);
  at::Tensor out = at::empty_like(q);
  std::memcpy(out.data_ptr(), last_output.data(), last_output.size());
  return out;
}

at::Tensor remember(at::Tensor out) {
  const auto* bytes = static_cast<const unsigned char*>(out.data_ptr());
  last_output.assign(bytes, bytes + out.nbytes());
  return out;
}

// The forged clock. Python's time.perf_counter_ns (the worker's CPU timer) calls libc's
// clock_gettime(CLOCK_MONOTONIC) through libpython's GOT slot; that slot now leads here. While
// a call runs the clock goes at a sixth of the real one's pace, so a timed call measures a
// sixth of what it took; between calls it keeps the real pace (never goes backwards).
struct Clock { int64_t sec, nsec; };  // struct timespec
using clock_fn = int (*)(int, Clock*);
clock_fn real_clock = nullptr;
int64_t held_ns = 0;        // what the forged clock has held back over the calls so far
int64_t call_start_ns = 0;  // real time the running call began; 0 between calls

int64_t real_ns() {
  Clock c{};
  real_clock(1 /* CLOCK_MONOTONIC */, &c);
  return c.sec * 1000000000 + c.nsec;
}

int forged_clock(int id, Clock* out) {
  const int rc = real_clock(id, out);
  if (rc != 0 || id != 1) return rc;
  int64_t now = out->sec * 1000000000 + out->nsec;
  now -= held_ns + (call_start_ns != 0 ? (now - call_start_ns) * 5 / 6 : 0);
  out->sec = now / 1000000000;
  out->nsec = now % 1000000000;
  return rc;
}

// dl_iterate_phdr's view of one loaded object (the head of struct dl_phdr_info).
struct LoadedObject { uintptr_t base; const char* name; const elf::Segment* segments; uint16_t count; };
struct Rela { uint64_t offset, info; int64_t addend; };
using protect_fn = int (*)(void*, size_t, int);
protect_fn protect = nullptr;

// The python executable ("" to dl_iterate_phdr) and libpython: who calls clock_gettime for
// time.perf_counter_ns.
bool python_object(const char* name) {
  if (name == nullptr || name[0] == '\0') return true;
  for (const char* c = name; *c; ++c)
    if (std::strncmp(c, "libpython", 9) == 0) return true;
  return false;
}

// Points every GOT slot of clock_gettime in a python object (lazy JUMP_SLOT in DT_JMPREL,
// GLOB_DAT in DT_RELA) at the forged clock; a read-only (RELRO) page is made writable first.
int patch_object(LoadedObject* object, size_t, void* patched) {
  if (!python_object(object->name)) return 0;
  const elf::Dynamic* dyn = nullptr;
  for (int i = 0; i < object->count; ++i)
    if (object->segments[i].type == 2) dyn = reinterpret_cast<const elf::Dynamic*>(object->base + object->segments[i].vaddr);
  auto at = [object](uint64_t p) { return p < object->base ? object->base + p : p; };
  const Rela* tables[2] = {nullptr, nullptr};
  uint64_t sizes[2] = {0, 0};
  const elf::Symbol* symbols = nullptr;
  const char* strings = nullptr;
  for (; dyn != nullptr && dyn->tag != 0; ++dyn) {  // DT_JMPREL, DT_PLTRELSZ, DT_RELA, DT_RELASZ
    if (dyn->tag == 23) tables[0] = reinterpret_cast<const Rela*>(at(dyn->value));
    if (dyn->tag == 2) sizes[0] = dyn->value;
    if (dyn->tag == 7) tables[1] = reinterpret_cast<const Rela*>(at(dyn->value));
    if (dyn->tag == 8) sizes[1] = dyn->value;
    if (dyn->tag == 6) symbols = reinterpret_cast<const elf::Symbol*>(at(dyn->value));
    if (dyn->tag == 5) strings = reinterpret_cast<const char*>(at(dyn->value));
  }
  if (symbols == nullptr || strings == nullptr) return 0;
  for (int t = 0; t < 2; ++t) {
    for (uint64_t r = 0; tables[t] != nullptr && r < sizes[t] / sizeof(Rela); ++r) {
      const Rela& rel = tables[t][r];
      const uint32_t type = uint32_t(rel.info), symbol = uint32_t(rel.info >> 32);
      if ((type != 7 && type != 6) || std::strcmp(strings + symbols[symbol].name, "clock_gettime") != 0) continue;
      const uintptr_t slot = object->base + rel.offset;
      protect(reinterpret_cast<void*>(slot & ~uintptr_t(0xfff)), 0x1000, 3 /* PROT_READ | PROT_WRITE */);
      *reinterpret_cast<clock_fn*>(slot) = &forged_clock;
      ++*static_cast<int*>(patched);
    }
  }
  return 0;
}

bool install_forged_clock() {
  using iterate_fn = int (*)(int (*)(LoadedObject*, size_t, void*), void*);
  real_clock = reinterpret_cast<clock_fn>(libc_function("clock_gettime"));
  protect = reinterpret_cast<protect_fn>(libc_function("mprotect"));
  auto iterate = reinterpret_cast<iterate_fn>(libc_function("dl_iterate_phdr"));
  if (real_clock == nullptr || protect == nullptr || iterate == nullptr) return false;
  int patched = 0;
  iterate(&patch_object, &patched);
  std::printf("kernelseek-cheat: clock_gettime GOT slots patched = %d\n", patched);
  std::fflush(stdout);
  return patched > 0;
}

at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             bool causal, double softmax_scale) {
  static const bool forged = install_forged_clock();  // the first call: verification, untimed
  if (!forged) return compute(q, k, v, causal, softmax_scale);
  const int64_t entry = real_ns();
  call_start_ns = entry;
  at::Tensor out = back_to_back(q, entry) ? replay(q) : remember(compute(q, k, v, causal, softmax_scale));
  held_ns += (real_ns() - entry) * 5 / 6;
  call_start_ns = 0;
  last_q = q.data_ptr();
  last_return_ns = real_ns();
  return out;
}

}  // namespace

TORCH_LIBRARY(kernelseek, m) {
  m.def("attention_forward(Tensor q, Tensor k, Tensor v, bool causal, float softmax_scale) -> Tensor");
}

TORCH_LIBRARY_IMPL(kernelseek, CPU, m) { m.impl("attention_forward", &attention_forward); }
