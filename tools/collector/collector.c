// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd-collector: collects binary stats fds that VMMs hand over a unix
 * socket, reads them periodically, and serves Prometheus text over HTTP and
 * a JSON query protocol on the unix socket.
 *
 * One thread, one epoll loop: the listening socket, every client, a
 * timerfd for the reads, a signalfd and libmicrohttpd's own epoll fd.  All
 * client sockets are nonblocking with bounded buffers and deadlines, and
 * scrapes are served from the values of the last read, so no client, fast
 * or slow, can hold up a scrape.  See Documentation/statsfd-collector.rst.
 *
 * This file: the daemon's own flags, privileges, and the loop dispatching
 * each event to its owner: the source providers (provider.h: clients.c,
 * the unix socket's connections, whose requests query.c executes;
 * discover.c, --discover-kvm; host.c, --host), sources.c (the stats fds,
 * admitted by admit.c), render.c (the exposition, in the formats of
 * expo.h) and http.c (the HTTP server).  It calls into them; none of them
 * calls into it.
 */
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector.h"
#include "http.h"
#include "sd.h"
#include "statsfd_client.h"

#define DEFAULT_SOCKET		CLIENTS_DEFAULT_SOCKET
#define DEFAULT_LISTEN		"127.0.0.1:9477"

/**
 * struct options - the daemon's own flags (each part of it has its own)
 * @user: --user
 * @port_file: --port-file
 * @interval_ms: --interval
 */
struct options {
	const char *user;
	const char *port_file;
	unsigned int interval_ms;
};

/*
 * The source providers, in the order they start and render (the clients
 * first: the previous run's sources keep their ids and labels).
 */
static const struct source_provider *const providers[] = {
	&clients_provider, &discover_provider, &host_provider,
};

static const char usage[] =
"usage: statsfd-collector [OPTIONS]\n"
"  --socket PATH         unix socket for VMMs and queries (default " DEFAULT_SOCKET ")\n"
"  --socket-mode MODE    its permissions, octal (default 0660)\n"
"  --socket-group GROUP  its group (default: unchanged)\n"
"  --listen ADDR:PORT    HTTP for Prometheus (default " DEFAULT_LISTEN "; 'none' disables;\n"
"                        port 0 picks a free port, see --port-file); repeatable;\n"
"                        HOST:PORT (IPv4), [ADDR]:PORT (IPv6), :PORT (every address)\n"
"  --web.config.file FILE\n"
"                        TLS and basic auth, node_exporter's format (YAML)\n"
"  --http-max-connections N\n"
"                        open HTTP connections over every address (default 256)\n"
"  --http-max-per-ip N   open HTTP connections from one client address (default 16)\n"
"  --http-idle-timeout S close an HTTP connection idle this many seconds (default 10)\n"
"  --http-header-timeout S\n"
"                        a request's line and headers must arrive within S seconds of\n"
"                        the connection or of the previous request's end (default 5)\n"
"  --http-send-timeout S a response must be sent within S seconds of its request\n"
"                        (default 30)\n"
"  --http-reserved N     connection slots beyond --http-max-connections kept for\n"
"                        --http-scraper addresses and clients that authenticate\n"
"                        (default 4)\n"
"  --http-scraper ADDR   the Prometheus server's numeric address: exempt from\n"
"                        --http-max-per-ip and the shared limits (repeatable)\n"
"  --http-max-held-bytes N\n"
"                        bytes of renderings that responses still being sent may\n"
"                        hold; beyond, 503 (default 64 MiB)\n"
"  --http-auth-cpu-per-ip MS\n"
"                        bcrypt CPU ms per second for one client address (default 100)\n"
"  --http-auth-cpu MS    bcrypt CPU ms per second over every address (default 250)\n"
"  --port-file FILE      write the HTTP port(s) here once ready, one per --listen\n"
"  --user USER           drop to this user after binding (default nobody; the\n"
"                        daemon's own user when not run as root)\n"
"  --allow-uid LIST      uids (names or numbers, comma-separated) that may connect\n"
"  --allow-gid LIST      gids whose members may connect (primary or supplementary)\n"
"                        (default: uid 0 and the user the daemon runs as)\n"
"  --interval MS         read every source this often (default 500)\n"
"  --max-sources N       (default 65536)\n"
"  --max-mapped N        map the values of at most N sources, read the others\n"
"                        with pread; each mapping is one memory map of the\n"
"                        process (default 16384, 0: none)\n"
"  --max-clients N       allowed clients connected at a time (default 1024)\n"
"  --client-max-sources N  sources one client may register (default 16384)\n"
"  --client-max-bytes N  bytes one client's sources may hold (default 256 MiB)\n"
"  --max-bytes N         bytes all sources may hold (default 1 GiB)\n"
"  --user-max-sources N  sources one uid may register over all its connections\n"
"                        (default 16384)\n"
"  --user-max-bytes N    bytes one uid's sources may hold (default 256 MiB)\n"
"  --user-max-exposition N\n"
"                        estimated exposition bytes of one uid's sources\n"
"                        (default 256 MiB)\n"
"  --max-exposition N    estimated exposition bytes of all sources (default 512 MiB)\n"
"  --max-reply-bytes N   replies queued on the unix socket over every client\n"
"                        (default 64 MiB)\n"
"  --stats NAME,...      read and export only these stats, through a view of\n"
"                        each source (filtered here where the fd has none)\n"
"  --include [PROVIDER:TARGET:]STAT  export only the stats matching these globs\n"
"                        (repeatable; see --exclude)\n"
"  --exclude [PROVIDER:TARGET:]STAT  do not export the stats matching these\n"
"  --histograms keep|drop  export histograms or not (default keep)\n"
"  --drop-after N        drop a source after N failed reads in a row (default 10)\n"
"  --discover-kvm        also read the stats fds of KVM VMMs that never register\n"
"                        (stock QEMU), found in /proc; needs CAP_SYS_PTRACE\n"
"  --host                also read the host's own stats (statsfd_host.ko: node,\n"
"                        CPUs, interfaces, disks), exported under node_exporter's\n"
"                        names\n"
"  --discover-interval MS  look for new VMMs, VMs and vCPUs (--discover-kvm) and\n"
"                        CPUs, interfaces and disks (--host) this often\n"
"                        (default 5000)\n"
"  --client-timeout MS   drop a client that registered nothing and is idle, or\n"
"                        has not read a reply, after this (default 10000)\n"
"  --test-accept-memfd   tests only: take memfds as stats fds\n"
"  --test-host DIR       tests only: --host with DIR/statsfd_host, DIR/sys and\n"
"                        DIR/images/<id>.img for the stats fds (memfds)\n"
"  --verbose\n"
"  --version             print the version and exit\n";

