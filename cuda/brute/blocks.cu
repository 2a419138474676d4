/*
 * blocks.cu
 *		The FP16 brute force's points onto the device: whole, or in blocks
 *		of B rows where they do not fit (tcjoin.gpu_memory_limit, or the
 *		device's free memory), and the joins of pairs of blocks, of one set
 *		or of two.  Several GPUs take the pairs of blocks from their queue,
 *		each holding only the two blocks it works on.
 */
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "join_state.h"
#include "brute_run.h"

/*
 * Rows [first, first + r) of p to row dst of the workspace, with their
 * norms under cosine (a zero row's index reported as zbase + its index).
 */
TcStatus
BruteRun::upload_rows(const TcPoints *p, size_t first, unsigned int r, unsigned int dst,
					  unsigned long long zbase)
{
	double		tu = tc_now();
	void	   *to = (char *) d_x + rowbytes * dst;
	const char *from = (const char *) p->data + rowbytes * first;
	TcStatus	s2;

	/* a whole set on several GPUs: host memory read once, not once a GPU */
	if (B == 0 && g->share != NULL && g->share->ngpus > 1 && shared_sets < SHARE_SETS)
		s2 = share_upload(g, shared_sets++, to, from, rowbytes * r, rowbytes, err);
	else
		s2 = upload(g, to, from, rowbytes * r, g->stream[0], sink, err);

	t_uploaded = tc_now();
	stats->gpu_upload_seconds += t_uploaded - tu;
	if (s2 == TC_OK && bd.metric == TC_METRIC_COSINE)
		s2 = brute_norms(g, p->type, (const char *) d_x + rowbytes * dst, r, d, zbase + first,
						 d_norm + dst, d_root + dst, d_zero, err);
	return s2;
}

/*
 * Block b's rows to the device at row dst of the workspace; whole, when
 * there are no blocks.  Two sets: a's blocks, then b's (nblk_a on).
 */
TcStatus
BruteRun::fetch_to(int b, unsigned int dst, unsigned int *rows)
{
	const TcPoints *p = a;
	unsigned int pn = this->b ? na : n;
	unsigned long long zbase = 0;
	size_t		first;

	if (this->b && b >= nblk_a)
	{
		p = this->b;
		pn = nb;
		b -= nblk_a;
		zbase = ZERO_IN_B;
	}
	first = B > 0 ? (size_t) b * B : 0;
	*rows = B > 0 ? (unsigned int) std::min((size_t) B, (size_t) pn - first) : pn;
	return upload_rows(p, first, *rows, dst, zbase);
}

/* brute_make_plan's fetch: block b at row 0. */
TcStatus
brute_fetch_block(void *arg, int b, unsigned int *rows)
{
	return ((BruteRun *) arg)->fetch_to(b, 0, rows);
}

/*
 * Two sets: a's block ba at row 0 (kept where it is there already), its
 * last tile filled with copies of its first row (gap rows, never a
 * candidate: convert_kernel), and b's block bb from row *sa, the first
 * tile after a's; *rb: b's rows.  Without blocks (B == 0) each set whole.
 */
TcStatus
BruteRun::place_two(int ba, int bb, unsigned int *sa, unsigned int *rb)
{
	unsigned int ra = B > 0 ? std::min(B, na - (unsigned int) ba * B) : na;
	TcStatus	st;

	*sa = (ra + BT - 1) / BT * BT;
	if (placed_a != ba)
	{
		unsigned int rows;

		placed_a = -1;
		if ((st = fetch_to(ba, 0, &rows)) != TC_OK)
			return st;
		for (unsigned int r = ra; r < *sa; r++)
		{
			CHECK(cudaMemcpyAsync((char *) d_x + rowbytes * r, d_x, rowbytes, cudaMemcpyDeviceToDevice,
								  g->stream[0]));
			if (bd.metric == TC_METRIC_COSINE)
			{
				CHECK(cudaMemcpyAsync(d_norm + r, d_norm, sizeof(double), cudaMemcpyDeviceToDevice,
									  g->stream[0]));
				CHECK(cudaMemcpyAsync(d_root + r, d_root, sizeof(double), cudaMemcpyDeviceToDevice,
									  g->stream[0]));
			}
		}
		placed_a = ba;
	}
	bd.gap_lo = ra;
	bd.gap_hi = *sa;
	return fetch_to(nblk_a + bb, *sa, rb);
}

