/*
 * test_overrides.c
 *		tc_overrides_parse against its documented syntax (engine.h,
 *		overrides.c): "key=value" items separated by commas or spaces; empty
 *		or NULL text gives all zero; a bad item (unknown key, a value outside
 *		the key's list, no '=', batch_rate outside 0..1) returns false with a
 *		message naming it and leaves the result all zero.
 *
 *	  tile_kernel=auto|mma
 *	  recheck=auto|staged|lane|bulk192|bulk256
 *	  recheck_group=on|off
 *	  clusters=on|off
 *	  pingpong=on|off
 *	  filter_bound=prefix|whole
 *	  batch_rate=R		(0 < R <= 1; 0 for the default)
 *	  trace=on|off
 *
 * The expectations are written from that syntax, not from the parser.
 */
#include "test_harness.h"

#include <string.h>

/* Fields compared one by one: the struct's padding is no one's business. */
static bool
ov_equal(const TcOverrides *x, const TcOverrides *y)
{
	return x->tile_kernel == y->tile_kernel &&
		x->recheck == y->recheck &&
		x->no_recheck_group == y->no_recheck_group &&
		x->no_clusters == y->no_clusters &&
		x->no_pingpong == y->no_pingpong &&
		x->whole_dot_bound == y->whole_dot_bound &&
		same_bits(x->batch_rate, y->batch_rate) &&
		x->trace == y->trace &&
		x->band_squares == y->band_squares;
}

static void
ov_describe(const TcOverrides *o, char *buf, size_t len)
{
	snprintf(buf, len, "tile_kernel %d, recheck %d, no_recheck_group %d, no_clusters %d, "
			 "no_pingpong %d, whole_dot_bound %d, batch_rate %.17g, trace %d, band_squares %u",
			 (int) o->tile_kernel, (int) o->recheck, o->no_recheck_group, o->no_clusters,
			 o->no_pingpong, o->whole_dot_bound, o->batch_rate, o->trace, (unsigned) o->band_squares);
}

/* text must parse, to exactly want (out filled with garbage first). */
static void
expect_parsed(const char *text, const TcOverrides *want)
{
	TcOverrides out;
	char		msg[256];
	char		got_s[256],
				want_s[256];

	memset(&out, 0xa5, sizeof(out));
	memset(msg, 0, sizeof(msg));
	if (!tc_overrides_parse(text, &out, msg, sizeof(msg)))
	{
		check_fail("\"%s\" refused: %s", text ? text : "(NULL)", msg);
		return;
	}
	if (!ov_equal(&out, want))
	{
		ov_describe(&out, got_s, sizeof(got_s));
		ov_describe(want, want_s, sizeof(want_s));
		check_fail("\"%s\" gave %s; expected %s", text ? text : "(NULL)", got_s, want_s);
	}
}

/*
 * text must be refused, with a message that names what is wrong (names:
 * each must appear in it), and out left all zero.
 */
static void
expect_refused(const char *text, const char *name1, const char *name2)
{
	TcOverrides out;
	TcOverrides zero;
	char		msg[256];
	char		got_s[256];

	memset(&zero, 0, sizeof(zero));
	memset(&out, 0xa5, sizeof(out));
	memset(msg, 0, sizeof(msg));
	if (tc_overrides_parse(text, &out, msg, sizeof(msg)))
	{
		ov_describe(&out, got_s, sizeof(got_s));
		check_fail("\"%s\" accepted, as %s", text, got_s);
		return;
	}
	CHECK(msg[0] != '\0', "\"%s\" refused with no message", text);
	CHECK(name1 == NULL || strstr(msg, name1) != NULL,
		  "\"%s\": the message does not name \"%s\": %s", text, name1, msg);
	CHECK(name2 == NULL || strstr(msg, name2) != NULL,
		  "\"%s\": the message does not name \"%s\": %s", text, name2, msg);
	if (!ov_equal(&out, &zero))
	{
		ov_describe(&out, got_s, sizeof(got_s));
		check_fail("\"%s\" refused, but the result is not all zero: %s", text, got_s);
	}
}

static TcOverrides
ov_zero(void)
{
	TcOverrides o;

	memset(&o, 0, sizeof(o));
	return o;
}

/* Empty text, and text of separators only: no items, all zero. */
static void
overrides_empty(void)
{
	TcOverrides zero = ov_zero();

	case_begin("[overrides] NULL, empty and separator-only text give all zero");
	expect_parsed(NULL, &zero);
	expect_parsed("", &zero);
	expect_parsed(",", &zero);
	expect_parsed("  ", &zero);
	expect_parsed(" , ,, ", &zero);
	case_end();
}

