// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-vmm: a sample VMM.  Creates VMs and vCPUs on /dev/statsfd_vm (or
 * on real KVM with --kvm), runs a synthetic workload on every vCPU in its
 * own thread, and hands the VM and vCPU stats fds to statsfd-collector,
 * one connection per VM: closing that connection is how the collector
 * learns the VM is gone (with --keep-connection, its stats fds hanging up
 * are).  --add-vcpu adds a vCPU to a running VM, as CPU hotplug would.
 *
 * Registration is best effort, through libstatsfd's statsfd_client: the
 * VMs run whether or not the collector is there, and are registered when
 * it comes (back), or when it stops refusing them.  See
 * Documentation/statsfd-vmm.rst.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/kvm.h>
#include <linux/statsfd_vm.h>

#include "statsfd_client.h"

#define MAX_VMS		64
#define MAX_VCPUS	64

struct workload {
	const char *name;
	const char *what;
	struct statsfd_vm_run run;
	/* Real KVM: 16-bit guest code run from guest physical address 0. */
	unsigned char code[8];
	size_t code_len;
};

/* Exit mixes per run; halts sleep, so no vCPU spins a CPU at 100%. */
static const struct workload workloads[] = {
	{ "io", "port I/O heavy (a virtio-less network device)",
	  { .io_exits = 200, .io_bytes = 4, .cycles_per_exit = 1500,
	    .halt_exits = 1, .halt_poll_ns = 20000, .halt_timeout_ns = 2000000 },
	  { 0xb0, 0x61, 0xe6, 0x10, 0xeb, 0xfa }, 6 },	/* mov al,0x61; out 0x10,al; jmp */
	{ "mmio", "MMIO heavy (an emulated disk controller)",
	  { .mmio_exits = 300, .cycles_per_exit = 3000,
	    .halt_exits = 1, .halt_timeout_ns = 2000000 },
	  { 0xe6, 0x10, 0xeb, 0xfc }, 4 },
	{ "halt", "mostly idle: halts, polls and wakeups",
	  { .io_exits = 5, .io_bytes = 1, .cycles_per_exit = 500,
	    .halt_exits = 20, .halt_poll_ns = 50000, .halt_timeout_ns = 1000000 },
	  { 0xf4, 0xeb, 0xfd }, 3 },			/* hlt; jmp */
	{ "mixed", "a bit of everything, hypercalls included",
	  { .io_exits = 50, .io_bytes = 2, .mmio_exits = 50, .hypercall_exits = 20,
	    .cycles_per_exit = 2000, .halt_exits = 5, .halt_poll_ns = 10000,
	    .halt_timeout_ns = 500000 },
	  { 0xe6, 0x10, 0xf4, 0xeb, 0xfb }, 5 },	/* out; hlt; jmp */
	{ "idle", "an idle guest: long halts",
	  { .halt_exits = 1, .halt_timeout_ns = 50000000 },
	  { 0xf4, 0xeb, 0xfd }, 3 },
};

struct vcpu {
	struct vm *vm;
	int index;
	int fd;
	int stats_fd;
	pthread_t thread;
	bool started;
	struct kvm_run *kvm_run;
	size_t kvm_run_size;
	unsigned long runs;
};

struct vm {
	char name[STATSFD_LABEL_MAX + 1];
	const struct workload *wl;
	int fd;
	int stats_fd;
	struct statsfd_client *cl;	/* its collector connection, or NULL */
	void *mem;
	struct vcpu vcpus[MAX_VCPUS];
	int nvcpus;
	volatile int stop;
	pthread_t kicker;
	bool kicker_started;
};

/* --teardown or --add-vcpu: VM number @vm, @after seconds in (-1: none). */
struct vm_event {
	int vm;
	double after;
};

static struct {
	bool kvm;
	const char *device;
	const char *collector;
	const char *ready_file;
	int nvms, nvcpus;
	double duration;
	struct vm_event teardown, add_vcpu;
	bool keep_connection;
	bool quiet;
} opt = {
	.device = "/dev/statsfd_vm", .nvms = 2, .nvcpus = 4,
	.teardown = { .vm = -1 }, .add_vcpu = { .vm = -1 },
};

static struct vm vms[MAX_VMS];
static volatile sig_atomic_t stop_all;
static int kvm_fd = -1;

static void on_signal(int sig)
{
	if (sig != SIGUSR1)
		stop_all = 1;
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "statsfd-vmm: ");
	fprintf(stderr, fmt, arg, strerror(errno));
	fputc('\n', stderr);
	exit(1);
}

