/*
 * test_api.c
 *		The engine's small entry points (tc_cpu_count, tc_status_name,
 *		tc_join_destroy(NULL)), tc_sq_threshold, and parameters outside the
 *		documented ranges.
 */
#include "test_harness.h"

#include <float.h>
#include <math.h>
#include <string.h>

void
test_basics(void)
{
	case_begin("tc_cpu_count");
	CHECK(tc_cpu_count() >= 1, "tc_cpu_count() = %d", tc_cpu_count());
	case_end();

	case_begin("tc_status_name");
	for (int s = TC_OK; s <= TC_ERR_INTERNAL; s++)
	{
		const char *name = tc_status_name((TcStatus) s);

		CHECK(name != NULL && name[0] != '\0', "no name for status %d", s);
	}
	case_end();

	case_begin("tc_join_destroy(NULL)");
	tc_join_destroy(NULL);
	case_end();
}

static void
sq_threshold_check(double eps)
{
	double		t = tc_sq_threshold(eps);

	if (!(t >= 0.0) || !(sqrt(t) <= eps) || !(sqrt(nextafter(t, INFINITY)) > eps))
		check_fail("tc_sq_threshold(%.17g = %a) = %.17g (%a): sqrt(t) = %a, sqrt(next up) = %a",
				   eps, eps, t, t, sqrt(t), sqrt(nextafter(t, INFINITY)));
}

void
test_sq_threshold(void)
{
	Rng			r;

	rng_seed(&r, FIXED_SEED ^ 1);
	case_begin("tc_sq_threshold(0)");
	CHECK(tc_sq_threshold(0.0) == 0.0, "tc_sq_threshold(0) = %a", tc_sq_threshold(0.0));
	case_end();

	case_begin("tc_sq_threshold special values");
	{
		const double special[] = {
			0.0, DBL_TRUE_MIN, 2 * DBL_TRUE_MIN, DBL_MIN, nextafter(DBL_MIN, 0),
			1e-300, 1e-170, 1e-162, 1e-154, 0.1, 0.5, 1.0, 2.0, 3.0, 10.0,
			sqrt(2.0), sqrt(3.0), nextafter(1.0, 0), nextafter(1.0, 2),
			1e150, 1e154, sqrt(DBL_MAX), nextafter(sqrt(DBL_MAX), 0),
			nextafter(sqrt(DBL_MAX), INFINITY), 1e155, 1e200, 1e300, DBL_MAX
		};

		for (size_t i = 0; i < sizeof(special) / sizeof(special[0]); i++)
			sq_threshold_check(special[i]);
	}
	case_end();

	case_begin("tc_sq_threshold random eps");
	for (int i = 0; i < 200000; i++)
	{
		double		eps;
		uint64_t	bits;

		switch (i % 5)
		{
			case 0:				/* any finite non-negative double */
				do
				{
					bits = rng_next(&r) & ~(UINT64_C(1) << 63);
					memcpy(&eps, &bits, sizeof(eps));
				} while (!isfinite(eps));
				break;
			case 1:
				eps = rng_uniform(&r) * 10.0;
				break;
			case 2:				/* sqrt of a double: s is near-exact */
				eps = sqrt(rng_uniform(&r) * 100.0);
				break;
			case 3:				/* a real distance of float4-ish data */
				eps = sqrt((double) (float) rng_uniform(&r) + (double) (float) rng_uniform(&r));
				break;
			default:			/* neighbours of small integers' roots */
				eps = sqrt((double) rng_below(&r, 1000));
				eps = (rng_next(&r) & 1) ? nextafter(eps, 0) : nextafter(eps, INFINITY);
				break;
		}
		sq_threshold_check(eps);
	}
	case_end();
}

/*
 * Parameters outside the documented ranges.  Those that cannot mean anything
 * (eps < 0, NaN or infinite; bad sizes or type) must be rejected with
 * TC_ERR_INVALID; for those the engine may reasonably normalize (threads < 1,
 * an unknown method) a correct result is accepted as well.
 */
