/*
 * cpu_dot_filter_lp.c
 *		An int8 filter with a proven margin for the dot-product metrics
 *		(cosine, inner product) on CPUs with AVX-512 VNNI: it rejects pairs
 *		that are surely out, and every pair it keeps is decided by the
 *		contract's exact formula.  vpdpbusd makes 64 byte products into 16
 *		int32 lanes an instruction, many times the float32 kernel's
 *		multiply-adds (docs/lab/2026-11-26-cpu-low-precision-filter.md).
 *
 * The range: every coordinate is 0 or of magnitude in [2^-56, 2^56], d <=
 * 16,384 (else the float32 filter, or none).  u = 2^-53; g64 = d u / (1 - d
 * u), the contract's relative error on a sum of d products.
 *
 * Quantisation.  Each point x (the float8 values the contract reads) gets a
 * scale s = fl(max |x_k| / 127) (0 for a zero vector) and integers q_k near
 * x_k / s (x_k fl(127 / max) rounded half away from 0, clamped to [-127,
 * 127]); x^ = s q (real) and e = x - x^.  The bound never assumes how q was
 * rounded: it measures e.  With m_k = fl(s q_k) = s q_k (1 + d1) and c_k =
 * fl(x_k - m_k) = (x_k - m_k)(1 + d2), |d1|, |d2| <= u, e_k = c_k / (1 +
 * d2) + s q_k d1, so |e_k| <= |c_k| (1 + 2u) + u |s q_k|, and |c_k| <= (1 +
 * u)(|x_k| + |m_k|): t_k = fl(|c_k| + 2^-50 (|x_k| + |m_k|)) exceeds it
 * (the 8u (|x_k| + |m_k|) covers those 4u and t_k's own two roundings).
 * In range, t_k is 0 or at least 2^-106: its square is normal, no sum
 * overflows.  R = fl(sqrt(fl(S (1 + (d + 4) 2^-52)))) (1 + 2^-50), S the
 * float8 sum of the t_k^2 in any order, bounds |e| (such a sum is within
 * (d + 1) u of the real one).  N = fl(sqrt(na)) (1 + g64) (1 + 2^-50)
 * bounds |x|: the contract's squared norm na >= (1 - g64) |x|^2, and the
 * 2^-50 covers N's own three roundings.
 *
 * Products.  a's integers are signed, b's stored offset by 128 as unsigned
 * (vpdpbusd multiplies unsigned by signed bytes): the instruction's int32
 * lane sums qa_k (qb_k + 128), at most 127 * 255 * 16,448 < 2^31 in
 * magnitude, so it never wraps and is exact in any order; Q = that - 128
 * sum qa_k is the exact integer qa . qb (plain C computes the same value:
 * the portable kernel below, and the tests).
 *
 * The bound.  With T = a . b (real), a . b = x^a . x^b + ea . b + x^a . eb,
 * |x^a| <= Na + Ra: |T - sa sb Q| <= Ra Nb + (Na + Ra) Rb.  The contract's
 * dot_c (float8, index order) is within g64 sum |a_k b_k| <= g64 Na Nb of T.
 * So dot_c <= sa sb Q + B, B = c1 Nb + c2 Rb, c1 = Ra + g64 Na, c2 = Na +
 * Ra.  Evaluated in float8: est = fl(fl(Q sa) sb) is within 3u |est| of sa
 * sb Q, the computed B within 8u B of the real one (non-negative terms,
 * g64 itself rounded), and U = fl(fl(est + B) + fl(2^-44 fl(|est| + B)))
 * exceeds them all: the last term (512u (|est| + B)) covers those and the
 * two additions' own roundings.  So U >= dot_c, and the decisions are
 * cpu_dot_filter.c's:
 *
 *	 - inner product: U < -eps puts the pair out;
 *	 - cosine (eps <= 0.99): U < fl(fl(cos_out sqa) sqb), cos_out = (1 -
 *	   eps) (1 - 2^-40), sq the square roots of the contract's norms, puts
 *	   it out (the quick test of cpu_dot_filter.c: the product differs from
 *	   cos_out sqa sqb by 2u, within its margin); a pair it keeps is out
 *	   where fl(1 - clamp(fl(U / q))) > eps, the contract's own formula on
 *	   U (monotone in the dot).  Past eps 0.99 the float32 filter serves.
 *
 * The vector code computes U with the same operations in the same order
 * as lp_upper (no FMA: -ffp-contract=off, and explicit multiplies and adds),
 * so both give the same bits.
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define TC_LP_X86 1
#endif

#include "cpu_filter.h"
#include "distance.h"
#include "engine_int.h"

#define TC_LP_ALIGN 64
#define TC_LP_COLS 16			/* columns of b packed together: one vector */
#define TC_LP_ROWS 8			/* rows of a a kernel call takes */
#define TC_LP_MAX_DIMS 16384
#define TC_LP_MAX_THREADS 16	/* threads that quantise a set */
#define TC_LP_SLACK 0x1p-44		/* U's rounding allowance (the proof) */

