// cuda_runtime.h (emulated) — host stand-in for the CUDA runtime subset kernels/cuda uses, so the GPU
// code can be run and checked (with ASan/UBSan) on a machine without a GPU. Not built by make; see run.sh.
// The host API part (devices, streams, memory) is C as well as C++, for the C files that call it
// (src/coll/coll_nccl.c with the nccl.h stand-in, built by make as $(BUILD)/nccl-emu/pdl); the kernel
// launch part below it is C++ only. One device, whose "device memory" is host memory; none when
// CUDA_VISIBLE_DEVICES is set and empty, as with the real runtime.
#pragma once
#ifdef __cplusplus
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <functional>
#include <mutex>
inline std::mutex emu_launch_mutex; // launches from several host threads run one at a time
#include <thread>
#include <vector>
using std::min;
using std::max;
using std::isfinite; // a device function of the CUDA math headers, in the global namespace
#define EMU_API inline
#define EMU_VAR inline
#else
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define EMU_API static inline
#define EMU_VAR static
#endif
#include <time.h>
#include <unistd.h>
#ifdef __cplusplus
/* Graph capture (C++ only): while a thread captures, the queued work (launches, GEMMs, cuDNN
 * calls, memsets, device copies) is recorded into the graph instead of run, and anything that
 * would wait for the device, allocate or free, or copy between host and device aborts naming it
 * (on a GPU these fail the capture). cudaGraphLaunch runs the recorded work in order. */
inline thread_local std::vector<std::function<void()>> *emu_capture;
inline void emu_capture_refuse(const char *what) {
  if (!emu_capture) return;
  fprintf(stderr, "emu: %s during graph capture (a captured step must not wait, allocate or copy to/from the host)\n", what);
  abort();
}
#define EMU_RECORD(...) do { if (emu_capture) { emu_capture->push_back(__VA_ARGS__); return 0; } } while (0)
#define EMU_REFUSE(what) emu_capture_refuse(what)
#else
#define EMU_RECORD(...) do { } while (0)
#define EMU_REFUSE(what) do { } while (0)
#endif
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorNoDevice = 100 };
typedef struct emu_stream *cudaStream_t;
enum { cudaStreamDefault = 0, cudaStreamNonBlocking = 1 };
typedef int cudaMemcpyKind;
enum { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };
struct cudaDeviceProp { char name[256]; int major, minor; size_t totalGlobalMem; };
EMU_API const char *cudaGetErrorName(cudaError_t e) { return e == cudaErrorNoDevice ? "cudaErrorNoDevice" : e ? "cudaErrorInvalidValue" : "cudaSuccess"; }
EMU_API const char *cudaGetErrorString(cudaError_t e) { return e == cudaErrorNoDevice ? "no CUDA-capable device is detected" : e ? "invalid value" : "no error"; }
EMU_VAR int emu_streams;
EMU_API int emu_no_device(void) { const char *v = getenv("CUDA_VISIBLE_DEVICES"); return v && !*v; }
EMU_API cudaError_t cudaGetDeviceCount(int *n) { if (emu_no_device()) { *n = 0; return cudaErrorNoDevice; } *n = 1; return 0; }
EMU_API cudaError_t cudaGetDevice(int *d) { *d = 0; return 0; }
EMU_API cudaError_t cudaSetDevice(int d) { return d == 0 ? 0 : 1; }
EMU_API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d) { (void)d; strcpy(p->name, "host emulator"); p->major = 0; p->minor = 0; p->totalGlobalMem = 1ull << 30; return 0; }
/* every process has its own emulated device (its own memory), so its own bus id */
EMU_API cudaError_t cudaDeviceGetPCIBusId(char *bus, int len, int d) { if (d != 0 || len < 1) return 1; snprintf(bus, (size_t)len, "emu:%ld", (long)getpid()); return 0; }
EMU_API cudaError_t cudaGetLastError(void) { return 0; }
/* the emulated device's memory is the host's: report the 1 GiB of cudaGetDeviceProperties, all free
 * (PDL_EMU_FREE_MIB overrides the free figure, for tests of a device that is short of memory) */
