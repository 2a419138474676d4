/*
 * graph.c
 *		Answers that are not pair lists (graph.h): counts, degrees,
 *		neighbour lists, connected components and DBSCAN, from a self-join's
 *		pairs, with per point state only.
 */
#include <stdlib.h>
#include <string.h>

#include "graph.h"

/* A neighbour: its dist and id (ties go by id, and the id is what is returned). */
typedef struct NbEntry
{
	double		dist;
	int64_t		id;
} NbEntry;

typedef struct NbList
{
	NbEntry    *e;
	int			len;
	int			cap;
	bool		sorted;
} NbList;

struct TcGraph
{
	TcGraphKind kind;
	int64_t		n;
	const int64_t *ids;
	int			k;				/* neighbours kept a point; 0: all */
	uint64_t	pairs;
	bool		failed;			/* out of memory growing a list */

	int64_t    *deg;			/* degrees, DBSCAN */
	NbList	   *lists;			/* neighbours */
	int64_t    *parent;			/* components, DBSCAN: union-find */
	uint8_t    *rank;

	/* DBSCAN, once the cores are known */
	bool		linking;
	bool	   *core;
	int64_t    *best;			/* a border point's nearest core neighbour (-1: none) */
	double	   *best_dist;

	/* tc_graph_neighbors' answer */
	int64_t    *out_ids;
	double	   *out_dist;
	int			out_cap;
};

static void *
alloc_n(int64_t n, size_t size)
{
	return calloc((size_t) (n > 0 ? n : 1), size);
}

TcGraph *
tc_graph_create(TcGraphKind kind, int64_t n, const int64_t *ids, int k, TcError *err)
{
	TcGraph    *g = calloc(1, sizeof(TcGraph));
	bool		ok = g != NULL;

	if (ok)
	{
		g->kind = kind;
		g->n = n;
		g->ids = ids;
		g->k = k > 0 ? k : 0;
		if (kind == TC_GRAPH_DEGREES || kind == TC_GRAPH_DBSCAN)
			ok &= (g->deg = alloc_n(n, sizeof(int64_t))) != NULL;
		if (kind == TC_GRAPH_NEIGHBORS)
			ok &= (g->lists = alloc_n(n, sizeof(NbList))) != NULL;
		if (kind == TC_GRAPH_COMPONENTS || kind == TC_GRAPH_DBSCAN)
		{
			ok &= (g->parent = alloc_n(n, sizeof(int64_t))) != NULL;
			ok &= (g->rank = alloc_n(n, sizeof(uint8_t))) != NULL;
			for (int64_t i = 0; ok && i < n; i++)
				g->parent[i] = i;
		}
	}
	if (!ok)
	{
		tc_graph_destroy(g);
		if (err)
		{
			err->status = TC_ERR_NOMEM;
			strcpy(err->message, "out of memory for the graph's per-point state");
		}
		return NULL;
	}
	return g;
}

void
tc_graph_destroy(TcGraph *g)
{
	if (g == NULL)
		return;
	if (g->lists)
		for (int64_t i = 0; i < g->n; i++)
			free(g->lists[i].e);
	free(g->lists);
	free(g->deg);
	free(g->parent);
	free(g->rank);
	free(g->core);
	free(g->best);
	free(g->best_dist);
	free(g->out_ids);
	free(g->out_dist);
	free(g);
}

bool
tc_graph_failed(const TcGraph *g)
{
	return g->failed;
}

uint64_t
tc_graph_pairs(const TcGraph *g)
{
	return g->pairs;
}

int64_t
tc_graph_degree(const TcGraph *g, int64_t i)
{
	return g->deg ? g->deg[i] : 0;
}

/* ---------- union-find ---------- */

static int64_t
find(int64_t *parent, int64_t x)
{
	while (parent[x] != x)
	{
		parent[x] = parent[parent[x]];	/* path halving */
		x = parent[x];
	}
	return x;
}

static void
unite(TcGraph *g, int64_t a, int64_t b)
{
	int64_t		ra = find(g->parent, a);
	int64_t		rb = find(g->parent, b);

	if (ra == rb)
		return;
	if (g->rank[ra] < g->rank[rb])
	{
		int64_t		t = ra;

		ra = rb;
		rb = t;
	}
	g->parent[rb] = ra;
	if (g->rank[ra] == g->rank[rb])
		g->rank[ra]++;
}

/* ---------- neighbour lists ---------- */