static void *vcpu_thread_sfd(void *arg)
{
	struct vcpu *v = arg;
	struct statsfd_vm_run run = v->vm->wl->run;
	bool warned = false;

	while (!v->vm->stop && !stop_all) {
		if (!ioctl(v->fd, STATSFD_VM_RUN, &run)) {
			v->runs++;
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno == EINVAL && run.halt_poll_ns) {
			/* Above the provider's halt_poll_ns_max: poll less. */
			if (!warned)
				fprintf(stderr, "statsfd-vmm: %s vcpu %d: halt_poll_ns %llu refused, not polling\n",
					v->vm->name, v->index, (unsigned long long)run.halt_poll_ns);
			warned = true;
			run.halt_poll_ns = 0;
			continue;
		}
		fprintf(stderr, "statsfd-vmm: %s vcpu %d: STATSFD_VM_RUN: %s\n",
			v->vm->name, v->index, strerror(errno));
		break;
	}
	return NULL;
}

static void *vcpu_thread_kvm(void *arg)
{
	struct vcpu *v = arg;
	struct timespec ts = { 0, 1000000 };

	while (!v->vm->stop && !stop_all) {
		if (ioctl(v->fd, KVM_RUN, 0)) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "statsfd-vmm: %s vcpu %d: KVM_RUN: %s\n",
				v->vm->name, v->index, strerror(errno));
			break;
		}
		v->runs++;
		switch (v->kvm_run->exit_reason) {
		case KVM_EXIT_IO:
			break;
		case KVM_EXIT_HLT:
			/* No in-kernel irqchip: HLT comes to us; idle a little. */
			nanosleep(&ts, NULL);
			break;
		default:
			fprintf(stderr, "statsfd-vmm: %s vcpu %d: unexpected exit %u\n",
				v->vm->name, v->index, v->kvm_run->exit_reason);
			return NULL;
		}
	}
	return NULL;
}

/* Kicks halted vCPUs now and then, so halts end by wakeup as well as by timeout. */
static void *kicker_thread(void *arg)
{
	struct vm *vm = arg;
	struct timespec ts = { 0, 3000000 };
	int i = 0;

	while (!vm->stop && !stop_all) {
		nanosleep(&ts, NULL);
		ioctl(vm->vcpus[i].fd, STATSFD_VM_KICK, 0);
		/* --add-vcpu publishes a new vCPU by raising nvcpus. */
		i = (i + 1) % __atomic_load_n(&vm->nvcpus, __ATOMIC_ACQUIRE);
	}
	return NULL;
}

/* vCPU @i of @vm (statsfd_vm) and its stats fd, or die. */
static void create_vcpu_sfd(struct vm *vm, int i)
{
	struct statsfd_vm_create_vcpu cc = { .vcpu_id = (unsigned int)i };
	struct vcpu *v = &vm->vcpus[i];

	v->vm = vm;
	v->index = i;
	v->fd = ioctl(vm->fd, STATSFD_VM_CREATE_VCPU, &cc);
	if (v->fd < 0)
		die("%s: STATSFD_VM_CREATE_VCPU: %s", vm->name);
	v->stats_fd = ioctl(v->fd, STATSFD_VM_GET_STATS_FD, 0);
	if (v->stats_fd < 0)
		die("%s: vCPU STATSFD_VM_GET_STATS_FD: %s", vm->name);
}

static void create_vm_sfd(struct vm *vm, int dev)
{
	struct statsfd_vm_create_vm cv = { 0 };
	int i;

	vm->fd = ioctl(dev, STATSFD_VM_CREATE_VM, &cv);
	if (vm->fd < 0)
		die("STATSFD_VM_CREATE_VM on %s: %s", opt.device);
	vm->stats_fd = ioctl(vm->fd, STATSFD_VM_GET_STATS_FD, 0);
	if (vm->stats_fd < 0)
		die("%s: VM STATSFD_VM_GET_STATS_FD: %s", vm->name);
	for (i = 0; i < vm->nvcpus; i++)
		create_vcpu_sfd(vm, i);
}

