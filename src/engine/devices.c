/*
 * devices.c
 *		Which GPUs a join may use: tcjoin.devices' syntax, and the list
 *		resolved against the GPUs this process sees.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "engine_int.h"
#include "gpu.h"

bool
tc_devices_parse(const char *s, int *devices, int *n, char *msg, size_t msglen)
{
	const char *p = s ? s : "";
	int			count = 0;

	while (isspace((unsigned char) *p))
		p++;
	if (strncasecmp(p, "all", 3) == 0)
	{
		const char *q = p + 3;

		while (isspace((unsigned char) *q))
			q++;
		if (*q == '\0')
		{
			*n = 0;
			return true;
		}
	}
	for (;;)
	{
		long		v = 0;
		int			digits = 0;

		while (isspace((unsigned char) *p))
			p++;
		while (isdigit((unsigned char) *p) && v < 1000)
		{
			v = v * 10 + (*p++ - '0');
			digits++;
		}
		if (digits == 0)
		{
			snprintf(msg, msglen, "tcjoin.devices is \"all\" or a list of GPU numbers separated by commas, such as \"0,2\"");
			return false;
		}
		if (v >= TC_MAX_DEVICES || isdigit((unsigned char) *p))
		{
			snprintf(msg, msglen, "GPU numbers in tcjoin.devices are below %d", TC_MAX_DEVICES);
			return false;
		}
		if (count == TC_MAX_DEVICES)
		{
			snprintf(msg, msglen, "tcjoin.devices lists at most %d GPUs", TC_MAX_DEVICES);
			return false;
		}
		devices[count++] = (int) v;
		while (isspace((unsigned char) *p))
			p++;
		if (*p == '\0')
			break;
		if (*p++ != ',')
		{
			snprintf(msg, msglen, "tcjoin.devices is \"all\" or a list of GPU numbers separated by commas, such as \"0,2\"");
			return false;
		}
	}
	*n = count;
	return true;
}

/*
 * The join's GPUs into params: every one this process sees where the list
 * is empty ("all"), else the list, each of which must exist.
 */
TcStatus
tc_devices_resolve(TcJoinParams *params, TcError *err)
{
	char		reason[200] = "";
	int			have = tc_gpu_count(reason, sizeof(reason));

	if (have <= 0)
	{
		err->status = TC_ERR_NO_GPU;
		snprintf(err->message, sizeof(err->message), "no GPU is usable: %s", reason);
		return TC_ERR_NO_GPU;
	}
	if (have > TC_MAX_DEVICES)
		have = TC_MAX_DEVICES;
	if (params->ndevices == 0)
	{
		for (int i = 0; i < have; i++)
			params->devices[i] = i;
		params->ndevices = have;
		return TC_OK;
	}
	for (int i = 0; i < params->ndevices; i++)
		if (params->devices[i] < 0 || params->devices[i] >= have)
		{
			err->status = TC_ERR_INVALID;
			snprintf(err->message, sizeof(err->message),
					 "tcjoin.devices names GPU %d, but this process sees %d GPU%s (0 to %d)",
					 params->devices[i], have, have == 1 ? "" : "s", have - 1);
			return TC_ERR_INVALID;
		}
	return TC_OK;
}
