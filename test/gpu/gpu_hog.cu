/*
 * gpu_hog.cu
 *		Fill a GPU's memory for test/gpu/gpu_full.sh: allocate until about
 *		LEAVE_MIB MiB are free, say so on stdout, and hold it until killed.
 *		  gpu_hog LEAVE_MIB
 */
#include <cuda_runtime.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

int
main(int argc, char **argv)
{
	const size_t mib = (size_t) 1 << 20;
	size_t		leave = (argc > 1 ? (size_t) atol(argv[1]) : 64) * mib;
	size_t		free_b = 0,
				total_b = 0,
				held = 0;

	if (cudaFree(0) != cudaSuccess || cudaMemGetInfo(&free_b, &total_b) != cudaSuccess)
	{
		fprintf(stderr, "gpu_hog: no GPU\n");
		return 1;
	}
	/* big pieces first, then smaller ones, down to 2 MiB */
	for (size_t piece = 1024 * mib; piece >= 2 * mib; piece /= 2)
		for (;;)
		{
			void	   *p;

			if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess || free_b < leave + piece)
				break;
			if (cudaMalloc(&p, piece) != cudaSuccess)
			{
				cudaGetLastError();
				break;
			}
			held += piece;
		}
	cudaMemGetInfo(&free_b, &total_b);
	printf("held %zu MiB, free %zu MiB of %zu MiB\n", held / mib, free_b / mib, total_b / mib);
	fflush(stdout);
	for (;;)
		pause();
}