/* (dist, id) order: nearer first, ties by the smaller id. */
static inline bool
nb_before(const NbEntry *x, const NbEntry *y)
{
	return x->dist < y->dist || (x->dist == y->dist && x->id < y->id);
}

/* With k: a max-heap of the k best, the worst on top. */
static void
heap_down(NbEntry *h, int len, int i)
{
	for (;;)
	{
		int			w = i,
					l = 2 * i + 1,
					r = l + 1;

		if (l < len && nb_before(&h[w], &h[l]))
			w = l;
		if (r < len && nb_before(&h[w], &h[r]))
			w = r;
		if (w == i)
			return;
		{
			NbEntry		t = h[i];

			h[i] = h[w];
			h[w] = t;
		}
		i = w;
	}
}

static void
heap_up(NbEntry *h, int i)
{
	while (i > 0 && nb_before(&h[(i - 1) / 2], &h[i]))
	{
		NbEntry		t = h[i];

		h[i] = h[(i - 1) / 2];
		h[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static void
nb_add(TcGraph *g, int64_t i, int64_t other, double dist)
{
	NbList	   *l = &g->lists[i];
	NbEntry		e = {dist, g->ids[other]};

	if (g->k > 0 && l->len == g->k)
	{
		/* full: the new one replaces the worst if it comes before it */
		if (nb_before(&e, &l->e[0]))
		{
			l->e[0] = e;
			heap_down(l->e, l->len, 0);
		}
		return;
	}
	if (l->len == l->cap)
	{
		int			cap = l->cap > 0 ? 2 * l->cap : 4;
		NbEntry    *grown;

		if (g->k > 0 && cap > g->k)
			cap = g->k;
		grown = realloc(l->e, sizeof(NbEntry) * (size_t) cap);
		if (grown == NULL)
		{
			g->failed = true;
			return;
		}
		l->e = grown;
		l->cap = cap;
	}
	l->e[l->len++] = e;
	if (g->k > 0)
		heap_up(l->e, l->len - 1);
}

static int
cmp_nb(const void *x, const void *y)
{
	const NbEntry *a = x,
			   *b = y;

	return nb_before(a, b) ? -1 : nb_before(b, a) ? 1 : 0;
}

void
tc_graph_neighbors(TcGraph *g, int64_t i, const int64_t **ids, const double **dist, int *len)
{
	NbList	   *l = &g->lists[i];

	if (!l->sorted && l->len > 1)
		qsort(l->e, (size_t) l->len, sizeof(NbEntry), cmp_nb);
	l->sorted = true;
	if (l->len > g->out_cap)
	{
		int64_t    *oi = realloc(g->out_ids, sizeof(int64_t) * (size_t) l->len);
		double	   *od;

		if (oi != NULL)
			g->out_ids = oi;
		od = realloc(g->out_dist, sizeof(double) * (size_t) l->len);
		if (od != NULL)
			g->out_dist = od;
		if (oi == NULL || od == NULL)
		{
			g->failed = true;
			*len = 0;
			return;
		}
		g->out_cap = l->len;
	}
	for (int t = 0; t < l->len; t++)
	{
		g->out_ids[t] = l->e[t].id;
		g->out_dist[t] = l->e[t].dist;
	}
	*ids = g->out_ids;
	*dist = g->out_dist;
	*len = l->len;
}

/* ---------- the sink ---------- */

/* DBSCAN's second join: cores linked; a border point remembers its nearest core. */
static void
dbscan_link(TcGraph *g, int64_t a, int64_t b, double dist)
{
	if (g->core[a] && g->core[b])
		unite(g, a, b);
	else if (g->core[a] || g->core[b])
	{
		int64_t		c = g->core[a] ? a : b;
		int64_t		p = g->core[a] ? b : a;

		if (g->best[p] < 0 || dist < g->best_dist[p] ||
			(dist == g->best_dist[p] && g->ids[c] < g->ids[g->best[p]]))
		{
			g->best[p] = c;
			g->best_dist[p] = dist;
		}
	}
}

int
tc_graph_emit(void *graph, const TcPair *pairs, size_t count)
{
	TcGraph    *g = graph;

	g->pairs += count;
	switch (g->kind)
	{
		case TC_GRAPH_COUNT:
			break;
		case TC_GRAPH_DEGREES:
			for (size_t p = 0; p < count; p++)
			{
				g->deg[pairs[p].a]++;
				g->deg[pairs[p].b]++;
			}
			break;
		case TC_GRAPH_NEIGHBORS:
			for (size_t p = 0; p < count && !g->failed; p++)
			{
				nb_add(g, pairs[p].a, pairs[p].b, pairs[p].dist);
				nb_add(g, pairs[p].b, pairs[p].a, pairs[p].dist);
			}
			/* out of memory: stop the join (the caller reports it) */
			return g->failed ? 1 : 0;
		case TC_GRAPH_COMPONENTS:
			for (size_t p = 0; p < count; p++)
				unite(g, pairs[p].a, pairs[p].b);
			break;
		case TC_GRAPH_DBSCAN:
			if (!g->linking)
				for (size_t p = 0; p < count; p++)
				{
					g->deg[pairs[p].a]++;
					g->deg[pairs[p].b]++;
				}
			else
				for (size_t p = 0; p < count; p++)
					dbscan_link(g, pairs[p].a, pairs[p].b, pairs[p].dist);
			break;
	}
	return 0;
}

/* ---------- answers ---------- */

/* Per union-find root, the smallest id among the points mapped to it (member[i] >= 0). */
static int64_t *
root_min_ids(const TcGraph *g, const int64_t *member)
{
	int64_t    *minid = malloc(sizeof(int64_t) * (size_t) (g->n > 0 ? g->n : 1));

	if (minid == NULL)
		return NULL;
	for (int64_t i = 0; i < g->n; i++)
		minid[i] = INT64_MAX;
	for (int64_t i = 0; i < g->n; i++)
		if (member[i] >= 0 && g->ids[i] < minid[member[i]])
			minid[member[i]] = g->ids[i];
	return minid;
}

void
tc_graph_components(TcGraph *g, int64_t *out)
{
	int64_t    *minid;

	for (int64_t i = 0; i < g->n; i++)
		out[i] = find(g->parent, i);
	minid = root_min_ids(g, out);
	if (minid == NULL)
	{
		g->failed = true;
		return;
	}
	for (int64_t i = 0; i < g->n; i++)
		out[i] = minid[out[i]];
	free(minid);
}

void
tc_graph_dbscan_cores(TcGraph *g, int64_t min_points)
{
	g->core = alloc_n(g->n, sizeof(bool));
	g->best = malloc(sizeof(int64_t) * (size_t) (g->n > 0 ? g->n : 1));
	g->best_dist = alloc_n(g->n, sizeof(double));
	if (g->core == NULL || g->best == NULL || g->best_dist == NULL)
	{
		g->failed = true;
		return;
	}
	for (int64_t i = 0; i < g->n; i++)
	{
		g->core[i] = g->deg[i] + 1 >= min_points;
		g->best[i] = -1;
	}
	g->linking = true;
}

/* Clusters' roots in order of their smallest member id: qsort's view. */
typedef struct RootKey
{
	int64_t		minid;
	int64_t		root;
} RootKey;

static int
cmp_root(const void *x, const void *y)
{
	const RootKey *a = x,
			   *b = y;

	return (a->minid > b->minid) - (a->minid < b->minid);
}

void
tc_graph_dbscan(TcGraph *g, int32_t *cluster, bool *is_core)
{
	int64_t    *member = alloc_n(g->n, sizeof(int64_t));
	int64_t    *minid;
	RootKey    *roots;
	int64_t		nroots = 0;

	if (member == NULL)
	{
		g->failed = true;
		return;
	}
	/* each point's cluster root: a core's own, a border point's nearest core's; -1 noise */
	for (int64_t i = 0; i < g->n; i++)
		member[i] = g->core[i] ? find(g->parent, i) :
			g->best[i] >= 0 ? find(g->parent, g->best[i]) : -1;
	minid = root_min_ids(g, member);
	roots = malloc(sizeof(RootKey) * (size_t) (g->n > 0 ? g->n : 1));
	if (minid == NULL || roots == NULL)
	{
		free(member);
		free(minid);
		free(roots);
		g->failed = true;
		return;
	}
	for (int64_t i = 0; i < g->n; i++)
		if (g->core[i] && g->parent[i] == i)
			roots[nroots++] = (RootKey) {minid[i], i};
	qsort(roots, (size_t) nroots, sizeof(RootKey), cmp_root);
	/* minid now numbers each root's cluster */
	for (int64_t c = 0; c < nroots; c++)
		minid[roots[c].root] = c;
	for (int64_t i = 0; i < g->n; i++)
	{
		cluster[i] = member[i] >= 0 ? (int32_t) minid[member[i]] : -1;
		is_core[i] = g->core[i];
	}
	free(member);
	free(minid);
	free(roots);
}