/* One set's quantised points and their per-point terms of the bound. */
typedef struct LpSet
{
	int8_t	   *rows;			/* n (padded to TC_LP_ROWS) x dp, signed; a's side */
	uint8_t    *packed;			/* b's side: [n / 16][dp / 4][16][4], q + 128 */
	int32_t    *bias;			/* 128 sum_k q_k, a's side */
	double	   *s;				/* scale */
	double	   *N;				/* bound on |x| */
	double	   *R;				/* bound on |e| */
	double	   *sq;				/* sqrt(na) */
	const double *norm;			/* the contract's squared norms */
} LpSet;

struct TcDotFilterLp
{
	int			d;
	int			dp;				/* d padded to a multiple of 4 */
	bool		portable;		/* the plain C kernel */
	TcMetric	metric;
	double		eps;
	double		g64;
	double		cos_out;		/* cosine: (1 - eps)(1 - 2^-40) */
	LpSet		a;
	LpSet		b;				/* a's arrays in a self-join, and its own packing */
	void	   *blocks[16];
	int			nblocks;
};

bool
tc_cpu_has_int8_dot(void)
{
#ifdef TC_LP_X86
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		__builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
#else
	return false;
#endif
}

void
tc_dot_filter_lp_free(TcDotFilterLp *f)
{
	if (f == NULL)
		return;
	for (int i = 0; i < f->nblocks; i++)
		free(f->blocks[i]);
	free(f);
}

static void *
lp_alloc(TcDotFilterLp *f, size_t bytes)
{
	void	   *p = NULL;

	if (posix_memalign(&p, TC_LP_ALIGN, bytes > 0 ? bytes : TC_LP_ALIGN) != 0)
		return NULL;
	f->blocks[f->nblocks++] = p;
	return p;
}

/* One coordinate's integer into *q; its t_k (the proof's bound on |e_k|). */
static inline double
lp_term(double x, double s, double inv, int8_t *q)
{
	/* to nearest, or nearly: the bound measures what q leaves */
	double		v = (double) (int) (x * inv + copysign(0.5, x));
	double		m;

	v = v > 127 ? 127 : v < -127 ? -127 : v;
	*q = (int8_t) v;
	m = s * v;
	return fabs(x - m) + 0x1p-50 * (fabs(x) + fabs(m));
}

/*
 * Point i's integers into q, its scale and the bounds of |x| and |e| (x:
 * d doubles of scratch).  Four partial sums: a sum of squares in any order
 * keeps the proof's bound.
 */
