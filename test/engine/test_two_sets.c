/*
 * test_two_sets.c
 *		Joins of two point sets (a against b) against the reference: sizes
 *		including empty sides, b the same set as a, mismatched dimensions,
 *		mixed element types.
 */
#include "test_harness.h"

#include <inttypes.h>
#include <string.h>

void
test_two_sets(void)
{
	Rng			r;
	TcPoints	a,
				b;
	TcError		err;
	TcJoinParams probe = make_params(0.1, TC_METHOD_AUTO, 1, false);
	TcJoin	   *join;
	static const TcMethod methods[] = {TC_METHOD_GRID, TC_METHOD_BRUTE, TC_METHOD_AUTO};

	rng_seed(&r, FIXED_SEED ^ 2);
	points_generate(&a, DIST_UNIFORM, 40, 3, TC_FLOAT8, &r);
	points_generate(&b, DIST_UNIFORM, 30, 3, TC_FLOAT8, &r);
	memset(&err, 0, sizeof(err));
	join = tc_join_create(&a, &b, &probe, &err);
	points_free(&a);
	points_free(&b);
	if (join == NULL && err.status == TC_ERR_INVALID)
	{
		printf("note: two-set joins rejected with TC_ERR_INVALID (%s): two-set tests skipped\n",
			   err.message);
		return;
	}
	tc_join_destroy(join);

	struct
	{
		Dist		dist;
		int64_t		na,
					nb;
		int32_t		d;
		TcElemType	ta,
					tb;
	}			specs[] = {
		{DIST_UNIFORM, 300, 200, 3, TC_FLOAT8, TC_FLOAT8},
		{DIST_CLUSTERED, 500, 50, 2, TC_FLOAT4, TC_FLOAT4},
		{DIST_DUPLICATES, 200, 300, 5, TC_FLOAT8, TC_FLOAT8},
		{DIST_NEGATIVE, 100, 400, 1, TC_FLOAT8, TC_FLOAT8},
		{DIST_MIXED_MAG, 150, 150, 4, TC_FLOAT8, TC_FLOAT8},
		{DIST_OFFSET_1E6, 200, 200, 16, TC_FLOAT4, TC_FLOAT4},
		{DIST_UNIFORM, 0, 100, 3, TC_FLOAT8, TC_FLOAT8},
		{DIST_UNIFORM, 100, 0, 3, TC_FLOAT8, TC_FLOAT8},
		{DIST_UNIFORM, 1, 1, 2, TC_FLOAT8, TC_FLOAT8},
		{DIST_LATTICE, 300, 300, 2, TC_FLOAT8, TC_FLOAT8},
		{DIST_UNIFORM, 200, 200, 64, TC_FLOAT8, TC_FLOAT8},
	};

	for (size_t s = 0; s < sizeof(specs) / sizeof(specs[0]); s++)
	{
		RefTable	t;
		EpsChoice	eps[EPS_KINDS + 2];
		int			neps;
		PairVec		want = {0};

		points_generate(&a, specs[s].dist, specs[s].na, specs[s].d, specs[s].ta, &r);
		points_generate(&b, specs[s].dist, specs[s].nb, specs[s].d, specs[s].tb, &r);
		ref_table_build(&t, &a, &b);
		neps = choose_eps(&t, &r, eps);
		for (int e = 0; e < neps; e++)
		{
			ref_table_pairs(&t, eps[e].eps, false, &want);
			for (int mi = 0; mi < 3; mi++)
			{
				int			threads = thread_choices[g_rotate++ % 4];
				TcJoinParams params = make_params(eps[e].eps, methods[mi], threads, false);

				case_begin("[two-set] dist=%s na=%" PRId64 " nb=%" PRId64 " d=%d %s eps=%s %.17g method=%s threads=%d",
						   dist_name(specs[s].dist), specs[s].na, specs[s].nb,
						   specs[s].d, type_name(specs[s].ta),
						   eps_kind_names[eps[e].kind], eps[e].eps,
						   method_name(methods[mi]), threads);
				join_case(&a, &b, &params, &want);
				case_end();
			}
		}
		pairvec_free(&want);
		ref_table_free(&t);
		points_free(&a);
		points_free(&b);
	}

	/* b is the same set as a: a full cross join, (i, i) and both orders. */
	{
		PairVec		want = {0};

		points_generate(&a, DIST_DUPLICATES, 120, 2, TC_FLOAT8, &r);
		ref_join(&a, &a, 0.05, false, &want);
		for (int mi = 0; mi < 3; mi++)
		{
			TcJoinParams params = make_params(0.05, methods[mi], 3, false);

			case_begin("[two-set] b == a method=%s", method_name(methods[mi]));
			join_case(&a, &a, &params, &want);
			case_end();
		}
		pairvec_free(&want);
		points_free(&a);
	}

	/* Mismatched dimensions must be rejected. */
	{
		double		x[6] = {0};
		TcPoints	pa = {x, 2, 3, TC_FLOAT8};
		TcPoints	pb = {x, 3, 2, TC_FLOAT8};
		TcJoinParams params = make_params(1.0, TC_METHOD_AUTO, 1, false);

		case_begin("[two-set] mismatched d rejected");
		memset(&err, 0, sizeof(err));
		join = tc_join_create(&pa, &pb, &params, &err);
		CHECK(join == NULL && err.status == TC_ERR_INVALID,
			  "create returned %p, status %s", (void *) join, tc_status_name(err.status));
		tc_join_destroy(join);
		case_end();
	}

	/* Mixed element types: either rejected or exact. */
	{
		TcJoinParams params = make_params(0.1, TC_METHOD_AUTO, 2, false);

		points_generate(&a, DIST_UNIFORM, 100, 3, TC_FLOAT4, &r);
		points_generate(&b, DIST_UNIFORM, 80, 3, TC_FLOAT8, &r);
		case_begin("[two-set] float4 x float8 rejected or exact");
		memset(&err, 0, sizeof(err));
		join = tc_join_create(&a, &b, &params, &err);
		if (join == NULL)
			CHECK(err.status == TC_ERR_INVALID, "status %s", tc_status_name(err.status));
		else
		{
			PairVec		want = {0};

			tc_join_destroy(join);
			ref_join(&a, &b, 0.1, false, &want);
			join_case(&a, &b, &params, &want);
			pairvec_free(&want);
		}
		case_end();
		points_free(&a);
		points_free(&b);
	}
}
