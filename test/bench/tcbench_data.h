/*
 * tcbench_data.h
 *		tcbench's points: synthetic or read from a file, and eps picked by
 *		sampling for a number of neighbours.
 */
#ifndef TCBENCH_DATA_H
#define TCBENCH_DATA_H

#include <stdint.h>

/* Where the points come from (tcbench's --file, --gen, --n, --d, --seed, --queries). */
typedef struct DataSpec
{
	const char *file;			/* raw float32 rows, or NULL for gen */
	const char *gen;
	int64_t		n;				/* corpus rows; 0 with a file: all it has */
	int64_t		queries;		/* query rows after the corpus; 0: a self-join */
	int			d;
	uint64_t	seed;
} DataSpec;

extern void tcbench_die(const char *msg) __attribute__((noreturn));

/*
 * The corpus's rows (*n_out of them), then spec->queries query rows, in one
 * row-major float32 array.
 */
extern float *tcbench_load(const DataSpec *spec, int64_t *n_out);

/*
 * eps for about k neighbours on average of each point of queries (m of
 * them) among the n points of pts; queries NULL: of each point of pts among
 * the others (a self-join).
 */
extern double tcbench_eps_for_neighbours(const float *pts, int64_t n, const float *queries,
										 int64_t m, int d, double k, int threads);

#endif							/* TCBENCH_DATA_H */
