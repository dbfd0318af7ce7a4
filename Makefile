# pdlbench — the one entry point. See README.md.
#   make            deps check (ci/install-deps.sh), then build bin/pdl, build/libpdlsim.so (when
#                   SimGrid is present) and the unit tests; `make build` skips the deps check
#   make test       deps, build, unit + MPI + sim tests, QUICK benches, regression gate
#   make deps       check/install the Debian packages (ci/install-deps.sh)
#   make asan/tsan  unit/threaded tests under sanitizers;  make clean
#   make report     plots, docs/REPRODUCTION.md and the one HTML page results/report/index.html
# Options: NO_CUDA=1, NO_MPI=1, NO_SCALAPACK=1 force optional parts off; QUICK=1, FORCE=1, ONLY="step ..." for bench-*.
SHELL := /bin/bash
.DEFAULT_GOAL := all
BUILD ?= build
SAN ?=
CUDA_HOME ?= /usr/local/cuda
PY_TORCH ?= /usr/bin/python3
# GPU code: SASS for every architecture of this list that the installed nvcc knows (`nvcc
# --list-gpu-arch`), sm_90 (H100/H200) always among them, plus PTX of the newest one for GPUs
# newer than the toolkit's list; so any CUDA 12.x or 13.x toolkit builds. Override with e.g.
# NVCC_ARCH=-arch=native.
NVCC_WANT_ARCH ?= 75 80 86 89 90 100 120
# ---- optional parts, detected -------------------------------------------------------------
HAVE_MPI := $(if $(NO_MPI),,$(shell command -v mpicc >/dev/null 2>&1 && echo 1))
NVCC := $(if $(NO_CUDA),,$(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; }))
NVCC_LISTED := $(if $(NVCC),$(patsubst compute_%,%,$(shell $(NVCC) --list-gpu-arch 2>/dev/null)))
NVCC_SM := $(sort 90 $(filter $(NVCC_LISTED),$(NVCC_WANT_ARCH)))
NVCC_PTX := $(lastword $(shell printf "%s\n" $(NVCC_SM) | sort -n))
NVCC_ARCH ?= $(foreach a,$(NVCC_SM),-gencode arch=compute_$(a),code=sm_$(a)) -gencode arch=compute_$(NVCC_PTX),code=compute_$(NVCC_PTX)
HAVE_CUDNN := $(if $(NVCC),$(shell test -f $(CUDA_HOME)/include/cudnn.h && echo 1))
HAVE_NCCL := $(if $(NVCC),$(shell test -f $(CUDA_HOME)/include/nccl.h -o -f /usr/include/nccl.h && echo 1))
HAVE_CUSOLVER := $(if $(NVCC),$(shell test -f $(CUDA_HOME)/include/cusolverDn.h && echo 1))
HAVE_SIMGRID := $(shell test -f /usr/include/simgrid/engine.h && echo 1)
# libxsmm (libxsmm-dev): JIT kernels for the Winograd convolutions' small GEMMs (kernels/cpu/cpu_smm.c);
# NO_XSMM=1 builds without it (cblas_sgemm there; PDL_SMM=openblas picks that at run time too).
# Left out of sanitizer builds: its JIT code is not instrumented.
HAVE_XSMM := $(if $(NO_XSMM)$(SAN),,$(shell test -f /usr/include/libxsmm.h && echo 1))
# ScaLAPACK (libscalapack-openmpi-dev, MPI builds only): --kfac-split's distributed Cholesky + inverse
# (src/kfac/split_inv.c); without it the flag refuses on the real runtime, naming the package.
# NO_SCALAPACK=1 builds without it.
HAVE_SCALAPACK := $(if $(NO_SCALAPACK),,$(if $(HAVE_MPI),$(shell test -f /usr/lib/x86_64-linux-gnu/libscalapack-openmpi.so && echo 1)))
# libjpeg-turbo (libjpeg62-turbo-dev, required): the ImageNet JPEG loader (src/core/data_jpeg.c). Without its
# header the build stops at that file (jpeg-check below) naming the package, not deep in a compile.
HAVE_JPEG := $(shell test -f /usr/include/jpeglib.h && echo 1)
HAVE_GNUPLOT := $(shell command -v gnuplot >/dev/null 2>&1 && echo 1)
HAVE_TORCH := $(shell test -f /usr/lib/python3/dist-packages/torch/__init__.py && echo 1)
ifneq ($(SAN),)
  NVCC :=
  HAVE_CUDNN :=
  HAVE_NCCL :=
  HAVE_CUSOLVER :=
