# tcjoin: PGXS build.  `make`, `make install`, `make installcheck`.
EXTENSION = tcjoin
EXTVERSION = 0.1.0

include src/engine_sources.mk

MODULE_big = tcjoin
OBJS = src/tcjoin.o src/load.o src/output.o \
	$(patsubst %.c,src/%.o,$(TC_ENGINE_SRCS))
DATA = tcjoin--$(EXTVERSION).sql

# pg_regress: every test in sql/, in name order.
REGRESS = $(sort $(patsubst sql/%.sql,%,$(wildcard sql/*.sql)))
REGRESS_OPTS = --inputdir=. --outputdir=.

# Exactness needs IEEE arithmetic with no contraction into FMA.
PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -std=gnu11 -ffp-contract=off -fno-fast-math -Werror -pthread
SHLIB_LINK = -pthread -lm

# Debian's server is built with LLVM JIT; tcjoin's code is not inlined by the
# JIT, and CUDA objects would have no bitcode.
override with_llvm = no

EXTRA_CLEAN = results regression.diffs regression.out

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