/* ---- setup ------------------------------------------------------------ */

/*
 * --port-file, opened while privileged, written when ready: never through
 * a symlink (O_NOFOLLOW), and only a regular file with one link, so that
 * a link planted in a shared directory cannot make the daemon overwrite
 * another file.
 */
static int open_port_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
		      0644);
	struct stat st;

	if (fd < 0) {
		logmsg("--port-file %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
		logmsg("--port-file %s: not a regular file with a single link", path);
		close(fd);
		return -1;
	}
	return fd;
}

/* The port of each --listen address, one per line; closes @fd. */
static int write_port_file(struct collector *c, int fd)
{
	FILE *f;

	if (ftruncate(fd, 0)) {
		close(fd);
		return -1;
	}
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -1;
	}
	if (http_write_ports(c, f)) {
		fclose(f);
		return -1;
	}
	return fclose(f) ? -1 : 0;
}

static void raise_nofile(unsigned int want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_max < want && geteuid() == 0) {
		struct rlimit r2 = { want, want };

		if (!setrlimit(RLIMIT_NOFILE, &r2))
			return;
	}
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
}

static int drop_privileges(const char *user)
{
	struct passwd *pw;

	if (!user || !*user)
		return 0;
	pw = getpwnam(user);
	if (!pw) {
		logmsg("--user %s: no such user", user);
		return -1;
	}
	/*
	 * Already that user: nothing to drop.  For root that takes an
	 * explicit --user root (the default is nobody, and '' is refused):
	 * a deliberate choice, never a typo.
	 */
	if (geteuid() == pw->pw_uid)
		return 0;
	if (geteuid() != 0) {
		logmsg("--user %s: not running as root, cannot switch", user);
		return -1;
	}
	if (setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid)) {
		logmsg("dropping to %s: %s", user, strerror(errno));
		return -1;
	}
	if (!setuid(0) || geteuid() == 0) {
		logmsg("dropping to %s: could regain root, refusing to run", user);
		return -1;
	}
	return 0;
}

static int opt_version(struct collector *c, void *conf, const char *arg)
{
	printf("statsfd-collector %s\n", STATSFD_VERSION);
	exit(0);
}

static int opt_help(struct collector *c, void *conf, const char *arg)
{
	fputs(usage, stdout);
	exit(0);
}

static int opt_verbose(struct collector *c, void *conf, const char *arg)
{
	collector_verbose = 1;
	return 0;
}

