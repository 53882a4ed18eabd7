/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the phases of statsfd-bench share (bench_common.c): the run's
 * settings and buffers, die() and the clock, the one-line JSON writer, open
 * stats files and their layout, the contenders and the measuring loop, and
 * the providers (our VM device, upstream KVM, the bench module).
 *
 * Each benchmark family lives in its own file and exports only its phase
 * functions, declared at the end of this header and called by main() in
 * bench.c.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/statsfd.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define MAX_ROUNDS	512
#define MAX_CONT	32
#define BUF_SIZE	(1 << 20)
/*
 * Files of one kind a contender reads in turn: several instances of the same
 * schema at different kernel addresses, so that no figure depends on where
 * one object happened to land (under TCG, the emulated TLB makes some
 * address pairs of kernel object and user buffer slower than others).
 */
#define NFD		16
/*
 * For the same reason the destination of a read rotates over NSLOT user
 * buffers, SLOT_SIZE apart: an odd number of pages, so that each slot sits
 * at a different index of the emulated TLB.  Every contender cycles through
 * every (file, slot) pair.
 */
#define NSLOT		8
#define SLOT_SIZE	(21 * 4096)
/*
 * Sets of the bench module behind one contender.  Every set has its own
 * schema (and so its own header and descriptor block) at its own address:
 * NSET of them, each with NFD / NSET sources, spread those too.
 */
#define NSET		4

/* The bench module's device, /dev/statsfd_bench. */
extern const char *dev_bench;
/* Rounds per measurement (-r), odd so the median is one sample. */
extern int rounds;
/* Calls of each contender before the timed rounds of measure(). */
extern int warmup;
/* BUF_SIZE bytes of scratch space, allocated by main(). */
extern unsigned char *buf;
/* The NSLOT read destinations of do_pread(), allocated by main(). */
extern unsigned char *slots;

/* Print "statsfd-bench: <fmt>: <errno's text>" and exit(1). */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2),
					      noreturn));
/* CLOCK_MONOTONIC in nanoseconds. */
double now_ns(void);

/* ---- minimal JSON writer: one object per phase, on one line ---- */

/* Start the phase's object: {"phase":"<phase>". */
void jbegin(const char *phase);
/* Close the object and print it as one "BENCH-JSON {...}" line. */
void jend(void);
/* Open an object or array ('{' or '['), keyed unless @key is NULL. */
void jopen(const char *key, char bracket);
/* Close what jopen() opened. */
void jclose(char bracket);
/* A number: an integer when it is one, NaN as null. */
void jnum(const char *key, double v);
/* A string, escaped. */
void jstr(const char *key, const char *s);
/* true or false. */
void jbool(const char *key, bool b);

/* ---- stats files ---- */

/**
 * struct sfile - an open stats fd (ours or KVM's) and its layout
 * @fd: the stats fd
 * @h: its header
 * @data_size: bytes of the data block (from the descriptors)
 * @file_size: bytes of the whole file
 * @desc: the descriptor block, read once
 */
struct sfile {
	int fd;
	struct statsfd_header h;
	uint32_t data_size;
	uint32_t file_size;
	unsigned char *desc;
};

/* Descriptor @i of @s's descriptor block. */
struct statsfd_desc *sfile_desc(const struct sfile *s, uint32_t i);
/* Take over @fd: read its header and descriptors, compute its sizes. */
void sfile_open(struct sfile *s, int fd);
/* Close the fd and free the descriptors. */
void sfile_close(struct sfile *s);
/* u64 values in the data block. */
uint32_t sfile_num_values(const struct sfile *s);
/* The descriptor named @name, or NULL. */
struct statsfd_desc *sfile_find(const struct sfile *s, const char *name);
/*
 * Bytes of plain values at the start of the data block: what a mapping of
 * the fd holds.  The offset of the first aggregate, or of sample_ns, or
 * the whole data block when there is neither.
 */
uint32_t sfile_plain_size(const struct sfile *s);
/* JSON object of @s's header fields and sizes. */
void jlayout(const char *key, const struct sfile *s);

/* ---- the contenders and the measuring loop ---- */

struct cont;
typedef void (*op_fn)(struct cont *c);

