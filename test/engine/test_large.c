/*
 * test_large.c
 *		Inputs too big for the naive table, checked against an independent
 *		plane sweep: uniform and clustered data, and exact lattices with a
 *		huge number of pairs at exactly eps.
 */
#include "test_harness.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

typedef struct SortKey
{
	double		x;
	int64_t		i;
} SortKey;

static int
cmp_sortkey(const void *p, const void *q)
{
	const SortKey *a = p,
			   *b = q;

	if (a->x != b->x)
		return a->x < b->x ? -1 : 1;
	return (a->i > b->i) - (a->i < b->i);
}

/*
 * Independent plane sweep along dimension 0 for inputs too large for the
 * naive table.  The window is widened by a relative 1e-9 so that rounding
 * of the x difference can never drop a pair; the contract formula decides.
 */
static void
sweep_join(const TcPoints *p, double eps, PairVec *out)
{
	SortKey    *keys = malloc(sizeof(SortKey) * (size_t) (p->n ? p->n : 1));
	double		window = eps * (1.0 + 1e-9);

	for (int64_t i = 0; i < p->n; i++)
	{
		keys[i].x = points_get(p, i, 0);
		keys[i].i = i;
	}
	qsort(keys, (size_t) p->n, sizeof(SortKey), cmp_sortkey);
	out->n = 0;
	for (int64_t s = 0; s < p->n; s++)
		for (int64_t u = s + 1; u < p->n && keys[u].x - keys[s].x <= window; u++)
		{
			double		dist = ref_dist(p, keys[s].i, p, keys[u].i);

			if (dist <= eps)
			{
				int64_t		i = keys[s].i,
							j = keys[u].i;

				pairvec_push(out, i < j ? i : j, i < j ? j : i, dist);
			}
		}
	free(keys);
	pairvec_sort(out, true, p->n);
}

/*
 * All points of a side^d integer lattice, scaled and offset (exactly, for
 * moderate values), in shuffled order so that index order says nothing
 * about position.
 */
static void
int_lattice(TcPoints *p, int64_t side, int32_t d, double scale, double offset,
			TcElemType type, Rng *r)
{
	int64_t		n = 1;
	int64_t    *order;

	for (int32_t k = 0; k < d; k++)
		n *= side;
	points_alloc(p, n, d, type);
	order = malloc(sizeof(int64_t) * (size_t) n);
	for (int64_t i = 0; i < n; i++)
		order[i] = i;
	for (int64_t i = n - 1; i > 0; i--)
	{
		int64_t		j = (int64_t) rng_below(r, (uint64_t) i + 1);
		int64_t		t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		code = order[i];

		for (int32_t k = 0; k < d; k++)
		{
			points_set(p, i, k, offset + scale * (double) (code % side));
			code /= side;
		}
	}
	free(order);
}

/*
 * Inputs too big for the naive table, checked against the sweep.  The exact
 * lattices put a huge number of pairs at exactly eps, in every relative
 * position to the grid's cell boundaries: a cell even slightly narrower than
 * eps loses some of them.
 */
void
test_large(void)
{
	struct
	{
		Dist		dist;		/* DIST_COUNT: exact lattice */
		int64_t		n;			/* lattice: side */
		int32_t		d;
		TcElemType	type;
		double		eps;		/* lattice: in steps; < 0: sqrt of -eps steps */
		double		scale;
		double		offset;
		TcMethod	method;
		int			threads;
	}			specs[] = {
		{DIST_UNIFORM, 200000, 2, TC_FLOAT8, 0.004, 0, 0, TC_METHOD_GRID, 2},
		{DIST_UNIFORM, 100000, 3, TC_FLOAT4, 0.02, 0, 0, TC_METHOD_AUTO, 3},
		{DIST_LATTICE, 100000, 2, TC_FLOAT8, 0, 0, 0, TC_METHOD_GRID, 7},
		{DIST_CLUSTERED, 60000, 4, TC_FLOAT8, 0.002, 0, 0, TC_METHOD_GRID, 2},
		{DIST_COUNT, 100000, 1, TC_FLOAT8, 1, 1.0, 0.0, TC_METHOD_GRID, 3},
		{DIST_COUNT, 100000, 1, TC_FLOAT4, 3, 0.25, -4096.0, TC_METHOD_GRID, 2},
		{DIST_COUNT, 300, 2, TC_FLOAT8, 1, 1.0, 1048576.0, TC_METHOD_GRID, 2},
		{DIST_COUNT, 300, 2, TC_FLOAT8, -2, 0.5, -7.0, TC_METHOD_AUTO, 3},
		{DIST_COUNT, 40, 3, TC_FLOAT4, 1, 0.5, 1000.0, TC_METHOD_GRID, 7},
	};
	Rng			r;

	rng_seed(&r, FIXED_SEED ^ 3);
	for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++)
	{
		TcPoints	p;
		PairVec		want = {0};
		int64_t		n = specs[s].n;
		double		eps = specs[s].eps;
		bool		lattice = specs[s].dist == DIST_COUNT;

		if (g_quick)
			n = lattice ? (int64_t) ((double) n / pow(8.0, 1.0 / specs[s].d)) : n / 8;
		if (lattice)
		{
			/* eps: the exact distance of two lattice points that far apart. */
			double		c[4] = {0, 0, 0, 0};
			TcPoints	q = {c, 2, 2, TC_FLOAT8};
			double		steps = eps < 0 ? 1.0 : eps;

			int_lattice(&p, n, specs[s].d, specs[s].scale, specs[s].offset,
						specs[s].type, &r);
			c[0] = specs[s].offset + 3 * specs[s].scale;
			c[2] = c[0] + steps * specs[s].scale;
			if (eps < 0)
			{
				/* A diagonal, e.g. sqrt(2) steps. */
				c[1] = c[0];
				c[3] = c[0] + steps * specs[s].scale;
			}
			eps = ref_dist(&q, 0, &q, 1);
		}
		else
		{
			points_generate(&p, specs[s].dist, n, specs[s].d, specs[s].type, &r);
			if (eps == 0)
			{
				/* Lattice: the exact distance of two lattice neighbours. */
				double		c[4] = {0.1 * 17 - 0.3, 0.1 * 5 - 0.3, 0.1 * 18 - 0.3, 0.1 * 5 - 0.3};
				TcPoints	q = {c, 2, 2, TC_FLOAT8};

				eps = ref_dist(&q, 0, &q, 1);
			}
		}
		sweep_join(&p, eps, &want);

		TcJoinParams params = make_params(eps, specs[s].method, specs[s].threads, false);

		case_begin("[large] dist=%s n=%" PRId64 " d=%d %s eps=%.17g method=%s threads=%d (expect %zu pairs)",
				   lattice ? "exact-lattice" : dist_name(specs[s].dist), p.n,
				   specs[s].d, type_name(specs[s].type), eps,
				   method_name(specs[s].method), specs[s].threads, want.n);
		join_case(&p, NULL, &params, &want);
		case_end();
		pairvec_free(&want);
		points_free(&p);
	}
}
