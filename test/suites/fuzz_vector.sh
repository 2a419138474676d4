#!/usr/bin/env bash
# The loader's array reading (src/pg/vector_parse.c) fuzzed under ASan and
# UBSan for FUZZ_VECTOR_SECONDS (default 15): arrays built field by field
# and checked against the verdict their fields imply, then damaged and
# checked for a verdict inside their bytes (test/engine/fuzz_vector.c).
# A failing run prints its seed; TC_TEST_SEED=... replays it.
# Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."
make -s -C test/engine fuzz-vector FUZZ_SECONDS="${FUZZ_VECTOR_SECONDS:-15}"