void
test_invalid(void)
{
	double		coords[6] = {0, 0, 1, 1, 2, 2};
	TcPoints	pts = {coords, 3, 2, TC_FLOAT8};
	struct
	{
		const char *what;
		TcPoints	p;
		TcJoinParams params;
		bool		may_accept;
	}			cases[] = {
		{"eps < 0", pts, make_params(-1.0, TC_METHOD_GRID, 1, false), false},
		{"eps NaN", pts, make_params(NAN, TC_METHOD_GRID, 1, false), false},
		{"eps NaN brute", pts, make_params(NAN, TC_METHOD_BRUTE, 1, false), false},
		{"eps +inf", pts, make_params(INFINITY, TC_METHOD_AUTO, 1, false), false},
		{"n < 0", {coords, -1, 2, TC_FLOAT8}, make_params(1.0, TC_METHOD_GRID, 1, false), false},
		{"bad type", {coords, 3, 2, (TcElemType) 3}, make_params(1.0, TC_METHOD_GRID, 1, false), false},
		{"d < 0", {coords, 3, -2, TC_FLOAT8}, make_params(1.0, TC_METHOD_GRID, 1, false), false},
		{"data NULL with n > 0", {NULL, 3, 2, TC_FLOAT8}, make_params(1.0, TC_METHOD_GRID, 1, false), false},
		{"threads 0", pts, make_params(1.5, TC_METHOD_GRID, 0, false), true},
		{"threads -1", pts, make_params(1.5, TC_METHOD_BRUTE, -1, false), true},
		{"unknown method", pts, make_params(1.5, (TcMethod) 77, 1, false), true},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
	{
		TcError		err;
		TcJoin	   *join;

		case_begin("invalid parameters: %s", cases[i].what);
		memset(&err, 0, sizeof(err));
		join = tc_join_create(&cases[i].p, NULL, &cases[i].params, &err);
		if (join == NULL)
		{
			CHECK(err.status == TC_ERR_INVALID, "err.status = %s, expected TC_ERR_INVALID",
				  tc_status_name(err.status));
			CHECK(err.message[0] != '\0', "err.message is empty");
		}
		else if (!cases[i].may_accept)
			check_fail("tc_join_create accepted it");
		else
		{
			/* Accepted: it must then behave like a valid join. */
			PairVec		want = {0};
			Collector	c;
			TcSink		sink = {collect_emit, collect_poll, &c, 0, NULL, NULL, NULL};
			TcStatus	st;

			memset(&c, 0, sizeof(c));
			c.owner = pthread_self();
			st = tc_join_run(join, &sink, &err);
			CHECK(st == TC_OK, "accepted, then tc_join_run returned %s", tc_status_name(st));
			ref_join(&cases[i].p, NULL, cases[i].params.eps, false, &want);
			pairvec_sort(&c.pairs, true, cases[i].p.n);
			if (compare_pairs(g_label, &c.pairs, &want, MAX_CASE_LINES) > 0)
				g_case_fails++;
			pairvec_free(&c.pairs);
			pairvec_free(&want);
		}
		tc_join_destroy(join);
		case_end();
	}

	/* eps = -0.0 satisfies eps >= 0: it must act exactly like 0. */
	{
		double		dup[8] = {1, 2, 1, 2, 3, 4, 1, 2};
		TcPoints	p = {dup, 4, 2, TC_FLOAT8};
		PairVec		want = {0};

		ref_join(&p, NULL, -0.0, false, &want);
		for (int m = TC_METHOD_AUTO; m <= TC_METHOD_BRUTE; m++)
		{
			TcJoinParams params = make_params(-0.0, (TcMethod) m, 2, false);

			case_begin("eps = -0.0 method=%s", method_name((TcMethod) m));
			join_case(&p, NULL, &params, &want);
			case_end();
		}
		pairvec_free(&want);
	}

	/* d = 0: either rejected, or every pair at distance 0. */
	{
		double		dummy = 0;
		TcPoints	p = {&dummy, 3, 0, TC_FLOAT8};
		TcJoinParams params = make_params(0.0, TC_METHOD_AUTO, 1, false);
		TcError		err;
		TcJoin	   *join;

		case_begin("d = 0 rejected or all pairs at distance 0");
		memset(&err, 0, sizeof(err));
		join = tc_join_create(&p, NULL, &params, &err);
		if (join == NULL)
			CHECK(err.status == TC_ERR_INVALID, "err.status = %s",
				  tc_status_name(err.status));
		else
		{
			PairVec		want = {0};

			tc_join_destroy(join);
			for (int i = 0; i < 3; i++)
				for (int j = i + 1; j < 3; j++)
					pairvec_push(&want, i, j, 0.0);
			join_case(&p, NULL, &params, &want);
			pairvec_free(&want);
		}
		case_end();
	}
}
