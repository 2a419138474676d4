/*
 * graph_number.c
 *		The graph answers' last step, shared by the graph's threads: each
 *		point's set in the finished union-find, each set named by its
 *		smallest id (components), and DBSCAN's clusters numbered 0, 1, ...
 *		in the order of those ids.
 *
 * Each step is a pass over the points in ranges, one a thread
 * (tc_run_parts); finds run at once (tc_uf_find is safe so), and a set's
 * smallest id is an atomic minimum, so the answer is the one a single
 * thread gives.  Only the clusters' roots are sorted, on the caller's
 * thread.
 */
#include <stdlib.h>

#include "engine_int.h"

#define NUMBER_PARTS 16			/* threads at most */
#define NUMBER_MIN_PART 65536	/* points a part at least: below, a thread costs more */

typedef enum NumberStep
{
	NS_MEMBER,					/* each point's root; each minimum unset */
	NS_MINID,					/* each root's smallest id */
	NS_ROOTS_COUNT,				/* DBSCAN: the clusters' roots a range holds */
	NS_ROOTS_FILL,				/* and where they go */
	NS_CLUSTER,					/* DBSCAN: each point's cluster number */
	NS_COMPONENT				/* components: each point's smallest id of its set */
} NumberStep;

/* Clusters' roots in order of their smallest member id: qsort's view. */
typedef struct RootKey
{
	int64_t		minid;
	int64_t		root;
} RootKey;

typedef struct Numbering
{
	int64_t		n;
	_Atomic int64_t *parent;
	const bool *core;			/* DBSCAN: the cores; NULL: components */
	const int64_t *best;		/* DBSCAN: a border point's nearest core, -1 none */
	const int64_t *ids;
	int64_t    *member;			/* each point's root, -1 noise */
	_Atomic int64_t *minid;		/* per root: its smallest id, then (DBSCAN) its cluster */
	RootKey    *roots;
	int32_t    *cluster;
	bool	   *is_core;
} Numbering;

typedef struct NumberPart
{
	Numbering  *nm;
	NumberStep	step;
	int64_t		i0;
	int64_t		i1;
	int64_t		nroots;			/* NS_ROOTS_COUNT: the range's */
	int64_t		r0;				/* NS_ROOTS_FILL: the first slot of the range's */
} NumberPart;

static int
cmp_root(const void *x, const void *y)
{
	const RootKey *a = x,
			   *b = y;

	return (a->minid > b->minid) - (a->minid < b->minid);
}

static inline int64_t
load_min(_Atomic int64_t *m, int64_t i)
{
	return atomic_load_explicit(&m[i], memory_order_relaxed);
}

static void *
number_part(void *arg)
{
	NumberPart *pt = arg;
	Numbering  *nm = pt->nm;

	switch (pt->step)
	{
		case NS_MEMBER:
			for (int64_t i = pt->i0; i < pt->i1; i++)
			{
				nm->member[i] = nm->core == NULL || nm->core[i] ? tc_uf_find(nm->parent, i) :
					nm->best[i] >= 0 ? tc_uf_find(nm->parent, nm->best[i]) : -1;
				atomic_store_explicit(&nm->minid[i], INT64_MAX, memory_order_relaxed);
			}
			break;
		case NS_MINID:
			for (int64_t i = pt->i0; i < pt->i1; i++)
			{
				int64_t		r = nm->member[i];
				int64_t		cur;

				if (r < 0)
					continue;
				cur = load_min(nm->minid, r);
				while (nm->ids[i] < cur &&
					   !atomic_compare_exchange_weak_explicit(&nm->minid[r], &cur, nm->ids[i],
															  memory_order_relaxed,
															  memory_order_relaxed))
					;
			}
			break;
		case NS_ROOTS_COUNT:
		case NS_ROOTS_FILL:
			{
				int64_t		k = pt->r0;

				for (int64_t i = pt->i0; i < pt->i1; i++)
					if (nm->core[i] && nm->member[i] == i)
					{
						if (pt->step == NS_ROOTS_FILL)
							nm->roots[k] = (RootKey) {load_min(nm->minid, i), i};
						k++;
					}
				pt->nroots = k - pt->r0;
			}
			break;
		case NS_CLUSTER:
			for (int64_t i = pt->i0; i < pt->i1; i++)
			{
				nm->cluster[i] = nm->member[i] >= 0 ? (int32_t) load_min(nm->minid, nm->member[i]) : -1;
				nm->is_core[i] = nm->core[i];
			}
			break;
		case NS_COMPONENT:
			for (int64_t i = pt->i0; i < pt->i1; i++)
				nm->member[i] = load_min(nm->minid, nm->member[i]);
			break;
	}
	return NULL;
}

