/*
 * mma_error.cu
 *		Checks the hardware assumption under src/fp16_filter.h: a chain of
 *		mma.sync m16n8k16 steps (FP16 products, FP32 accumulation) over K
 *		dimensions is off from the exact dot product by at most
 *		1.125 K 2^-23 sum |a_i b_i| (18 units of 2^-23 per 16-term step).
 *		The filter's kappa budgets about twice that.  And the step-wise
 *		form under the filter's prefix bound: step s loses at most 18 units
 *		of 2^-23 of |the dot so far| + the step's sum of |a_i b_i|, the
 *		steps taken in index order.
 *
 *	mma_error [trials]
 *
 * Data meant to hurt: random signs and magnitudes across FP16's range,
 * one-signed products (truncation errors then add up), and near-cancelling
 * pairs.  Normal FP16 values only, as the filter feeds (fp16_filter.h):
 * with subnormal inputs the model was seen to fail (a 16-term dot off by
 * 46 units of 2^-23 of its sum of |products|, small products dropped).  Prints the largest error over the modelled bound
 * per case and ends with "N passed, N failed"; a ratio above 1 fails.
 */
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x) do { cudaError_t rc_ = (x); if (rc_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(rc_)); exit(2); } } while (0)

/* One warp: C (16 x 8) = A (16 x K, rows) . B (8 x K, rows)^T. */
__global__ void
chain_kernel(const __half *A, const __half *B, int K, float *C)
{
	int			lane = threadIdx.x;
	int			g = lane >> 2,
				t = lane & 3;
	float		c[4] = {0, 0, 0, 0};

	for (int k0 = 0; k0 < K; k0 += 16)
	{
		uint32_t	a[4],
					b[2];

		a[0] = *(const uint32_t *) (A + g * K + k0 + 2 * t);
		a[1] = *(const uint32_t *) (A + (g + 8) * K + k0 + 2 * t);
		a[2] = *(const uint32_t *) (A + g * K + k0 + 2 * t + 8);
		a[3] = *(const uint32_t *) (A + (g + 8) * K + k0 + 2 * t + 8);
		b[0] = *(const uint32_t *) (B + g * K + k0 + 2 * t);
		b[1] = *(const uint32_t *) (B + g * K + k0 + 2 * t + 8);
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
					 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
					 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
					 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
	}
	C[g * 8 + 2 * t] = c[0];
	C[g * 8 + 2 * t + 1] = c[1];
	C[(g + 8) * 8 + 2 * t] = c[2];
	C[(g + 8) * 8 + 2 * t + 1] = c[3];
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static double
unit(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double) (rng >> 11) * 0x1p-53;
}

/* A value of the given kind, exactly an FP16 number. */
static float
value(int kind, int i)
{
	double		v;

	switch (kind)
	{
		case 0:				/* random sign, magnitude 2^-10 .. 2^15 */
			v = ldexp(1.0 + unit(), (int) (unit() * 25) - 10) * (unit() < 0.5 ? -1 : 1);
			break;
		case 1:				/* positive, all normal magnitudes: errors one-signed */
			v = ldexp(1.0 + unit(), (int) (unit() * 29) - 14);
			break;
		default:			/* alternating big terms that cancel */
			v = (i % 2 ? -1 : 1) * (30000 + unit() * 2000);
			break;
	}
	return __half2float(__float2half((float) fmin(fmax(v, -65504.0), 65504.0)));
}