static bool
quantise(const TcPoints *p, int64_t i, double na, double g64, double *x, int8_t *q, LpSet *set)
{
	const int	d = p->d;
	double		lo = INFINITY,
				m0 = 0,
				m1 = 0,
				S0 = 0,
				S1 = 0,
				S2 = 0,
				S3 = 0,
				maxabs,
				s,
				inv;
	int			k;

	if (p->type == TC_FLOAT4)
		for (k = 0; k < d; k++)
			x[k] = (double) ((const float *) p->data)[i * d + k];
	else
		memcpy(x, (const double *) p->data + i * d, sizeof(double) * d);
	for (k = 0; k + 1 < d; k += 2)
	{
		double		a0 = fabs(x[k]),
					a1 = fabs(x[k + 1]);

		m0 = a0 > m0 ? a0 : m0;
		m1 = a1 > m1 ? a1 : m1;
		lo = a0 != 0 && a0 < lo ? a0 : lo;
		lo = a1 != 0 && a1 < lo ? a1 : lo;
	}
	if (k < d)
	{
		m0 = fabs(x[k]) > m0 ? fabs(x[k]) : m0;
		lo = x[k] != 0 && fabs(x[k]) < lo ? fabs(x[k]) : lo;
	}
	maxabs = m0 > m1 ? m0 : m1;
	/* the proof's range: every coordinate 0 or of magnitude in [2^-56, 2^56] */
	if (maxabs > 0x1p56 || lo < 0x1p-56)
		return false;
	s = maxabs / 127.0;
	inv = maxabs > 0 ? 127.0 / maxabs : 0.0;
	for (k = 0; k + 3 < d; k += 4)
	{
		double		t0 = lp_term(x[k], s, inv, q + k),
					t1 = lp_term(x[k + 1], s, inv, q + k + 1),
					t2 = lp_term(x[k + 2], s, inv, q + k + 2),
					t3 = lp_term(x[k + 3], s, inv, q + k + 3);

		S0 += t0 * t0;
		S1 += t1 * t1;
		S2 += t2 * t2;
		S3 += t3 * t3;
	}
	for (; k < d; k++)
	{
		double		t = lp_term(x[k], s, inv, q + k);

		S0 += t * t;
	}
	set->s[i] = s;
	set->R[i] = sqrt(((S0 + S1) + (S2 + S3)) * (1 + (d + 4) * 0x1p-52)) * (1 + 0x1p-50);
	set->N[i] = sqrt(na) * (1 + g64) * (1 + 0x1p-50);
	set->sq[i] = sqrt(na);
	return true;
}

/* One thread's share of a set's points: [i0, i1), with its own scratch. */
typedef struct LpPart
{
	const TcDotFilterLp *f;
	const TcPoints *p;
	LpSet	   *set;
	int64_t		i0,
				i1;
	int8_t	   *q;				/* dp bytes, zero past d */
	double	   *x;				/* dp doubles */
	bool		in_range;
} LpPart;

/* Quantise a part's points into the rows (a's side) and the packing (b's side). */
static void *
quantise_part(void *arg)
{
	LpPart	   *pt = arg;
	const int	dp = pt->f->dp;
	LpSet	   *set = pt->set;

	for (int64_t i = pt->i0; i < pt->i1; i++)
	{
		if (!quantise(pt->p, i, set->norm[i], pt->f->g64, pt->x, pt->q, set))
		{
			pt->in_range = false;
			return NULL;
		}
		if (set->rows)
		{
			int32_t		sum = 0;

			memcpy(set->rows + (size_t) i * dp, pt->q, (size_t) dp);
			for (int k = 0; k < dp; k++)
				sum += pt->q[k];
			set->bias[i] = 128 * sum;
		}
		if (set->packed)
		{
			uint8_t    *g = set->packed + (size_t) (i / TC_LP_COLS) * TC_LP_COLS * dp +
				(i % TC_LP_COLS) * 4;

			/* four bytes at a time, flipped to unsigned (q + 128) */
			for (int k = 0; k < dp; k += 4)
			{
				uint32_t	w;

				memcpy(&w, pt->q + k, 4);
				w ^= 0x80808080u;
				memcpy(g + (size_t) k * TC_LP_COLS, &w, 4);
			}
		}
	}
	return NULL;
}

/*
 * Quantise one set: per-point terms, and the rows (want_rows: a's side)
 * and the packed columns (want_packed: b's side), on the join's threads.
 * A chunk of rows at a time, between two polls on the caller's thread:
 * the helpers are joined before each poll (which may not return), so none
 * outlives the filter's memory.  *in_range false (and TC_OK) where a
 * coordinate lies outside the proof's range.
 */