endif
yn = $(if $(1),yes,no)
CONFIG := mpi=$(call yn,$(HAVE_MPI)) libxsmm=$(call yn,$(HAVE_XSMM)) nvcc=$(call yn,$(NVCC)) cudnn=$(call yn,$(HAVE_CUDNN)) nccl=$(call yn,$(HAVE_NCCL)) cusolver=$(call yn,$(HAVE_CUSOLVER)) simgrid=$(call yn,$(HAVE_SIMGRID)) scalapack=$(call yn,$(HAVE_SCALAPACK)) gnuplot=$(call yn,$(HAVE_GNUPLOT)) python3-torch=$(call yn,$(HAVE_TORCH))

# The git revision goes into util.o alone (results provenance), so a commit rebuilds one file.
GIT_REV := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)

# ---- flags ----------------------------------------------------------------------------------
CC := $(if $(HAVE_MPI),mpicc,gcc)
OPT ?= -O3 -march=native
SANFLAGS_asan := -fsanitize=address,undefined -fno-omit-frame-pointer -O1 -g
SANFLAGS_tsan := -fsanitize=thread -O1 -g
SANFLAGS := $(SANFLAGS_$(SAN))
# -fno-trapping-math: nothing here relies on floating-point traps, and without it GCC will not
# vectorise a select with an arithmetic arm (leaky ReLU `x > 0 ? x : s * x` and its gradient) on
# AVX2, which has no masked multiply: it emitted scalar code with a branch per element, and the
# activations and fused conv+pool epilogues ran several times slower than with AVX-512 (issue 19).
# It changes no value: it only lets the compiler evaluate both arms.
CFLAGS := -std=c11 $(if $(SAN),$(SANFLAGS),$(OPT) -g) -fno-trapping-math -fopenmp -Wall -Wextra -Werror \
  -D_GNU_SOURCE -Isrc -Ibase -I. $(if $(HAVE_MPI),-DPDL_HAVE_MPI) $(if $(HAVE_XSMM),-DPDL_HAVE_XSMM) \
  $(if $(HAVE_SCALAPACK),-DPDL_HAVE_SCALAPACK)
DEPFLAGS = -MMD -MP
LDLIBS := $(if $(HAVE_XSMM),-lxsmm) $(if $(HAVE_SCALAPACK),-lscalapack-openmpi) -llapacke -lopenblas -ljpeg -lz -lm -lpthread -ldl
ifneq ($(NVCC),)
  CFLAGS += -DPDL_HAVE_CUDA -I$(CUDA_HOME)/include $(if $(HAVE_NCCL),-DPDL_HAVE_NCCL) \
            $(if $(HAVE_CUDNN),-DPDL_HAVE_CUDNN) $(if $(HAVE_CUSOLVER),-DPDL_HAVE_CUSOLVER)
  # cuBLAS and cuSOLVER are not linked: kernels/cuda/cuda_lazy.c dlopen()s them on first use (linked,
  # their relocations cost every pdl start ~0.15 s of system time, GPU or not); the rpath still
  # serves that dlopen
  LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lstdc++ \
            $(if $(HAVE_CUDNN),-lcudnn) $(if $(HAVE_NCCL),-lnccl)
  NVCCFLAGS := -O3 -std=c++17 $(NVCC_ARCH) -Xcompiler -fPIC -Isrc -Ibase -I. $(if $(HAVE_CUDNN),-DPDL_HAVE_CUDNN) \
            $(if $(HAVE_CUSOLVER),-DPDL_HAVE_CUSOLVER)
endif
LDFLAGS := -fopenmp -rdynamic $(SANFLAGS)
# the emulated-CUDA pdl's compiler line for kernels/cuda/*.cu (cuda-emu-pdl below)
EMU_CXX := g++ -std=c++20 -O1 -g1 -Wall -Wextra -Ikernels/cuda/emu -Isrc -Ibase -I. -DPDL_HAVE_CUDNN -DPDL_HAVE_CUSOLVER

