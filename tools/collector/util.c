// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: what every part of the daemon uses and that depends
 * on none of them: the log, the clocks, the indexes (chained hash
 * tables), the interval timers and the command line's option tables.
 * At the bottom of the collector's files: it calls none of them.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"

int collector_verbose;

/**
 * logmsg() - one line on stderr (the journal), prefixed with the daemon's name
 * @fmt: printf format
 */
void logmsg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "statsfd-collector: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/** now_ms() - CLOCK_MONOTONIC in milliseconds, for deadlines */
uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/** wall_ms() - CLOCK_REALTIME in milliseconds, for exported timestamps */
uint64_t wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * The indexes: chained hash tables (struct htable) whose items embed their
 * struct hnode.  Registering, dropping and looking up a source, its
 * schema, its vm label and its user cost O(1) on average instead of a
 * walk of every source: 65,536 sources register in linear time.
 */
#define HTABLE_MIN	64

/**
 * hash_bytes() - FNV-1a of @n bytes at @p, continuing @h
 * @h: HASH_INIT, or the hash so far
 * @p: the bytes
 * @n: how many
 *
 * Return: the hash.
 */
uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	/* FNV-1a */
	while (n--)
		h = (h ^ *b++) * 0x100000001b3ull;
	return h;
}

/**
 * hash_str() - hash @str with its terminating NUL, continuing @h
 * @h: HASH_INIT, or the hash so far
 * @str: the string (with its NUL: "a" "bc" and "ab" "c" differ)
 *
 * Return: the hash.
 */
uint64_t hash_str(uint64_t h, const char *str)
{
	return hash_bytes(h, str, strlen(str) + 1);
}

/**
 * htable_reserve() - room for one more item of @t
 * @t: the table
 *
 * Return: 0, or -ENOMEM when an empty table cannot get its buckets (a
 * full one that cannot grow just has longer chains).
 */
int htable_reserve(struct htable *t)
{
	struct hnode **b, *n, *next;
	size_t nb, i;

	if (t->b && t->n < 2 * (t->mask + 1))
		return 0;
	nb = t->b ? 2 * (t->mask + 1) : HTABLE_MIN;
	b = calloc(nb, sizeof(*b));
	if (!b)
		return t->b ? 0 : -ENOMEM;
	for (i = 0; t->b && i <= t->mask; i++) {
		for (n = t->b[i]; n; n = next) {
			next = n->next;
			n->next = b[n->hash & (nb - 1)];
			b[n->hash & (nb - 1)] = n;
		}
	}
	free(t->b);
	t->b = b;
	t->mask = nb - 1;
	return 0;
}

/**
 * htable_add() - add @n with @hash
 * @t: the table; htable_reserve() succeeded since the last add
 * @n: the item
 * @hash: its key's hash
 */
void htable_add(struct htable *t, struct hnode *n, uint64_t hash)
{
	struct hnode **pb = &t->b[hash & t->mask];

	n->hash = hash;
	n->next = *pb;
	*pb = n;
	t->n++;
}

/**
 * htable_del() - remove @n from @t, freeing the buckets when it empties
 * @t: the table
 * @n: an item of it
 */
void htable_del(struct htable *t, struct hnode *n)
{
	struct hnode **p;

	for (p = &t->b[n->hash & t->mask]; *p; p = &(*p)->next) {
		if (*p == n) {
			*p = n->next;
			break;
		}
	}
	if (!--t->n) {
		free(t->b);
		t->b = NULL;
		t->mask = 0;
	}
}

/**
 * htable_first() - the first item of the bucket of @hash
 * @t: the table
 * @hash: the hash looked up (compare each item's hash: a bucket is shared)
 *
 * Return: the item, or NULL.
 */
struct hnode *htable_first(const struct htable *t, uint64_t hash)
{
	return t->b ? t->b[hash & t->mask] : NULL;
}

/**
 * htable_find() - the item of @t with @hash that @match accepts
 * @t: the table
 * @hash: the hash of the key looked up
 * @match: whether item @n is the one of @key (called for items of @hash)
 * @key: what @match compares with
 * @steps: counts the items visited (collector.steps), or NULL
 *
 * Return: the item, or NULL.
 */
struct hnode *htable_find(const struct htable *t, uint64_t hash,
			  bool (*match)(const struct hnode *n, const void *key),
			  const void *key, uint64_t *steps)
{
	struct hnode *n;

	for (n = htable_first(t, hash); n; n = n->next) {
		if (steps)
			(*steps)++;
		if (n->hash == hash && match(n, key))
			return n;
	}
	return NULL;
}

/**
 * htable_find_id() - the item of @t whose 64-bit id is @id
 * @t: a table keyed by hash_bytes(HASH_INIT) of the items' ids
 * @id: the id looked up
 * @node_off: offsetof() the item's struct hnode in @t
 * @id_off: offsetof() the item's uint64_t id
 * @steps: counts the items visited (collector.steps)
 *
 * Return: the item, or NULL.
 */
void *htable_find_id(const struct htable *t, uint64_t id, size_t node_off,
		     size_t id_off, uint64_t *steps)
{
	uint64_t hash = hash_bytes(HASH_INIT, &id, sizeof(id));
	struct hnode *n;
	uint64_t x;

	for (n = htable_first(t, hash); n; n = n->next) {
		char *item = (char *)n - node_off;

		(*steps)++;
		memcpy(&x, item + id_off, sizeof(x));
		if (n->hash == hash && x == id)
			return item;
	}
	return NULL;
}

