/*
 * hutch-build (template/builder.h): unpacks one uploaded archive into the
 * build root it is given, confined before it reads a byte, and reports
 * once on its verdict pipe.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "template/builder.h"
#include "util/parse.h"

static int build_tar(struct hu_tpl_verdict *v, hu_err *err)
{
	struct hu_tpl_writer w = {.root = HU_BUILDER_ROOT_FD,
				  .caps = {.max_bytes = HU_TPL_DEFAULT_MAX_BYTES, .max_files = HU_TPL_DEFAULT_MAX_FILES}};
	if (hu_tpl_import_tar(&w, HU_BUILDER_ARCHIVE_FD, err) < 0 || hu_tpl_fixup(w.root, err) < 0)
		return -1;
	v->bytes = w.bytes;
	v->files = w.files;
	return 0;
}

#ifdef HU_TEST_HOOKS
/* What a compromised builder would try, each as the errno it met ("ok" if
 * it worked): argv = port, database, init socket, outside path, daemon pid. */
static const char *outcome(int rc)
{
	return rc < 0 ? strerrorname_np(errno) : "ok";
}

static int probe(int argc, char **argv, struct hu_tpl_verdict *v, hu_err *err)
{
	char fds[256] = "", *at = fds;
	uint64_t port = 0, pid = 0;

	if (argc < 7 || hu_parse_u64(argv[2], &port, err) < 0 || hu_parse_u64(argv[6], &pid, err) < 0)
		return hu_err_set(err, EINVAL, "probe: port, database, init socket, outside path, daemon pid");
	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0 && at < fds + sizeof(fds) - 8)
			at += snprintf(at, (size_t)(fds + sizeof(fds) - at), "%s%d", at == fds ? "" : ",", fd);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in in = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	const char *tcp = outcome(s < 0 ? -1 : connect(s, (struct sockaddr *)&in, sizeof(in)));
	int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	snprintf(un.sun_path, sizeof(un.sun_path), "%s", argv[4]);
	const char *ctl = outcome(u < 0 ? -1 : connect(u, (struct sockaddr *)&un, sizeof(un)));
	const char *db = outcome(open(argv[3], O_RDONLY | O_CLOEXEC));
	const char *out = outcome(open(argv[5], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
	const char *sig = outcome(kill((pid_t)pid, 0));
	/* the parent of the root, reached through the root's own descriptor */
	const char *up = outcome(openat(HU_BUILDER_ROOT_FD, "../escape", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
	const char *inside = outcome(openat(HU_BUILDER_ROOT_FD, "inside", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
	snprintf(v->msg, sizeof(v->msg), "probe fds=%s tcp=%s db=%s ctl=%s outside=%s parent=%s signal=%s inside=%s", fds,
		 tcp, db, ctl, out, up, sig, inside);
	v->code = EPERM;
	return 0;
}
#endif

int main(int argc, char **argv)
{
	struct hu_tpl_verdict v = {0};
	hu_err err = {0};
	int rc = -1;

	signal(SIGPIPE, SIG_IGN);
	if (argc < 2)
		hu_err_set(&err, EINVAL, "usage: hutch-build tar|probe");
	else if (hu_tpl_confine_builder(HU_BUILDER_ROOT_FD, &err) < 0)
		hu_err_prefix(&err, "confine the builder");
	else if (!strcmp(argv[1], "tar"))
		rc = build_tar(&v, &err);
#ifdef HU_TEST_HOOKS
	else if (!strcmp(argv[1], "probe"))
		rc = probe(argc, argv, &v, &err);
#endif
	else
		hu_err_set(&err, EINVAL, "hutch-build: unknown mode '%.32s'", argv[1]);
	if (rc < 0) {
		v.code = err.code ? (err.code < 0 ? -err.code : err.code) : EIO;
		snprintf(v.msg, sizeof(v.msg), "%s", err.msg);
	}
	ssize_t w = write(HU_BUILDER_VERDICT_FD, &v, sizeof(v));
	/* _exit: nothing left to flush, and exit handlers (a sanitizer's leak
	 * check, which needs ptrace) cannot run under the seccomp filter */
	_exit(w == (ssize_t)sizeof(v) ? 0 : 1);
}