/* Every key with every value it documents. */
static void
overrides_each_value(void)
{
	TcOverrides o;

	case_begin("[overrides] tile_kernel=auto|mma");
	o = ov_zero();
	expect_parsed("tile_kernel=auto", &o);
	o.tile_kernel = TC_TILE_MMA;
	expect_parsed("tile_kernel=mma", &o);
	case_end();

	case_begin("[overrides] recheck=auto|staged|lane|bulk192|bulk256");
	{
		static const struct
		{
			const char *text;
			TcRecheckKernel kernel;
		}			r[] = {
			{"recheck=auto", TC_RECHECK_AUTO},
			{"recheck=staged", TC_RECHECK_STAGED},
			{"recheck=lane", TC_RECHECK_LANE},
			{"recheck=bulk192", TC_RECHECK_BULK192},
			{"recheck=bulk256", TC_RECHECK_BULK256},
		};

		for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		{
			o = ov_zero();
			o.recheck = r[i].kernel;
			expect_parsed(r[i].text, &o);
		}
	}
	case_end();

	case_begin("[overrides] recheck_group=on|off");
	o = ov_zero();
	expect_parsed("recheck_group=on", &o);
	o.no_recheck_group = true;
	expect_parsed("recheck_group=off", &o);
	case_end();

	case_begin("[overrides] clusters=on|off");
	o = ov_zero();
	expect_parsed("clusters=on", &o);
	o.no_clusters = true;
	expect_parsed("clusters=off", &o);
	case_end();

	case_begin("[overrides] pingpong=on|off");
	o = ov_zero();
	expect_parsed("pingpong=on", &o);
	o.no_pingpong = true;
	expect_parsed("pingpong=off", &o);
	case_end();

	case_begin("[overrides] filter_bound=prefix|whole");
	o = ov_zero();
	expect_parsed("filter_bound=prefix", &o);
	o.whole_dot_bound = true;
	expect_parsed("filter_bound=whole", &o);
	case_end();

	case_begin("[overrides] trace=on|off");
	o = ov_zero();
	expect_parsed("trace=off", &o);
	o.trace = true;
	expect_parsed("trace=on", &o);
	case_end();

	case_begin("[overrides] batch_rate from 0 (the default) to 1");
	{
		static const struct
		{
			const char *text;
			double		rate;
		}			r[] = {
			{"batch_rate=0", 0.0},
			{"batch_rate=1", 1.0},
			{"batch_rate=0.5", 0.5},
			{"batch_rate=0.25", 0.25},
			{"batch_rate=1e-6", 1e-6},
			{"batch_rate=1.0", 1.0},
		};

		for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		{
			o = ov_zero();
			o.batch_rate = r[i].rate;
			expect_parsed(r[i].text, &o);
		}
	}
	case_end();
}

/* band_squares: a whole number of squares, 0 the default. */
static void
overrides_band_squares(void)
{
	static const struct
	{
		const char *text;
		uint32_t	n;
	}			r[] = {
		{"band_squares=0", 0},
		{"band_squares=1", 1},
		{"band_squares=3", 3},
		{"band_squares=65536", 65536},
		{"band_squares=4294967295", 4294967295u},
	};

	case_begin("[overrides] band_squares from 0 (the default) to 2^32 - 1");
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
	{
		TcOverrides o = ov_zero();

		o.band_squares = r[i].n;
		expect_parsed(r[i].text, &o);
	}
	case_end();

	case_begin("[overrides] band_squares not a whole number in range refused");
	expect_refused("band_squares=-1", "band_squares", "-1");
	expect_refused("band_squares=+3", "band_squares", "+3");
	expect_refused("band_squares= 3", "band_squares", NULL);
	expect_refused("band_squares=1.5", "band_squares", "1.5");
	expect_refused("band_squares=4294967296", "band_squares", "4294967296");
	expect_refused("band_squares=many", "band_squares", "many");
	expect_refused("band_squares=3x", "band_squares", "3x");
	case_end();
}

