// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-bench phase "b2": one vCPU's stats read three ways.  One pread of
 * the binary data block (plus a pass over its values), the provider's
 * debugfs text view with one file per stat (open, read, parse, close each),
 * and the same text gathered into one file; the two views must agree.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

/* Where the provider's text view may live, the core's directory first. */
static const char *const debugfs_roots[] = {
	"/sys/kernel/debug/statsfd/statsfd_vm",
	"/sys/kernel/debug/statsfd_vm",
};

#define MAX_STAT_FILES	512

/**
 * struct text_view - the one-file-per-stat debugfs directory of a vCPU
 * @dir: its path
 * @n: number of stat files
 * @name: their names
 */
struct text_view {
	char dir[512];
	int n;
	char name[MAX_STAT_FILES][64];
};

/* Parse every unsigned number of a text buffer; returns their count. */
static unsigned int parse_numbers(const char *p, uint64_t *sum)
{
	unsigned int count = 0;
	char *end;

	for (;;) {
		while (*p && (*p < '0' || *p > '9'))
			p++;
		if (!*p)
			return count;
		*sum += strtoull(p, &end, 10);
		p = end;
		count++;
	}
}

/* Reads and parses one whole text file: open, read, parse, close. */
static unsigned int read_text_file(int dirfd, const char *path, uint64_t *sum)
{
	ssize_t len, total = 0;
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die("open %s", path);
	while ((len = read(fd, buf + total, BUF_SIZE - 1 - total)) > 0)
		total += len;
	if (len < 0)
		die("read %s", path);
	close(fd);
	buf[total] = 0;
	return parse_numbers((char *)buf, sum);
}

struct text_arg {
	struct text_view *view;
	int dirfd;
	const char *file;
	unsigned int values;
};

static void op_per_file(struct cont *c)
{
	struct text_arg *t = c->arg;
	uint64_t sum = 0;
	unsigned int values = 0;
	int i;

	for (i = 0; i < t->view->n; i++)
		values += read_text_file(t->dirfd, t->view->name[i], &sum);
	t->values = values;
	c->sink += sum;
}

static void op_single_text(struct cont *c)
{
	struct text_arg *t = c->arg;
	uint64_t sum = 0;

	t->values = read_text_file(AT_FDCWD, t->file, &sum);
	c->sink += sum;
}

/* pread of the data block plus a pass over the values, as a reader would. */
static void op_pread_sum(struct cont *c)
{
	const uint64_t *v = (const uint64_t *)do_pread(c);
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < c->len / 8; i++)
		sum += v[i];
	c->sink += sum;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Finds the debugfs directory whose name is @leaf, at most 3 levels down. */
static bool find_dir(const char *root, const char *leaf, const char *must,
		     int depth, char *out, size_t size)
{
	struct dirent *de;
	bool found = false;
	DIR *d;

	d = opendir(root);
	if (!d)
		return false;
	while (!found && (de = readdir(d))) {
		char path[512];
		struct stat st;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, de->d_name);
		if (stat(path, &st) || !S_ISDIR(st.st_mode))
			continue;
		if (!strcmp(de->d_name, leaf) && strstr(path, must)) {
			snprintf(out, size, "%s", path);
			found = true;
		} else if (depth > 0) {
			found = find_dir(path, leaf, must, depth - 1, out,
					 size);
		}
	}
	closedir(d);
	return found;
}

static bool text_view_open(struct text_view *v, const char *vm_id,
			   const char *leaf)
{
	struct dirent *de;
	DIR *d;

	size_t i;

	memset(v, 0, sizeof(*v));
	for (i = 0; i < ARRAY_SIZE(debugfs_roots); i++)
		if (find_dir(debugfs_roots[i], leaf, vm_id, 2, v->dir,
			     sizeof(v->dir)))
			break;
	if (i == ARRAY_SIZE(debugfs_roots))
		return false;
	d = opendir(v->dir);
	if (!d)
		return false;
	while ((de = readdir(d)) && v->n < MAX_STAT_FILES) {
		if (de->d_type != DT_REG)
			continue;
		snprintf(v->name[v->n++], sizeof(v->name[0]), "%.63s",
			 de->d_name);
	}
	closedir(d);
	qsort(v->name, v->n, sizeof(v->name[0]), cmp_name);
	return v->n > 0;
}