int
main(int argc, char **argv)
{
	int			trials = argc > 1 ? atoi(argv[1]) : 200;
	static const int Ks[] = {16, 32, 128, 784, 1024, 4096};
	int			passed = 0,
				failed = 0;

	for (int ki = 0; ki < 6; ki++)
		for (int kind = 0; kind < 3; kind++)
		{
			int			K = (Ks[ki] + 15) / 16 * 16;
			std::vector<__half> ha(16 * K), hb(8 * K);
			std::vector<float> fa(16 * K), fb(8 * K), hc(128);
			__half	   *dA,
					   *dB;
			float	   *dC;
			double		worst = 0,
						worst_step = 0,	/* against the step-wise (prefix) model */
						worst_any = 0;
			std::vector<double> wa(K), wb(K);
			double		w_hw = 0,
						w_exact = 0;

			CHECK(cudaMalloc(&dA, sizeof(__half) * 16 * K));
			CHECK(cudaMalloc(&dB, sizeof(__half) * 8 * K));
			CHECK(cudaMalloc(&dC, sizeof(float) * 128));
			for (int tr = 0; tr < trials; tr++)
			{
				for (int i = 0; i < 16 * K; i++)
				{
					fa[i] = value(kind, i);
					ha[i] = __float2half(fa[i]);
				}
				for (int i = 0; i < 8 * K; i++)
				{
					/* kind 2: b nearly equal to a's first row, so terms cancel */
					fb[i] = kind == 2 ? value(1, i) : value(kind, i);
					hb[i] = __float2half(fb[i]);
				}
				CHECK(cudaMemcpy(dA, ha.data(), sizeof(__half) * 16 * K, cudaMemcpyHostToDevice));
				CHECK(cudaMemcpy(dB, hb.data(), sizeof(__half) * 8 * K, cudaMemcpyHostToDevice));
				chain_kernel<<<1, 32>>>(dA, dB, K, dC);
				CHECK(cudaGetLastError());
				CHECK(cudaMemcpy(hc.data(), dC, sizeof(float) * 128, cudaMemcpyDeviceToHost));
				for (int r = 0; r < 16; r++)
					for (int c = 0; c < 8; c++)
					{
						long double exact = 0,
									absum = 0,
									steps = 0;	/* sum over steps of |dot before it| + its sum of |products| */

						for (int k = 0; k < K; k++)
						{
							long double p = (long double) fa[r * K + k] * fb[c * K + k];

							if (k % 16 == 0)
								steps += fabsl(exact);
							exact += p;
							absum += fabsl(p);
						}
						steps += absum;

						double		bound = 1.125 * K * 0x1p-23 * (double) absum + 0x1p-126;
						double		err = fabs((double) (hc[r * 8 + c] - exact));
						/* the error's feedback into later steps: under 1% for K <= 2^16 */
						double		step_bound = 18 * 0x1p-23 * (double) steps * 1.01 + 0x1p-126;

						worst = fmax(worst, err / bound);
						worst_step = fmax(worst_step, err / step_bound);
						/* the worst against either model, for the dump below */
						if (fmax(err / bound, err / step_bound) > worst_any)
						{
							worst_any = fmax(err / bound, err / step_bound);
							w_hw = hc[r * 8 + c];
							w_exact = (double) exact;
							for (int k = 0; k < K; k++)
							{
								wa[k] = fa[r * K + k];
								wb[k] = fb[c * K + k];
							}
						}
					}
			}
			printf("%s K=%-5d %-12s largest error / bound = %.4f, / step-wise bound = %.4f\n",
				   worst <= 1.0 && worst_step <= 1.0 ? "ok    " : "FAILED",
				   K, kind == 0 ? "mixed" : kind == 1 ? "one-signed" : "cancelling", worst, worst_step);
			if (worst_any > 1.0 && K <= 64)
			{
				/* What broke the model: the worst dot's terms. */
				printf("  hardware %.9g, exact %.17g; terms a * b:\n", w_hw, w_exact);
				for (int k = 0; k < K; k++)
					printf("    %a * %a = %a\n", wa[k], wb[k], wa[k] * wb[k]);
			}
			if (worst <= 1.0 && worst_step <= 1.0)
				passed++;
			else
				failed++;
			cudaFree(dA);
			cudaFree(dB);
			cudaFree(dC);
		}
	printf("%d passed, %d failed\n", passed, failed);
	return failed > 0;
}