static TcStatus
build_set(TcJoin *join, TcDotFilterLp *f, const TcPoints *p, const double *norm,
		  bool want_rows, bool want_packed, LpSet *set, bool *in_range)
{
	const int	dp = f->dp;
	const int64_t nr = (p->n + TC_LP_ROWS - 1) / TC_LP_ROWS * TC_LP_ROWS;
	const int64_t nc = (p->n + TC_LP_COLS - 1) / TC_LP_COLS * TC_LP_COLS;
	const int64_t check = tc_check_rows(p->d);
	const int	nt = join->params.threads < TC_LP_MAX_THREADS ?
		(join->params.threads > 1 ? join->params.threads : 1) : TC_LP_MAX_THREADS;
	int8_t	   *q = lp_alloc(f, (size_t) dp * nt);
	double	   *terms = lp_alloc(f, sizeof(double) * 4 * (size_t) nc);
	double	   *x = lp_alloc(f, sizeof(double) * (size_t) dp * nt);
	LpPart		part[TC_LP_MAX_THREADS];

	if (q == NULL || terms == NULL || x == NULL)
		return TC_ERR_NOMEM;
	/* zeros past n: the vector code reads whole groups of 16 columns */
	memset(terms, 0, sizeof(double) * 4 * (size_t) nc);
	set->norm = norm;
	set->s = terms;
	set->N = terms + nc;
	set->R = terms + 2 * nc;
	set->sq = terms + 3 * nc;
	if (want_rows)
	{
		set->rows = lp_alloc(f, (size_t) nr * dp);
		set->bias = lp_alloc(f, sizeof(int32_t) * (size_t) nr);
		if (set->rows == NULL || set->bias == NULL)
			return TC_ERR_NOMEM;
		memset(set->rows, 0, (size_t) nr * dp);
		memset(set->bias, 0, sizeof(int32_t) * (size_t) nr);
	}
	if (want_packed)
	{
		set->packed = lp_alloc(f, (size_t) nc * dp);
		if (set->packed == NULL)
			return TC_ERR_NOMEM;
		memset(set->packed, 128, (size_t) nc * dp);
	}
	memset(q, 0, (size_t) dp * nt);
	for (int64_t c0 = 0; c0 < p->n; c0 += check)
	{
		int64_t		c1 = p->n - c0 > check ? c0 + check : p->n;
		/* parts of whole groups of 16 points, 256 at least */
		int64_t		step = ((c1 - c0 + nt - 1) / nt + 255) / 256 * 256;
		int			np = 0;

		if (!tc_poll(join))
			return TC_STOPPED;
		for (int64_t i0 = c0; i0 < c1; i0 += step, np++)
			part[np] = (LpPart) {f, p, set, i0, c1 - i0 > step ? i0 + step : c1,
			q + (size_t) np * dp, x + (size_t) np * dp, true};
		tc_run_parts(quantise_part, part, sizeof(LpPart), np);
		for (int t = 0; t < np; t++)
			if (!part[t].in_range)
			{
				*in_range = false;
				return TC_OK;
			}
	}
	return TC_OK;
}

bool
tc_dot_filter_lp_applies(const TcJoin *join)
{
	const TcJoinParams *pr = &join->params;

	if (join->a.d > TC_LP_MAX_DIMS || join->a.n == 0)
		return false;
	return pr->metric == TC_METRIC_INNER_PRODUCT ||
		(pr->metric == TC_METRIC_COSINE && pr->eps <= 0.99);
}

TcStatus
tc_dot_filter_lp_build(TcJoin *join, const double *norm_a, const double *norm_b, bool portable,
					   TcDotFilterLp **slot)
{
	const TcPoints *a = &join->a;
	const TcPoints *b = join->self ? NULL : &join->b;
	bool		in_range = true;
	TcDotFilterLp *f;
	TcStatus	st;

	*slot = NULL;
	if (!tc_dot_filter_lp_applies(join))
		return TC_OK;
	/* Owned by the caller from here on, so a longjmp out of a poll leaks nothing. */
	f = *slot = calloc(1, sizeof(TcDotFilterLp));
	if (f == NULL)
		return TC_ERR_NOMEM;
	f->d = a->d;
	f->dp = (a->d + 3) / 4 * 4;
	f->portable = portable;
	f->metric = join->params.metric;
	f->eps = join->params.eps;
	f->g64 = a->d * 0x1p-53 / (1 - a->d * 0x1p-53);
	f->cos_out = (1.0 - f->eps) * (1.0 - 0x1p-40);
	st = build_set(join, f, a, norm_a, true, b == NULL, &f->a, &in_range);
	if (st == TC_OK && in_range)
	{
		if (b)
			st = build_set(join, f, b, norm_b, false, true, &f->b, &in_range);
		else
			f->b = f->a;
	}
	if (st == TC_OK && !in_range)
	{
		/* a coordinate out of the proof's range: the float32 filter's turn */
		tc_dot_filter_lp_free(f);
		*slot = NULL;
		return TC_OK;
	}
	return st;
}