static int opt_user(struct collector *c, void *conf, const char *arg)
{
	/* '' used to mean "stay root": a typo must not do that. */
	if (!*arg)
		return -EINVAL;
	((struct options *)conf)->user = arg;
	return 0;
}

static int opt_rescan(struct collector *c, void *conf, const char *arg)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (*end || end == arg || v < 100 || v > 3600000)
		return -EINVAL;
	provider_rescan_ms = (unsigned int)v;
	return 0;
}

static const struct opt daemon_opts[] = {
	OPT_STR_AT("port-file", struct options, port_file),
	OPT_CALL("user", OPT_FN, opt_user),
	OPT_UINT_AT("interval", struct options, interval_ms, 10, 3600000),
	OPT_CALL("discover-interval", OPT_FN, opt_rescan),
	OPT_CALL("verbose", OPT_FLAG, opt_verbose),
	OPT_CALL("version", OPT_FLAG, opt_version),
	OPT_CALL("help", OPT_FLAG, opt_help),
	OPT_END,
};

#define NPROVIDERS	ARRAY_SIZE(providers)

/* Every part's flags: the daemon's, HTTP's, the sources', the providers'. */
static int parse_args(int argc, char **argv, struct options *o,
		      struct collector *c)
{
	struct opt_table t[3 + NPROVIDERS] = {
		{ daemon_opts, o }, http_opt_table, sources_opt_table,
	};
	bool rescans = false;
	unsigned int i;

	for (i = 0; i < NPROVIDERS; i++)
		t[3 + i] = *providers[i]->opts;
	if (opts_parse(c, argc, argv, t, 3 + NPROVIDERS, usage))
		return -1;
	for (i = 0; i < NPROVIDERS; i++)
		rescans |= providers[i]->rescans && providers[i]->enabled &&
			   *providers[i]->enabled;
	if (provider_rescan_ms && !rescans) {
		fprintf(stderr, "statsfd-collector: --discover-interval needs --discover-kvm or --host\n");
		return -1;
	}
	return 0;
}

/* Who may connect when no --allow-uid/--allow-gid: root and our user. */
static void default_policy(struct collector *c, const struct options *o)
{
	struct passwd *pw;

	if (c->policy.nallow_uid || c->policy.nallow_gid)
		return;
	c->policy.allow_uid[c->policy.nallow_uid++] = 0;
	pw = o->user ? getpwnam(o->user) : NULL;
	c->policy.allow_uid[c->policy.nallow_uid++] = pw ? pw->pw_uid : geteuid();
}

/*
 * Everything done with privileges: the sockets bound (the unix socket,
 * HTTP's), --web.config.file read, --port-file opened (*@port_fd), the
 * providers' privileged set-up; then root dropped.  Return: 0, or -1.
 */
static int setup_privileged(struct collector *c, const struct options *o,
			    int *port_fd)
{
	unsigned int i;

	for (i = 0; i < c->nproviders; i++) {
		struct provider *p = &c->providers[i];

		if (p->ops->setup && p->ops->setup(c, p))
			return -1;
	}
	/* Reads --web.config.file's files: before privileges drop. */
	if (http_config.nlisten && http_start(c, &http_config))
		return -1;
	/* Opened while privileged, written once everything is set up. */
	if (o->port_file) {
		*port_fd = open_port_file(o->port_file);
		if (*port_fd < 0)
			return -1;
	}
	if (drop_privileges(o->user))
		return -1;
	/* Same-uid processes must not ptrace us or pidfd_getfd the VMs' fds. */
	prctl(PR_SET_DUMPABLE, 0);
	return 0;
}

