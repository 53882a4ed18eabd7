// SPDX-License-Identifier: GPL-2.0
/*
 * statsfd: show, watch, dump and query binary stats fds (statsfd's own and
 * real KVM's), from a device, a running VMM, an fd, a socket or a file.
 * See Documentation/statsfd-cli.rst.
 *
 * This file parses the command line and dispatches; the commands are
 * show.c (show, list, dump), watch.c and query.c, the sources they read
 * sources.c, events.c (views and events) and host.c (the host pages).
 */
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define DEFAULT_DEVICE		"/dev/statsfd_vm"
#define DEFAULT_COLLECTOR	"/run/statsfd/collector.sock"

static const char usage[] =
"usage: statsfd COMMAND [SOURCES] [OPTIONS]\n"
"\n"
"Commands:\n"
"  show     print every stat once: a table, or --json, or --prometheus\n"
"  watch    refresh per-second rates and current values in place\n"
"  list     one line per source found\n"
"  dump     write the raw image of the first source (--output FILE)\n"
"  query    send a JSON query to statsfd-collector (see --collector)\n"
"\n"
"Sources (repeatable, at least one for show/watch/list/dump):\n"
"  --device[=PATH]   the statsfd_vm system stats plus every VM and vCPU of\n"
"                    every process we may take fds from (default " DEFAULT_DEVICE ")\n"
"  --pid PID         the VM and vCPU fds of a running VMM (KVM or statsfd_vm),\n"
"                    taken with pidfd_getfd (needs ptrace permission)\n"
"  --fd N            an inherited stats fd\n"
"  --socket PATH     listen on PATH; a VMM connects and sends stats fds with\n"
"                    an add-sources message (collector protocol)\n"
"  --file PATH       a saved image (statsfd dump)\n"
"  --host[=PATH]     the host's own stats (statsfd_host.ko, default " STATSFD_HOST_DEVICE "):\n"
"                    the node, every online CPU, interface and disk, shown\n"
"                    as pages like vmstat's and sar's\n"
"\n"
"Options:\n"
"  --json, --prometheus   output format of show\n"
"  --name GLOB            only stats whose name matches (repeatable)\n"
"  --stats NAME,...       read only these stats, through a view of each source\n"
"                         (where the fd has no views: read and filtered here)\n"
"  --all                  also zero rows in watch and empty buckets in show\n"
"  --interval SEC         watch period (default 1)\n"
"  --count N              watch: stop after N refreshes (default: until ^C)\n"
"  --ansi                 watch: refresh in place even when stdout is not a tty\n"
"  --timeout SEC          --socket: how long to wait for the VMM (default 30)\n"
"  --output FILE          dump: write here instead of stdout\n"
"  --collector PATH       query: the collector socket (default " DEFAULT_COLLECTOR ")\n"
"  query filters: --schemas | --sources | --target T --vm NAME --vcpus 0,1\n"
"                 --provider P --names a,b --raw JSON\n";

/* --stats a,b,c (repeatable): names kept in order, each once. */
static int parse_stats(struct cli_opts *o, char *csv)
{
	char *tok, *save = NULL;
	unsigned int i;

	for (tok = strtok_r(csv, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < o->nstats; i++)
			if (!strcmp(o->stats[i], tok))
				break;
		if (i < o->nstats)
			continue;
		if (o->nstats == sizeof(o->stats) / sizeof(o->stats[0])) {
			fprintf(stderr, "statsfd: --stats: at most %zu names\n",
				sizeof(o->stats) / sizeof(o->stats[0]));
			return -1;
		}
		o->stats[o->nstats++] = tok;
	}
	if (!o->nstats) {
		fprintf(stderr, "statsfd: --stats: a comma-separated list of stat names\n");
		return -1;
	}
	return 0;
}

enum {
	OPT_DEVICE = 256, OPT_PID, OPT_FD, OPT_SOCKET, OPT_FILE, OPT_JSON,
	OPT_PROM, OPT_NAME, OPT_ALL, OPT_INTERVAL, OPT_COUNT, OPT_TIMEOUT,
	OPT_OUTPUT, OPT_COLLECTOR, OPT_SCHEMAS, OPT_SOURCES, OPT_TARGET,
	OPT_VM, OPT_VCPUS, OPT_PROVIDER, OPT_NAMES, OPT_RAW, OPT_ANSI,
	OPT_STATS, OPT_HOST,
};

