# The engine's sources (no PostgreSQL headers), relative to src/, and its
# CUDA back ends, relative to cuda/.  Shared by the extension's Makefile and
# the standalone tests and benchmarks.  gpu_none.c stands in for the CUDA
# back ends in a build without them.
TC_ENGINE_SRCS = engine.c grid_plan.c cpu_grid.c cpu_brute.c cpu_filter.c gpu_none.c
TC_CUDA_SRCS = gpu_device.cu gpu_join.cu gpu_grid.cu gpu_brute.cu

# Where CUDA is: nvcc on the PATH, else under CUDA_HOME.
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(shell command -v nvcc 2>/dev/null || { test -x $(CUDA_HOME)/bin/nvcc && echo $(CUDA_HOME)/bin/nvcc; })

# sm_80 (A100 and later), sm_90a (Hopper's own instructions), and PTX for
# anything newer.  No contraction into FMA: results must be bit-exact.
NVCC_FLAGS = -O3 -std=c++17 -fmad=false -Werror all-warnings \
	-Xcompiler -fPIC,-Wall,-Werror \
	-gencode=arch=compute_80,code=sm_80 \
	-gencode=arch=compute_90a,code=sm_90a \
	-gencode=arch=compute_90,code=compute_90
# The CUDA runtime, statically: the library then loads where no driver is.
CUDA_LIBS = -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lpthread -lstdc++
