# The engine's sources (no PostgreSQL headers), relative to src/.  Shared by
# the extension's Makefile and the standalone tests and benchmarks.
TC_ENGINE_SRCS = engine.c grid_plan.c cpu_grid.c cpu_brute.c