/* Q's bound on the contract's dot product of a's i and b's j (the proof's U). */
static inline double
lp_upper(const TcDotFilterLp *f, int64_t i, int64_t j, int32_t Q)
{
	double		c1 = f->a.R[i] + f->g64 * f->a.N[i];
	double		c2 = f->a.N[i] + f->a.R[i];
	double		est = (double) Q * f->a.s[i] * f->b.s[j];
	double		B = c1 * f->b.N[j] + c2 * f->b.R[j];

	return (est + B) + TC_LP_SLACK * (fabs(est) + B);
}

/* The full decision on U (the proof's last part): false where surely out. */
static inline bool
lp_may_keep(const TcDotFilterLp *f, int64_t i, int64_t j, double U)
{
	if (f->metric == TC_METRIC_INNER_PRODUCT)
		return !(U < -f->eps);
	if (U < f->cos_out * f->a.sq[i] * f->b.sq[j])
		return false;
	return !(tc_cosine_dist(U, f->a.norm[i], f->b.norm[j]) > f->eps);
}

/* The exact integer qa . qb of a's i and b's j, from the packed layout. */
static int32_t
lp_dot_portable(const TcDotFilterLp *f, int64_t i, int64_t j)
{
	const int8_t *x = f->a.rows + (size_t) i * f->dp;
	const uint8_t *g = f->b.packed + (size_t) (j / TC_LP_COLS) * TC_LP_COLS * f->dp;
	int			c = (int) (j % TC_LP_COLS);
	int32_t		acc = 0;

	for (int k = 0; k < f->dp; k++)
		acc += (int32_t) x[k] * (int32_t) g[(size_t) (k / 4) * TC_LP_COLS * 4 + c * 4 + k % 4];
	return acc - f->a.bias[i];
}

double
tc_dot_filter_lp_upper(const TcDotFilterLp *f, int64_t i, int64_t j)
{
	return lp_upper(f, i, j, lp_dot_portable(f, i, j));
}

#ifdef TC_LP_X86
#define TC_LP_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))

/*
 * Rows i .. i + 7 of a against NG groups of 16 packed columns of b (NG 1
 * or 2): acc[r * NG + g] holds their int32 sums (the proof's, before the
 * bias).  The rows' four bytes are broadcast; the columns stay in
 * registers.
 */
#define TC_LP_KERNEL(NAME, NG) \
TC_LP_TARGET static void \
NAME(const int8_t *a, int dp, const uint8_t *b, __m512i *out) \
{ \
	__m512i		acc[TC_LP_ROWS * NG]; \
	const size_t gstride = (size_t) TC_LP_COLS * dp; \
	\
	_Pragma("GCC unroll 16") \
	for (int r = 0; r < TC_LP_ROWS * NG; r++) \
		acc[r] = _mm512_setzero_si512(); \
	for (int k = 0; k < dp; k += 4) \
	{ \
		__m512i		y[NG]; \
		\
		_Pragma("GCC unroll 2") \
		for (int g = 0; g < NG; g++) \
			y[g] = _mm512_load_si512(b + g * gstride + (size_t) k * TC_LP_COLS); \
		_Pragma("GCC unroll 8") \
		for (int r = 0; r < TC_LP_ROWS; r++) \
		{ \
			int32_t		w; \
			__m512i		x; \
			\
			memcpy(&w, a + (size_t) r * dp + k, 4); \
			x = _mm512_set1_epi32(w); \
			_Pragma("GCC unroll 2") \
			for (int g = 0; g < NG; g++) \
				acc[r * NG + g] = _mm512_dpbusd_epi32(acc[r * NG + g], y[g], x); \
		} \
	} \
	_Pragma("GCC unroll 16") \
	for (int r = 0; r < TC_LP_ROWS * NG; r++) \
		out[r] = acc[r]; \
}

TC_LP_KERNEL(lp_kernel_8x32, 2)
TC_LP_KERNEL(lp_kernel_8x16, 1)

/*
 * The decisions of row i against 16 columns from j (cols of them valid)
 * into keep: the proof's U, lane by lane as lp_upper computes it, against
 * the quick threshold; cosine's survivors take lp_may_keep.
 */
