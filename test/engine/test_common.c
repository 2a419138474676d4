/*
 * test_common.c
 *		PRNG, point generators, naive reference join and comparison for the
 *		engine tests.  See test_common.h.
 */
#include "test_common.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------- PRNG */

uint64_t
splitmix64(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

uint64_t
mix_seed(uint64_t a, uint64_t b)
{
	uint64_t	st = a ^ (b * UINT64_C(0xd1b54a32d192ed03));

	return splitmix64(&st);
}

void
rng_seed(Rng *r, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&seed);
}

static inline uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t
rng_next(Rng *r)
{
	uint64_t   *s = r->s;
	uint64_t	result = rotl(s[1] * 5, 7) * 9;
	uint64_t	t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double
rng_uniform(Rng *r)
{
	return (double) (rng_next(r) >> 11) * 0x1.0p-53;
}

double
rng_normal(Rng *r)
{
	/* Box-Muller; 1 - u keeps the log argument in (0, 1]. */
	double		u = 1.0 - rng_uniform(r);
	double		v = rng_uniform(r);

	return sqrt(-2.0 * log(u)) * cos(2.0 * M_PI * v);
}

uint64_t
rng_below(Rng *r, uint64_t bound)
{
	/* Modulo bias is irrelevant for test data. */
	return rng_next(r) % bound;
}

double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------- point sets */

static const char *const dist_names[DIST_COUNT] = {
	[DIST_UNIFORM] = "uniform",
	[DIST_EXPONENTIAL] = "exponential",
	[DIST_CLUSTERED] = "clustered",
	[DIST_DUPLICATES] = "duplicates",
	[DIST_IDENTICAL] = "identical",
	[DIST_OFFSET_1E6] = "offset1e6",
	[DIST_OFFSET_1E9] = "offset1e9",
	[DIST_ZERO_DIM] = "zero-range-dim",
	[DIST_MIXED_MAG] = "mixed-magnitude",
	[DIST_UNDERFLOW] = "underflow",
	[DIST_NEGATIVE] = "negative",
	[DIST_LATTICE] = "lattice",
};

const char *
dist_name(Dist dist)
{
	return (dist >= 0 && dist < DIST_COUNT) ? dist_names[dist] : "?";
}

void
points_alloc(TcPoints *p, int64_t n, int32_t d, TcElemType type)
{
	size_t		elem = (type == TC_FLOAT4) ? sizeof(float) : sizeof(double);
	size_t		count = (size_t) n * (size_t) d;

	/* Never NULL, even for n == 0, so the engine always sees valid memory. */
	void	   *data = calloc(count ? count : 1, elem);

	if (!data)
	{
		fprintf(stderr, "out of memory allocating %zu points\n", count);
		abort();
	}
	p->data = data;
	p->n = n;
	p->d = d;
	p->type = type;
}

void
points_set(TcPoints *p, int64_t i, int32_t k, double v)
{
	size_t		off = (size_t) i * (size_t) p->d + (size_t) k;

	if (p->type == TC_FLOAT4)
		((float *) p->data)[off] = (float) v;
	else
		((double *) p->data)[off] = v;
}

void
points_free(TcPoints *p)
{
	free((void *) p->data);
	p->data = NULL;
	p->n = 0;
}

void
points_generate(TcPoints *p, Dist dist, int64_t n, int32_t d,
				TcElemType type, Rng *r)
{
	bool		f4 = (type == TC_FLOAT4);

	points_alloc(p, n, d, type);
	switch (dist)
	{
		case DIST_UNIFORM:
			for (int64_t i = 0; i < n; i++)
				for (int32_t k = 0; k < d; k++)
					points_set(p, i, k, rng_uniform(r));
			break;

		case DIST_EXPONENTIAL:
			/* Heavy skew: most points crowd near 0, a few lie far out. */
			for (int64_t i = 0; i < n; i++)
				for (int32_t k = 0; k < d; k++)
					points_set(p, i, k, -log(1.0 - rng_uniform(r)));
			break;

		case DIST_CLUSTERED:
			{
				int			nclusters = 1 + (int) (n / 100);
				double		sigma = 0.001 + 0.02 * rng_uniform(r);
				double	   *centers;

				if (nclusters > 20)
					nclusters = 20;
				centers = malloc(sizeof(double) * (size_t) nclusters * (size_t) d);
				for (int c = 0; c < nclusters * d; c++)
					centers[c] = rng_uniform(r);
				for (int64_t i = 0; i < n; i++)
				{
					int			c = (int) rng_below(r, (uint64_t) nclusters);

					for (int32_t k = 0; k < d; k++)
						points_set(p, i, k,
								   centers[c * d + k] + sigma * rng_normal(r));
				}
				free(centers);
			}
			break;

		case DIST_DUPLICATES:
			{
				/* A small pool of distinct points, each repeated many times. */
				int64_t		pool = n / 20 + 1;

				for (int64_t i = 0; i < n; i++)
				{
					if (i < pool)
						for (int32_t k = 0; k < d; k++)
							points_set(p, i, k, rng_uniform(r));
					else
					{
						int64_t		src = (int64_t) rng_below(r, (uint64_t) pool);

						for (int32_t k = 0; k < d; k++)
							points_set(p, i, k, points_get(p, src, k));
					}
				}
			}
			break;

		case DIST_IDENTICAL:
			{
				double		base[512];

				for (int32_t k = 0; k < d && k < 512; k++)
					base[k] = rng_uniform(r) * 10.0 - 5.0;
				for (int64_t i = 0; i < n; i++)
					for (int32_t k = 0; k < d; k++)
						points_set(p, i, k, base[k % 512]);
			}
			break;

		case DIST_OFFSET_1E6:
			/* Large offset, small spread: cancellation in the differences. */
			for (int64_t i = 0; i < n; i++)
				for (int32_t k = 0; k < d; k++)
					points_set(p, i, k, 1e6 + rng_uniform(r));
			break;

		case DIST_OFFSET_1E9:
			/* Alternating signs per dimension; float4 collapses to few values. */
			for (int64_t i = 0; i < n; i++)
				for (int32_t k = 0; k < d; k++)
					points_set(p, i, k,
							   ((k & 1) ? -1e9 : 1e9) + 100.0 * rng_uniform(r));
			break;

		case DIST_ZERO_DIM:
			{
				/* One (or two) dimensions with zero range; the rest uniform. */
				int32_t		z1 = (int32_t) rng_below(r, (uint64_t) d);
				int32_t		z2 = (d >= 3) ? (int32_t) rng_below(r, (uint64_t) d) : z1;

				for (int64_t i = 0; i < n; i++)
					for (int32_t k = 0; k < d; k++)
						points_set(p, i, k,
								   (k == z1 || k == z2) ? 42.5 : rng_uniform(r));
			}
			break;

		case DIST_MIXED_MAG:
			{
				/*
				 * Each point picks a magnitude class.  In float8, squared
				 * differences of the 1e155 class overflow to infinity (never
				 * within eps), those of the 1e153 class overflow only when
				 * summed over enough dimensions, differences in the 1.7e308
				 * class overflow themselves (and so does a dimension's
				 * range), and those of the 1e-170 class underflow to 0
				 * (distinct points at distance 0).  float4 cannot hold
				 * those, so it spans its own range instead.
				 */
				static const double cls8[] = {1e-170, 1e-150, 1.0, 1e150, 1e153, 1e155, 1e300, 1.7e308};
				static const double cls4[] = {1e-44, 1e-30, 1.0, 1e20, 1e30, 1e37, 1e38, 3.4e38};
				const double *cls = f4 ? cls4 : cls8;

				for (int64_t i = 0; i < n; i++)
				{
					double		scale = cls[rng_below(r, 8)];

					for (int32_t k = 0; k < d; k++)
						points_set(p, i, k, scale * (2.0 * rng_uniform(r) - 1.0));
				}
			}
			break;

		case DIST_UNDERFLOW:
			{
				/* Squared differences are subnormal or flush to zero. */
				double		scale = f4 ? 1e-42 : 1e-160;

				for (int64_t i = 0; i < n; i++)
					for (int32_t k = 0; k < d; k++)
						points_set(p, i, k, scale * rng_uniform(r));
			}
			break;

		case DIST_NEGATIVE:
			/* All negative: catches truncation toward zero in cell indexes. */
			for (int64_t i = 0; i < n; i++)
				for (int32_t k = 0; k < d; k++)
					points_set(p, i, k, -0.5 - 10.0 * rng_uniform(r));
			break;

		case DIST_LATTICE:
			{
				/*
				 * Multiples of 0.1 (not exact in binary): many pairs sit at
				 * nearly, but not exactly, the same distance, right at the
				 * boundary of a grid cell.
				 */
				int			side = 2;

				while (side < 4096 && pow((double) side + 1, (double) d) <= (double) n)
					side++;
				for (int64_t i = 0; i < n; i++)
					for (int32_t k = 0; k < d; k++)
						points_set(p, i, k,
								   0.1 * (double) rng_below(r, (uint64_t) side) - 0.3);
			}
			break;

		default:
			abort();
	}
}

double
ref_dist(const TcPoints *a, int64_t i, const TcPoints *b, int64_t j)
{
	/* The contract, literally: float8 differences, squares summed in order. */
	double		s = 0.0;

	for (int32_t k = 0; k < a->d; k++)
	{
		double		diff = points_get(a, i, k) - points_get(b, j, k);

		s += diff * diff;
	}
	return sqrt(s);
}

/* -------------------------------------------------------- pair vectors */

static void
pairvec_reserve(PairVec *pv, size_t need)
{
	if (need <= pv->cap)
		return;
	size_t		cap = pv->cap ? pv->cap : 1024;

	while (cap < need)
		cap *= 2;
	TcPair	   *v = realloc(pv->v, cap * sizeof(TcPair));

	if (!v)
	{
		fprintf(stderr, "out of memory growing a pair vector to %zu\n", cap);
		abort();
	}
	pv->v = v;
	pv->cap = cap;
}

void
pairvec_push(PairVec *pv, int64_t a, int64_t b, double dist)
{
	pairvec_reserve(pv, pv->n + 1);
	pv->v[pv->n].a = a;
	pv->v[pv->n].b = b;
	pv->v[pv->n].dist = dist;
	pv->n++;
}

void
pairvec_append(PairVec *pv, const TcPair *pairs, size_t count)
{
	if (count == 0)
		return;
	pairvec_reserve(pv, pv->n + count);
	memcpy(pv->v + pv->n, pairs, count * sizeof(TcPair));
	pv->n += count;
}

void
pairvec_free(PairVec *pv)
{
	free(pv->v);
	pv->v = NULL;
	pv->n = pv->cap = 0;
}

static int
cmp_pair(const void *x, const void *y)
{
	const TcPair *p = x;
	const TcPair *q = y;

	if (p->a != q->a)
		return p->a < q->a ? -1 : 1;
	if (p->b != q->b)
		return p->b < q->b ? -1 : 1;
	return memcmp(&p->dist, &q->dist, sizeof(double));
}

void
pairvec_sort(PairVec *pv, bool normalize, int64_t nrows)
{
	bool		in_range = (nrows > 0);

	if (normalize)
		for (size_t i = 0; i < pv->n; i++)
			if (pv->v[i].a > pv->v[i].b)
			{
				int64_t		t = pv->v[i].a;

				pv->v[i].a = pv->v[i].b;
				pv->v[i].b = t;
			}
	if (pv->n < 2)
		return;
	for (size_t i = 0; i < pv->n && in_range; i++)
		if (pv->v[i].a < 0 || pv->v[i].a >= nrows)
			in_range = false;
	if (!in_range || pv->n < 4096)
	{
		qsort(pv->v, pv->n, sizeof(TcPair), cmp_pair);
		return;
	}

	/*
	 * Counting sort on a, then a small sort per row: results can hold
	 * millions of pairs, and a plain qsort would dominate the run time.
	 */
	size_t	   *start = calloc((size_t) nrows + 1, sizeof(size_t));
	TcPair	   *tmp = malloc(pv->n * sizeof(TcPair));

	if (!start || !tmp)
		abort();
	for (size_t i = 0; i < pv->n; i++)
		start[pv->v[i].a + 1]++;
	for (int64_t r = 0; r < nrows; r++)
		start[r + 1] += start[r];
	for (size_t i = 0; i < pv->n; i++)
		tmp[start[pv->v[i].a]++] = pv->v[i];
	/* start[r] is now the end of row r. */
	size_t		begin = 0;

	for (int64_t r = 0; r < nrows; r++)
	{
		size_t		end = start[r];

		if (end - begin > 1)
			qsort(tmp + begin, end - begin, sizeof(TcPair), cmp_pair);
		begin = end;
	}
	free(pv->v);
	pv->v = tmp;
	pv->cap = pv->n;
	free(start);
}

/* ----------------------------------------------------------- reference */

static inline size_t
tri_row_start(int64_t n, int64_t i)
{
	/* Row i of the strict upper triangle holds j = i+1 .. n-1. */
	return (size_t) i * (size_t) (2 * n - i - 1) / 2;
}

size_t
ref_table_size(const RefTable *t)
{
	if (t->b == NULL)
		return (size_t) t->na * (size_t) (t->na > 0 ? t->na - 1 : 0) / 2;
	return (size_t) t->na * (size_t) t->nb;
}

void
ref_table_build(RefTable *t, const TcPoints *a, const TcPoints *b)
{
	t->a = a;
	t->b = b;
	t->na = a->n;
	t->nb = b ? b->n : a->n;

	size_t		size = ref_table_size(t);

	t->dist = malloc((size ? size : 1) * sizeof(double));
	if (!t->dist)
		abort();
	if (b == NULL)
	{
		size_t		pos = 0;

		for (int64_t i = 0; i < t->na; i++)
			for (int64_t j = i + 1; j < t->na; j++)
				t->dist[pos++] = ref_dist(a, i, a, j);
	}
	else
	{
		for (int64_t i = 0; i < t->na; i++)
			for (int64_t j = 0; j < t->nb; j++)
				t->dist[(size_t) i * (size_t) t->nb + (size_t) j] = ref_dist(a, i, b, j);
	}
}

void
ref_table_free(RefTable *t)
{
	free(t->dist);
	t->dist = NULL;
}

double
ref_table_get(const RefTable *t, int64_t i, int64_t j)
{
	if (t->b != NULL)
		return t->dist[(size_t) i * (size_t) t->nb + (size_t) j];
	if (i > j)
	{
		int64_t		x = i;

		i = j;
		j = x;
	}
	return t->dist[tri_row_start(t->na, i) + (size_t) (j - i - 1)];
}

void
ref_table_pairs(const RefTable *t, double eps, bool include_self, PairVec *out)
{
	const double *dist = t->dist;

	out->n = 0;
	if (t->b != NULL)
	{
		for (int64_t i = 0; i < t->na; i++)
			for (int64_t j = 0; j < t->nb; j++)
				if (*dist++ <= eps)
					pairvec_push(out, i, j, dist[-1]);
		return;
	}
	for (int64_t i = 0; i < t->na; i++)
	{
		if (include_self)
			pairvec_push(out, i, i, 0.0);
		for (int64_t j = i + 1; j < t->na; j++, dist++)
			if (*dist <= eps)
				pairvec_push(out, i, j, *dist);
	}
}

size_t
ref_table_count(const RefTable *t, double eps, bool include_self)
{
	size_t		size = ref_table_size(t);
	size_t		count = 0;

	for (size_t i = 0; i < size; i++)
		count += (t->dist[i] <= eps);
	if (include_self && t->b == NULL)
		count += (size_t) t->na;
	return count;
}

void
ref_join(const TcPoints *a, const TcPoints *b, double eps, bool include_self,
		 PairVec *out)
{
	out->n = 0;
	if (b != NULL)
	{
		for (int64_t i = 0; i < a->n; i++)
			for (int64_t j = 0; j < b->n; j++)
			{
				double		dist = ref_dist(a, i, b, j);

				if (dist <= eps)
					pairvec_push(out, i, j, dist);
			}
		return;
	}
	for (int64_t i = 0; i < a->n; i++)
	{
		if (include_self)
			pairvec_push(out, i, i, 0.0);
		for (int64_t j = i + 1; j < a->n; j++)
		{
			double		dist = ref_dist(a, i, a, j);

			if (dist <= eps)
				pairvec_push(out, i, j, dist);
		}
	}
}

/* ---------------------------------------------------------- comparison */

bool
same_bits(double x, double y)
{
	return memcmp(&x, &y, sizeof(double)) == 0;
}

size_t
compare_pairs(const char *label, const PairVec *got, const PairVec *want,
			  int max_lines)
{
	size_t		i = 0,
				j = 0,
				diffs = 0;
	int			lines = 0;

#define REPORT(...) \
	do { \
		diffs++; \
		if (lines < max_lines) \
		{ \
			printf("FAIL %s: ", label); \
			printf(__VA_ARGS__); \
			printf("\n"); \
			lines++; \
		} \
	} while (0)

	while (i < got->n || j < want->n)
	{
		const TcPair *g = (i < got->n) ? &got->v[i] : NULL;
		const TcPair *w = (j < want->n) ? &want->v[j] : NULL;

		if (g && i > 0 && got->v[i - 1].a == g->a && got->v[i - 1].b == g->b)
		{
			REPORT("duplicate pair (%" PRId64 ", %" PRId64 ") dist=%.17g",
				   g->a, g->b, g->dist);
			i++;
			continue;
		}
		if (g && w && g->a == w->a && g->b == w->b)
		{
			if (!same_bits(g->dist, w->dist))
				REPORT("pair (%" PRId64 ", %" PRId64 ") dist %.17g (%a), expected %.17g (%a)",
					   g->a, g->b, g->dist, g->dist, w->dist, w->dist);
			i++;
			j++;
		}
		else if (g && (!w || g->a < w->a || (g->a == w->a && g->b < w->b)))
		{
			REPORT("unexpected pair (%" PRId64 ", %" PRId64 ") dist=%.17g (%a)",
				   g->a, g->b, g->dist, g->dist);
			i++;
		}
		else
		{
			REPORT("missing pair (%" PRId64 ", %" PRId64 ") dist=%.17g (%a)",
				   w->a, w->b, w->dist, w->dist);
			j++;
		}
	}
	if (diffs > (size_t) lines)
		printf("FAIL %s: ... %zu differences in all (got %zu pairs, expected %zu)\n",
			   label, diffs, got->n, want->n);
#undef REPORT
	return diffs;
}