static void create_vm_kvm(struct vm *vm)
{
	int i, mmap_size;

	vm->fd = ioctl(kvm_fd, KVM_CREATE_VM, 0);
	if (vm->fd < 0)
		die("KVM_CREATE_VM on %s: %s", "/dev/kvm");
	vm->mem = mmap(NULL, 0x1000, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (vm->mem == MAP_FAILED)
		die("%s: mmap: %s", vm->name);
	memcpy(vm->mem, vm->wl->code, vm->wl->code_len);
	{
		struct kvm_userspace_memory_region region = {
			.slot = 0, .guest_phys_addr = 0, .memory_size = 0x1000,
			.userspace_addr = (unsigned long)vm->mem,
		};

		if (ioctl(vm->fd, KVM_SET_USER_MEMORY_REGION, &region))
			die("%s: KVM_SET_USER_MEMORY_REGION: %s", vm->name);
	}
	vm->stats_fd = ioctl(vm->fd, KVM_GET_STATS_FD, 0);
	if (vm->stats_fd < 0)
		die("%s: VM KVM_GET_STATS_FD: %s", vm->name);
	mmap_size = ioctl(kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (mmap_size <= 0)
		die("%s: KVM_GET_VCPU_MMAP_SIZE: %s", vm->name);
	for (i = 0; i < vm->nvcpus; i++) {
		struct vcpu *v = &vm->vcpus[i];
		struct kvm_sregs sregs;
		struct kvm_regs regs = { .rip = 0, .rflags = 2 };

		v->vm = vm;
		v->index = i;
		v->fd = ioctl(vm->fd, KVM_CREATE_VCPU, i);
		if (v->fd < 0)
			die("%s: KVM_CREATE_VCPU: %s", vm->name);
		v->kvm_run_size = (size_t)mmap_size;
		v->kvm_run = mmap(NULL, v->kvm_run_size, PROT_READ | PROT_WRITE,
				  MAP_SHARED, v->fd, 0);
		if (v->kvm_run == MAP_FAILED)
			die("%s: mmap kvm_run: %s", vm->name);
		/* Real mode, code segment at 0: the guest runs the loop at 0. */
		if (ioctl(v->fd, KVM_GET_SREGS, &sregs))
			die("%s: KVM_GET_SREGS: %s", vm->name);
		sregs.cs.base = 0;
		sregs.cs.selector = 0;
		if (ioctl(v->fd, KVM_SET_SREGS, &sregs) || ioctl(v->fd, KVM_SET_REGS, &regs))
			die("%s: setting registers: %s", vm->name);
		v->stats_fd = ioctl(v->fd, KVM_GET_STATS_FD, 0);
		if (v->stats_fd < 0)
			die("%s: vCPU KVM_GET_STATS_FD: %s", vm->name);
	}
}

static void client_log(void *arg, const char *msg)
{
	const struct vm *vm = arg;

	fprintf(stderr, "statsfd-vmm: VM %s: %s\n", vm->name, msg);
}

static void add_source(struct vm *vm, int fd, const char *target, int vcpu)
{
	struct statsfd_labels l = { .vcpu = vcpu };
	int r;

	snprintf(l.provider, sizeof(l.provider), "%s", opt.kvm ? "kvm" : "statsfd_vm");
	snprintf(l.target, sizeof(l.target), "%s", target);
	snprintf(l.vm, sizeof(l.vm), "%s", vm->name);
	r = statsfd_client_add(vm->cl, fd, &l);
	if (r)
		fprintf(stderr, "statsfd-vmm: VM %s: %s stats fd not registered: %s\n",
			vm->name, target, strerror(-r));
}

/*
 * Give the collector client of @vm (one connection per VM) its stats fds:
 * the VM's and its vCPUs' from @first on (a new vCPU alone: @with_vm
 * false).  They are registered by statsfd_client_dispatch() in the main
 * loop, again after every reconnection.
 */
static void register_sources(struct vm *vm, bool with_vm, int first)
{
	int i;

	if (!vm->cl) {
		vm->cl = statsfd_client_new(opt.collector);
		if (!vm->cl) {
			fprintf(stderr, "statsfd-vmm: VM %s: collector %s: %s\n",
				vm->name, opt.collector, strerror(errno));
			return;
		}
		statsfd_client_set_logger(vm->cl, client_log, vm);
	}
	if (with_vm)
		add_source(vm, vm->stats_fd, "vm", -1);
	for (i = first; i < vm->nvcpus; i++)
		add_source(vm, vm->vcpus[i].stats_fd, "vcpu", i);
	statsfd_client_dispatch(vm->cl);
}

/* Whether every VM's stats fds are registered (--ready-file waits). */
static bool all_registered(void)
{
	struct statsfd_client_status st;
	int i;

	for (i = 0; i < opt.nvms; i++) {
		if (!vms[i].cl)
			continue;
		statsfd_client_status(vms[i].cl, &st);
		if (st.registered < st.sources)
			return false;
	}
	return true;
}

/*
 * Wait for @ms at most, serving the collector connections meanwhile: the
 * VMM's only loop besides the vCPU threads.
 */
static void serve_clients(int ms)
{
	struct pollfd p[MAX_VMS];
	int i, n = 0, t = ms;

	for (i = 0; i < opt.nvms; i++) {
		struct statsfd_client *cl = vms[i].cl;
		int ct;

		if (!cl)
			continue;
		ct = statsfd_client_timeout(cl);
		if (ct >= 0 && ct < t)
			t = ct;
		p[n].fd = statsfd_client_fd(cl);
		p[n++].events = statsfd_client_events(cl);
	}
	poll(p, (nfds_t)n, t);
	for (i = 0; i < opt.nvms; i++)
		if (vms[i].cl)
			statsfd_client_dispatch(vms[i].cl);
}

static void register_vm(struct vm *vm)
{
	register_sources(vm, true, 0);
}

/*
 * --add-vcpu: one more vCPU in a running VM (statsfd_vm), as CPU hotplug
 * would add one; the VM's stats fds poll POLLPRI.  It is registered with
 * the collector on the VM's connection, then runs.
 */
static void add_vcpu(struct vm *vm)
{
	int i = vm->nvcpus;
	struct vcpu *v = &vm->vcpus[i];

	if (opt.kvm || i >= MAX_VCPUS || vm->stop)
		return;
	create_vcpu_sfd(vm, i);
	/* Published to the kicker only once its fd is there. */
	__atomic_store_n(&vm->nvcpus, i + 1, __ATOMIC_RELEASE);
	if (opt.collector)
		register_sources(vm, false, i);
	if (pthread_create(&v->thread, NULL, vcpu_thread_sfd, v))
		die("%s: pthread_create: %s", vm->name);
	v->started = true;
	if (!opt.quiet)
		printf("statsfd-vmm: VM %s: vCPU %d added\n", vm->name, i);
	fflush(stdout);
}

/*
 * Stop the vCPUs and close every fd of @vm: its stats fds held elsewhere
 * (the collector, a monitor) then poll POLLHUP.  The collector connection
 * is closed too unless --keep-connection (or @keep), when only the
 * hangup tells the collector.
 */
static void stop_vm(struct vm *vm, bool keep)
{
	int i;

	vm->stop = 1;
	for (i = 0; i < vm->nvcpus; i++)
		if (vm->vcpus[i].started)
			pthread_kill(vm->vcpus[i].thread, SIGUSR1);
	for (i = 0; i < vm->nvcpus; i++) {
		if (vm->vcpus[i].started)
			pthread_join(vm->vcpus[i].thread, NULL);
		vm->vcpus[i].started = false;
	}
	if (vm->kicker_started)
		pthread_join(vm->kicker, NULL);
	vm->kicker_started = false;
	/* The collector drops this VM's sources as soon as this closes. */
	if (!keep) {
		statsfd_client_free(vm->cl);
		vm->cl = NULL;
	}
	for (i = 0; i < vm->nvcpus; i++) {
		if (vm->vcpus[i].kvm_run)
			munmap(vm->vcpus[i].kvm_run, vm->vcpus[i].kvm_run_size);
		close(vm->vcpus[i].fd);
		if (vm->vcpus[i].stats_fd >= 0)
			close(vm->vcpus[i].stats_fd);
	}
	if (vm->stats_fd >= 0)
		close(vm->stats_fd);
	if (vm->mem)
		munmap(vm->mem, 0x1000);
	close(vm->fd);
	vm->nvcpus = 0;
}

static const struct workload *find_workload(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(workloads) / sizeof(workloads[0]); i++)
		if (!strcmp(workloads[i].name, name))
			return &workloads[i];
	return NULL;
}

static const char usage[] =
"usage: statsfd-vmm [OPTIONS]\n"
"  --vms N              VMs to create (default 2)\n"
"  --vcpus N            vCPUs per VM (default 4)\n"
"  --workload W1,W2     workload of VM 0, 1, ... (cycled): io, mmio, halt,\n"
"                       mixed, idle (default io,halt)\n"
"  --names N1,N2        VM names (default vm0, vm1, ...)\n"
"  --collector PATH     register each VM's stats fds with statsfd-collector\n"
"  --duration SEC       run this long, then tear down (default: until signal)\n"
"  --teardown VM:SEC    tear VM number VM down after SEC seconds\n"
"  --keep-connection    on teardown, keep the VM's collector connection: the\n"
"                       collector learns from its stats fds hanging up\n"
"  --add-vcpu VM:SEC    add a vCPU to VM number VM after SEC seconds\n"
"  --ready-file FILE    created once every VM runs (and is registered)\n"
"  --device PATH        statsfd_vm device (default /dev/statsfd_vm)\n"
"  --kvm                use real KVM (/dev/kvm) instead\n"
"  --quiet\n";

static const struct option longopts[] = {
	{ "vms", required_argument, NULL, 'n' },
	{ "vcpus", required_argument, NULL, 'c' },
	{ "workload", required_argument, NULL, 'w' },
	{ "names", required_argument, NULL, 'N' },
	{ "collector", required_argument, NULL, 'C' },
	{ "duration", required_argument, NULL, 'd' },
	{ "teardown", required_argument, NULL, 't' },
	{ "keep-connection", no_argument, NULL, 'K' },
	{ "add-vcpu", required_argument, NULL, 'a' },
	{ "ready-file", required_argument, NULL, 'r' },
	{ "device", required_argument, NULL, 'D' },
	{ "kvm", no_argument, NULL, 'k' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/*
 * The command line into opt, @wl_list and @names.  Return: -1 to go on,
 * or the exit code (0 for --help, 2 for a bad option).
 */
static int parse_args(int argc, char **argv, const char **wl_list,
		      const char **names)
{
	struct vm_event *ev;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			opt.nvms = atoi(optarg);
			break;
		case 'c':
			opt.nvcpus = atoi(optarg);
			break;
		case 'w':
			*wl_list = optarg;
			break;
		case 'N':
			*names = optarg;
			break;
		case 'C':
			opt.collector = optarg;
			break;
		case 'd':
			opt.duration = atof(optarg);
			break;
		case 't':
		case 'a':
			ev = c == 't' ? &opt.teardown : &opt.add_vcpu;
			if (sscanf(optarg, "%d:%lf", &ev->vm, &ev->after) != 2)
				goto usage;
			break;
		case 'K':
			opt.keep_connection = true;
			break;
		case 'r':
			opt.ready_file = optarg;
			break;
		case 'D':
			opt.device = optarg;
			break;
		case 'k':
			opt.kvm = true;
			break;
		case 'q':
			opt.quiet = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			goto usage;
		}
	}
	if (opt.nvms < 1 || opt.nvms > MAX_VMS || opt.nvcpus < 1 || opt.nvcpus > MAX_VCPUS) {
		fprintf(stderr, "statsfd-vmm: --vms 1..%d, --vcpus 1..%d\n", MAX_VMS, MAX_VCPUS);
		return 2;
	}
	return -1;
usage:
	fputs(usage, stderr);
	return 2;
}

/* --workload's list into @wl.  Return: how many, or 0 for an unknown one. */
static int parse_workloads(const char *wl_list, const struct workload **wl)
{
	char *dup = strdup(wl_list), *tok, *save = NULL;
	int nwl = 0;

	for (tok = strtok_r(dup, ",", &save); tok && nwl < MAX_VMS;
	     tok = strtok_r(NULL, ",", &save)) {
		wl[nwl] = find_workload(tok);
		if (!wl[nwl++]) {
			fprintf(stderr, "statsfd-vmm: unknown workload '%s'\n%s", tok, usage);
			nwl = 0;
			break;
		}
	}
	free(dup);
	return nwl;
}

/* VM @i: created, registered with the collector, its vCPU threads running. */
static void start_vm(int i, const char *name, const struct workload *wl, int dev)
{
	struct vm *vm = &vms[i];
	int j;

	if (name)
		snprintf(vm->name, sizeof(vm->name), "%s", name);
	else
		snprintf(vm->name, sizeof(vm->name), "vm%d", i);
	vm->wl = wl;
	vm->nvcpus = opt.nvcpus;
	if (opt.kvm)
		create_vm_kvm(vm);
	else
		create_vm_sfd(vm, dev);
	if (opt.collector)
		register_vm(vm);
	for (j = 0; j < vm->nvcpus; j++) {
		if (pthread_create(&vm->vcpus[j].thread, NULL,
				   opt.kvm ? vcpu_thread_kvm : vcpu_thread_sfd,
				   &vm->vcpus[j]))
			die("%s: pthread_create: %s", vm->name);
		vm->vcpus[j].started = true;
	}
	if (!opt.kvm && !pthread_create(&vm->kicker, NULL, kicker_thread, vm))
		vm->kicker_started = true;
	if (!opt.quiet) {
		struct statsfd *sf = statsfd_open_fd(vm->stats_fd, 0, NULL);

		printf("statsfd-vmm: pid %d: VM %s (stats id %s): %d vCPUs, workload %s: %s%s\n",
		       getpid(), vm->name, sf ? statsfd_id(sf) : "?", vm->nvcpus,
		       vm->wl->name, vm->wl->what,
		       opt.collector ? "; stats fds handed to the collector client" : "");
		statsfd_close(sf);
	}
}

/*
 * Until a signal or --duration: the collector's messages, the ready file,
 * --teardown and --add-vcpu when their time comes.
 */
/* The VM of @e once it is due at @t, while it still runs; else NULL. */
static struct vm *vm_due(const struct vm_event *e, double t)
{
	if (e->vm < 0 || e->vm >= opt.nvms || t < e->after || !vms[e->vm].nvcpus)
		return NULL;
	return &vms[e->vm];
}

static void run_vms(void)
{
	struct timespec start, now;
	struct vm *vm;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!stop_all) {
		double t;

		/* Ready once registered: never, while the collector is away. */
		if (opt.ready_file && all_registered()) {
			FILE *f = fopen(opt.ready_file, "w");

			if (f) {
				fprintf(f, "%d\n", getpid());
				fclose(f);
			}
			opt.ready_file = NULL;
		}
		serve_clients(50);
		clock_gettime(CLOCK_MONOTONIC, &now);
		t = (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) / 1e9;
		vm = vm_due(&opt.teardown, t);
		if (vm) {
			if (!opt.quiet)
				printf("statsfd-vmm: tearing down VM %s\n", vm->name);
			fflush(stdout);
			stop_vm(vm, opt.keep_connection);
		}
		vm = vm_due(&opt.add_vcpu, t);
		if (vm) {
			add_vcpu(vm);
			opt.add_vcpu.vm = -1;
		}
		if (opt.duration > 0 && t >= opt.duration)
			break;
	}
}

