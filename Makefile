# pdlbench — the one entry point. See README.md.
#   make            build bin/pdl (+ build/libpdlsim.so when SimGrid is present)
#   make test       deps, build, unit + MPI + sim tests, QUICK benches, regression gate
#   make deps       check/install the Debian packages (ci/install-deps.sh)
#   make asan/tsan  unit/threaded tests under sanitizers;  make clean
# Options: NO_CUDA=1, NO_MPI=1 force optional parts off; QUICK=1, FORCE=1 for bench-*.
SHELL := /bin/bash
.DEFAULT_GOAL := all
BUILD ?= build
SAN ?=
CUDA_HOME ?= /usr/local/cuda
PY_TORCH ?= /usr/bin/python3
# GPU code: SASS for Turing..Blackwell-consumer plus compute_75 PTX that newer GPUs JIT; override e.g. NVCC_ARCH=-arch=native
NVCC_ARCH ?= -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 -gencode arch=compute_89,code=sm_89 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_120,code=sm_120 -gencode arch=compute_75,code=compute_75

# ---- optional parts, detected -------------------------------------------------------------
HAVE_MPI := $(if $(NO_MPI),,$(shell command -v mpicc >/dev/null 2>&1 && echo 1))
NVCC := $(if $(NO_CUDA),,$(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; }))
HAVE_CUDNN := $(if $(NVCC),$(shell test -f $(CUDA_HOME)/include/cudnn.h && echo 1))
HAVE_NCCL := $(if $(NVCC),$(shell test -f $(CUDA_HOME)/include/nccl.h -o -f /usr/include/nccl.h && echo 1))
HAVE_CUSOLVER := $(if $(NVCC),$(shell test -f $(CUDA_HOME)/include/cusolverDn.h && echo 1))
HAVE_SIMGRID := $(shell test -f /usr/include/simgrid/engine.h && echo 1)
HAVE_GNUPLOT := $(shell command -v gnuplot >/dev/null 2>&1 && echo 1)
HAVE_TORCH := $(shell test -f /usr/lib/python3/dist-packages/torch/__init__.py && echo 1)
ifneq ($(SAN),)
  NVCC :=
  HAVE_CUDNN :=
  HAVE_NCCL :=
  HAVE_CUSOLVER :=
endif
yn = $(if $(1),yes,no)
CONFIG := mpi=$(call yn,$(HAVE_MPI)) nvcc=$(call yn,$(NVCC)) cudnn=$(call yn,$(HAVE_CUDNN)) nccl=$(call yn,$(HAVE_NCCL)) cusolver=$(call yn,$(HAVE_CUSOLVER)) simgrid=$(call yn,$(HAVE_SIMGRID)) gnuplot=$(call yn,$(HAVE_GNUPLOT)) python3-torch=$(call yn,$(HAVE_TORCH))

GIT_REV := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

# ---- flags ----------------------------------------------------------------------------------
CC := $(if $(HAVE_MPI),mpicc,gcc)
OPT ?= -O3 -march=native
SANFLAGS_asan := -fsanitize=address,undefined -fno-omit-frame-pointer -O1 -g
SANFLAGS_tsan := -fsanitize=thread -O1 -g
SANFLAGS := $(SANFLAGS_$(SAN))
CFLAGS := -std=c11 $(if $(SAN),$(SANFLAGS),$(OPT) -g) -fopenmp -Wall -Wextra -Werror -D_GNU_SOURCE \
  -Isrc -I. -DPDL_GIT_REV_DEFAULT=\"$(GIT_REV)\" $(if $(HAVE_MPI),-DPDL_HAVE_MPI)
LDLIBS := -llapacke -lopenblas -lz -lm -lpthread -ldl
ifneq ($(NVCC),)
  CFLAGS += -DPDL_HAVE_CUDA -I$(CUDA_HOME)/include $(if $(HAVE_NCCL),-DPDL_HAVE_NCCL) \
            $(if $(HAVE_CUDNN),-DPDL_HAVE_CUDNN) $(if $(HAVE_CUSOLVER),-DPDL_HAVE_CUSOLVER)
  LDLIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcudart -lcublas -lstdc++ \
            $(if $(HAVE_CUDNN),-lcudnn) $(if $(HAVE_CUSOLVER),-lcusolver) $(if $(HAVE_NCCL),-lnccl)
  NVCCFLAGS := -O3 -std=c++17 $(NVCC_ARCH) -Xcompiler -fPIC -Isrc -I. $(if $(HAVE_CUDNN),-DPDL_HAVE_CUDNN) \
            $(if $(HAVE_CUSOLVER),-DPDL_HAVE_CUSOLVER)
