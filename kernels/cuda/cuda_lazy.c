/* cuda_lazy.c — cuBLAS and cuSOLVER loaded on first use, not at program start.
 *
 * Why: libcublas (with libcublasLt) and libcusolver (with libcusparse and libnvJitLink) carry about
 * half a million relative relocations; linked normally, the dynamic loader applies them on every
 * start of every pdl binary, GPU or not: ~0.15 s of system time and ~38,000 page faults before
 * main() on the AMD EPYC dev machine (`pdl --help`: 0.17 s, of which 0.16 s these two), paid
 * ~900 times by `make test`, almost always by runs that never touch a GPU. libcudart, libcudnn
 * and libnccl stay linked: each costs a few hundred page faults (cuDNN 9 loads its engines itself).
 *
 * How: this file defines the cuBLAS/cuSOLVER entry points kernels/cuda uses, with the headers'
 * own prototypes (a mismatch fails to compile), so the call sites are unchanged and the Makefile
 * simply stops linking -lcublas -lcusolver. The first call of any of them dlopen()s the library
 * (the soname of the headers we were compiled against; the search uses the binary's RUNPATH, i.e.
 * $(CUDA_HOME)/lib64) and looks the symbol up; later calls go straight through the cached pointer.
 * A library that cannot be loaded stops the program with one line naming it and dlerror()'s
 * reason, at the first GPU call, never at start-up. The emulator (kernels/cuda/emu) does not use
 * this file: it has its own cuBLAS and cuSOLVER. A new cuBLAS or cuSOLVER function used in
 * kernels/cuda is one LAZY line below (the link fails with an undefined symbol until it is).
 * pdl links with -rdynamic, so these definitions are also the global ones: a library loaded later
 * that calls one of them (libcusolver calls cuBLAS) reaches this file, which forwards to the same
 * libcublas instance (dlsym on its handle finds the library's own definition, never this one). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <cublas_v2.h>
#if defined(PDL_HAVE_CUSOLVER)
#include <cusolverDn.h>
#endif

#define LAZY_STR2(x) #x
#define LAZY_STR(x) LAZY_STR2(x)

typedef struct {
  const char *soname;
  pthread_once_t once;
  void *handle;
  char why[512];
} lazy_lib_t;

static lazy_lib_t lib_cublas = {"libcublas.so." LAZY_STR(CUBLAS_VER_MAJOR), PTHREAD_ONCE_INIT, NULL, ""};
#if defined(PDL_HAVE_CUSOLVER)
static lazy_lib_t lib_cusolver = {"libcusolver.so." LAZY_STR(CUSOLVER_VER_MAJOR), PTHREAD_ONCE_INIT, NULL, ""};
#endif

static void open_cublas(void) {
  lib_cublas.handle = dlopen(lib_cublas.soname, RTLD_NOW | RTLD_LOCAL);
  if (!lib_cublas.handle) snprintf(lib_cublas.why, sizeof lib_cublas.why, "%s", dlerror());
}
#if defined(PDL_HAVE_CUSOLVER)
static void open_cusolver(void) {
  lib_cusolver.handle = dlopen(lib_cusolver.soname, RTLD_NOW | RTLD_LOCAL);
  if (!lib_cusolver.handle) snprintf(lib_cusolver.why, sizeof lib_cusolver.why, "%s", dlerror());
}
#endif

/* The address of `name` in lib (opened once, thread-safely); exits naming the library on failure. */
static void *lazy_sym(lazy_lib_t *lib, void (*open_fn)(void), const char *name) {
  pthread_once(&lib->once, open_fn);
  if (!lib->handle) {
    fprintf(stderr, "pdl: cannot load %s for %s (%s): the CUDA toolkit's libraries must be installed where pdl was "
            "built against them (CUDA_HOME/lib64) or on LD_LIBRARY_PATH\n", lib->soname, name, lib->why);
    exit(1);
  }
  dlerror();
  void *p = dlsym(lib->handle, name);
  if (!p) {
    fprintf(stderr, "pdl: %s has no symbol %s (%s): a different major version than pdl was built against?\n",
            lib->soname, name, dlerror());
    exit(1);
  }
  return p;
}

/* LAZY(lib, open, ret, name, (params), (args)): defines name with the header's prototype. The
 * cached pointer is read and written atomically (threads may race to the first call). */
#define LAZY(lib, open, ret, name, params, args)                                                 \
  ret name params {                                                                            \
    static ret(*fp) params;                                                                    \
    ret(*f) params = __atomic_load_n(&fp, __ATOMIC_ACQUIRE);                                   \
    if (!f) {                                                                                  \
      f = (ret(*) params)lazy_sym(&lib, open, #name);                                          \
      __atomic_store_n(&fp, f, __ATOMIC_RELEASE);                                              \
    }                                                                                          \
    return f args;                                                                             \
  }

#define CB(ret, name, params, args) LAZY(lib_cublas, open_cublas, ret, name, params, args)
CB(cublasStatus_t, cublasCreate_v2, (cublasHandle_t *h), (h))
CB(cublasStatus_t, cublasDestroy_v2, (cublasHandle_t h), (h))
CB(const char *, cublasGetStatusName, (cublasStatus_t s), (s))
CB(const char *, cublasGetStatusString, (cublasStatus_t s), (s))
CB(cublasStatus_t, cublasSetMathMode, (cublasHandle_t h, cublasMath_t m), (h, m))
CB(cublasStatus_t, cublasSetPointerMode_v2, (cublasHandle_t h, cublasPointerMode_t m), (h, m))
CB(cublasStatus_t, cublasSetStream_v2, (cublasHandle_t h, cudaStream_t s), (h, s))
CB(cublasStatus_t, cublasSetWorkspace_v2, (cublasHandle_t h, void *w, size_t bytes), (h, w, bytes))
CB(cublasStatus_t, cublasSgemm_v2,
   (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float *alpha,
    const float *A, int lda, const float *B, int ldb, const float *beta, float *C, int ldc),
   (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))

#if defined(PDL_HAVE_CUSOLVER)
#define CS(ret, name, params, args) LAZY(lib_cusolver, open_cusolver, ret, name, params, args)
CS(cusolverStatus_t, cusolverDnCreate, (cusolverDnHandle_t *h), (h))
CS(cusolverStatus_t, cusolverDnDestroy, (cusolverDnHandle_t h), (h))
CS(cusolverStatus_t, cusolverDnSetStream, (cusolverDnHandle_t h, cudaStream_t s), (h, s))
CS(cusolverStatus_t, cusolverDnSpotrf_bufferSize,
   (cusolverDnHandle_t h, cublasFillMode_t uplo, int n, float *A, int lda, int *lwork), (h, uplo, n, A, lda, lwork))
CS(cusolverStatus_t, cusolverDnSpotrf,
   (cusolverDnHandle_t h, cublasFillMode_t uplo, int n, float *A, int lda, float *work, int lwork, int *info),
   (h, uplo, n, A, lda, work, lwork, info))
CS(cusolverStatus_t, cusolverDnSpotri_bufferSize,
   (cusolverDnHandle_t h, cublasFillMode_t uplo, int n, float *A, int lda, int *lwork), (h, uplo, n, A, lda, lwork))
CS(cusolverStatus_t, cusolverDnSpotri,
   (cusolverDnHandle_t h, cublasFillMode_t uplo, int n, float *A, int lda, float *work, int lwork, int *info),
   (h, uplo, n, A, lda, work, lwork, info))
#endif
