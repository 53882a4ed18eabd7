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
 * or slow, can hold up a scrape.  See Documentation/statsfd-tools.rst.
 *
 * This file: options, the sockets, privileges, and the loop dispatching
 * each event to its owner: clients.c (the unix socket's connections, whose
 * requests query.c executes), sources.c (the stats fds, admitted by
 * admit.c), render.c (the exposition) and http.c (the HTTP server).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "discover.h"
#include "host.h"
#include "http.h"
#include "sd.h"
#include "statsfd_client.h"

#define DEFAULT_SOCKET		"/run/statsfd/collector.sock"
#define DEFAULT_LISTEN		"127.0.0.1:9477"

struct options {
	const char *socket;
	struct http_config http;
	bool listen_set;
	bool listen_none;
	const char *user;
	const char *socket_group;
	const char *port_file;
	mode_t socket_mode;
	unsigned int interval_ms;
	bool discover_kvm;
	bool host;
	const char *test_host;
	unsigned int discover_interval_ms;
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

static int parse_ids(const char *list, bool groups, unsigned int *n,
		     unsigned int *out)
{
	char *dup = strdup(list), *tok, *save = NULL, *end;

	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		unsigned long v = strtoul(tok, &end, 10);

		if (*end || end == tok) {
			if (groups) {
				struct group *g = getgrnam(tok);

				if (!g)
					goto bad;
				v = g->gr_gid;
			} else {
				struct passwd *p = getpwnam(tok);

				if (!p)
					goto bad;
				v = p->pw_uid;
			}
		}
		if (*n >= MAX_IDS)
			goto bad;
		out[(*n)++] = (unsigned int)v;
	}
	free(dup);
	return 0;
bad:
	fprintf(stderr, "statsfd-collector: unknown or too many %s: %s\n",
		groups ? "groups" : "users", tok);
	free(dup);
	return -1;
}

/*
 * Whether a live instance answers on @sun: only then is an existing
 * socket in use; one that refuses the connection is a leftover.
 */
static bool socket_live(const struct sockaddr_un *sun)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	bool live;

	if (fd < 0)
		return true;
	live = !connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) ||
	       (errno != ECONNREFUSED && errno != ENOENT);
	close(fd);
	return live;
}

/*
 * The unix socket.  Its mode is set on the socket before bind() (bind
 * creates the node with the socket's mode; the umask is cleared for the
 * call), its group with lchown-style fchownat(): neither follows a
 * symlink put at the path.  An existing socket is replaced only if no
 * live instance answers on it; anything else at the path is an error.
 */