/**
 * struct cont - one contender: an operation timed in batches
 * @name: label in the JSON
 * @op: performs the operation once
 * @fds: files the operation reads, in turn
 * @nfds: number of @fds
 * @calls: operations so far; picks the file and the user buffer slot
 * @len: bytes per read
 * @off: file offset of the read
 * @arg: extra state of the operation
 * @batch: calls per timed batch
 * @sample: per-call ns of each round
 * @median: median of @sample
 * @p25: its lower quartile, what a run with less host noise would approach
 * @p75: its upper quartile
 * @sink: results folded in so the compiler keeps the work
 */
struct cont {
	const char *name;
	op_fn op;
	int fds[NFD];
	int nfds;
	unsigned long calls;
	size_t len;
	off_t off;
	void *arg;
	int batch;
	double sample[MAX_ROUNDS];
	double median, p25, p75;
	uint64_t sink;
};

/* One pread of the contender's next file into its next slot; the slot. */
unsigned char *do_pread(struct cont *c);
/* The plain contender operation: do_pread(). */
void op_pread(struct cont *c);
/* The @q quantile (0..1) of @n samples, interpolated between ranks. */
double quantile_of(const double *v, int n, double q);
/* The median of @n samples. */
double median_of(const double *v, int n);
/* Time @n contenders over @nr rounds, in a new random order each round. */
void measure(struct cont *c, int n, int nr);
/* Append a contender reading @len bytes at @off of @fd to @c[*@n]. */
struct cont *cont_add(struct cont *c, int *n, const char *name, op_fn op,
		      int fd, size_t len, off_t off, int batch);
/* Make @x read the @n files @fds in turn instead of its one file. */
void cont_fds(struct cont *x, const int *fds, int n);
/* JSON object of a measured contender: median, quartiles, bytes. */
void jcont(const struct cont *c);
/* JSON object @key of the @n contenders @c, each as jcont() has it. */
void jconts(const char *key, const struct cont *c, int n);

/* ---- providers: our VM device, KVM, the bench module ---- */

/* Open /dev/statsfd_vm. */
int vm_dev(void);
/* STATSFD_VM_CREATE_VM on @dev: a VM fd. */
int vm_create(int dev);
/* STATSFD_VM_CREATE_VCPU @id on @vm: a vCPU fd. */
int vcpu_create(int vm, unsigned int id);
/* STATSFD_VM_GET_STATS_FD on a VM or vCPU fd. */
int stats_fd(int fd);
/* STATSFD_VM_RUN with @exits exits and no halts; the ioctl's result. */
int vcpu_run_exits(int vcpu, uint64_t exits);
/*
 * vcpu_exit_ns() - the cost of one exit on @vcpu: a run of @exits exits
 * and one of @shorter, timed, their difference per exit (what the run's
 * fixed cost does not blur).  *@whole: the longer run's time per exit.
 */
double vcpu_exit_ns(int vcpu, uint64_t exits, uint64_t shorter, double *whole);
/* Write @val to the file @path (a module parameter); false on failure. */
bool write_param(const char *path, const char *val);

/*
 * mmap() of the values area of stats fd @fd, PROT_READ and MAP_SHARED: the
 * first page, then all of the area if its two copies of the values go on
 * past it.  NULL with errno set (ENODEV: the source is not mappable;
 * EPROTO: a header this reader must not use: not version 2 with exactly
 * STATSFD_MMAP_LATCH, e.g. an unknown flag); *@len is the mapping's
 * length.
 */
const struct statsfd_mmap_header *stats_map(int fd, size_t *len);
/*
 * The copy of the values that count @seq selects (seq & 1): the published
 * values while h->seq == @seq (the latch reader protocol of
 * statsfd_mmap_copy() in the uapi header).
 */
const uint64_t *stats_map_values(const struct statsfd_mmap_header *h,
				 uint64_t seq);

/**
 * struct kvm_vcpu_stats - an upstream KVM VM with NFD vCPUs and their stats
 * @kvm: /dev/kvm
 * @vm: KVM VM fd
 * @vcpu: KVM vCPU fds
 * @stats: the first vCPU's stats fd and layout
 * @fds: the stats fds of every vCPU (@fds[0] is @stats.fd)
 */
