/* bench/core/blas_shapes.c — OpenBLAS vs BLIS on the core's GEMM shapes, one thread (issue 19:
 * "take BLIS where it wins"). The same source is linked against each library, so no binary holds
 * both; run them one after the other on a quiet machine:
 *   gcc -O2 bench/core/blas_shapes.c -o /tmp/gs_openblas -lopenblas
 *   gcc -O2 -I/usr/include/x86_64-linux-gnu/blis-openmp bench/core/blas_shapes.c -o /tmp/gs_blis \
 *       -L/usr/lib/x86_64-linux-gnu/blis-openmp -lblis -fopenmp        (apt-get install libblis-dev)
 *   OPENBLAS_NUM_THREADS=1 /tmp/gs_openblas openblas; OMP_NUM_THREADS=1 /tmp/gs_blis blis
 *   OPENBLAS_CORETYPE=Haswell ... for OpenBLAS's AVX2 kernels; BLIS_ARCH_DEBUG=1 prints the
 *   sub-configuration BLIS picked (on the KVM Xeon it picks 'haswell': "number of FMA units unknown").
 * Shapes: Winograd tile GEMMs (Co x tiles x Ci, and the NT form of the weight gradient), im2col
 * GEMMs of the reference net, and 1024^3. Best of 7 windows of 50 ms, GFLOP/s. Results and the
 * decision: docs/DESIGN.md ("BLAS"). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+1e-9*t.tv_nsec;}
int main(int argc, char **argv){
 /* M N K, trans of B: Winograd fwd (Co x T x Ci), bwd data (Ci x T x Co, A^T), wgrad (Co x Ci x T, B^T); im2col shapes; K-FAC; 1024^3 */
 int sh[][4]={{32,113,32,0},{32,113,32,1},{64,100,32,0},{64,100,64,0},{128,64,64,0},{128,200,128,0},{32,784,288,0},{128,49,576,0},{1024,1024,1024,0}};
 int ns=sizeof sh/sizeof sh[0];
 for(int s=0;s<ns;s++){int M=sh[s][0],N=sh[s][1],K=sh[s][2],tb=sh[s][3];
  float *A=malloc(4L*M*K),*B=malloc(4L*K*N),*C=malloc(4L*M*N); for(long i=0;i<(long)M*K;i++)A[i]=(i%7)*0.1f; for(long i=0;i<(long)K*N;i++)B[i]=(i%5)*0.1f;
  double best=0;
  for(int r=0;r<7;r++){int reps=0;double t0=now(),el;
   do{ if(tb) cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasTrans,M,N,K,1,A,K,B,K,1,C,N); else cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasNoTrans,M,N,K,1,A,K,B,N,1,C,N); reps++;}while((el=now()-t0)<0.05);
   double g=2.0*M*N*K*reps/el/1e9; if(g>best)best=g;}
  printf("%s M=%d N=%d K=%d %s: %.1f GFLOP/s\n", argv[1], M,N,K, tb?"NT":"NN", best); free(A);free(B);free(C);}
}