static int open_socket(const struct options *o)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat st;
	mode_t old;
	int fd, ret;

	if (strlen(o->socket) >= sizeof(sun.sun_path)) {
		logmsg("%s: path too long", o->socket);
		return -1;
	}
	strcpy(sun.sun_path, o->socket);
	if (!lstat(o->socket, &st)) {
		if (!S_ISSOCK(st.st_mode)) {
			logmsg("%s exists and is not a socket: refusing to replace it",
			       o->socket);
			return -1;
		}
		if (socket_live(&sun)) {
			logmsg("%s: another collector is running on it: refusing to start",
			       o->socket);
			return -1;
		}
		unlink(o->socket);
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (fchmod(fd, o->socket_mode)) {
		logmsg("%s: fchmod: %s", o->socket, strerror(errno));
		close(fd);
		return -1;
	}
	old = umask(0);
	ret = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (ret) {
		logmsg("bind %s: %s", o->socket, strerror(errno));
		close(fd);
		return -1;
	}
	if (o->socket_group) {
		struct group *g = getgrnam(o->socket_group);

		if (!g || fchownat(AT_FDCWD, o->socket, (uid_t)-1, g->gr_gid,
				   AT_SYMLINK_NOFOLLOW)) {
			logmsg("%s: cannot set group %s", o->socket, o->socket_group);
			close(fd);
			return -1;
		}
	}
	if (listen(fd, 128)) {
		logmsg("%s: %s", o->socket, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

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

/* --stats a,b (repeatable): each name once, in order. */
static int parse_stats(struct collector *c, const char *csv)
{
	char *dup = strdup(csv), *tok, *save = NULL, **f;
	unsigned int i;

	if (!dup)
		return -1;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < c->nfilter; i++)
			if (!strcmp(c->filter[i], tok))
				break;
		if (i < c->nfilter)
			continue;
		if (strlen(tok) >= STATSFD_LIB_NAME_SIZE_MAX || c->nfilter >= 4096)
			goto bad;
		f = realloc(c->filter, (c->nfilter + 1) * sizeof(*f));
		if (!f)
			goto bad;
		c->filter = f;
		c->filter[c->nfilter] = strdup(tok);
		if (!c->filter[c->nfilter])
			goto bad;
		c->nfilter++;
	}
	free(dup);
	return c->nfilter ? 0 : -1;
bad:
	free(dup);
	return -1;
}

static int parse_args(int argc, char **argv, struct options *o,
		      struct collector *c)
{
	enum {
		O_SOCKET = 256, O_MODE, O_GROUP, O_LISTEN, O_PORTFILE, O_USER,
		O_AUID, O_AGID, O_INTERVAL, O_MAXSRC, O_MAXCL, O_TIMEOUT, O_VERBOSE,
		O_MAXMAP, O_STATS, O_CLMAXSRC, O_CLMAXBYTES, O_MAXBYTES, O_INCLUDE,
		O_EXCLUDE, O_HIST, O_DROPAFTER, O_TESTMEMFD, O_DISCOVER,
		O_DISCOVER_INTERVAL, O_WEBCONFIG, O_HTTP_MAXCONN, O_HTTP_PERIP,
		O_HTTP_IDLE, O_VERSION, O_HOST, O_TESTHOST, O_HTTP_HDR, O_HTTP_SEND,
		O_HTTP_RESERVED, O_HTTP_SCRAPER, O_HTTP_HELD, O_HTTP_AUTH_IP,
		O_HTTP_AUTH, O_USER_MAXSRC, O_USER_MAXBYTES, O_USER_MAXEXPO,
		O_MAXEXPO, O_MAXREPLY,
	};
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, O_SOCKET },
		{ "socket-mode", required_argument, NULL, O_MODE },
		{ "socket-group", required_argument, NULL, O_GROUP },
		{ "listen", required_argument, NULL, O_LISTEN },
		{ "port-file", required_argument, NULL, O_PORTFILE },
		{ "user", required_argument, NULL, O_USER },
		{ "allow-uid", required_argument, NULL, O_AUID },
		{ "allow-gid", required_argument, NULL, O_AGID },
		{ "interval", required_argument, NULL, O_INTERVAL },
		{ "max-sources", required_argument, NULL, O_MAXSRC },
		{ "max-mapped", required_argument, NULL, O_MAXMAP },
		{ "max-clients", required_argument, NULL, O_MAXCL },
		{ "client-max-sources", required_argument, NULL, O_CLMAXSRC },
		{ "client-max-bytes", required_argument, NULL, O_CLMAXBYTES },
		{ "max-bytes", required_argument, NULL, O_MAXBYTES },
		{ "user-max-sources", required_argument, NULL, O_USER_MAXSRC },
		{ "user-max-bytes", required_argument, NULL, O_USER_MAXBYTES },
		{ "user-max-exposition", required_argument, NULL, O_USER_MAXEXPO },
		{ "max-exposition", required_argument, NULL, O_MAXEXPO },
		{ "max-reply-bytes", required_argument, NULL, O_MAXREPLY },
		{ "stats", required_argument, NULL, O_STATS },
		{ "include", required_argument, NULL, O_INCLUDE },
		{ "exclude", required_argument, NULL, O_EXCLUDE },
		{ "histograms", required_argument, NULL, O_HIST },
		{ "drop-after", required_argument, NULL, O_DROPAFTER },
		{ "test-accept-memfd", no_argument, NULL, O_TESTMEMFD },
		{ "client-timeout", required_argument, NULL, O_TIMEOUT },
		{ "discover-kvm", no_argument, NULL, O_DISCOVER },
		{ "host", no_argument, NULL, O_HOST },
		{ "test-host", required_argument, NULL, O_TESTHOST },
		{ "discover-interval", required_argument, NULL, O_DISCOVER_INTERVAL },
		{ "verbose", no_argument, NULL, O_VERBOSE },
		{ "web.config.file", required_argument, NULL, O_WEBCONFIG },
		{ "http-max-connections", required_argument, NULL, O_HTTP_MAXCONN },
		{ "http-max-per-ip", required_argument, NULL, O_HTTP_PERIP },
		{ "http-idle-timeout", required_argument, NULL, O_HTTP_IDLE },
		{ "http-header-timeout", required_argument, NULL, O_HTTP_HDR },
		{ "http-send-timeout", required_argument, NULL, O_HTTP_SEND },
		{ "http-reserved", required_argument, NULL, O_HTTP_RESERVED },
		{ "http-scraper", required_argument, NULL, O_HTTP_SCRAPER },
		{ "http-max-held-bytes", required_argument, NULL, O_HTTP_HELD },
		{ "http-auth-cpu-per-ip", required_argument, NULL, O_HTTP_AUTH_IP },
		{ "http-auth-cpu", required_argument, NULL, O_HTTP_AUTH },
		{ "version", no_argument, NULL, O_VERSION },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long ull;
	unsigned long v;
	char *end;
	int opt;

	while ((opt = getopt_long(argc, argv, "hv", lo, NULL)) != -1) {
		switch (opt) {
		case O_SOCKET:
			o->socket = optarg;
			break;
		case O_MODE:
			v = strtoul(optarg, &end, 8);
			if (*end || v > 0777)
				goto bad;
			o->socket_mode = (mode_t)v;
			break;
		case O_GROUP:
			o->socket_group = optarg;
			break;
		case O_LISTEN:
			/* The first --listen replaces the default; 'none' stands alone. */
			if (!o->listen_set)
				o->http.nlisten = 0;
			o->listen_set = true;
			if (!strcmp(optarg, "none")) {
				if (o->http.nlisten)
					goto bad;
				o->listen_none = true;
			} else {
				if (o->listen_none || o->http.nlisten >= HTTP_MAX_LISTEN)
					goto bad;
				o->http.listen[o->http.nlisten++] = optarg;
			}
			break;
		case O_WEBCONFIG:
			o->http.web_config_file = optarg;
			break;
		case O_HTTP_MAXCONN:
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 100000)
				goto bad;
			o->http.max_connections = (unsigned int)v;
			break;
		case O_HTTP_PERIP:
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 100000)
				goto bad;
			o->http.max_per_ip = (unsigned int)v;
			break;
		case O_HTTP_IDLE:
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 3600)
				goto bad;
			o->http.idle_timeout_s = (unsigned int)v;
			break;
		case O_HTTP_HDR:
		case O_HTTP_SEND:
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 3600)
				goto bad;
			if (opt == O_HTTP_HDR)
				o->http.header_timeout_s = (unsigned int)v;
			else
				o->http.send_timeout_s = (unsigned int)v;
			break;
		case O_HTTP_RESERVED:
			v = strtoul(optarg, &end, 10);
			if (*end || end == optarg || v > 1000)
				goto bad;
			o->http.reserved = (unsigned int)v;
			break;
		case O_HTTP_SCRAPER:
			if (o->http.nscrapers >= HTTP_MAX_SCRAPERS)
				goto bad;
			o->http.scrapers[o->http.nscrapers++] = optarg;
			break;
		case O_HTTP_HELD:
			ull = strtoull(optarg, &end, 10);
			if (*end || end == optarg || ull < 4096 || ull > SIZE_MAX / 2)
				goto bad;
			o->http.max_held_bytes = (size_t)ull;
			break;
		case O_HTTP_AUTH_IP:
		case O_HTTP_AUTH:
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 1000)
				goto bad;
			if (opt == O_HTTP_AUTH)
				o->http.auth_cpu_ms = (unsigned int)v;
			else
				o->http.auth_cpu_ms_per_ip = (unsigned int)v;
			break;
		case O_VERSION:
			printf("statsfd-collector %s\n", STATSFD_VERSION);
			exit(0);
		case O_PORTFILE:
			o->port_file = optarg;
			break;
		case O_USER:
			/* '' used to mean "stay root": a typo must not do that. */
			if (!*optarg)
				goto bad;
			o->user = optarg;
			break;
		case O_AUID:
			if (parse_ids(optarg, false, &c->policy.nallow_uid,
				      c->policy.allow_uid))
				return -1;
			break;
		case O_AGID:
			if (parse_ids(optarg, true, &c->policy.nallow_gid,
				      c->policy.allow_gid))
				return -1;
			break;
		case O_INTERVAL:
			v = strtoul(optarg, &end, 10);
			if (*end || v < 10 || v > 3600000)
				goto bad;
			o->interval_ms = (unsigned int)v;
			break;
		case O_MAXSRC:
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 1000000)
				goto bad;
			c->max_sources = (unsigned int)v;
			break;
		case O_MAXMAP:
			v = strtoul(optarg, &end, 10);
			if (*end || end == optarg || v > 1000000)
				goto bad;
			c->max_mapped = (unsigned int)v;
			break;
		case O_MAXCL:
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 100000)
				goto bad;
			c->policy.max_clients = (unsigned int)v;
			break;
		case O_CLMAXSRC:
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 1000000)
				goto bad;
			c->client_max_sources = (unsigned int)v;
			break;
		case O_CLMAXBYTES:
		case O_MAXBYTES:
			ull = strtoull(optarg, &end, 10);
			if (*end || end == optarg || ull < 1024 || ull > SIZE_MAX / 2)
				goto bad;
			if (opt == O_MAXBYTES)
				c->max_bytes = (size_t)ull;
			else
				c->client_max_bytes = (size_t)ull;
			break;
		case O_USER_MAXSRC:
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 1000000)
				goto bad;
			c->user_max_sources = (unsigned int)v;
			break;
		case O_USER_MAXBYTES:
		case O_USER_MAXEXPO:
		case O_MAXEXPO:
		case O_MAXREPLY:
			ull = strtoull(optarg, &end, 10);
			if (*end || end == optarg || ull < 1024 || ull > SIZE_MAX / 2)
				goto bad;
			if (opt == O_USER_MAXBYTES)
				c->user_max_bytes = (size_t)ull;
			else if (opt == O_USER_MAXEXPO)
				c->user_max_expo = (size_t)ull;
			else if (opt == O_MAXEXPO)
				c->max_expo = (size_t)ull;
			else
				c->max_out_bytes = (size_t)ull;
			break;
		case O_INCLUDE:
		case O_EXCLUDE:
			if (add_stat_rule(c, optarg, opt == O_INCLUDE))
				goto bad;
			break;
		case O_HIST:
			if (strcmp(optarg, "keep") && strcmp(optarg, "drop"))
				goto bad;
			c->no_histograms = !strcmp(optarg, "drop");
			break;
		case O_DROPAFTER:
			v = strtoul(optarg, &end, 10);
			if (*end || !v || v > 1000000)
				goto bad;
			c->drop_after = (unsigned int)v;
			break;
		case O_TESTMEMFD:
			c->accept_memfd = true;
			break;
		case O_TIMEOUT:
			v = strtoul(optarg, &end, 10);
			if (*end || v < 10)
				goto bad;
			c->client_timeout_ms = (unsigned int)v;
			break;
		case O_STATS:
			if (parse_stats(c, optarg))
				goto bad;
			break;
		case O_DISCOVER:
			o->discover_kvm = true;
			break;
		case O_HOST:
			o->host = true;
			break;
		case O_TESTHOST:
			o->host = true;
			o->test_host = optarg;
			break;
		case O_DISCOVER_INTERVAL:
			v = strtoul(optarg, &end, 10);
			if (*end || end == optarg || v < 100 || v > 3600000)
				goto bad;
			o->discover_interval_ms = (unsigned int)v;
			break;
		case 'v':
		case O_VERBOSE:
			collector_verbose = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			fputs(usage, stderr);
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "statsfd-collector: unexpected argument %s\n%s",
			argv[optind], usage);
		return -1;
	}
	if (o->discover_interval_ms && !o->discover_kvm && !o->host) {
		fprintf(stderr, "statsfd-collector: --discover-interval needs --discover-kvm or --host\n");
		return -1;
	}
	return 0;