# ---- sources --------------------------------------------------------------------------------
# Everything under base/ (the ground floor: contracts and util), src/ (except the CLI entry and the
# SimGrid runtime), kernels/cpu, kernels/phantom (the timing-only backend), reference.
LIB_C := $(filter-out src/cli/main.c src/sim/%,$(wildcard base/*/*.c src/*/*.c kernels/cpu/*.c kernels/phantom/*.c reference/*.c)) $(if $(NVCC),$(wildcard kernels/cuda/*.c))
LIB_CU := $(if $(NVCC),$(wildcard kernels/cuda/*.cu))
LIB_OBJ := $(LIB_C:%.c=$(BUILD)/obj/%.o) $(LIB_CU:%.cu=$(BUILD)/obj/%.cu.o)
SIM_C := $(wildcard src/sim/*.c)
# base/util/env.c (the environment variables' table, libc only) goes into the .so too: src/sim reads PDL_SIM_*
SIM_OBJ := $(SIM_C:%.c=$(BUILD)/obj/%.pic.o) $(BUILD)/obj/base/util/env.pic.o
TEST_C := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_C:tests/%.c=$(BUILD)/tests/%)
LIBPDL := $(BUILD)/libpdl.a
SIMLIB := $(if $(HAVE_SIMGRID),$(BUILD)/libpdlsim.so)
PDL := $(if $(SAN),$(BUILD)/pdl,bin/pdl)
# pdl with NCCL emulated (kernels/cuda/emu/nccl.h over MPI): MPI builds only, see nccl-emu below
NCCL_EMU := $(if $(HAVE_MPI),$(BUILD)/nccl-emu/pdl)
# pdl with the CUDA backend emulated (see cuda-emu-pdl below): builds with nvcc and MPI
CUDA_EMU_PDL := $(if $(NVCC),$(if $(HAVE_MPI),$(BUILD)/cuda-emu/pdl))

NPROC := $(shell nproc 2>/dev/null || echo 2)

.PHONY: all build config test test-run unit deps asan tsan clean bench bench-core bench-ppasgd \
        bench-easgd bench-collectives bench-hermans bench-gossip bench-kfac bench-gpu bench-scaling plots report regress regress-update cuda-emu \
        nccl-emu cuda-emu-pdl fuzz jpeg-check FORCE
# `make` checks the Debian packages first (as root it installs the missing ones, as `make test`
# does; otherwise it prints the exact apt-get line and stops before compiling anything), then
# builds in a fresh make so that detection sees what was installed.
all: deps
	@$(MAKE) --no-print-directory -j$(NPROC) build

build: config $(PDL) $(SIMLIB) $(TEST_BIN) $(NCCL_EMU) $(CUDA_EMU_PDL)

config:
	@echo "pdlbench: found $(CONFIG)"

# ---- configuration stamp ----------------------------------------------------------------------
# Everything that changes the generated code: what was detected (not gnuplot or python3-torch,
# which compile nothing) and the exact compiler lines.
# Rewritten only when it differs, so every object (which depends on it) rebuilds exactly when
# the configuration changed: `NO_MPI=1 make; make` gives an MPI build, not a stale mix.
CONFIG_LINE := $(filter-out gnuplot=% python3-torch=%,$(CONFIG)) | cc=$(CC) $(CFLAGS) | nvcc=$(NVCC) $(NVCCFLAGS) | ld=$(LDFLAGS) $(LDLIBS) | emu=$(EMU_CXX)
STAMP := $(BUILD)/config.stamp
$(STAMP): FORCE | $(BUILD)/.dirs
	@if [ "$$(cat $@ 2>/dev/null)" != '$(subst ','\'',$(CONFIG_LINE))' ]; then \
	  [ -f $@ ] && echo "pdlbench: configuration changed, rebuilding everything in $(BUILD)"; \
	  printf '%s\n' '$(subst ','\'',$(CONFIG_LINE))' > $@; fi
GITREV_STAMP := $(BUILD)/git-rev.stamp
$(GITREV_STAMP): FORCE | $(BUILD)/.dirs
	@[ "$$(cat $@ 2>/dev/null)" = '$(GIT_REV)' ] || echo '$(GIT_REV)' > $@
$(BUILD)/obj/base/util/util.o: $(GITREV_STAMP)
$(BUILD)/obj/base/util/util.o: CFLAGS += -DPDL_GIT_REV_DEFAULT=\"$(GIT_REV)\"
FORCE:

# ---- compile: header dependencies from the compilers (-MMD -MP), plus the stamp -------------
$(BUILD)/obj/%.o: %.c $(STAMP) | $(BUILD)/.dirs
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/obj/%.pic.o: %.c $(STAMP) | $(BUILD)/.dirs
	@mkdir -p $(dir $@)
	gcc $(filter-out -DPDL_HAVE_MPI,$(CFLAGS)) $(DEPFLAGS) -fPIC -c $< -o $@

$(BUILD)/obj/%.cu.o: %.cu $(STAMP) | $(BUILD)/.dirs
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/.dirs:
	@mkdir -p $(BUILD)/obj $(BUILD)/tests bin && touch $@

$(LIBPDL): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

LINK_LIB = -Wl,--whole-archive $(LIBPDL) -Wl,--no-whole-archive

$(PDL): $(BUILD)/obj/src/cli/main.o $(LIBPDL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(LINK_LIB) $(LDLIBS)

# The NCCL stand-in build: pdl's objects, but src/coll/coll_nccl.c compiled against the emulator's
# cuda_runtime.h and nccl.h (kernels/cuda/emu: NCCL as the same MPI calls on host memory, every
# function static inline, so nothing clashes with a real libcudart or libnccl linked beside it).
# `--coll nccl` and `pdl coll --backend nccl` run on it without a GPU; tests/t_coll_seam.sh checks
# that training on it equals --coll mpi bit for bit. One compile and one link beyond bin/pdl.
$(BUILD)/obj/nccl-emu/coll_nccl.o: src/coll/coll_nccl.c $(STAMP) | $(BUILD)/.dirs
	@mkdir -p $(dir $@)
	$(CC) -Ikernels/cuda/emu $(CFLAGS) -DPDL_HAVE_NCCL $(DEPFLAGS) -c $< -o $@

$(BUILD)/nccl-emu/pdl: $(BUILD)/obj/src/cli/main.o $(filter-out $(BUILD)/obj/src/coll/coll_nccl.o,$(LIB_OBJ)) $(BUILD)/obj/nccl-emu/coll_nccl.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# pdl with its whole CUDA backend emulated on the CPU: the .cu files through g++ with the stand-in
# CUDA, cuBLAS, cuDNN and cuSOLVER headers of kernels/cuda/emu (each kernel launch rewritten to
# emu_launch, as kernels/cuda/emu/run.sh does), coll_nccl.c on the NCCL stand-in, everything else
# bin/pdl's own objects; no libcudart, cuDNN or NCCL linked. `pdl train --device cuda` (resident
# batches, device evaluation, every optimizer), checkpoints and `pdl speed --device cuda` run end to
# end on it without a GPU: tests/t_cuda_emu_pdl.sh. Slow (every GPU thread is a fiber): tiny nets.
# Where nvcc is found (the C objects then carry PDL_HAVE_CUDA).
$(BUILD)/obj/cuda-emu/%.o: kernels/cuda/%.cu $(STAMP) | $(BUILD)/.dirs
	@mkdir -p $(dir $@)
	perl -0pe 's/(\w+(?:<\w+>)?)<<<(.*?)>>>\(/emu_launch($$1, $$2)(/gs' $< > $(@:.o=.cpp)
	$(EMU_CXX) -MMD -MP -MT $@ -MF $(@:.o=.d) -c $(@:.o=.cpp) -o $@
CUDA_EMU_OBJ := $(LIB_CU:kernels/cuda/%.cu=$(BUILD)/obj/cuda-emu/%.o)
$(BUILD)/cuda-emu/pdl: $(BUILD)/obj/src/cli/main.o $(filter-out $(BUILD)/obj/src/coll/coll_nccl.o $(BUILD)/obj/kernels/cuda/cuda_lazy.o %.cu.o,$(LIB_OBJ)) $(BUILD)/obj/nccl-emu/coll_nccl.o $(CUDA_EMU_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(filter-out -lcudart -lcudnn -lnccl,$(LDLIBS)) -lstdc++
cuda-emu-pdl: config $(CUDA_EMU_PDL)
	@$(if $(CUDA_EMU_PDL),echo "pdlbench: $(CUDA_EMU_PDL) (the CUDA backend emulated on the CPU)",echo "pdlbench: cuda-emu-pdl needs nvcc (a CUDA build's objects) and MPI" >&2; exit 1)

nccl-emu: config $(NCCL_EMU)
	@$(if $(NCCL_EMU),echo "pdlbench: $(NCCL_EMU) (NCCL emulated over MPI)",echo "pdlbench: nccl-emu needs an MPI build" >&2; exit 1)

# The sim runtime is a separate shared object: libsimgrid exports the MPI API (SMPI), so it is
# never linked into the binary that calls MPI; pdl dlopen()s it RTLD_LOCAL (see docs/SIM.md).
$(BUILD)/libpdlsim.so: $(SIM_OBJ)
	gcc -shared -fopenmp $(SANFLAGS) -o $@ $^ -lsimgrid

$(BUILD)/tests/%: tests/%.c $(LIBPDL) $(STAMP) | $(BUILD)/.dirs
	$(CC) $(CFLAGS) $(DEPFLAGS) -MF $@.d -MT $@ $(LDFLAGS) -o $@ $< $(LINK_LIB) $(LDLIBS)

-include $(shell find $(BUILD)/obj $(BUILD)/tests -name '*.d' 2>/dev/null)

# ---- set-up ---------------------------------------------------------------------------------
jpeg-check:
	@$(if $(HAVE_JPEG),true,echo "pdlbench: /usr/include/jpeglib.h not found: the JPEG loader needs libjpeg-turbo (apt-get install libjpeg62-turbo-dev, or ci/install-deps.sh as root)" >&2; exit 1)
$(BUILD)/obj/src/core/data_jpeg.o: | jpeg-check

deps:
	@NO_MPI=$(NO_MPI) bash ci/install-deps.sh

# ---- tests ----------------------------------------------------------------------------------
# deps first, then a fresh make so detection sees what deps installed.
test: deps
	@$(MAKE) --no-print-directory -j$(NPROC) build
	@$(MAKE) --no-print-directory test-run

# The gate's throughput reference (ci/perf-ref.sh) builds, niced, while the tests run. The gate's
# probes that time nothing run in the tests' pool (GATE_UNTIMED); then the gate runs the timed
# probes alone (they wait for the reference: a lock) and judges them with the others' records.
test-run: build
	@(BUILD=$(BUILD) PERF_REF_NICE=10 bash ci/perf-ref.sh >/dev/null 2>$(BUILD)/perf-ref.bg.log &)
	@PDL=$(PDL) BUILD=$(BUILD) SIMLIB=$(SIMLIB) GATE_UNTIMED=$(BUILD)/gate-untimed bash tests/run.sh
	@PDL=$(PDL) BUILD=$(BUILD) bash ci/regress.sh --untimed-from $(BUILD)/gate-untimed

unit: build
	@PDL=$(PDL) BUILD=$(BUILD) SIMLIB=$(SIMLIB) TESTS_ONLY=unit bash tests/run.sh

asan: deps
	@$(MAKE) --no-print-directory -j$(NPROC) BUILD=build-asan SAN=asan build
	@$(MAKE) --no-print-directory BUILD=build-asan SAN=asan unit

tsan: deps
	@$(MAKE) --no-print-directory -j$(NPROC) BUILD=build-tsan SAN=tsan build
	@PDL=build-tsan/pdl BUILD=build-tsan TESTS_ONLY=threads bash tests/run.sh

# libFuzzer targets (tests/fuzz) under ASan + UBSan, FUZZ_S seconds each, random seeds; findings
# in build-fuzz/findings/. make test runs them briefly and deterministically (tests/t_fuzz.sh).
FUZZ_S ?= 60
fuzz:
	@bash tests/fuzz/run.sh --seconds $(FUZZ_S)

# The CUDA kernels on the CPU (kernels/cuda/emu): the only check they get without a GPU;
# tests/t_cuda_emu.sh runs it in make test.
cuda-emu:
	@BUILD=$(BUILD) bash kernels/cuda/emu/run.sh

# ---- benches, plots, regression (each bench folder has its own driver) ----------------------
bench-core bench-ppasgd bench-easgd bench-collectives bench-hermans bench-gossip bench-kfac bench-gpu bench-scaling: bench-%: deps
	@$(MAKE) --no-print-directory -j$(NPROC) build
	@PDL=$(PDL) QUICK=$(QUICK) FORCE=$(FORCE) ONLY="$(ONLY)" DATA=$(DATA) ISA=$(ISA) bash bench/$*/run.sh

bench: bench-core bench-collectives bench-ppasgd bench-easgd bench-hermans bench-gossip bench-kfac bench-gpu bench-scaling

plots:
	@bash plots/render.sh

# The one report page (bench/report.py): every claim, verdict, rule and its history, seeds and
# spread, plot and provenance in results/report/index.html, self-contained (plots inlined), from
# the same engine rows as docs/REPRODUCTION.md, which it regenerates first. Works with no results;
# exits 1 when the page has error rows (the page is still written).
report:
	@bash plots/render.sh >/dev/null || echo "pdlbench: plots not rendered (make deps installs gnuplot-nox); the page says which are missing" >&2
	@bash bench/reproduction.sh; rc=$$?; python3 bench/report.py --fail-on-errors && exit $$rc

regress: build
	@PDL=$(PDL) BUILD=$(BUILD) bash ci/regress.sh

regress-update: build
	@PDL=$(PDL) BUILD=$(BUILD) bash ci/regress.sh --update

clean:
	rm -rf build build-asan build-tsan build-fuzz bin
