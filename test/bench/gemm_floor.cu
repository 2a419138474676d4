/*
 * gemm_floor.cu
 *		GPU floors for a brute-force join of n points in d dimensions: the
 *		cuBLAS FP16 GEMM (FP32 accumulate) of the same n x n x d shape, and
 *		the device-to-device copy rate.
 *
 *	gemm_floor N D [DEVICE]
 *
 * Prints one CSV line:
 *	n, d, block, gemm_s, tflops, copy_gbps, gpu name
 * gemm_s is the time of the whole n x n x d product.  When its n x n FP32
 * output does not fit in a quarter of free memory, square blocks of it are
 * timed instead and the time scaled by area: a block runs at the rate of the
 * whole product.  tflops counts 2 n^2 d flops, as the benchmark counts a
 * brute-force join.  copy_gbps is bytes copied per second by
 * cudaMemcpyDeviceToDevice (the memory traffic is twice that).
 */
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK_CUDA(x) check_cuda((x), #x)
#define CHECK_BLAS(x) check_blas((x), #x)

static void
check_cuda(cudaError_t rc, const char *what)
{
	if (rc != cudaSuccess)
	{
		fprintf(stderr, "gemm_floor: %s: %s\n", what, cudaGetErrorString(rc));
		exit(1);
	}
}

static void
check_blas(cublasStatus_t rc, const char *what)
{
	if (rc != CUBLAS_STATUS_SUCCESS)
	{
		fprintf(stderr, "gemm_floor: %s: cuBLAS status %d\n", what, (int) rc);
		exit(1);
	}
}

/* Values in [0, 1): realistic bit patterns, as power draw depends on them. */
__global__ void
fill(__half *x, size_t count)
{
	for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < count;
		 i += (size_t) gridDim.x * blockDim.x)
		x[i] = __float2half((float) ((i * 2654435761u) % 1021) / 1021.0f);
}

/* Seconds per call of fn(arg), timed with events over calls that take 0.2 s. */
static double
time_calls(void (*fn) (void *), void *arg)
{
	cudaEvent_t start,
				stop;
	int			calls = 1;
	float		ms = 0;

	CHECK_CUDA(cudaEventCreate(&start));
	CHECK_CUDA(cudaEventCreate(&stop));
	fn(arg);					/* warm-up: cuBLAS picks and loads its kernel */
	CHECK_CUDA(cudaDeviceSynchronize());
	for (;;)
	{
		CHECK_CUDA(cudaEventRecord(start, 0));
		for (int i = 0; i < calls; i++)
			fn(arg);
		CHECK_CUDA(cudaEventRecord(stop, 0));
		CHECK_CUDA(cudaEventSynchronize(stop));
		CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
		if (ms >= 200 || calls >= 1 << 16)
			break;
		calls *= ms > 0 ? (int) fmin(64, fmax(2, 250 / ms)) : 64;
	}
	CHECK_CUDA(cudaEventDestroy(start));
	CHECK_CUDA(cudaEventDestroy(stop));
	return ms / 1000.0 / calls;
}

typedef struct Gemm
{
	cublasHandle_t handle;
	const __half *x;			/* d x block, column-major */
	float	   *c;				/* block x block */
	int			block;
	int			d;
} Gemm;

/*
 * Points are row-major n x d, which cuBLAS (column-major) sees as a d x n
 * matrix X; the block of all dot products is X^T X.
 */
static void
run_gemm(void *arg)
{
	Gemm	   *g = (Gemm *) arg;
	const float alpha = 1.0f,
				beta = 0.0f;

	CHECK_BLAS(cublasGemmEx(g->handle, CUBLAS_OP_T, CUBLAS_OP_N, g->block, g->block, g->d,
							&alpha, g->x, CUDA_R_16F, g->d, g->x, CUDA_R_16F, g->d,
							&beta, g->c, CUDA_R_32F, g->block,
							CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

typedef struct Copy
{
	void	   *dst;
	const void *src;
	size_t		bytes;
} Copy;

static void
run_copy(void *arg)
{
	Copy	   *cp = (Copy *) arg;

	CHECK_CUDA(cudaMemcpy(cp->dst, cp->src, cp->bytes, cudaMemcpyDeviceToDevice));
}

int
main(int argc, char **argv)
{
	long long	n,
				d,
				block;
	int			device = argc > 3 ? atoi(argv[3]) : 0;
	size_t		free_b,
				total_b;
	__half	   *x;
	Gemm		g;
	Copy		cp;
	cudaDeviceProp prop;
	double		t_block,
				t_copy,
				scale;

	if (argc < 3 || (n = atoll(argv[1])) < 1 || (d = atoll(argv[2])) < 1)
	{
		fprintf(stderr, "usage: gemm_floor N D [DEVICE]\n");
		return 2;
	}
	CHECK_CUDA(cudaSetDevice(device));
	CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
	CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));

	/* The largest square block of output (a multiple of 256) that fits. */
	block = n;
	if ((double) n * n * sizeof(float) > free_b / 4.0)
		block = ((long long) sqrt(free_b / 4.0 / sizeof(float)) / 256) * 256;
	CHECK_CUDA(cudaMalloc((void **) &x, sizeof(__half) * block * d));
	fill<<<1024, 256>>>(x, (size_t) block * d);
	CHECK_CUDA(cudaGetLastError());
	g.x = x;
	g.block = (int) block;
	g.d = (int) d;
	CHECK_CUDA(cudaMalloc((void **) &g.c, sizeof(float) * block * block));
	CHECK_BLAS(cublasCreate(&g.handle));
	t_block = time_calls(run_gemm, &g);
	scale = ((double) n / block) * ((double) n / block);
	CHECK_CUDA(cudaFree(g.c));
	CHECK_CUDA(cudaFree(x));
	cublasDestroy(g.handle);

	/* A buffer the size of the points, but big enough to leave the caches. */
	cp.bytes = (size_t) fmax(256.0 * (1 << 20), fmin((double) n * d * sizeof(float), free_b / 4.0));
	CHECK_CUDA(cudaMalloc(&cp.dst, cp.bytes));
	CHECK_CUDA(cudaMalloc((void **) &cp.src, cp.bytes));
	CHECK_CUDA(cudaMemset((void *) cp.src, 1, cp.bytes));
	t_copy = time_calls(run_copy, &cp);
	cudaFree(cp.dst);
	cudaFree((void *) cp.src);

	printf("%lld,%lld,%lld,%.6g,%.4f,%.1f,%s\n", n, d, block, t_block * scale,
		   2.0 * block * block * d / t_block / 1e12, cp.bytes / t_copy / 1e9, prop.name);
	return 0;
}
