# tcjoin: PGXS build.  `make`, `make install`, `make installcheck`.
EXTENSION = tcjoin

TC_SRC = $(srcdir)/src
TC_CUDA = $(srcdir)/cuda
include src/engine_sources.mk

# The CUDA back ends are built whenever nvcc is found; USE_CUDA=0 skips them.
ifeq ($(NVCC),)
USE_CUDA ?= 0
else
USE_CUDA ?= 1
endif
ifeq ($(USE_CUDA),1)
ENGINE_C = $(filter-out gpu_none.c,$(TC_ENGINE_SRCS))
CUDA_OBJS = $(patsubst %.cu,cuda/%.o,$(TC_CUDA_SRCS))
else
ENGINE_C = $(TC_ENGINE_SRCS)
CUDA_OBJS =
endif

MODULE_big = tcjoin
OBJS = src/pg/module.o src/pg/functions.o src/pg/stats.o src/pg/load.o src/pg/load_direct.o src/pg/vector_parse.o src/pg/output.o src/pg/graphs.o src/pg/prewarm.o src/pg/sky.o \
	$(patsubst %.c,src/engine/%.o,$(ENGINE_C)) $(CUDA_OBJS)
# every version's script and the upgrades between them
DATA = $(sort $(wildcard tcjoin--*.sql))

# pg_regress: every test in sql/, in name order.
REGRESS = $(sort $(patsubst sql/%.sql,%,$(wildcard sql/*.sql)))
REGRESS_OPTS = --inputdir=. --outputdir=.

# Exactness needs IEEE arithmetic with no contraction into FMA.
PG_CPPFLAGS = -I$(srcdir)/src/pg $(TC_ENGINE_INCLUDES)
PG_CFLAGS = -std=gnu11 -ffp-contract=off -fno-fast-math -Werror -pthread
SHLIB_LINK = -pthread -lm
ifeq ($(USE_CUDA),1)
SHLIB_LINK += $(CUDA_LIBS)
endif

# Debian's server is built with LLVM JIT; tcjoin's code is not inlined by the
# JIT, and CUDA objects would have no bitcode.
override with_llvm = no

EXTRA_CLEAN = results regression.diffs regression.out $(CUDA_OBJS)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

CUDA_HDRS = $(call tc_cuda_hdrs,)

cuda/%.o: cuda/%.cu $(CUDA_HDRS)
	$(NVCC) $(NVCC_FLAGS) $(TC_CUDA_INCLUDES) -c -o $@ $<

# PGXS tracks no header dependencies; every object depends on every header.
$(OBJS): $(wildcard src/*/*.h) $(CUDA_HDRS)