static const struct option longopts[] = {
	{ "device", optional_argument, NULL, OPT_DEVICE },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "fd", required_argument, NULL, OPT_FD },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "file", required_argument, NULL, OPT_FILE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "prometheus", no_argument, NULL, OPT_PROM },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "all", no_argument, NULL, OPT_ALL },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "output", required_argument, NULL, OPT_OUTPUT },
	{ "collector", required_argument, NULL, OPT_COLLECTOR },
	{ "schemas", no_argument, NULL, OPT_SCHEMAS },
	{ "sources", no_argument, NULL, OPT_SOURCES },
	{ "target", required_argument, NULL, OPT_TARGET },
	{ "vm", required_argument, NULL, OPT_VM },
	{ "vcpus", required_argument, NULL, OPT_VCPUS },
	{ "provider", required_argument, NULL, OPT_PROVIDER },
	{ "names", required_argument, NULL, OPT_NAMES },
	{ "raw", required_argument, NULL, OPT_RAW },
	{ "ansi", no_argument, NULL, OPT_ANSI },
	{ "stats", required_argument, NULL, OPT_STATS },
	{ "host", optional_argument, NULL, OPT_HOST },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/*
 * A source option: the source is opened at once, in command-line order.
 * Return: 1 when @c is no source option, else 0 (failures count in @ret).
 */
static int source_opt(struct cli_sources *s, const struct cli_opts *o, int c,
		      int *ret)
{
	switch (c) {
	case OPT_DEVICE:
		*ret |= cli_add_device(s, optarg ? optarg : DEFAULT_DEVICE);
		break;
	case OPT_PID:
		*ret |= cli_add_pid(s, optarg);
		break;
	case OPT_FD:
		*ret |= cli_add_fd(s, optarg);
		break;
	case OPT_SOCKET:
		*ret |= cli_add_socket(s, optarg, o->timeout_ms);
		break;
	case OPT_FILE:
		*ret |= cli_add_file(s, optarg);
		break;
	case OPT_HOST:
		*ret |= cli_add_host(s, optarg ? optarg : STATSFD_HOST_DEVICE);
		break;
	default:
		return 1;
	}
	return 0;
}

/* The options that only set a field of struct cli_opts. */
static const struct {
	int opt;
	bool flag;	/* a bool set to true; else a string set to the argument */
	size_t off;
} field_opts[] = {
	{ OPT_JSON, true, offsetof(struct cli_opts, json) },
	{ OPT_PROM, true, offsetof(struct cli_opts, prom) },
	{ OPT_ALL, true, offsetof(struct cli_opts, all) },
	{ OPT_ANSI, true, offsetof(struct cli_opts, ansi) },
	{ OPT_OUTPUT, false, offsetof(struct cli_opts, output) },
	/* The filters of `query`. */
	{ OPT_COLLECTOR, false, offsetof(struct cli_opts, collector) },
	{ OPT_SCHEMAS, true, offsetof(struct cli_opts, schemas) },
	{ OPT_SOURCES, true, offsetof(struct cli_opts, list_sources) },
	{ OPT_TARGET, false, offsetof(struct cli_opts, target) },
	{ OPT_VCPUS, false, offsetof(struct cli_opts, vcpus) },
	{ OPT_PROVIDER, false, offsetof(struct cli_opts, provider) },
	{ OPT_NAMES, false, offsetof(struct cli_opts, names_csv) },
	{ OPT_RAW, false, offsetof(struct cli_opts, raw) },
};

/* Option @c into its field of @o.  Return: false when it has none. */
static bool field_opt(struct cli_opts *o, int c)
{
	unsigned int i;

	for (i = 0; i < sizeof(field_opts) / sizeof(field_opts[0]); i++) {
		char *f = (char *)o + field_opts[i].off;

		if (field_opts[i].opt != c)
			continue;
		if (field_opts[i].flag)
			*(bool *)f = true;
		else
			*(const char **)f = optarg;
		return true;
	}
	return false;
}

