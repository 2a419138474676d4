/*
 * brute_run.h
 *		One FP16 brute-force join's state on the host (BruteRun), which
 *		brute_join.cu (the plan, the buffers, the bands of tile pairs) and
 *		blocks.cu (the points onto the device, whole or in blocks, and the
 *		pairs of blocks) share.
 */
#ifndef TCJOIN_BRUTE_RUN_H
#define TCJOIN_BRUTE_RUN_H

#include "brute.h"

/* A zero vector's index under cosine, offset by this where it is b's. */
static constexpr unsigned long long ZERO_IN_B = 1ull << 40;

/* One join's state on the host: the points, the plan, the buffers and the choices. */
struct BruteRun
{
	TcGpuJoin  *g;
	const TcPoints *a;
	const TcPoints *b;			/* NULL: a self-join */
	const TcJoinParams *params;
	double		thr;
	const TcSink *sink;
	TcJoinStats *stats;
	TcError    *err;
	double		t0;				/* the join's start */
	double		t1;				/* the join phase's start */
	double		t_uploaded;		/* the last upload's end (the trace's) */
	double		t_planned;		/* the plan's end (the trace's) */

	/* the points */
	unsigned int n;
	unsigned int npad;
	int			d;
	size_t		rowbytes;
	int			major;
	int			sms;
	/* streamed: blocks of B points (0: all at once), nblocks of them */
	unsigned int B;
	int			nblocks;
	void	   *d_x;
	/* two sets: a's rows and blocks, then b's (n = na + nb, nblocks = nblk_a + nblk_b) */
	unsigned int na;
	unsigned int nb;
	int			nblk_a;
	int			placed_a;		/* a's block at row 0, or -1 */
	int			shared_sets;	/* several GPUs: whole sets share_upload has brought */

	/* the plan and the prepared set */
	BruteDev	bd;
	TcF16Plan	plan;
	double		plan_thr;		/* the filter's squared Euclidean threshold (of unit vectors under cosine) */
	double	   *d_norm;			/* cosine: per workspace row, the squared norm and its root */
	double	   *d_root;
	unsigned long long *d_zero;	/* cosine: the first zero row */
	double	   *d_c;
	float	   *d_cen;
	float	   *d_rad;
	BrutePrepared prepared;		/* the whole set(s)' preparation, finished in run() */
	bool		prepare_pending;

	/* result buffers, counters */
	unsigned int capacity;
	PairDev    *d_pairs[2];
	unsigned int *d_meta[2],
			   *h_meta[2];		/* pair count, overflow, candidate count */
	uint2	   *d_cand[2],
			   *d_grouped[2];	/* the candidates grouped by first point */
	unsigned int *d_group[2];	/* per position: count, then offset */
	void	   *d_gscan[2];
	size_t		gscan_bytes;
	unsigned long long *d_cnt,	/* queue x 2, then (candidates, rechecked) x 2 */
			   *h_cnt;			/* (candidates, rechecked) x 2: a batch's, read when kept */

	/* the tile-pair list: squares of tiles, numbered row by row over their upper triangle */
	unsigned long long nt_max;	/* the largest set's tiles */
	unsigned long long band_sq; /* squares a band */
	BrutePruneBufs pb;
	unsigned long long band_entries;	/* the band's list entries */
	unsigned long long band_u0; /* the band's squares */
	unsigned long long band_u1;
	unsigned long long guide_squares;	/* several GPUs: the squares of the set's join (else 0) */
	unsigned long long batch_entries[2];	/* each stream's batch */

	/* the choices */
	BruteConfig cfg;
	CUtensorMap tmap;
	double		rate;			/* pairs per tile pair seen, for the next batch */

	TcStatus	check(bool *done);
	void		set_metric(void);
	TcStatus	zero_rows(void);
	TcStatus	plan_memory(void);
	TcStatus	upload_rows(const TcPoints *p, size_t first, unsigned int r, unsigned int dst,
							unsigned long long zbase);
	TcStatus	fetch_to(int b, unsigned int dst, unsigned int *rows);
	TcStatus	place_two(int ba, int bb, unsigned int *sa, unsigned int *rb);
	TcStatus	join_two(int ba, int bb);
	TcStatus	join_pairs_of_blocks(void);
	TcStatus	plan_and_place(void);
	TcStatus	prepare_set(unsigned int rows, unsigned int seg0, unsigned int part, bool defer);
	TcStatus	alloc_results(void);
	TcStatus	alloc_list(void);
	TcStatus	alloc_grouping(void);
	TcStatus	join_set(unsigned int split, bool shared);
	TcStatus	record_digest(void);
	TcStatus	join_band(unsigned long long k, unsigned long long u0, unsigned long long u1,
						  unsigned int split, GpuShare *sh);
	unsigned long long next(unsigned long long lo, double r, double *bound);
	TcStatus	launch(int cur, unsigned long long lo, unsigned long long hi);
	void		kept(int cur);
	TcStatus	join_blocks(void);
	TcStatus	free_set(void);
	TcStatus	run(void);
};

/* brute_make_plan's fetch: block b at row 0 (blocks.cu). */
extern TcStatus brute_fetch_block(void *arg, int b, unsigned int *rows);

#endif							/* TCJOIN_BRUTE_RUN_H */
