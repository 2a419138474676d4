/*
 * gemm_floor.cu
 *		GPU floors for a brute-force join of n points in d dimensions: the
 *		cuBLAS FP16 GEMM (FP32 accumulate) of the same n x n x d shape, and
 *		the device-to-device copy rate; with --rect, for a join of m points
 *		against n, the m x n x d GEMM.
 *
 *	gemm_floor N D [DEVICE]
 *	gemm_floor --rect M N D [DEVICE]    (--rect may come anywhere: M N D --rect)
 *
 * Prints one CSV line:
 *	n, d, block, gemm_s, tflops, copy_gbps, gpu name
 * or with --rect
 *	m, n, d, block (BMxBN), gemm_s, tflops, copy_gbps, gpu name
 * gemm_s is the time of the whole product.  When its FP32 output does not
 * fit in a quarter of free memory, blocks of it are timed instead and the
 * time scaled by area: a block runs at the rate of the whole product.  The
 * blocks are square (a multiple of 256), but for a side shorter than that
 * square's, which a block then spans whole.  tflops counts 2 m n d flops
 * (2 n^2 d), as the benchmark counts a brute-force join.  copy_gbps is
 * bytes copied per second by cudaMemcpyDeviceToDevice (the memory traffic
 * is twice that).
 */
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	const __half *xa;			/* d x bm, column-major */
	const __half *xb;			/* d x bn (the same as xa in a square block) */
	float	   *c;				/* bm x bn */
	int			bm;
	int			bn;
	int			d;
} Gemm;

/*
 * Points are row-major n x d, which cuBLAS (column-major) sees as a d x n
 * matrix X; the block of all dot products is A^T B (X^T X for one set).
 */
static void
run_gemm(void *arg)
{
	Gemm	   *g = (Gemm *) arg;
	const float alpha = 1.0f,
				beta = 0.0f;

	CHECK_BLAS(cublasGemmEx(g->handle, CUBLAS_OP_T, CUBLAS_OP_N, g->bm, g->bn, g->d,
							&alpha, g->xa, CUDA_R_16F, g->d, g->xb, CUDA_R_16F, g->d,
							&beta, g->c, CUDA_R_32F, g->bm,
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

/* d x count halves of fill's values on the device. */
static __half *
filled(long long count, long long d)
{
	__half	   *x;

	CHECK_CUDA(cudaMalloc((void **) &x, sizeof(__half) * count * d));
	fill<<<1024, 256>>>(x, (size_t) count * d);
	CHECK_CUDA(cudaGetLastError());
	return x;
}

int
main(int argc, char **argv)
{
	long long	arg[4],
				m,
				n,
				d,
				bm,
				bn;
	int			nargs = 0,
				device;
	bool		rect = false;
	size_t		free_b,
				total_b;
	Gemm		g;
	Copy		cp;
	cudaDeviceProp prop;
	double		t_block,
				t_copy,
				scale,
				cap;

	for (int i = 1; i < argc; i++)
	{
		if (strcmp(argv[i], "--rect") == 0)
			rect = true;
		else if (nargs < 4)
			arg[nargs++] = atoll(argv[i]);
		else
			nargs = -100;		/* too many: the usage below */
	}
	if (nargs < (rect ? 3 : 2) || nargs > (rect ? 4 : 3))
	{
		fprintf(stderr, "usage: gemm_floor N D [DEVICE]\n       gemm_floor --rect M N D [DEVICE]\n");
		return 2;
	}
	m = arg[0];
	n = rect ? arg[1] : arg[0];
	d = rect ? arg[2] : arg[1];
	device = nargs > (rect ? 3 : 2) ? (int) arg[nargs - 1] : 0;
	if (m < 1 || n < 1 || d < 1)
	{
		fprintf(stderr, "gemm_floor: sizes must be 1 or more\n");
		return 2;
	}
	CHECK_CUDA(cudaSetDevice(device));
	CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
	CHECK_CUDA(cudaMemGetInfo(&free_b, &total_b));

	/*
	 * The largest block of output that fits: square (a multiple of 256),
	 * or where one side is shorter than the square's, that side whole and
	 * the other as long as fits (a multiple of 256).
	 */
	cap = free_b / 4.0 / sizeof(float);
	bm = m;
	bn = n;
	if ((double) m * n > cap)
	{
		long long	side = ((long long) sqrt(cap) / 256) * 256;

		if (m <= side)
			bn = (long long) fmin(n, (long long) (cap / m) / 256 * 256);
		else if (n <= side)
			bm = (long long) fmin(m, (long long) (cap / n) / 256 * 256);
		else
			bm = bn = side;
	}
	g.xa = filled(bm, d);
	g.xb = rect ? filled(bn, d) : g.xa;
	g.bm = (int) bm;
	g.bn = (int) bn;
	g.d = (int) d;
	CHECK_CUDA(cudaMalloc((void **) &g.c, sizeof(float) * bm * bn));
	CHECK_BLAS(cublasCreate(&g.handle));
	t_block = time_calls(run_gemm, &g);
	scale = ((double) m / bm) * ((double) n / bn);
	CHECK_CUDA(cudaFree(g.c));
	if (g.xb != g.xa)
		CHECK_CUDA(cudaFree((void *) g.xb));
	CHECK_CUDA(cudaFree((void *) g.xa));
	cublasDestroy(g.handle);

	/* A buffer the size of the points, but big enough to leave the caches. */
	cp.bytes = (size_t) fmax(256.0 * (1 << 20), fmin((double) (rect ? m + n : n) * d * sizeof(float),
													 free_b / 4.0));
	CHECK_CUDA(cudaMalloc(&cp.dst, cp.bytes));
	CHECK_CUDA(cudaMalloc((void **) &cp.src, cp.bytes));
	CHECK_CUDA(cudaMemset((void *) cp.src, 1, cp.bytes));
	t_copy = time_calls(run_copy, &cp);
	cudaFree(cp.dst);
	cudaFree((void *) cp.src);

	if (rect)
		printf("%lld,%lld,%lld,%lldx%lld,%.6g,%.4f,%.1f,%s\n", m, n, d, bm, bn, t_block * scale,
			   2.0 * bm * bn * d / t_block / 1e12, cp.bytes / t_copy / 1e9, prop.name);
	else
		printf("%lld,%lld,%lld,%.6g,%.4f,%.1f,%s\n", n, d, bm, t_block * scale,
			   2.0 * bm * bn * d / t_block / 1e12, cp.bytes / t_copy / 1e9, prop.name);
	return 0;
}