/* An option that is no source.  Return: 0, or 2 (usage) when it is bad. */
static int other_opt(struct cli_opts *o, int c)
{
	char *end;

	if (field_opt(o, c))
		return 0;
	switch (c) {
	case OPT_NAME:
		if (o->nnames < CLI_MAX_NAMES)
			o->names[o->nnames++] = optarg;
		break;
	case OPT_INTERVAL:
		o->interval = strtod(optarg, &end);
		if (*end || !(o->interval >= 0.01 && o->interval <= 3600)) {
			fprintf(stderr, "statsfd: --interval: seconds in [0.01, 3600]\n");
			return 2;
		}
		break;
	case OPT_COUNT:
		o->count = strtol(optarg, &end, 10);
		if (*end || o->count <= 0) {
			fprintf(stderr, "statsfd: --count: a positive number\n");
			return 2;
		}
		break;
	case OPT_TIMEOUT:
		o->timeout_ms = (int)(strtod(optarg, NULL) * 1000);
		break;
	case OPT_STATS:
		return parse_stats(o, optarg) ? 2 : 0;
	case OPT_VM:
		if (o->nvms < CLI_MAX_VMS)
			o->vms[o->nvms++] = optarg;
		break;
	default:
		fputs(usage, stderr);
		return 2;
	}
	return 0;
}

/*
 * The command line after the command.  Return: -1 to go on, or the exit
 * code (0 for --help).  @nsrc counts the source options given.
 */
static int parse_args(struct cli_opts *o, struct cli_sources *s, int argc,
		      char **argv, int *nsrc, int *ret)
{
	int c, r;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage, stdout);
			return 0;
		}
		if (!source_opt(s, o, c, ret)) {
			(*nsrc)++;
			continue;
		}
		r = other_opt(o, c);
		if (r)
			return r;
	}
	if (optind < argc) {
		fprintf(stderr, "statsfd: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct cli_opts o = {
		.interval = 1.0, .timeout_ms = 30000, .collector = DEFAULT_COLLECTOR,
	};
	struct cli_sources s = { 0 };
	const char *names[CLI_MAX_NAMES];
	int ret = 0, nsrc = 0, r;

	o.names = names;
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	o.cmd = argv[1];
	if (strcmp(o.cmd, "show") && strcmp(o.cmd, "watch") && strcmp(o.cmd, "list") &&
	    strcmp(o.cmd, "dump") && strcmp(o.cmd, "query")) {
		fprintf(stderr, "statsfd: unknown command '%s'\n\n%s", o.cmd, usage);
		return 2;
	}
	r = parse_args(&o, &s, argc - 1, argv + 1, &nsrc, &ret);
	if (r >= 0)
		return r;
	if (!strcmp(o.cmd, "query"))
		return cli_query(&o);
	if (!nsrc) {
		fprintf(stderr, "statsfd: no source: give --device, --pid, --fd, --socket, --file or --host\n");
		return 2;
	}
	if (!s.n) {
		fprintf(stderr, "statsfd: no stats fd found\n");
		return 1;
	}
	/* dump writes a source's whole image; the others read --stats views. */
	if (strcmp(o.cmd, "dump")) {
		s.stats = o.stats;
		s.nstats = o.nstats;
		s.watch = !strcmp(o.cmd, "watch");
		if (cli_prepare(&s, 0))
			ret = 1;
		if (s.no_views)
			fprintf(stderr, "statsfd: note: --stats: %u of %u sources have no views (KVM's stats fds, files, or a kernel without STATSFD_IOC_VIEW): their stats are read whole and filtered here\n",
				s.no_views, s.n);
		cli_warn_missing(&s);
	}
	if (!strcmp(o.cmd, "watch"))
		ret = cli_watch(&o, &s) || ret;
	else if (!strcmp(o.cmd, "list"))
		ret = cli_list(&s) || ret;
	else if (!strcmp(o.cmd, "dump"))
		ret = cli_dump(&o, &s) || ret;
	else
		ret = cli_show(&o, &s) || ret;
	cli_free_sources(&s);
	return ret ? 1 : 0;
}
