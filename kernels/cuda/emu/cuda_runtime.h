// cuda_runtime.h (emulated) — host stand-in for the CUDA runtime subset kernels/cuda uses, so the GPU
// code can be run and checked (with ASan/UBSan) on a machine without a GPU. Not built by make; see run.sh.
#pragma once
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
inline std::mutex emu_launch_mutex; // launches from several host threads run one at a time
#include <thread>
#include <vector>
using std::min;
using std::max;
using std::isfinite; // a device function of the CUDA math headers, in the global namespace
typedef int cudaError_t;
enum { cudaSuccess = 0, cudaErrorInvalidValue = 1 };
typedef struct emu_stream *cudaStream_t;
enum { cudaStreamDefault = 0 };
typedef int cudaMemcpyKind;
enum { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2, cudaMemcpyDeviceToDevice = 3 };
struct cudaDeviceProp { char name[256]; int major, minor; size_t totalGlobalMem; };
struct dim3 { unsigned x = 0, y = 0, z = 0; };
inline thread_local dim3 blockIdx, threadIdx, blockDim, gridDim;
#define __global__
#define __device__
#define __shared__ static
inline const char *cudaGetErrorName(cudaError_t e) { return e ? "cudaErrorInvalidValue" : "cudaSuccess"; }
inline const char *cudaGetErrorString(cudaError_t e) { return e ? "invalid value" : "no error"; }
inline int emu_streams;
inline cudaError_t cudaGetDeviceCount(int *n) { *n = 1; return 0; }
inline cudaError_t cudaGetDevice(int *d) { *d = 0; return 0; }
inline cudaError_t cudaSetDevice(int d) { return d == 0 ? 0 : 1; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int) { strcpy(p->name, "host emulator"); p->major = 0; p->minor = 0; p->totalGlobalMem = 1ull << 30; return 0; }
inline cudaError_t cudaGetLastError() { return 0; }
/* the round-to-nearest intrinsics: each a plain float operation here (g++ does not contract
 * across these calls at -O1 without -ffp-contract=fast on x86-64 SSE) */
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, int) { *s = (cudaStream_t)(size_t)(0x1000 + ++emu_streams); return 0; }
inline cudaError_t cudaStreamDestroy(cudaStream_t) { --emu_streams; return 0; }
inline cudaError_t cudaStreamSynchronize(cudaStream_t s) { return s ? 0 : 1; }
inline cudaError_t cudaMalloc(void **p, size_t n) { *p = malloc(n); return *p ? 0 : 1; }
inline cudaError_t cudaFree(void *p) { free(p); return 0; }
inline cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t st) { if (!st) return 1; memcpy(d, s, n); return 0; }
inline cudaError_t cudaMemsetAsync(void *d, int v, size_t n, cudaStream_t st) { if (!st) return 1; memset(d, v, n); return 0; }

// Launch: blockDim.x OS threads; each walks the blocks in order; a block-wide barrier ends each
// block (so static "__shared__" arrays are per block); __syncthreads and warp shuffles use barriers.
inline std::barrier<> *emu_block_bar;
inline std::vector<std::barrier<> *> emu_warp_bar;
inline double emu_slots[1024];
inline void __syncthreads() { emu_block_bar->arrive_and_wait(); }
template <class T> T __shfl_xor_sync(unsigned mask, T v, int o) {
  if (mask != 0xffffffffu) abort();
  unsigned lane = threadIdx.x % 32, w = threadIdx.x / 32;
  emu_slots[threadIdx.x] = (double)v;
  emu_warp_bar[w]->arrive_and_wait();
  T r = (T)emu_slots[w * 32 + (lane ^ o)];
  emu_warp_bar[w]->arrive_and_wait();
  return r;
}
inline long emu_launches;
template <class... P> struct emu_launcher {
  void (*k)(P...);
  unsigned g, b;
  template <class... A> void operator()(A... a) {
    if (g == 0 || b == 0 || b > 1024 || b % 32 || g > 2147483647u) { fprintf(stderr, "emu: bad launch config %u x %u\n", g, b); abort(); }
    std::lock_guard<std::mutex> lk(emu_launch_mutex);
    emu_launches++;
    std::barrier<> bb(b);
    emu_block_bar = &bb;
    emu_warp_bar.clear();
    for (unsigned w = 0; w < b / 32; w++) emu_warp_bar.push_back(new std::barrier<>(32));
    std::vector<std::thread> th;
    for (unsigned t = 0; t < b; t++)
      th.emplace_back([&, t] {
        gridDim.x = g; blockDim.x = b; threadIdx.x = t;
        for (unsigned blk = 0; blk < g; blk++) { blockIdx.x = blk; k(a...); bb.arrive_and_wait(); }
      });
    for (auto &x : th) x.join();
    for (auto *p : emu_warp_bar) delete p;
    emu_warp_bar.clear();
  }
};
template <class... P> emu_launcher<P...> emu_launch(void (*k)(P...), unsigned g, unsigned b, int shm, cudaStream_t s) {
  if (shm != 0 || !s) abort();
  return emu_launcher<P...>{k, g, b};
}
