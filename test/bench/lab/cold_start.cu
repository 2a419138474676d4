/*
 * cold_start.cu
 *		What a process's first GPU work costs, step by step, with the CUDA
 *		runtime linked statically as tcjoin links it: the runtime's start
 *		(the driver), the context, streams and events, the first and a
 *		second device allocation, pinning the pair ring's 48 MB, and the
 *		first launch of a kernel (its module's loading, lazy or not).  Run
 *		it in fresh processes: docs/lab/2026-11-26-auto-device-and-first-join.md.
 *		  nvcc -O2 -o cold_start cold_start.cu && ./cold_start
 */
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>

__global__ void
touch(int *p)
{
	p[threadIdx.x] = threadIdx.x;
}

static double
ms_since(std::chrono::steady_clock::time_point &t)
{
	auto		now = std::chrono::steady_clock::now();
	double		ms = std::chrono::duration<double, std::milli>(now - t).count();

	t = now;
	return ms;
}

int
main(void)
{
	auto		t = std::chrono::steady_clock::now();
	int			n = 0;
	cudaStream_t s[2];
	cudaEvent_t e[8];
	void	   *d1,
			   *d2,
			   *h;

	cudaGetDeviceCount(&n);
	printf("runtime start (cudaGetDeviceCount) %8.1f ms\n", ms_since(t));
	cudaSetDevice(0);
	cudaFree(0);
	printf("context (cudaFree(0))              %8.1f ms\n", ms_since(t));
	for (int i = 0; i < 2; i++)
		cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking);
	for (int i = 0; i < 8; i++)
		cudaEventCreate(&e[i]);
	printf("2 streams, 8 events                %8.1f ms\n", ms_since(t));
	cudaMalloc(&d1, 64 << 20);
	printf("first cudaMalloc (64 MB)           %8.1f ms\n", ms_since(t));
	cudaMalloc(&d2, 64 << 20);
	printf("second cudaMalloc (64 MB)          %8.1f ms\n", ms_since(t));
	cudaHostAlloc(&h, 48 << 20, cudaHostAllocDefault);
	printf("cudaHostAlloc (48 MB pinned)       %8.1f ms\n", ms_since(t));
	touch<<<1, 32, 0, s[0]>>>((int *) d1);
	cudaStreamSynchronize(s[0]);
	printf("first launch and wait              %8.1f ms\n", ms_since(t));
	touch<<<1, 32, 0, s[0]>>>((int *) d1);
	cudaStreamSynchronize(s[0]);
	printf("second launch and wait             %8.1f ms\n", ms_since(t));
	printf("status: %s\n", cudaGetErrorString(cudaGetLastError()));
	return 0;
}