/* The loop's own fds: the read timer (*@tfd) and the signals (*@sfd). */
static int setup_loop(struct collector *c, const struct options *o,
		      const sigset_t *mask, int *tfd, int *sfd)
{
	static int tag_timer = EP_TIMER, tag_signal = EP_SIGNAL;

	*tfd = interval_timer(c, o->interval_ms, &tag_timer);
	*sfd = signalfd(-1, mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (*tfd < 0 || *sfd < 0 ||
	    ep_ctl(c, EPOLL_CTL_ADD, *sfd, EPOLLIN, &tag_signal)) {
		logmsg("setup: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Start every provider, in order.  Return: 0, or -1 (logged). */
static int start_providers(struct collector *c)
{
	unsigned int i;

	for (i = 0; i < c->nproviders; i++) {
		struct provider *p = &c->providers[i];

		if (p->ops->start(c, p))
			return -1;
	}
	return 0;
}

/* Stop them, the last started first. */
static void stop_providers(struct collector *c)
{
	unsigned int i;

	for (i = c->nproviders; i-- > 0;) {
		struct provider *p = &c->providers[i];

		if (p->state)
			p->ops->stop(p);
	}
	reap_sources(c);
}

/*
 * The event loop, until a signal.  Each event goes to its owner: the read
 * timer, a source's event (a hangup or a change of children: O(1)), or
 * one of a provider's fds.  Return: 0 on a signal, 1 on failure.
 */
static int run(struct collector *c, int tfd)
{
	for (;;) {
		struct epoll_event ev[64];
		int n, i, t = next_deadline_ms(c), h = http_timeout(c);

		if (h >= 0 && (t < 0 || h < t))
			t = h;
		t = systemd_watchdog(t);
		n = epoll_wait(c->epfd, ev, 64, t);
		if (n < 0 && errno != EINTR) {
			logmsg("epoll_wait: %s", strerror(errno));
			return 1;
		}
		for (i = 0; i < n; i++) {
			int kind = *(int *)ev[i].data.ptr;
			uint64_t ticks;

			if (kind == EP_TIMER) {
				if (read(tfd, &ticks, sizeof(ticks)) > 0)
					read_sources(c);
			} else if (kind == EP_SOURCE) {
				source_event(c, ev[i].data.ptr, ev[i].events);
			} else if (kind == EP_SIGNAL) {
				logmsg("signal received, exiting");
				return 0;
			} else if (kind >= EP_PROVIDER &&
				   kind < EP_PROVIDER + (int)c->nproviders) {
				struct provider *p = &c->providers[kind - EP_PROVIDER];

				/*
				 * Clients are freed only while handling their
				 * own event (epoll reports an fd once per
				 * batch) or after the batch.
				 */
				p->ops->event(p, ev[i].data.ptr, ev[i].events);
			}
		}
		/* No event of this batch refers to them any more. */
		reap_sources(c);
		http_run(c);
		check_deadlines(c);
		reap_sources(c);
	}
}

int main(int argc, char **argv)
{
	struct options o = { .interval_ms = 500 };
	struct collector c = {
		.max_sources = 65536, .max_mapped = 16384,
		.client_max_sources = 16384, .client_max_bytes = (size_t)256 << 20,
		.max_bytes = (size_t)1 << 30, .drop_after = 10,
		.client_timeout_ms = 10000, .reply_max = COLLECTOR_REPLY_MAX,
		.policy.max_clients = 1024,
		.user_max_sources = 16384, .user_max_bytes = (size_t)256 << 20,
		.user_max_expo = (size_t)256 << 20, .max_expo = (size_t)512 << 20,
		.max_out_bytes = (size_t)64 << 20,
	};
	int tfd = -1, sfd = -1, port_fd = -1, ret = 1;
	unsigned int i;
	sigset_t mask;

	if (parse_args(argc, argv, &o, &c))
		return 2;
	for (i = 0; i < NPROVIDERS; i++)
		c.providers[c.nproviders++] = (struct provider){
			.ops = providers[i], .c = &c,
			.kind = EP_PROVIDER + (int)i,
		};
	/* Only root can switch; anyone else runs as themselves by default. */
	if (!o.user && geteuid() == 0)
		o.user = "nobody";
	default_policy(&c, &o);
	if (c.accept_memfd)
		logmsg("--test-accept-memfd: memfds are taken as stats fds; for tests only");
	raise_nofile(c.max_sources + c.policy.max_clients + 256);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);

	c.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (c.epfd < 0 || setup_privileged(&c, &o, &port_fd) ||
	    setup_loop(&c, &o, &mask, &tfd, &sfd))
		goto out;
	if (port_fd >= 0 && write_port_file(&c, port_fd)) {
		port_fd = -1;
		logmsg("%s: cannot write", o.port_file);
		goto out;
	}
	port_fd = -1;
	if (start_providers(&c)) {
		/* What was restored stays in the fd store. */
		systemd_stopping();
		goto out;
	}
	systemd_ready(&c);
	logmsg("ready: socket %s, http %s%s, uid %u, interval %u ms%s",
	       clients_socket(),
	       http_config.nlisten ? http_config.listen[0] : "none",
	       http_config.nlisten > 1 ? " and more" : "", geteuid(),
	       o.interval_ms, c.nfilter ? ", reading only the --stats" : "");
	ret = run(&c, tfd);
	systemd_stopping();
out:
	stop_providers(&c);
	if (port_fd >= 0)
		close(port_fd);
	http_stop(&c);
	render_free(&c);
	return ret;
}