EMU_API cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total) {
  const char *v = getenv("PDL_EMU_FREE_MIB");
  *total = 1ull << 30; *free_b = v && *v ? (size_t)strtoull(v, NULL, 10) << 20 : *total;
  return 0;
}
EMU_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, int f) { (void)f; *s = (cudaStream_t)(size_t)(0x1000 + ++emu_streams); return 0; }
EMU_API cudaError_t cudaStreamDestroy(cudaStream_t s) { (void)s; --emu_streams; return 0; }
EMU_API cudaError_t cudaStreamSynchronize(cudaStream_t s) { EMU_REFUSE("cudaStreamSynchronize"); return s ? 0 : 1; }
/* NaN-filled, as uninitialised device memory may hold anything: a read before a write shows */
EMU_API cudaError_t cudaMalloc(void **p, size_t n) {
  EMU_REFUSE("cudaMalloc");
  *p = malloc(n);
  if (!*p) return 1;
  memset(*p, 0xff, n); /* 0xffffffff: a quiet NaN as a float, -1 as an int */
  return 0;
}
EMU_API cudaError_t cudaFree(void *p) { EMU_REFUSE("cudaFree"); free(p); return 0; }
EMU_API cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind k, cudaStream_t st) {
  if (!st) return 1;
  if (k != cudaMemcpyDeviceToDevice) EMU_REFUSE(k == cudaMemcpyHostToDevice ? "a host-to-device copy" : "a device-to-host copy");
  EMU_RECORD([=] { memcpy(d, s, n); });
  memcpy(d, s, n);
  return 0;
}
/* events: the host clock at the record (launches run before they return, so that is when the work
 * queued before it was done) */
typedef struct emu_event { double t; int recorded; } *cudaEvent_t;
EMU_API double emu_now_ms(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6; }
EMU_API cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = (cudaEvent_t)calloc(1, sizeof(struct emu_event)); return *e ? 0 : 1; }
EMU_API cudaError_t cudaEventDestroy(cudaEvent_t e) { free(e); return 0; }
EMU_API cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { if (!e || !s) return 1; e->t = emu_now_ms(); e->recorded = 1; return 0; }
EMU_API cudaError_t cudaEventSynchronize(cudaEvent_t e) { EMU_REFUSE("cudaEventSynchronize"); return e && e->recorded ? 0 : 1; }
EMU_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) { if (!a || !b || !a->recorded || !b->recorded) return 1; *ms = (float)(b->t - a->t); return 0; }
EMU_API cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t st) { if (!st) return 1; EMU_RECORD([=] { memset(d, v, n); }); memset(d, v, n); return 0; }

#ifdef __cplusplus
struct dim3 { unsigned x = 0, y = 0, z = 0; };
inline thread_local dim3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __shared__ static
/* the round-to-nearest intrinsics: each a plain float operation here (g++ does not contract
 * across these calls at -O1 without -ffp-contract=fast on x86-64 SSE) */
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return sqrtf(a); }

