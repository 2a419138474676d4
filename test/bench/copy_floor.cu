/*
 * copy_floor.cu
 *		The host link's floor for delivering pairs: device-to-host and
 *		host-to-device copy rates into pinned memory, in chunks of the size
 *		the GPU join copies (12 MB) and in one large copy.
 *
 *	copy_floor [MB]
 *
 * Prints one CSV line:
 *	d2h_chunked_gbps, d2h_large_gbps, h2d_large_gbps, gpu name
 * The median of 5 timed rounds, after a warm-up, each moving MB megabytes
 * (default 2048).  A join that delivers P pairs of 24 bytes cannot finish
 * faster than 24 P / d2h_chunked_gbps.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#define CHECK(x) check((x), #x)
#define CHUNK ((size_t) 12 << 20)

static void
check(cudaError_t rc, const char *what)
{
	if (rc != cudaSuccess)
	{
		fprintf(stderr, "copy_floor: %s: %s\n", what, cudaGetErrorString(rc));
		exit(1);
	}
}

static double
median5(double *t)
{
	std::sort(t, t + 5);
	return t[2];
}

int
main(int argc, char **argv)
{
	size_t		bytes = (size_t) (argc > 1 ? atol(argv[1]) : 2048) << 20;
	char	   *dev,
			   *host;
	cudaEvent_t e0,
				e1;
	cudaStream_t s;
	cudaDeviceProp prop;
	double		t[3][5];

	bytes = bytes / CHUNK * CHUNK;
	CHECK(cudaGetDeviceProperties(&prop, 0));
	CHECK(cudaMalloc((void **) &dev, bytes));
	CHECK(cudaHostAlloc((void **) &host, bytes, cudaHostAllocDefault));
	CHECK(cudaMemset(dev, 1, bytes));
	for (size_t i = 0; i < bytes; i += 4096)
		host[i] = (char) i;
	CHECK(cudaStreamCreate(&s));
	CHECK(cudaEventCreate(&e0));
	CHECK(cudaEventCreate(&e1));
	for (int round = -1; round < 5; round++)
		for (int kind = 0; kind < 3; kind++)
		{
			float		ms;

			CHECK(cudaEventRecord(e0, s));
			if (kind == 0)
				for (size_t off = 0; off < bytes; off += CHUNK)
					CHECK(cudaMemcpyAsync(host + off, dev + off, CHUNK, cudaMemcpyDeviceToHost, s));
			else if (kind == 1)
				CHECK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, s));
			else
				CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
			CHECK(cudaEventRecord(e1, s));
			CHECK(cudaEventSynchronize(e1));
			CHECK(cudaEventElapsedTime(&ms, e0, e1));
			if (round >= 0)
				t[kind][round] = ms / 1e3;
		}
	printf("%.2f,%.2f,%.2f,%s\n", bytes / median5(t[0]) / 1e9, bytes / median5(t[1]) / 1e9,
		   bytes / median5(t[2]) / 1e9, prop.name);
	return 0;
}
