/*
 * overrides.c
 *		The one parser of developer overrides (TcOverrides): the text of
 *		tcjoin.dev_overrides and of the test programs' --override flag.
 *
 *	  tile_kernel=auto|mma
 *	  recheck=auto|staged|lane|bulk192|bulk256
 *	  recheck_group=on|off
 *	  clusters=on|off
 *	  pingpong=on|off
 *	  filter_bound=prefix|whole
 *	  batch_rate=R		(0 < R <= 1; 0 for the default)
 *	  trace=on|off
 *	  prefault=on|off
 *	  direct_load=on|off
 *	  dot_filter=auto|float32|int8|int8-portable
 *	  split=auto|all	(several GPUs: as many as pay, or every one listed)
 *	  band_squares=N	(0 for the default; N > 0: that many squares of tiles a band at most)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

typedef struct OverrideChoice
{
	const char *name;
	int			value;
} OverrideChoice;

static const OverrideChoice tile_choices[] = {
	{"auto", TC_TILE_AUTO}, {"mma", TC_TILE_MMA}, {NULL, 0}
};
static const OverrideChoice recheck_choices[] = {
	{"auto", TC_RECHECK_AUTO}, {"staged", TC_RECHECK_STAGED}, {"lane", TC_RECHECK_LANE},
	{"bulk192", TC_RECHECK_BULK192}, {"bulk256", TC_RECHECK_BULK256}, {NULL, 0}
};
static const OverrideChoice onoff_choices[] = {
	{"on", 1}, {"off", 0}, {NULL, 0}
};
static const OverrideChoice dot_filter_choices[] = {
	{"auto", TC_DOT_FILTER_AUTO}, {"float32", TC_DOT_FILTER_FLOAT32}, {"int8", TC_DOT_FILTER_INT8},
	{"int8-portable", TC_DOT_FILTER_INT8_PORTABLE}, {NULL, 0}
};
static const OverrideChoice split_choices[] = {
	{"auto", 0}, {"all", 1}, {NULL, 0}
};
static const OverrideChoice bound_choices[] = {
	{"prefix", 0}, {"whole", 1}, {NULL, 0}
};

/* value among choices into *out; false when it is none of them */
static bool
pick(const OverrideChoice *choices, const char *value, int *out)
{
	for (int i = 0; choices[i].name; i++)
		if (strcmp(choices[i].name, value) == 0)
		{
			*out = choices[i].value;
			return true;
		}
	return false;
}

static void
list_choices(const OverrideChoice *choices, char *buf, size_t len)
{
	size_t		used = 0;

	buf[0] = '\0';
	for (int i = 0; choices[i].name && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%s", i > 0 ? ", " : "", choices[i].name);
}

/* One "key=value" item into out; false with msg filled when it is not one. */
static bool
parse_item(const char *key, const char *value, TcOverrides *out, char *msg, size_t msglen)
{
	const OverrideChoice *choices = NULL;
	int			v = 0;
	char		names[128];

	if (strcmp(key, "batch_rate") == 0)
	{
		char	   *end;
		double		r;

		errno = 0;
		r = strtod(value, &end);
		if (errno != 0 || end == value || *end != '\0' || !(r >= 0.0 && r <= 1.0))
		{
			snprintf(msg, msglen, "batch_rate must be a number from 0 to 1, not \"%s\"", value);
			return false;
		}
		out->batch_rate = r;
		return true;
	}
	if (strcmp(key, "band_squares") == 0)
	{
		char	   *end;
		unsigned long n;

		errno = 0;
		n = strtoul(value, &end, 10);
		if (errno != 0 || end == value || *end != '\0' || value[0] < '0' || value[0] > '9' ||
			n > UINT32_MAX)
		{
			snprintf(msg, msglen, "band_squares must be a whole number from 0 to %u, not \"%s\"",
					 (unsigned) UINT32_MAX, value);
			return false;
		}
		out->band_squares = (uint32_t) n;
		return true;
	}
	if (strcmp(key, "tile_kernel") == 0)
		choices = tile_choices;
	else if (strcmp(key, "recheck") == 0)
		choices = recheck_choices;
	else if (strcmp(key, "filter_bound") == 0)
		choices = bound_choices;
	else if (strcmp(key, "dot_filter") == 0)
		choices = dot_filter_choices;
	else if (strcmp(key, "split") == 0)
		choices = split_choices;
	else if (strcmp(key, "recheck_group") == 0 || strcmp(key, "clusters") == 0 ||
			 strcmp(key, "pingpong") == 0 || strcmp(key, "trace") == 0 ||
			 strcmp(key, "prefault") == 0 || strcmp(key, "direct_load") == 0)
		choices = onoff_choices;
	else
	{
		snprintf(msg, msglen, "unknown override \"%s\" (known: tile_kernel, recheck, "
				 "recheck_group, clusters, pingpong, filter_bound, batch_rate, trace, prefault, direct_load, dot_filter, split, band_squares)", key);
		return false;
	}
	if (!pick(choices, value, &v))
	{
		list_choices(choices, names, sizeof(names));
		snprintf(msg, msglen, "override %s takes %s, not \"%s\"", key, names, value);
		return false;
	}
	if (choices == tile_choices)
		out->tile_kernel = (TcTileKernel) v;
	else if (choices == recheck_choices)
		out->recheck = (TcRecheckKernel) v;
	else if (choices == bound_choices)
		out->whole_dot_bound = v != 0;
	else if (choices == dot_filter_choices)
		out->dot_filter = (TcDotFilterKind) v;
	else if (choices == split_choices)
		out->split_all = v != 0;
	else if (strcmp(key, "recheck_group") == 0)
		out->no_recheck_group = v == 0;
	else if (strcmp(key, "clusters") == 0)
		out->no_clusters = v == 0;
	else if (strcmp(key, "pingpong") == 0)
		out->no_pingpong = v == 0;
	else if (strcmp(key, "prefault") == 0)
		out->no_prefault = v == 0;
	else if (strcmp(key, "direct_load") == 0)
		out->no_direct_load = v == 0;
	else
		out->trace = v != 0;
	return true;
}

bool
tc_overrides_parse(const char *text, TcOverrides *out, char *msg, size_t msglen)
{
	TcOverrides parsed;
	const char *p = text;

	memset(&parsed, 0, sizeof(parsed));
	memset(out, 0, sizeof(*out));
	if (msglen > 0)
		msg[0] = '\0';
	while (p && *p)
	{
		char		item[128];
		size_t		len = strcspn(p, ", \t\n");
		char	   *eq;

		if (len == 0)
		{
			p++;
			continue;
		}
		if (len >= sizeof(item))
		{
			snprintf(msg, msglen, "override item too long: \"%.40s...\"", p);
			return false;
		}
		memcpy(item, p, len);
		item[len] = '\0';
		p += len;
		eq = strchr(item, '=');
		if (eq == NULL || eq == item || eq[1] == '\0')
		{
			snprintf(msg, msglen, "override \"%s\" is not of the form key=value", item);
			return false;
		}
		*eq = '\0';
		if (!parse_item(item, eq + 1, &parsed, msg, msglen))
			return false;
	}
	*out = parsed;
	return true;
}