/*
 * Two sets: a's block ba against b's block bb, both placed and prepared
 * (each ordered alone), every tile pair across them joined; positions map
 * to a's rows below sa and to b's from it.  Then the pair's arrays go.
 */
TcStatus
BruteRun::join_two(int ba, int bb)
{
	unsigned int sa = (na + BT - 1) / BT * BT,
				rb = nb;
	TcStatus	st;

	/* without blocks, plan_and_place placed and prepared both sets */
	if (B > 0 && ((st = place_two(ba, bb, &sa, &rb)) != TC_OK ||
				  (st = prepare_set(sa + rb, 0, sa, false)) != TC_OK))
		return st;
	bd.split_row = sa;
	bd.shift_lo = (long long) ba * B;
	bd.shift_hi = (long long) bb * B - (long long) sa;
	/* without blocks the squares are the GPUs' units; with blocks, the pairs of blocks */
	if ((st = join_set(sa / BT, B == 0)) != TC_OK)
		return st;
	return free_set();
}

/*
 * Streamed: each block pair bi <= bj, numbered row by row; several GPUs
 * take them from their queue.  Block bi at row 0 (it stays there while
 * the pairs of its row pass, and is full, B rows, when bj > bi), bj at
 * row B.
 */
TcStatus
BruteRun::join_blocks(void)
{
	const unsigned long long npairs = (unsigned long long) nblocks * (unsigned long long) (nblocks + 1) / 2;
	unsigned long long t = 0,
				t1 = 0;
	int			placed = -1;
	TcStatus	st;

	while (take_units(g->share, npairs, [] (unsigned long long c) { return c + 1; }, &t, &t1))
	{
		int			bi = 0;
		unsigned long long r = t;

		while (r >= (unsigned long long) (nblocks - bi))
			r -= (unsigned long long) (nblocks - bi++);

		const int	bj = bi + (int) r;
		unsigned int ri = (unsigned int) std::min((size_t) B, (size_t) n - (size_t) bi * B),
					rj = 0;

		if (placed != bi)
		{
			placed = -1;
			if ((st = fetch_to(bi, 0, &ri)) != TC_OK)
				return st;
			placed = bi;
		}
		if (bj > bi && (st = fetch_to(bj, B, &rj)) != TC_OK)
			return st;
		if ((st = prepare_set(bj > bi ? B + rj : ri, bj > bi ? B / BT : 0, 0, false)) != TC_OK)
			return st;
		bd.split_row = B;
		bd.shift_lo = (long long) bi * B;
		bd.shift_hi = (long long) bj * B - B;
		if ((st = join_set(bj > bi ? B / BT : 0, false)) != TC_OK || (st = free_set()) != TC_OK)
			return st;
	}
	return TC_OK;
}

/* Once a prepared set's batches are drained, its arrays go. */
TcStatus
BruteRun::free_set(void)
{
	TcStatus	st;

	if ((st = gpu_sync(g, g->stream[0], err)) != TC_OK ||
		(st = gpu_sync(g, g->stream[1], err)) != TC_OK)
		return st;
	dev_free(g, (void *) bd.order);
	dev_free(g, (void *) bd.h);
	dev_free(g, (void *) bd.q);
	dev_free(g, (void *) bd.rc);
	dev_free(g, d_cen);
	dev_free(g, d_rad);
	bd.order = NULL;
	bd.h = NULL;
	bd.q = bd.rc = NULL;
	d_cen = d_rad = NULL;
	return TC_OK;
}

/*
 * Two sets: every block of a against every block of b (one pair without
 * blocks, whose squares several GPUs share), several GPUs taking the pairs
 * of blocks from their queue.
 */
TcStatus
BruteRun::join_pairs_of_blocks(void)
{
	const unsigned long long nblk_b = B > 0 ? (unsigned long long) (nblocks - nblk_a) : 1;
	const unsigned long long npairs = (unsigned long long) nblk_a * nblk_b;
	unsigned long long t = 0,
				t1 = 0;
	TcStatus	st;

	if (B == 0)
		return join_two(0, 0);
	while (take_units(g->share, npairs, [] (unsigned long long c) { return c + 1; }, &t, &t1))
		if ((st = join_two((int) (t / nblk_b), (int) (t % nblk_b))) != TC_OK)
			return st;
	return TC_OK;
}