struct kvm_vcpu_stats {
	int kvm, vm, vcpu[NFD];
	struct sfile stats;
	int fds[NFD];
};

/* Create a KVM VM, its NFD vCPUs and their stats fds; false without KVM. */
bool kvm_open(struct kvm_vcpu_stats *k);
/* Close what kvm_open() opened. */
void kvm_close(struct kvm_vcpu_stats *k);

/**
 * struct bench_set - NSET identical sets of the bench module, NFD sources
 * @set: the set fds
 * @stats: stats fd and layout of the first source
 * @fds: stats fds of every source, sets interleaved (@fds[0] is @stats.fd)
 */
struct bench_set {
	int set[NSET];
	struct sfile stats;
	int fds[NFD];
};

/*
 * STATSFD_BENCH_CREATE_SET on @dev: a set fd.  @flags: 0, or
 * STATSFD_BENCH_SNAPSHOT (update windows, sample_ns and generation),
 * optionally with STATSFD_BENCH_MMAP (statsfd_bench.h).
 */
int bench_set_create(int dev, uint32_t num_desc, uint32_t num_values,
		     uint32_t num_sources, uint32_t flags);
/* NSET sets of one shape and the stats fds of their NFD sources. */
void bench_set_open(struct bench_set *b, int dev, uint32_t num_desc,
		    uint32_t num_values, uint32_t flags);
/* Close what bench_set_open() opened. */
void bench_set_close(struct bench_set *b);

/* ---- a fleet of VMs, and the collector reading it (fleet.c: B5, B13, B15, B16) ---- */

/**
 * struct fleet - many VMs with vCPUs and a stats fd for each
 * @nvm: VMs
 * @nvcpu: vCPUs per VM
 * @vm: VM fds
 * @vcpu: vCPU fds, nvm * nvcpu
 * @vm_stats: stats fds of the VMs
 * @vcpu_stats: stats fds of the vCPUs
 */
struct fleet {
	int nvm, nvcpu;
	int *vm, *vcpu, *vm_stats, *vcpu_stats;
	int dev;
};

/* Allocate @f's fd arrays for its nvm x nvcpu (zeroed); dies on failure. */
void fleet_alloc(struct fleet *f);
/* @nvm VMs of @nvcpu vCPUs on @dev, a stats fd each; fleet_free() undoes it. */
void fleet_make(struct fleet *f, int nvm, int nvcpu, int dev);
/* Close and free what fleet_make() made, @f's dev included. */
void fleet_free(struct fleet *f);
/* One GET /metrics (fleet.c collector_scrape()). */
struct scrape {
	double ms;	/* wall time, request sent to last byte received */
	size_t len;	/* body bytes */
	uint64_t reads;	/* statsfd_collector_reads_total of a plain text body */
};
/*
 * statsfd-collector @cmd started for a fleet; its port (NULL: it does not
 * listen on HTTP) and a socket connection.
 */
pid_t collector_start(const char *cmd, const char *interval,
		      unsigned int *port, int *sock);
/*
 * collector_start() and collector_register(@f), "sources" and the time it
 * took, "register_ms", in the open object; -1 (JSON "error") if either
 * failed.
 */
pid_t collector_fleet(const char *cmd, const char *interval,
		      const struct fleet *f, unsigned int *port, int *sock);
/*
 * VM 0 of @f removed and registered again: a change of the sources, so
 * that the next scrape renders; -1 (JSON "error") if refused.
 */
int collector_reregister(int sock, const struct fleet *f);
/*
 * collector_window() - the collector @pid on @sock given 3 s to settle into
 * its read cycle, then its CPU time and reads over @seconds: window_s,
 * cpu_s, cpu_percent, sources_reported and reads_per_source_per_s in the
 * open object, the reads in *@reads.
 * Return: its last query-sources reply, malloc()ed.
 */