/**
 * interval_timer() - a periodic timer in the epoll set
 * @c: collector
 * @ms: its period, in milliseconds
 * @tag: its events' data.ptr
 *
 * Return: the timerfd (read it on each event), or -1 with errno set.
 */
int interval_timer(struct collector *c, unsigned int ms, void *tag)
{
	struct itimerspec its = { 0 };
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);

	its.it_interval.tv_sec = ms / 1000;
	its.it_interval.tv_nsec = (long)(ms % 1000) * 1000000;
	its.it_value = its.it_interval;
	if (fd < 0)
		return -1;
	if (timerfd_settime(fd, 0, &its, NULL) ||
	    ep_ctl(c, EPOLL_CTL_ADD, fd, EPOLLIN, tag)) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/**
 * array_grow() - room for one more element at the end of an array
 * @arr: the address of the array's pointer, realloc()ed when full
 * @n: elements in it
 * @cap: its capacity in elements, doubled when full (16 at first)
 * @size: size of an element
 *
 * Return: 0, or -ENOMEM with the array unchanged.
 */
int array_grow(void *arr, unsigned int n, unsigned int *cap, size_t size)
{
	unsigned int ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	/* The pointer's bytes: @arr points at a pointer of any type. */
	memcpy(&p, arr, sizeof(p));
	p = realloc(p, (size_t)ncap * size);
	if (!p)
		return -ENOMEM;
	memcpy(arr, &p, sizeof(p));
	*cap = ncap;
	return 0;
}

unsigned int provider_rescan_ms;

/* ---- the option tables --------------------------------------------------- */

/* The value of @o from @arg into @conf: 0, or -EINVAL. */
static int opt_set(struct collector *c, const struct opt *o, void *conf,
		   const char *arg)
{
	unsigned long long v;
	char *end;

	if (o->coll)
		conf = c;
	switch (o->type) {
	case OPT_FLAG:
		if (o->fn)
			return o->fn(c, conf, NULL);
		*(bool *)((char *)conf + o->off) = true;
		return 0;
	case OPT_STR:
		*(const char **)((char *)conf + o->off) = arg;
		return 0;
	case OPT_FN:
		return o->fn(c, conf, arg);
	case OPT_UINT:
	case OPT_SIZE:
		errno = 0;
		v = strtoull(arg, &end, 10);
		if (*end || end == arg || errno || *arg == '-' ||
		    v < o->min || v > o->max)
			return -EINVAL;
		if (o->type == OPT_UINT)
			*(unsigned int *)((char *)conf + o->off) = (unsigned int)v;
		else
			*(size_t *)((char *)conf + o->off) = (size_t)v;
		return 0;
	}
	return -EINVAL;
}

/*
 * The table entries in one array, their getopt_long() options beside:
 * option i has val 256 + i.
 */
struct opt_index {
	const struct opt *opt;
	void *conf;
};

static struct option *opts_index(struct collector *c,
				 const struct opt_table *tables,
				 unsigned int ntables, struct opt_index **index)
{
	const struct opt *o;
	struct option *lo;
	unsigned int i, n = 0;

	for (i = 0; i < ntables; i++)
		for (o = tables[i].opts; o->name[0]; o++)
			n++;
	lo = calloc(n + 1, sizeof(*lo));
	*index = calloc(n + 1, sizeof(**index));
	if (!lo || !*index) {
		free(lo);
		free(*index);
		return NULL;
	}
	n = 0;
	for (i = 0; i < ntables; i++) {
		for (o = tables[i].opts; o->name[0]; o++, n++) {
			lo[n].name = o->name;
			lo[n].has_arg = o->type == OPT_FLAG ? no_argument :
				       required_argument;
			lo[n].val = 256 + (int)n;
			(*index)[n].opt = o;
			(*index)[n].conf = tables[i].conf ?: c;
		}
	}
	return lo;
}

/* The index of the option named @name, for its short form, or -1. */
static int opts_find(const struct option *lo, const char *name)
{
	int i;

	for (i = 0; lo[i].name; i++)
		if (!strcmp(lo[i].name, name))
			return i;
	return -1;
}

/**
 * opts_parse() - parse the command line with the flags of every table
 * @c: collector (the configuration of tables whose conf is NULL)
 * @argc: argument count
 * @argv: arguments
 * @tables: the tables, each part of the daemon's own
 * @ntables: how many
 * @usage: printed after an error
 *
 * "-h" and "-v" stand for --help and --verbose, when a table has them.
 * Return: 0, or -1 after saying why on stderr.
 */
int opts_parse(struct collector *c, int argc, char **argv,
	       const struct opt_table *tables, unsigned int ntables,
	       const char *usage)
{
	struct opt_index *index;
	struct option *lo = opts_index(c, tables, ntables, &index);
	int opt, i, ret = -1;

	if (!lo)
		return -1;
	while ((opt = getopt_long(argc, argv, "hv", lo, NULL)) != -1) {
		if (opt == 'h' || opt == 'v')
			i = opts_find(lo, opt == 'h' ? "help" : "verbose");
		else
			i = opt >= 256 ? opt - 256 : -1;
		if (i < 0) {
			fputs(usage, stderr);
			goto out;
		}
		opt = opt_set(c, index[i].opt, index[i].conf, optarg);
		if (opt == -EINVAL) {
			fprintf(stderr, "statsfd-collector: bad value '%s'\n%s",
				optarg, usage);
			goto out;
		}
		if (opt)
			goto out;
	}
	if (optind < argc) {
		fprintf(stderr, "statsfd-collector: unexpected argument %s\n%s",
			argv[optind], usage);
		goto out;
	}
	ret = 0;
out:
	free(lo);
	free(index);
	return ret;
}
