# The engine's sources (no PostgreSQL headers), relative to src/engine/, and
# its CUDA back ends, relative to cuda/.  Shared by the extension's Makefile
# and the standalone tests and benchmarks.  gpu_none.c stands in for the
# CUDA back ends in a build without them.
#
# Layers: src/pg/ (the only code that includes postgres.h) calls the engine
# through src/engine/engine.h; the engine calls cuda/ through
# src/engine/gpu.h; src/common/ holds the headers gcc and nvcc both compile.
TC_ENGINE_SRCS = engine.c threads.c choose.c overrides.c devices.c grid_plan.c cpu_grid.c cpu_brute.c cpu_filter.c cpu_dot_filter.c cpu_dot_filter_lp.c cosine_grid.c graph.c graph_number.c neighbor_lists.c dbscan_grid.c dbscan_cells.c prefault.c big_buffers.c gpu_warm.c gpu_none.c
TC_CUDA_SRCS = runtime/device.cu runtime/join_state.cu runtime/fold.cu runtime/multi.cu \
	grid/index.cu grid/kernels.cu grid/grid_join.cu \
	brute/brute_join.cu brute/blocks.cu brute/config.cu brute/prepare.cu brute/order.cu brute/prune.cu \
	brute/tile_sm80.cu brute/tile_sm90.cu brute/recheck.cu

# Every header a CUDA object may include, from the tree's root $(1) ("" at
# the top, "../../" from test/bench): the CUDA objects depend on all of
# them, so that none is linked after compiling against an older struct.
tc_cuda_hdrs = $(wildcard $(1)src/engine/*.h $(1)src/common/*.h $(1)cuda/*/*.h $(1)cuda/*/*.cuh)

# Include paths of the engine (and of everything nvcc builds).
TC_ENGINE_INCLUDES = -I$(TC_SRC)/engine -I$(TC_SRC)/common
TC_CUDA_INCLUDES = $(TC_ENGINE_INCLUDES) -I$(TC_CUDA)/common -I$(TC_CUDA)/runtime -I$(TC_CUDA)/grid -I$(TC_CUDA)/brute

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
