// SPDX-License-Identifier: GPL-2.0
/*
 * kvm_stats_compare - compare two KVM stats files byte for byte, but for
 * what legitimately differs between two runs of the same VM.
 *
 * Usage: kvm_stats_compare NAME EXPECTED ACTUAL
 *
 * Prints TAP lines (no plan: the caller's script owns it) and exits 1 if
 * any failed.  Must be equal: the size, the header, the descriptor block
 * and every value, except
 *   - the pid in the id ("kvm-<pid>" and "kvm-<pid>/vcpu-<n>"),
 *   - time stats (unit seconds, histograms of times included),
 *   - the stats in volatile_stats[] below, which count what the host did
 *     while the guest ran (its interrupts, its scheduler), not what the
 *     guest did; "exits" counts the host's interrupts too, so what must be
 *     equal is exits - irq_exits.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/kvm.h>

static const char *const volatile_stats[] = {
	"exits",		/* checked as exits - irq_exits */
	"irq_exits",		/* host interrupts during guest mode */
	"preemption_reported",	/* the host scheduler preempting the vCPU */
	"preemption_other",
	"host_state_reload",	/* follows preemptions */
	"fpu_reload",
	NULL,
};

/* The value of stat @name in file @buf, or -1 if it has none. */
static long long stat_value(const char *buf, const struct kvm_stats_header *h,
			    const char *name)
{
	size_t stride = sizeof(struct kvm_stats_desc) + h->name_size;
	uint32_t i;

	for (i = 0; i < h->num_desc; i++) {
		const struct kvm_stats_desc *d =
			(const void *)(buf + h->desc_offset + i * stride);

		if (!strcmp(d->name, name))
			return *(const uint64_t *)(buf + h->data_offset + d->offset);
	}
	return -1;
}

static int failed;

static void check(int ok, const char *name, const char *what)
{
	printf("%sok - %s: %s\n", ok ? "" : "not ", name, what);
	if (!ok)
		failed = 1;
}

static char *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "r");
	long n = -1;
	char *buf;

	if (f && !fseek(f, 0, SEEK_END))
		n = ftell(f);
	if (n < 0 || fseek(f, 0, SEEK_SET)) {
		perror(path);
		exit(1);
	}
	buf = malloc(n + 1);
	if (!buf || fread(buf, 1, n, f) != (size_t)n) {
		perror(path);
		exit(1);
	}
	fclose(f);
	*size = n;
	return buf;
}

/* The id with its pid replaced by "PID". */
static void normalize_id(const char *id, size_t len, char *out, size_t size)
{
	size_t i = 0, o = 0;

	if (len > 4 && !strncmp(id, "kvm-", 4)) {
		o = snprintf(out, size, "kvm-PID");
		for (i = 4; i < len && isdigit((unsigned char)id[i]); i++)
			;
	}
	for (; i < len && id[i] && o + 1 < size; i++)
		out[o++] = id[i];
	out[o] = 0;
}

static int is_volatile(const char *name)
{
	int i;

	for (i = 0; volatile_stats[i]; i++)
		if (!strcmp(volatile_stats[i], name))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct kvm_stats_header *h;
	size_t esize, asize, stride, i;
	char eid[128], aid[128], msg[256];
	char *e, *a;
	int same = 1;

	if (argc != 4) {
		fprintf(stderr, "usage: kvm_stats_compare NAME EXPECTED ACTUAL\n");
		return 2;
	}
	e = slurp(argv[2], &esize);
	a = slurp(argv[3], &asize);
	check(esize == asize, argv[1], "same file size");
	if (esize != asize || esize < sizeof(*h))
		return 1;
	h = (struct kvm_stats_header *)e;
	check(!memcmp(e, a, sizeof(*h)), argv[1], "same header");
	if (memcmp(e, a, sizeof(*h)) || h->id_offset + h->name_size > esize)
		return 1;
	stride = sizeof(struct kvm_stats_desc) + h->name_size;
	if (h->desc_offset + stride * h->num_desc > esize) {
		check(0, argv[1], "descriptors within the file");
		return 1;
	}

	normalize_id(e + h->id_offset, h->name_size, eid, sizeof(eid));
	normalize_id(a + h->id_offset, h->name_size, aid, sizeof(aid));
	snprintf(msg, sizeof(msg), "same id but the pid (%s)", aid);
	check(!strcmp(eid, aid) &&
	      !memcmp(e + h->id_offset + strlen(e + h->id_offset),
		      a + h->id_offset + strlen(a + h->id_offset),
		      h->name_size - strlen(e + h->id_offset)),
	      argv[1], msg);
	check(!memcmp(e + h->desc_offset, a + h->desc_offset,
		      stride * h->num_desc), argv[1], "same descriptor block");

	for (i = 0; i < h->num_desc; i++) {
		struct kvm_stats_desc *d = (void *)(e + h->desc_offset + i * stride);
		size_t off = h->data_offset + d->offset;
		size_t len = d->size * sizeof(uint64_t);

		if (off + len > esize) {
			check(0, argv[1], "values within the file");
			return 1;
		}
		if ((d->flags & KVM_STATS_UNIT_MASK) == KVM_STATS_UNIT_SECONDS ||
		    is_volatile(d->name))
			continue;
		if (memcmp(e + off, a + off, len)) {
			snprintf(msg, sizeof(msg), "%s: %llu upstream, %llu statsfd",
				 d->name,
				 (unsigned long long)*(uint64_t *)(e + off),
				 (unsigned long long)*(uint64_t *)(a + off));
			check(0, argv[1], msg);
			same = 0;
		}
	}
	if (stat_value(e, h, "exits") >= 0) {
		long long ex = stat_value(e, h, "exits") - stat_value(e, h, "irq_exits");
		long long ax = stat_value(a, h, "exits") - stat_value(a, h, "irq_exits");

		snprintf(msg, sizeof(msg),
			 "same exits - irq_exits (%lld upstream, %lld statsfd)", ex, ax);
		check(ex == ax, argv[1], msg);
	}
	check(same, argv[1], "same values but times and host-driven counts");
	return failed;
}