/* The id of a stats file, "vm-<pid>-<n>/vcpu-<id>", read from the file. */
static void sfile_id(const struct sfile *s, char *out, size_t size)
{
	size_t n = s->h.name_size < size ? s->h.name_size : size - 1;

	if (pread(s->fd, out, n, s->h.id_offset) != (ssize_t)n)
		die("pread id");
	out[n] = 0;
}

void phase_b2(void)
{
	static struct text_view view;
	struct text_arg per_file = { 0 }, single = { 0 };
	const char *single_path = "/tmp/statsfd-bench-vcpu.txt";
	char id[256], vm_id[256], *slash;
	uint64_t sum_bin = 0, sum_text = 0, sum_single = 0;
	unsigned int values_text = 0, values_single;
	struct cont c[MAX_CONT];
	struct sfile ours;
	int dev, vm, vcpu, dirfd, n, i;
	FILE *f;

	dev = vm_dev();
	vm = vm_create(dev);
	vcpu = vcpu_create(vm, 0);
	if (vcpu_run_exits(vcpu, 3000))
		die("STATSFD_VM_RUN");
	sfile_open(&ours, stats_fd(vcpu));
	sfile_id(&ours, id, sizeof(id));
	snprintf(vm_id, sizeof(vm_id), "%s", id);
	slash = strchr(vm_id, '/');
	if (slash)
		*slash = 0;

	jbegin("b2");
	jstr("vcpu_id", id);
	jlayout("ours_vcpu_layout", &ours);
	if (!text_view_open(&view, vm_id, slash ? slash + 1 : "vcpu-0")) {
		fprintf(stderr, "b2: no debugfs text view for %s under %s\n",
			id, debugfs_roots[0]);
		jstr("error", "no debugfs text view found");
		jend();
		goto out;
	}
	jstr("text_dir", view.dir);
	jnum("text_files", view.n);

	/* The equivalent single text file: "name values...\n" per stat. */
	dirfd = open(view.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0)
		die("open %s", view.dir);
	f = fopen(single_path, "w");
	if (!f)
		die("create %s", single_path);
	for (i = 0; i < view.n; i++) {
		values_text += read_text_file(dirfd, view.name[i], &sum_text);
		fprintf(f, "%s %s", view.name[i], (char *)buf);
	}
	fclose(f);
	values_single = read_text_file(AT_FDCWD, single_path, &sum_single);
	/* What a reader of each view parses (a name with digits would count). */
	jnum("text_values", values_text);
	jnum("single_file_numbers", values_single);
	if (pread(ours.fd, buf, ours.data_size, ours.h.data_offset) !=
	    ours.data_size)
		die("pread data");
	/*
	 * The vCPU is idle: both views must show the same values.  The text
	 * view has the stored stats only: not sample_ns and generation, which
	 * a source with update windows computes at the end of a read.
	 */
	for (i = 0; i < (int)sfile_plain_size(&ours) / 8; i++)
		sum_bin += ((uint64_t *)buf)[i];
	jnum("binary_values", sfile_plain_size(&ours) / 8);
	jnum("binary_sum", sum_bin);
	jnum("text_sum", sum_text);
	jbool("views_agree", sum_bin == sum_text &&
	      values_text == sfile_plain_size(&ours) / 8);

	per_file.view = &view;
	per_file.dirfd = dirfd;
	single.file = single_path;
	n = 0;
	cont_add(c, &n, "pread", op_pread_sum, ours.fd, ours.data_size,
		 ours.h.data_offset, 20)->arg = NULL;
	cont_add(c, &n, "per_file_text", op_per_file, -1, 0, 0, 2)->arg =
		&per_file;
	cont_add(c, &n, "single_text", op_single_text, -1, 0, 0, 20)->arg =
		&single;
	warmup = 20;
	fprintf(stderr, "b2: %d files\n", view.n);
	measure(c, n, rounds / 2 | 1);
	warmup = 200;
	for (i = 0; i < n; i++)
		jcont(&c[i]);
	close(dirfd);
	jend();
out:
	sfile_close(&ours);
	close(vcpu);
	close(vm);
	close(dev);
}
