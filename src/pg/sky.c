/*
 * sky.c
 *		Helpers for matching sky catalogues with the Euclidean join:
 *		tc_radec_to_xyz (right ascension and declination in degrees as a
 *		unit vector) and tc_arcsec_to_chord (an angular radius as the chord
 *		between unit vectors), so that chord <= eps iff angle <= radius.
 *
 * Angles in degrees are reduced exactly before any rounding (fmod, then a
 * quadrant, then the complement past 45 degrees, all exact in float8), so
 * that multiples of 90 degrees give exact 0 and +-1 (the poles are
 * (0, 0, +-1), RA 0 and 360 the same vector) and sin and cos only ever see
 * radian angles in [0, pi/4], where the C library's are accurate to an
 * ulp.  README.md ("The sky") states the bounds this gives.
 */
#include "postgres.h"

#include <math.h>

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/float.h"

/* Radians per degree, pi / 180 rounded once. */
#define TC_RAD_PER_DEG (M_PI / 180.0)

/* Arcseconds in 180 degrees: every two directions lie within that. */
#define TC_ARCSEC_HALF_TURN 648000.0

/* sin and cos of t degrees, t in [0, 90]: the complement past 45 (exact: Sterbenz). */
static void
sincos_quadrant(double t, double *s, double *c)
{
	if (t <= 45.0)
	{
		*s = sin(t * TC_RAD_PER_DEG);
		*c = cos(t * TC_RAD_PER_DEG);
	}
	else
	{
		double		u = 90.0 - t;

		*s = cos(u * TC_RAD_PER_DEG);
		*c = sin(u * TC_RAD_PER_DEG);
	}
}

/*
 * sin and cos of x degrees (finite).  |x| mod 360 is exact (fmod), as is
 * the remainder in its quadrant (both terms multiples of the ulp of |x|,
 * the result smaller); a negative x by sin(-x) = -sin x, cos(-x) = cos x,
 * since moving it into [0, 360) by adding 360 would round.
 */
static void
sincos_deg(double x, double *s, double *c)
{
	double		r = fmod(fabs(x), 360.0);
	int			q = r >= 270.0 ? 3 : r >= 180.0 ? 2 : r >= 90.0 ? 1 : 0;
	double		st,
				ct;

	sincos_quadrant(r - 90.0 * q, &st, &ct);
	switch (q)
	{
		case 0:
			*s = st;
			*c = ct;
			break;
		case 1:
			*s = ct;
			*c = -st;
			break;
		case 2:
			*s = -st;
			*c = -ct;
			break;
		default:
			*s = -ct;
			*c = st;
			break;
	}
	if (x < 0)
		*s = -*s;
}

PG_FUNCTION_INFO_V1(tc_radec_to_xyz);

/*
 * (cos dec cos ra, cos dec sin ra, sin dec) for ra and dec in degrees: any
 * finite ra (taken mod 360), dec in [-90, 90].  Adding 0 turns a -0 into
 * 0, so that equal directions give equal arrays (the poles, RA -0).
 */
Datum
tc_radec_to_xyz(PG_FUNCTION_ARGS)
{
	double		ra = PG_GETARG_FLOAT8(0);
	double		dec = PG_GETARG_FLOAT8(1);
	double		sr,
				cr,
				sd,
				cd;
	Datum		xyz[3];

	if (!isfinite(ra))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("ra must be finite")));
	if (!isfinite(dec))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dec must be finite")));
	if (dec < -90.0 || dec > 90.0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dec must lie between -90 and 90 degrees"),
				 errdetail("dec is %s.", float8out_internal(dec))));
	sincos_deg(ra, &sr, &cr);
	sincos_deg(dec, &sd, &cd);
	xyz[0] = Float8GetDatum(cd * cr + 0.0);
	xyz[1] = Float8GetDatum(cd * sr + 0.0);
	xyz[2] = Float8GetDatum(sd + 0.0);
	PG_RETURN_ARRAYTYPE_P(construct_array(xyz, 3, FLOAT8OID, sizeof(float8), FLOAT8PASSBYVAL,
										  TYPALIGN_DOUBLE));
}

PG_FUNCTION_INFO_V1(tc_arcsec_to_chord);

/*
 * 2 sin(theta / 2) for an angle of arcsec arcseconds: the chord between
 * two unit vectors theta apart.  From 180 degrees on, 2: every two
 * directions lie within such a radius, and 2 is the longest chord.
 */
Datum
tc_arcsec_to_chord(PG_FUNCTION_ARGS)
{
	double		arcsec = PG_GETARG_FLOAT8(0);
	double		s,
				c;

	if (!isfinite(arcsec))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("arcsec must be finite")));
	if (arcsec < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("arcsec must not be negative")));
	if (arcsec >= TC_ARCSEC_HALF_TURN)
		PG_RETURN_FLOAT8(2.0);
	/* half the angle, in degrees: in [0, 90); -0 arcsec gives 0 */
	sincos_quadrant(arcsec / 7200.0, &s, &c);
	PG_RETURN_FLOAT8(2.0 * s + 0.0);
}