TC_LP_TARGET static void
lp_decide16(const TcDotFilterLp *f, int64_t i, int64_t j, int cols, __m512i acc, uint8_t *keep)
{
	const __m512i Q = _mm512_sub_epi32(acc, _mm512_set1_epi32(f->a.bias[i]));
	const __m512d si = _mm512_set1_pd(f->a.s[i]);
	const __m512d c1 = _mm512_set1_pd(f->a.R[i] + f->g64 * f->a.N[i]);
	const __m512d c2 = _mm512_set1_pd(f->a.N[i] + f->a.R[i]);
	const __m512d slack = _mm512_set1_pd(TC_LP_SLACK);
	const bool	ip = f->metric == TC_METRIC_INNER_PRODUCT;
	const __m512d ct = _mm512_set1_pd(ip ? 0.0 : f->cos_out * f->a.sq[i]);
	__mmask16	valid = (__mmask16) ((1u << cols) - 1);
	__mmask16	out = 0;

	for (int h = 0; h < 2; h++)
	{
		__m256i		q32 = h == 0 ? _mm512_castsi512_si256(Q) : _mm512_extracti64x4_epi64(Q, 1);
		__m512d		q = _mm512_cvtepi32_pd(q32);
		int64_t		jh = j + 8 * h;
		__m512d		est = _mm512_mul_pd(_mm512_mul_pd(q, si), _mm512_loadu_pd(f->b.s + jh));
		__m512d		B = _mm512_add_pd(_mm512_mul_pd(c1, _mm512_loadu_pd(f->b.N + jh)),
									  _mm512_mul_pd(c2, _mm512_loadu_pd(f->b.R + jh)));
		__m512d		U = _mm512_add_pd(_mm512_add_pd(est, B),
									  _mm512_mul_pd(slack, _mm512_add_pd(_mm512_abs_pd(est), B)));
		__m512d		thr = ip ? _mm512_set1_pd(-f->eps) : _mm512_mul_pd(ct, _mm512_loadu_pd(f->b.sq + jh));

		out |= (__mmask16) (_mm512_cmp_pd_mask(U, thr, _CMP_LT_OQ) << (8 * h));
	}
	out = (__mmask16) ~out & valid;
	_mm_mask_storeu_epi8(keep, valid, _mm_maskz_set1_epi8(out, 1));
	if (!ip)
	{
		int32_t		qs[16];

		_mm512_storeu_si512(qs, Q);
		for (unsigned m = out; m != 0; m &= m - 1)
		{
			int			c = __builtin_ctz(m);

			keep[c] = lp_may_keep(f, i, j + c, lp_upper(f, i, j + c, qs[c]));
		}
	}
}

/* tc_dot_filter_lp_block's AVX-512 VNNI body (j0 a multiple of 16). */
TC_LP_TARGET static void
lp_block_vnni(const TcDotFilterLp *f, int64_t i0, int64_t i1, int64_t j0, int64_t j1, uint8_t *keep)
{
	const int64_t w = j1 - j0;

	for (int64_t i = i0; i < i1; i += TC_LP_ROWS)
	{
		const int8_t *a = f->a.rows + (size_t) i * f->dp;

		for (int64_t j = j0; j < j1; j += 2 * TC_LP_COLS)
		{
			int			ng = j1 - j > TC_LP_COLS ? 2 : 1;
			__m512i		acc[TC_LP_ROWS * 2];
			const uint8_t *b = f->b.packed + (size_t) (j / TC_LP_COLS) * TC_LP_COLS * f->dp;

			if (ng == 2)
				lp_kernel_8x32(a, f->dp, b, acc);
			else
				lp_kernel_8x16(a, f->dp, b, acc);
			for (int r = 0; r < TC_LP_ROWS && i + r < i1; r++)
				for (int g = 0; g < ng; g++)
				{
					int64_t		jg = j + g * TC_LP_COLS;
					int			cols = j1 - jg < TC_LP_COLS ? (int) (j1 - jg) : TC_LP_COLS;

					lp_decide16(f, i + r, jg, cols, acc[r * ng + g], keep + (i + r - i0) * w + (jg - j0));
				}
		}
	}
}
#endif

void
tc_dot_filter_lp_block(const TcDotFilterLp *f, int64_t i0, int64_t i1, int64_t j0, int64_t j1,
					   uint8_t *keep)
{
	const int64_t w = j1 - j0;

#ifdef TC_LP_X86
	if (!f->portable && j0 % TC_LP_COLS == 0)
	{
		lp_block_vnni(f, i0, i1, j0, j1, keep);
		return;
	}
#endif
	for (int64_t i = i0; i < i1; i++)
		for (int64_t j = j0; j < j1; j++)
			keep[(i - i0) * w + (j - j0)] = lp_may_keep(f, i, j, tc_dot_filter_lp_upper(f, i, j));
}