char *collector_window(pid_t pid, int sock, int seconds, uint64_t *reads);
/* Stop what collector_start() started. */
void collector_stop(pid_t pid, int sock);
/* A new HTTP connection to the collector's port on 127.0.0.1. */
int collector_http(unsigned int port);
/* One GET /metrics on keep-alive connection @s, Accept @accept (NULL: text). */
struct scrape collector_scrape(int s, const char *accept, bool gz);
/* One pread of every data block of @f into buf; the time of each kind. */
void read_all(const struct fleet *f, uint32_t vm_off, uint32_t vm_len,
	      uint32_t vc_off, uint32_t vc_len, double *vm_ns,
	      double *vcpu_ns);
/* Sum of every "key": N in a JSON text, and how many there were. */
uint64_t json_sum(const char *json, const char *key, unsigned int *n);
/* One request and its reply on the collector's socket; reply malloc()ed. */
char *collector_call(int sock, const char *json, const int *fds,
		     unsigned int nfds);
/* Register VM @i of @f as a VMM would ("bench-@i"); -1 (JSON "error") if refused. */
int collector_register_vm(int sock, const struct fleet *f, int i);
/* Register every VM of @f, as a VMM would; -1 (JSON "error") if refused. */
int collector_register(int sock, const struct fleet *f);

/*
 * ---- the phases, one family per file ----
 *
 * A phase prints one BENCH-JSON line (jbegin() ... jend()).  To add one:
 * write bN_<what>.c with its phase_bN(), declare it here, dispatch it from
 * main() in bench.c (and list it in usage()), add the file to bench_src in
 * run-bench, run it from guest.sh, and teach report.py its figures.
 */

/* info.c: the guest (kernel, clocksource, CPUs) and the timer's cost. */
void phase_info(void);
/* check.c: the bench module does what the figures assume. */
void phase_check(void);
/* b1_read.c: read cost, ours vs KVM vs /dev/zero. */
void phase_b1(void);
/* b2_text.c: one pread vs one file per stat vs one text file. */
void phase_b2(void);
/* b3_schema.c: data-only vs whole file, and schema size. */
void phase_b3(void);
/* b4_runloop.c: the run loop with stats vs compiled out. */
void phase_b4(const char *label, uint64_t exits);
/* b4_runloop.c: B4's yardstick, one in-kernel exit of upstream KVM. */
void phase_b4kvm(uint32_t exits);
/* b5_scale.c: scale, memory, read-all, collector. */
void phase_b5(int nvm, int nvcpu, int collector_seconds);
/* b6_aggregate.c: aggregate read cost vs vCPU count. */
void phase_b6(int max_vcpus);
/* b7_mmap.c: a vCPU's values through the mapping vs one pread. */
void phase_b7(int busy_seconds);
/* b8_windows.c: the run loop's cost per exit, update windows on vs off. */
void phase_b8(uint64_t exits);
/* b9_views.c: 8 stats through a view vs the full fd (one or 8 preads). */
void phase_b9(void);
/* b10_events.c: latency of POLLPRI (vCPU added) and POLLHUP (VM closed). */
void phase_b10(int events);
/*
 * b11_host.c: one collection of the host's stats, stats fds of
 * /dev/statsfd_host vs node_exporter's text files, per family, with every
 * CPU online and with 2.
 */
void phase_b11(void);
/*
 * b12_exporter.c: CPU per scrape, statsfd-collector --host vs Debian's
 * prometheus-node-exporter with the same collectors.
 */
void phase_b12(int scrapes);
/* b13_collector.c: the collector's CPU vs the bare reads; scrape cost. */
void phase_b13(int nvm, int nvcpu, int seconds, int scrapes);

/*
 * b15_siege.c: an honest scrape's latency and the collector's RSS, idle
 * vs under each attack of tools/tests/siege.c.  Needs 2 CPUs.
 */
void phase_b15(int nvm, int nvcpu, int scrapes, int interval_ms);
/* b16_protobuf.c: the fleet's scrape as protobuf (native histograms) vs text. */
void phase_b16(int nvm, int nvcpu, int scrapes);
/*
 * b14_stall.c: snapshot reader latency (vCPU pread, VM aggregates pread,
 * mmap copy) with the writer running, preempted and stopped; @samples
 * reads per kind and state.  Needs 2 CPUs.
 */
void phase_b14(int samples);

#endif /* BENCH_H */