// Launch: blockDim.x fibers (ucontext) on the launching host thread, run round-robin by a small
// scheduler; each fiber is one CUDA thread and walks the blocks in order; a block-wide barrier
// ends each block (so static "__shared__" arrays are per block); __syncthreads and warp shuffles
// are barriers at which a fiber yields until every member has arrived. One OS thread per CUDA
// thread (the first cut) spent most of make test's emulator time in the kernel (sys time).
// Under ASan the stack switches are announced (__sanitizer_*_switch_fiber).
#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define EMU_ASAN 1
#else
#define EMU_ASAN 0
#endif
struct emu_bar { unsigned n = 0, count = 0; unsigned long gen = 0; };
// A fiber is entered once in its life through its ucontext (getcontext, makecontext, setcontext:
// two signal-mask system calls) and switched from then on with _setjmp/_longjmp, which save no
// signal mask: swapcontext's two sigprocmask calls per switch were most of the emulator's time
// (system time). Fibers outlive launches: at the end of its blocks a fiber yields to the
// scheduler like at a barrier, and the next launch on the same host thread resumes it there, to
// run that launch's body (emu_fiber_main's loop); so a launch costs no system call at all (a
// fresh ucontext per fiber per launch was two, ~500 per launch of 256 threads). Each host thread
// has its own fibers (thread_local), so a fiber only ever runs on the thread whose stack it
// returns to, and thread-local addresses it computed stay valid across its yields.
struct emu_fiber { ucontext_t ctx; jmp_buf jb; char *stack = nullptr; unsigned tid = 0, bid = 0; bool done = false, started = false; void *fake = nullptr; };
inline constexpr size_t emu_stack_size = 256 * 1024;
inline thread_local jmp_buf emu_sched_jb;
inline thread_local emu_fiber *emu_cur;
inline thread_local const void *emu_sched_bottom;
inline thread_local size_t emu_sched_size;
inline thread_local std::function<void()> *emu_body;
inline emu_bar emu_block_bar;
inline std::vector<emu_bar> emu_warp_bar;
// this host thread's fibers, kept between launches (stable addresses: a ucontext points into itself)
struct emu_fiber_pool {
  std::vector<emu_fiber *> f;
  ~emu_fiber_pool() { for (emu_fiber *x : f) { munmap(x->stack, emu_stack_size); delete x; } }
};
inline thread_local emu_fiber_pool emu_fibers;
inline double emu_slots[1024];
inline void emu_yield() {   // fiber -> scheduler
  emu_fiber *f = emu_cur;
#if EMU_ASAN
  __sanitizer_start_switch_fiber(&f->fake, emu_sched_bottom, emu_sched_size);
#endif
  if (!_setjmp(f->jb)) _longjmp(emu_sched_jb, 1);
#if EMU_ASAN
  __sanitizer_finish_switch_fiber(f->fake, nullptr, nullptr);
#endif
}
inline void emu_arrive(emu_bar &b) {
  const unsigned long g = b.gen;
  if (++b.count == b.n) { b.count = 0; b.gen++; return; }
  while (b.gen == g) emu_yield();
}
// A kernel that reached no barrier of its own (__syncthreads, a warp shuffle) in a launch is run
// without fibers from then on: each block's threads one after another, as plain calls, which is
// exact for threads that never wait for each other (the fast path; make test's emulator time went
// mostly into one fiber switch per thread per block). Should such a kernel reach a barrier in a
// later launch, the emulator stops with a message instead of computing something else.
inline thread_local bool emu_plain;
inline unsigned long emu_kernel_barriers;   // barriers the kernel itself reached in this launch
inline void emu_user_barrier() {
  if (emu_plain) {
    fprintf(stderr, "emu: a kernel reached a barrier in a launch run without fibers (it reached none in an earlier launch)\n");
    abort();
  }
  emu_kernel_barriers++;
}
inline void __syncthreads() { emu_user_barrier(); emu_arrive(emu_block_bar); }
template <class T> T __shfl_xor_sync(unsigned mask, T v, int o) {
  if (mask != 0xffffffffu) abort();
  emu_user_barrier();
  unsigned lane = threadIdx.x % 32, w = threadIdx.x / 32;
  emu_slots[threadIdx.x] = (double)v;
  emu_arrive(emu_warp_bar[w]);
  T r = (T)emu_slots[w * 32 + (lane ^ o)];
  emu_arrive(emu_warp_bar[w]);
  return r;
}
inline void emu_fiber_main() {
#if EMU_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &emu_sched_bottom, &emu_sched_size);
#endif
  for (;;) {   // one pass per launch that uses this fiber (emu_body is that launch's)
    (*emu_body)();
    emu_cur->done = true;
    emu_yield();   // to the scheduler, which sees done; the next launch resumes here
  }
}
// Scheduler -> fiber f until it yields or ends (its own function: _setjmp returns twice, so the
// scheduler's loop keeps no locals across it). The first entry is setcontext into makecontext's.
__attribute__((noinline)) inline void emu_resume(emu_fiber &f) {
  void *fake = nullptr;
  (void)fake;   // used only under ASan
#if EMU_ASAN
  __sanitizer_start_switch_fiber(&fake, f.stack, emu_stack_size);
#endif
  if (!_setjmp(emu_sched_jb)) {
    if (!f.started) { f.started = true; setcontext(&f.ctx); }
    _longjmp(f.jb, 1);
  }
#if EMU_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
}
// Fiber f as CUDA thread t: a new one at the start of emu_fiber_main (getcontext returns twice
// too), one that ran before where it yielded at the end of its last launch.
__attribute__((noinline)) inline void emu_prepare(emu_fiber &f, unsigned t) {
  f.tid = t; f.bid = 0; f.done = false;
  if (f.started) return;
  f.fake = nullptr;
  getcontext(&f.ctx);
  f.ctx.uc_stack.ss_sp = f.stack; f.ctx.uc_stack.ss_size = emu_stack_size; f.ctx.uc_link = nullptr;
  makecontext(&f.ctx, emu_fiber_main, 0);
}
// Runs fibers 0..b-1 round-robin until every one has finished its blocks.
inline void emu_schedule(unsigned b) {
  for (unsigned t = 0; t < b; t++) emu_prepare(*emu_fibers.f[t], t);
  for (unsigned alive = b; alive;) {
    alive = 0;
    for (unsigned t = 0; t < b; t++) {
      emu_fiber &f = *emu_fibers.f[t];
      if (f.done) continue;
      emu_cur = &f; threadIdx.x = f.tid; blockIdx.x = f.bid;
      emu_resume(f);
      if (!f.done) { f.bid = blockIdx.x; alive++; }
    }
  }
}
inline long emu_launches;
inline std::map<void (*)(), bool> emu_barrier_free;   // per kernel: its last fiber launch reached no barrier
template <class... P> struct emu_launcher {
  void (*k)(P...);
  unsigned g, b;
  template <class... A> void operator()(A... a) {
    if (g == 0 || b == 0 || b > 1024 || b % 32 || g > 2147483647u) { fprintf(stderr, "emu: bad launch config %u x %u\n", g, b); abort(); }
    if (emu_capture) { emu_launcher l = *this; emu_capture->push_back([l, a...]() mutable { l(a...); }); return; }
    std::lock_guard<std::mutex> lk(emu_launch_mutex);
    emu_launches++;
    const dim3 saved_t = threadIdx, saved_b = blockIdx, saved_bd = blockDim, saved_g = gridDim;
    gridDim.x = g; blockDim.x = b;
    const auto key = reinterpret_cast<void (*)()>(k);
    if (emu_barrier_free[key]) {   // the fast path (above)
      emu_plain = true;
      for (unsigned blk = 0; blk < g; blk++) { blockIdx.x = blk; for (unsigned t = 0; t < b; t++) { threadIdx.x = t; k(a...); } }
      emu_plain = false;
      threadIdx = saved_t; blockIdx = saved_b; blockDim = saved_bd; gridDim = saved_g;
      return;
    }
    emu_kernel_barriers = 0;
    emu_block_bar = emu_bar{b, 0, 0};
    emu_warp_bar.assign(b / 32, emu_bar{32, 0, 0});
    while (emu_fibers.f.size() < b) {
      void *st = mmap(nullptr, emu_stack_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (st == MAP_FAILED) { fprintf(stderr, "emu: cannot map a fiber stack\n"); abort(); }
      emu_fibers.f.push_back(new emu_fiber);
      emu_fibers.f.back()->stack = (char *)st;
    }
    std::function<void()> body = [&] {
      for (unsigned blk = 0; blk < g; blk++) { blockIdx.x = emu_cur->bid = blk; k(a...); emu_arrive(emu_block_bar); }
    };
    emu_body = &body;
    emu_schedule(b);
    emu_barrier_free[key] = emu_kernel_barriers == 0;
    threadIdx = saved_t; blockIdx = saved_b; blockDim = saved_bd; gridDim = saved_g;
  }
};
typedef struct emu_graph { std::vector<std::function<void()>> ops; } *cudaGraph_t, *cudaGraphExec_t;
enum { cudaStreamCaptureModeGlobal = 0, cudaStreamCaptureModeThreadLocal = 1, cudaStreamCaptureModeRelaxed = 2 };
inline thread_local emu_graph *emu_capturing_graph;
inline cudaError_t cudaStreamBeginCapture(cudaStream_t s, int mode) {
  if (!s || emu_capture) return 1;
  (void)mode;
  emu_capturing_graph = new emu_graph;
  emu_capture = &emu_capturing_graph->ops;
  return 0;
}
inline cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) {
  if (!s || !emu_capture) return 1;
  *g = emu_capturing_graph;
  emu_capture = nullptr;
  emu_capturing_graph = nullptr;
  return 0;
}
inline cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags) {
  (void)flags; *e = new emu_graph(*g); return 0;
}
inline cudaError_t cudaGraphDestroy(cudaGraph_t g) { delete g; return 0; }
inline cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) { delete e; return 0; }
inline long emu_graph_launches;
inline cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
  if (!e || !s) return 1;
  emu_capture_refuse("cudaGraphLaunch");
  emu_graph_launches++;
  for (auto &op : e->ops) op();
  return 0;
}
template <class... P> emu_launcher<P...> emu_launch(void (*k)(P...), unsigned g, unsigned b, int shm, cudaStream_t s) {
  if (shm != 0 || !s) abort();
  return emu_launcher<P...>{k, g, b};
}
#endif  // __cplusplus