bad:
	fprintf(stderr, "statsfd-collector: bad value '%s'\n%s", optarg, usage);
	return -1;
}

int main(int argc, char **argv)
{
	struct options o = {
		.socket = DEFAULT_SOCKET,
		.http = {
			.listen = { DEFAULT_LISTEN }, .nlisten = 1,
			.max_connections = HTTP_DEFAULT_MAX_CONNECTIONS,
			.max_per_ip = HTTP_DEFAULT_MAX_PER_IP,
			.idle_timeout_s = HTTP_DEFAULT_IDLE_TIMEOUT_S,
			.header_timeout_s = HTTP_DEFAULT_HEADER_TIMEOUT_S,
			.send_timeout_s = HTTP_DEFAULT_SEND_TIMEOUT_S,
			.reserved = HTTP_DEFAULT_RESERVED,
			.max_held_bytes = HTTP_DEFAULT_MAX_HELD_BYTES,
			.auth_cpu_ms_per_ip = HTTP_DEFAULT_AUTH_CPU_MS_PER_IP,
			.auth_cpu_ms = HTTP_DEFAULT_AUTH_CPU_MS,
		},
		.socket_mode = 0660, .interval_ms = 500,
	};
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
	int tag_listen = EP_LISTEN, tag_timer = EP_TIMER, tag_signal = EP_SIGNAL;
	struct itimerspec its = { 0 };
	sigset_t mask;
	int lfd, tfd, sfd, port_fd = -1, ret = 1;
	struct passwd *pw;
	struct discover *disc = NULL;
	struct host *host = NULL;

	if (parse_args(argc, argv, &o, &c))
		return 2;
	/* Only root can switch; anyone else runs as themselves by default. */
	if (!o.user && geteuid() == 0)
		o.user = "nobody";
	/* Default allow list: root and the user we will run as. */
	if (!c.policy.nallow_uid && !c.policy.nallow_gid) {
		c.policy.allow_uid[c.policy.nallow_uid++] = 0;
		pw = o.user ? getpwnam(o.user) : NULL;
		c.policy.allow_uid[c.policy.nallow_uid++] = pw ? pw->pw_uid : geteuid();
	}
	if (c.accept_memfd)
		logmsg("--test-accept-memfd: memfds are taken as stats fds; for tests only");
	raise_nofile(c.max_sources + c.policy.max_clients + 256);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);

	c.epfd = epoll_create1(EPOLL_CLOEXEC);
	lfd = systemd_unix_listen_fd() >= 0 ? systemd_unix_listen_fd() : open_socket(&o);
	if (c.epfd < 0 || lfd < 0)
		return 1;
	/* Reads --web.config.file's files: before privileges drop. */
	if (o.http.nlisten && http_start(&c, &o.http))
		goto out_http;
	/* Opened while privileged, written once everything is set up. */
	if (o.port_file) {
		port_fd = open_port_file(o.port_file);
		if (port_fd < 0)
			goto out_http;
	}
	/* Everything privileged is done: sockets are bound. */
	if (o.discover_kvm && discover_keep_caps())
		goto out_http;
	if (drop_privileges(o.user))
		goto out_http;
	/* Same-uid processes must not ptrace us or pidfd_getfd the VMs' fds. */
	prctl(PR_SET_DUMPABLE, 0);

	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	its.it_interval.tv_sec = o.interval_ms / 1000;
	its.it_interval.tv_nsec = (long)(o.interval_ms % 1000) * 1000000;
	its.it_value = its.it_interval;
	c.listen_fd = lfd;
	c.listen_tag = &tag_listen;
	if (accept_reserve())
		logmsg("no reserve fd: a full fd table may make accept() retry");
	if (tfd < 0 || sfd < 0 || timerfd_settime(tfd, 0, &its, NULL) ||
	    ep_ctl(&c, EPOLL_CTL_ADD, lfd, EPOLLIN, &tag_listen) ||
	    ep_ctl(&c, EPOLL_CTL_ADD, tfd, EPOLLIN, &tag_timer) ||
	    ep_ctl(&c, EPOLL_CTL_ADD, sfd, EPOLLIN, &tag_signal)) {
		logmsg("setup: %s", strerror(errno));
		goto out_http;
	}
	if (port_fd >= 0 && write_port_file(&c, port_fd)) {
		port_fd = -1;
		logmsg("%s: cannot write", o.port_file);
		goto out_http;
	}
	port_fd = -1;
	/*
	 * The previous run's clients and sources first, with their ids and
	 * labels; discovery (which takes ids and labels too) after them.
	 */
	systemd_restore(&c, adopt_client, &o);
	if (o.discover_kvm) {
		disc = discover_start(&c, "/proc", o.discover_interval_ms ?:
				      DISCOVER_INTERVAL_MS);
		if (!disc)
			goto out_http;
	}
	if (o.host) {
		char dev[PATH_MAX], sys[PATH_MAX], img[PATH_MAX];

		snprintf(dev, sizeof(dev), "%s%s", o.test_host ?: "",
			 o.test_host ? "/statsfd_host" : STATSFD_HOST_DEVICE);
		snprintf(sys, sizeof(sys), "%s/sys", o.test_host ?: "");
		snprintf(img, sizeof(img), "%s/images", o.test_host ?: "");
		if (o.test_host)
			logmsg("--test-host %s: images instead of stats fds; for tests only",
			       o.test_host);
		host = host_start(&c, dev, sys, o.test_host ? img : NULL,
				  o.discover_interval_ms ?: DISCOVER_INTERVAL_MS);
		if (!host)
			goto out_disc;
	}
	systemd_ready(&c);
	logmsg("ready: socket %s, http %s%s, uid %u, interval %u ms%s",
	       o.socket, o.http.nlisten ? o.http.listen[0] : "none",
	       o.http.nlisten > 1 ? " and more" : "", geteuid(), o.interval_ms,
	       c.nfilter ? ", reading only the --stats" : "");

	for (;;) {
		struct epoll_event ev[64];
		int n, i, t = next_deadline_ms(&c), h = http_timeout(&c);

		if (h >= 0 && (t < 0 || h < t))
			t = h;
		t = systemd_watchdog(t);
		n = epoll_wait(c.epfd, ev, 64, t);
		if (n < 0 && errno != EINTR) {
			logmsg("epoll_wait: %s", strerror(errno));
			break;
		}
		for (i = 0; i < n; i++) {
			int kind = *(int *)ev[i].data.ptr;

			if (kind == EP_LISTEN) {
				accept_clients(&c, lfd);
			} else if (kind == EP_TIMER) {
				uint64_t ticks;

				if (read(tfd, &ticks, sizeof(ticks)) > 0)
					read_sources(&c);
			} else if (kind == EP_SOURCE) {
				/* A hangup or a change of children: O(1). */
				source_event(&c, ev[i].data.ptr, ev[i].events);
			} else if (kind == EP_DISCOVER) {
				discover_event(disc, ev[i].data.ptr, ev[i].events);
			} else if (kind == EP_HOST) {
				host_event(host);
			} else if (kind == EP_SIGNAL) {
				logmsg("signal received, exiting");
				ret = 0;
				goto out_clients;
			} else if (kind == EP_CLIENT) {
				/*
				 * Clients are freed only while handling their
				 * own event (epoll reports an fd once per
				 * batch) or after the batch.
				 */
				client_event(&c, ev[i].data.ptr, ev[i].events);
			}
		}
		/* No event of this batch refers to them any more. */
		reap_sources(&c);
		http_run(&c);
		check_deadlines(&c);
		reap_sources(&c);
	}
out_clients:
	systemd_stopping();
	host_stop(host);
out_disc:
	discover_stop(disc);
	while (c.clients)
		drop_client(&c, c.clients, "collector exiting");
	reap_sources(&c);
out_http:
	if (port_fd >= 0)
		close(port_fd);
	http_stop(&c);
	render_free(&c);
	/* Fails harmlessly once unprivileged in a root-owned directory. */
	if (!systemd_owns_socket())
		unlink(o.socket);
	return ret;
}