endif
LDFLAGS := -fopenmp -rdynamic $(SANFLAGS)

# ---- sources --------------------------------------------------------------------------------
# Everything under src/ (except the CLI entry and the SimGrid runtime), kernels/cpu, reference.
LIB_C := $(filter-out src/cli/main.c src/sim/%,$(wildcard src/*/*.c kernels/cpu/*.c reference/*.c))
LIB_CU := $(if $(NVCC),$(wildcard kernels/cuda/*.cu))
LIB_OBJ := $(LIB_C:%.c=$(BUILD)/obj/%.o) $(LIB_CU:%.cu=$(BUILD)/obj/%.cu.o)
SIM_C := $(wildcard src/sim/*.c)
SIM_OBJ := $(SIM_C:%.c=$(BUILD)/obj/%.pic.o)
TEST_C := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_C:tests/%.c=$(BUILD)/tests/%)
LIBPDL := $(BUILD)/libpdl.a
SIMLIB := $(if $(HAVE_SIMGRID),$(BUILD)/libpdlsim.so)
PDL := $(if $(SAN),$(BUILD)/pdl,bin/pdl)

.PHONY: all config test test-run unit deps asan tsan clean bench bench-core bench-ppasgd bench-easgd \
        bench-collectives plots regress regress-update
all: config $(PDL) $(SIMLIB) $(TEST_BIN)

config:
	@echo "pdlbench: found $(CONFIG)"

$(BUILD)/obj/%.o: %.c $(wildcard src/*/*.h kernels/*/*.h reference/*.h) | $(BUILD)/.dirs
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.pic.o: %.c $(wildcard src/*/*.h) | $(BUILD)/.dirs
	@mkdir -p $(dir $@)
	gcc $(filter-out -DPDL_HAVE_MPI,$(CFLAGS)) -fPIC -c $< -o $@

$(BUILD)/obj/%.cu.o: %.cu $(wildcard kernels/cuda/*.h src/core/*.h)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BUILD)/.dirs:
	@mkdir -p $(BUILD)/obj $(BUILD)/tests bin && touch $@

$(LIBPDL): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

LINK_LIB = -Wl,--whole-archive $(LIBPDL) -Wl,--no-whole-archive

$(PDL): $(BUILD)/obj/src/cli/main.o $(LIBPDL)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(LINK_LIB) $(LDLIBS)

# The sim runtime is a separate shared object: libsimgrid exports the MPI API (SMPI), so it is
# never linked into the binary that calls MPI; pdl dlopen()s it RTLD_LOCAL (see docs/SIM.md).
$(BUILD)/libpdlsim.so: $(SIM_OBJ)
	gcc -shared -fopenmp $(SANFLAGS) -o $@ $^ -lsimgrid

$(BUILD)/tests/%: tests/%.c tests/harness.h $(LIBPDL) | $(BUILD)/.dirs
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LINK_LIB) $(LDLIBS)

# ---- set-up ---------------------------------------------------------------------------------
deps:
	@bash ci/install-deps.sh

# ---- tests ----------------------------------------------------------------------------------
# deps first, then a fresh make so detection sees what deps installed.
test: deps
	@$(MAKE) --no-print-directory test-run

test-run: all
	@PDL=$(PDL) BUILD=$(BUILD) SIMLIB=$(SIMLIB) bash tests/run.sh
	@PDL=$(PDL) bash ci/regress.sh

unit: all
	@PDL=$(PDL) BUILD=$(BUILD) SIMLIB=$(SIMLIB) TESTS_ONLY=unit bash tests/run.sh

asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan SAN=asan unit

tsan: deps
	@$(MAKE) --no-print-directory BUILD=build-tsan SAN=tsan all
	@PDL=build-tsan/pdl BUILD=build-tsan TESTS_ONLY=threads bash tests/run.sh

# ---- benches, plots, regression (each bench folder has its own driver) ----------------------
bench-core bench-ppasgd bench-easgd bench-collectives: bench-%: deps
	@$(MAKE) --no-print-directory all
	@PDL=$(PDL) QUICK=$(QUICK) FORCE=$(FORCE) DATA=$(DATA) bash bench/$*/run.sh

bench: bench-core bench-collectives bench-ppasgd bench-easgd

plots:
	@bash plots/render.sh

regress: all
	@PDL=$(PDL) bash ci/regress.sh

regress-update: all
	@PDL=$(PDL) bash ci/regress.sh --update

clean:
	rm -rf build build-asan build-tsan bin