/* Every VM still running stopped, then every collector connection closed. */
static void stop_vms(void)
{
	int i, j;

	for (i = 0; i < opt.nvms; i++) {
		unsigned long runs = 0;

		if (!vms[i].nvcpus)
			continue;
		for (j = 0; j < vms[i].nvcpus; j++)
			runs += vms[i].vcpus[j].runs;
		stop_vm(&vms[i], false);
		if (!opt.quiet)
			printf("statsfd-vmm: VM %s stopped after %lu runs\n", vms[i].name, runs);
	}
	/* Connections --keep-connection kept for VMs torn down earlier. */
	for (i = 0; i < opt.nvms; i++)
		statsfd_client_free(vms[i].cl);
}

int main(int argc, char **argv)
{
	const char *wl_list = "io,halt", *names = NULL;
	const struct workload *wl[MAX_VMS];
	struct sigaction sa = { .sa_handler = on_signal };
	int i, nwl, dev = -1, ret;
	char *dup, *tok, *save = NULL;

	ret = parse_args(argc, argv, &wl_list, &names);
	if (ret >= 0)
		return ret;
	nwl = parse_workloads(wl_list, wl);
	if (!nwl)
		return 2;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	/* SIGUSR1 only interrupts a blocking run ioctl (EINTR). */
	sigaction(SIGUSR1, &sa, NULL);

	if (opt.kvm) {
		kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
		if (kvm_fd < 0)
			die("%s: %s", "/dev/kvm");
	} else {
		dev = open(opt.device, O_RDWR | O_CLOEXEC);
		if (dev < 0)
			die("%s: %s", opt.device);
	}
	dup = names ? strdup(names) : NULL;
	tok = dup ? strtok_r(dup, ",", &save) : NULL;
	for (i = 0; i < opt.nvms; i++) {
		start_vm(i, tok, wl[i % nwl], dev);
		if (tok)
			tok = strtok_r(NULL, ",", &save);
	}
	free(dup);
	if (dev >= 0)
		close(dev);
	fflush(stdout);
	run_vms();
	stop_vms();
	if (kvm_fd >= 0)
		close(kvm_fd);
	return 0;
}