/* Several items, separated by commas, spaces, or both. */
static void
overrides_lists(void)
{
	TcOverrides o = ov_zero();

	case_begin("[overrides] items separated by commas or spaces");
	o.recheck = TC_RECHECK_STAGED;
	o.no_clusters = true;
	expect_parsed("recheck=staged,clusters=off", &o);
	expect_parsed("recheck=staged clusters=off", &o);
	expect_parsed("recheck=staged, clusters=off", &o);
	expect_parsed(" clusters=off ,recheck=staged, ", &o);
	case_end();

	case_begin("[overrides] every key at once");
	o = ov_zero();
	o.tile_kernel = TC_TILE_MMA;
	o.recheck = TC_RECHECK_BULK256;
	o.no_recheck_group = true;
	o.no_clusters = true;
	o.no_pingpong = true;
	o.whole_dot_bound = true;
	o.batch_rate = 0.125;
	o.trace = true;
	expect_parsed("tile_kernel=mma,recheck=bulk256,recheck_group=off,clusters=off,"
				  "pingpong=off,filter_bound=whole,batch_rate=0.125,trace=on", &o);
	expect_parsed("trace=on batch_rate=0.125 filter_bound=whole pingpong=off "
				  "clusters=off recheck_group=off recheck=bulk256 tile_kernel=mma", &o);
	case_end();
}

/* Keys that are not among the eight, alone or after a good item. */
static void
overrides_unknown_key(void)
{
	case_begin("[overrides] unknown keys refused, the message naming them");
	expect_refused("recheck_kernel=lane", "recheck_kernel", NULL);
	expect_refused("foo=1", "foo", NULL);
	expect_refused("batch_depth=2", "batch_depth", NULL);
	expect_refused("upload_threads=4", "upload_threads", NULL);
	expect_refused("TCJOIN_RECHECK=bulk", "TCJOIN_RECHECK", NULL);
	expect_refused("recheck=lane,bogus=on", "bogus", NULL);
	expect_refused("clusters=off unknown=off", "unknown", NULL);
	case_end();
}

/* Values outside a key's list, including the removed 128-byte copies. */
static void
overrides_bad_value(void)
{
	case_begin("[overrides] values outside a key's list refused, the message naming them");
	expect_refused("tile_kernel=wgmma", "tile_kernel", "wgmma");
	expect_refused("recheck=bulk128", "recheck", "bulk128");
	expect_refused("recheck=bulk", "recheck", "bulk");
	expect_refused("recheck=fast", "recheck", "fast");
	expect_refused("recheck_group=yes", "recheck_group", "yes");
	expect_refused("clusters=1", "clusters", "1");
	expect_refused("pingpong=true", "pingpong", "true");
	expect_refused("filter_bound=none", "filter_bound", "none");
	expect_refused("trace=2", "trace", "2");
	expect_refused("recheck=staged,clusters=maybe", "clusters", "maybe");
	case_end();
}

/* Items that are not key=value. */
static void
overrides_not_key_value(void)
{
	case_begin("[overrides] items without '=' (or with an empty side) refused");
	expect_refused("recheck", "recheck", NULL);
	expect_refused("trace", "trace", NULL);
	expect_refused("clusters off", "clusters", NULL);
	expect_refused("recheck=lane,pingpong", "pingpong", NULL);
	expect_refused("recheck=", "recheck", NULL);
	expect_refused("=on", "=on", NULL);
	expect_refused("=", NULL, NULL);
	case_end();
}

/* batch_rate outside 0..1, or not a number. */
static void
overrides_batch_rate_range(void)
{
	case_begin("[overrides] batch_rate outside 0..1 or not a number refused");
	expect_refused("batch_rate=1.5", "batch_rate", "1.5");
	expect_refused("batch_rate=2", "batch_rate", "2");
	expect_refused("batch_rate=-0.5", "batch_rate", "-0.5");
	expect_refused("batch_rate=-1e-9", "batch_rate", "-1e-9");
	expect_refused("batch_rate=1.0000001", "batch_rate", "1.0000001");
	expect_refused("batch_rate=nan", "batch_rate", "nan");
	expect_refused("batch_rate=inf", "batch_rate", "inf");
	expect_refused("batch_rate=abc", "batch_rate", "abc");
	expect_refused("batch_rate=0.5x", "batch_rate", "0.5x");
	expect_refused("batch_rate=1e400", "batch_rate", "1e400");
	case_end();
}

void
test_overrides(void)
{
	overrides_empty();
	overrides_each_value();
	overrides_band_squares();
	overrides_lists();
	overrides_unknown_key();
	overrides_bad_value();
	overrides_not_key_value();
	overrides_batch_rate_range();
}