/* The step on every range at once. */
static void
run_step(NumberPart *pts, int nparts, NumberStep step)
{
	for (int t = 0; t < nparts; t++)
		pts[t].step = step;
	tc_run_parts(number_part, pts, sizeof(NumberPart), nparts);
}

/* The ranges of nm's points, at most threads of them; returns how many. */
static int
make_parts(Numbering *nm, int threads, NumberPart *pts)
{
	int			nparts = tc_parts_for(nm->n, NUMBER_MIN_PART, threads, NUMBER_PARTS);

	for (int t = 0; t < nparts; t++)
	{
		pts[t].nm = nm;
		pts[t].i0 = nm->n * t / nparts;
		pts[t].i1 = nm->n * (t + 1) / nparts;
		pts[t].r0 = 0;
		pts[t].nroots = 0;
	}
	return nparts;
}

bool
tc_number_components(int64_t n, _Atomic int64_t *parent, const int64_t *ids, int threads,
					 int64_t *out)
{
	Numbering	nm = {n, parent, NULL, NULL, ids, out, NULL, NULL, NULL, NULL};
	NumberPart	pts[NUMBER_PARTS];
	int			nparts = make_parts(&nm, threads, pts);

	nm.minid = tc_malloc_huge(sizeof(int64_t) * (size_t) (n > 0 ? n : 1));
	if (nm.minid == NULL)
		return false;
	run_step(pts, nparts, NS_MEMBER);
	run_step(pts, nparts, NS_MINID);
	run_step(pts, nparts, NS_COMPONENT);
	tc_free_huge((void *) nm.minid);
	return true;
}

bool
tc_number_dbscan(int64_t n, _Atomic int64_t *parent, const bool *core, const int64_t *best,
				 const int64_t *ids, int threads, int32_t *cluster, bool *is_core)
{
	Numbering	nm = {n, parent, core, best, ids, NULL, NULL, NULL, cluster, is_core};
	NumberPart	pts[NUMBER_PARTS];
	int			nparts = make_parts(&nm, threads, pts);
	int64_t		nroots = 0;
	bool		ok;

	nm.member = tc_malloc_huge(sizeof(int64_t) * (size_t) (n > 0 ? n : 1));
	nm.minid = tc_malloc_huge(sizeof(int64_t) * (size_t) (n > 0 ? n : 1));
	ok = nm.member != NULL && nm.minid != NULL;
	if (ok)
	{
		run_step(pts, nparts, NS_MEMBER);
		run_step(pts, nparts, NS_MINID);
		run_step(pts, nparts, NS_ROOTS_COUNT);
		for (int t = 0; t < nparts; t++)
		{
			pts[t].r0 = nroots;
			nroots += pts[t].nroots;
		}
		nm.roots = tc_malloc_huge(sizeof(RootKey) * (size_t) (nroots > 0 ? nroots : 1));
		ok = nm.roots != NULL;
	}
	if (ok)
	{
		run_step(pts, nparts, NS_ROOTS_FILL);
		qsort(nm.roots, (size_t) nroots, sizeof(RootKey), cmp_root);
		/* each root's minimum becomes its cluster's number */
		for (int64_t c = 0; c < nroots; c++)
			atomic_store_explicit(&nm.minid[nm.roots[c].root], c, memory_order_relaxed);
		run_step(pts, nparts, NS_CLUSTER);
	}
	tc_free_huge(nm.member);
	tc_free_huge((void *) nm.minid);
	tc_free_huge(nm.roots);
	return ok;
}
