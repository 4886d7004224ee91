/*
 * cni-plugins-shim: what the CNI bin directory holds under every plugin name (docs/resident.md).
 *
 * It contains no CNI logic. Run by a container runtime as, say, /opt/cni/bin/bridge, it
 *   1. connects to the resident agent (`cni-plugins serve`) on the unix socket named by
 *      CNI_PLUGINS_SOCKET, else /run/cni/plugins.sock, without blocking: a full backlog (a frozen
 *      or swamped agent) fails at once (EAGAIN);
 *   2. asks the kernel who listens there (SO_PEERCRED: the process that called listen(2)) and goes
 *      on only when that is root or its own user: whoever else bound the path gets no byte;
 *   3. sends what it was given: its build id, pid and umask, its arguments (argv[0] first) and its
 *      whole environment;
 *   4. when the agent accepts, relays the rest exactly: stdin (until the agent answers, see
 *      send_stdin), the agent's stdout and stderr bytes as they come, and exits with the agent's
 *      exit status;
 *   5. otherwise (no socket, nobody listening, a full backlog, a listener of another user, another
 *      build, a refusal, no acceptance within REQUEST_BUDGET_MS of the start or of the agent's
 *      last word that the call waits, none within QUEUED_BUDGET_MS at all, any failure before
 *      the agent accepted) it execve(2)s the standalone multi-call executable `cni-plugins` next
 *      to itself with the same argv, environment and untouched stdin, so a call never depends on
 *      the agent being up, alive or honest.
 * Connecting, sending the request and waiting for the acceptance share that one budget (a
 * CLOCK_MONOTONIC deadline): every wait before the acceptance ends at it, so no frozen agent holds
 * a call up for longer before it runs standalone. An agent whose worker threads are all busy says
 * that the call waits for one ('P', every 500 ms while it does); each such word moves the deadline
 * to REQUEST_BUDGET_MS from then, but never past QUEUED_BUDGET_MS from the start: so an agent that
 * stops running its event loop loses the call within REQUEST_BUDGET_MS, and one that only ever
 * says "wait" within QUEUED_BUDGET_MS.
 * When the agent fails after it accepted (killed mid-request), stdin may already be consumed, so
 * there is no fallback: the shim prints a CNI error with code 11 ("try again later") naming the
 * agent's socket and exits 1; the runtime's DEL then cleans up as after any failed ADD.
 *
 * Run under its own name as `cni-plugins-shim --namespaces-of PID PROGRAM ARGS...`, it joins the
 * mount, UTS, IPC and cgroup namespaces of process PID and execs PROGRAM there: how the DaemonSet's
 * agent container (deploy/daemonset.yaml, hostPID and hostNetwork) runs the agent in the host's
 * namespaces (PID 1's), where the callers are. (A Bun process cannot do that itself: joining a
 * mount namespace needs a single-threaded caller.)
 *
 * The protocol (docs/resident.md, agent/protocol.ts is the other end): frames of a 5-byte header,
 * u32 little-endian payload length + u8 type, then the payload; no payload exceeds MAX_PAYLOAD,
 * checked on both sides.
 *   shim -> agent: 'H' hello (u32 protocol, u32 pid, u32 umask, build id), 'A' one argument,
 *                  'E' one environment entry, 'Q' end of request, 'I' stdin bytes, 'Z' end of
 *                  stdin, 'Y' stdin unreadable (u32 errno)
 *   agent -> shim: 'P' queued (before 'K' or 'R', any number of them), 'K' accepted,
 *                  'R' refused (reason text), 'S' send stdin, 'O' stdout bytes,
 *                  'W' stderr bytes, 'X' exit (u32 status)
 *
 * Static (gcc -static), built by `make build` with CNI_BUILD_ID defined.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifndef CNI_BUILD_ID
#error "CNI_BUILD_ID must be defined (make build does)"
#endif

#define PROTOCOL_VERSION 1u
#define DEFAULT_SOCKET "/run/cni/plugins.sock"
#define STANDALONE_NAME "cni-plugins"
#define SHIM_NAME "cni-plugins-shim"
#define MAX_PAYLOAD (256u * 1024u)
#define CHUNK (64u * 1024u)
/* From the start of connect(2), or from the agent's last 'P', to the acceptance; past it, the call runs standalone. */
#define REQUEST_BUDGET_MS 2000
/*
 * From the start of connect(2) to the acceptance however often the agent says the call waits: above
 * the agent's own bound on such waits (10 s, ADMISSION_WAIT_MS in agent/serve.ts).
 */
#define QUEUED_BUDGET_MS 12000
/* The deadline of a wait that has none: after the acceptance, the call is the agent's. */
#define NO_DEADLINE INT64_MAX

extern char **environ;

static unsigned char buf[MAX_PAYLOAD];
/* The request's frames, collected so that most requests go out in one write. */
static unsigned char out[64u * 1024u];
static size_t out_len;

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

static void put_u32(unsigned char *p, uint32_t v) {
  p[0] = v & 0xff;
  p[1] = (v >> 8) & 0xff;
  p[2] = (v >> 16) & 0xff;
  p[3] = (v >> 24) & 0xff;
}

static uint32_t get_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* CLOCK_MONOTONIC in milliseconds. */
static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * Waits until `fd` is ready for `events` (or has an error or hangup to report, which the next call
 * on it returns) until `deadline` (now_ms() time, or NO_DEADLINE). 1 ready, 0 not: the deadline
 * passed or poll(2) failed.
 */
static int wait_ready(int fd, short events, int64_t deadline) {
  for (;;) {
    int timeout = -1;
    if (deadline != NO_DEADLINE) {
      int64_t left = deadline - now_ms();
      if (left <= 0) return 0;
      timeout = (int)left; /* at most REQUEST_BUDGET_MS */
    }
    struct pollfd p = {.fd = fd, .events = events};
    int n = poll(&p, 1, timeout);
    if (n > 0) return 1;
    if (n < 0 && errno != EINTR) return 0;
  }
}

/*
 * Writes all of `len` bytes; a socket never raises SIGPIPE (MSG_NOSIGNAL). A write that would block
 * (a non-blocking fd: the request's socket, or a caller's stdout) waits until `deadline`. 0 or -1.
 */
static int write_all(int fd, const void *data, size_t len, int is_socket, int64_t deadline) {
  const unsigned char *p = data;
  while (len > 0) {
    ssize_t n = is_socket ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN && wait_ready(fd, POLLOUT, deadline)) continue;
      return -1;
    }
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Sends the collected frames (waiting at most until `deadline`). 0 or -1. */
static int flush_frames(int sock, int64_t deadline) {
  int r = out_len == 0 ? 0 : write_all(sock, out, out_len, 1, deadline);
  out_len = 0;
  return r;
}

/* Adds a frame to the collected ones (sending them first when it does not fit). 0 or -1. */
static int queue_frame(int sock, char type, const void *payload, size_t len, int64_t deadline) {
  if (len > MAX_PAYLOAD) return -1;
  if (out_len + 5 + len > sizeof out && flush_frames(sock, deadline) < 0) return -1;
  unsigned char header[5];
  put_u32(header, (uint32_t)len);
  header[4] = (unsigned char)type;
  if (5 + len > sizeof out) { /* larger than the buffer: straight out */
    if (write_all(sock, header, sizeof header, 1, deadline) < 0) return -1;
    return len == 0 ? 0 : write_all(sock, payload, len, 1, deadline);
  }
  memcpy(out + out_len, header, sizeof header);
  if (len > 0) memcpy(out + out_len + sizeof header, payload, len);
  out_len += sizeof header + len;
  return 0;
}

/* Sends one frame now (with any collected before it). 0 or -1. */
static int send_frame(int sock, char type, const void *payload, size_t len, int64_t deadline) {
  if (queue_frame(sock, type, payload, len, deadline) < 0) return -1;
  return flush_frames(sock, deadline);
}

/* Reads exactly `len` bytes, waiting for them at most until `deadline`; -1 on error or end of stream. */
static int read_exact(int fd, unsigned char *p, size_t len, int64_t deadline) {
  while (len > 0) {
    ssize_t n = read(fd, p, len);
    if (n < 0 && (errno == EINTR || (errno == EAGAIN && wait_ready(fd, POLLIN, deadline)))) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Reads one frame into buf (by `deadline`); its type, or -1. */
static int read_frame(int sock, uint32_t *len, int64_t deadline) {
  unsigned char header[5];
  if (read_exact(sock, header, sizeof header, deadline) < 0) return -1;
  *len = get_u32(header);
  if (*len > MAX_PAYLOAD) return -1;
  if (read_exact(sock, buf, *len, deadline) < 0) return -1;
  return header[4];
}

/* Execs the standalone multi-call executable next to this file; prints a CNI error if it cannot. */
__attribute__((noreturn)) static void run_standalone(char **argv) {
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - sizeof STANDALONE_NAME - 1);
  const char *dir_end = NULL;
  if (n > 0) {
    self[n] = '\0';
    dir_end = strrchr(self, '/');
  } else if (strchr(argv[0], '/') != NULL && strlen(argv[0]) < sizeof self - sizeof STANDALONE_NAME - 1) {
    strcpy(self, argv[0]);
    dir_end = strrchr(self, '/');
  }
  if (dir_end != NULL) {
    strcpy(self + (dir_end - self) + 1, STANDALONE_NAME);
    execve(self, argv, environ);
  }
  int err = errno;
  char msg[512];
  int len = snprintf(msg, sizeof msg,
                     "{\n    \"code\": 999,\n    \"msg\": \"cannot run the standalone executable %s next to %s: %s\"\n}",
                     STANDALONE_NAME, base_name(argv[0]), strerror(err));
  if (len > 0) write_all(1, msg, (size_t)len < sizeof msg ? (size_t)len : sizeof msg - 1, 0, NO_DEADLINE);
  exit(1);
}

/* The agent failed after accepting: the CNI error a runtime retries on (code 11). */
__attribute__((noreturn)) static void agent_lost(const char *socket_path, const char *what) {
  char msg[1024];
  int len = snprintf(msg, sizeof msg,
                     "{\n    \"code\": 11,\n    \"msg\": \"try again later: the resident agent at %s %s\",\n"
                     "    \"details\": \"the call may have been partly done; DEL cleans up as after any failed ADD\"\n}",
                     socket_path, what);
  if (len > 0) write_all(1, msg, (size_t)len < sizeof msg ? (size_t)len : sizeof msg - 1, 0, NO_DEADLINE);
  exit(1);
}

/*
 * Sends stdin to the agent in chunks, then its end ('Z') or the errno that stopped it ('Y'). The
 * agent asks for stdin as soon as it accepts, before the call has decided to read it; when the
 * agent answers first (the call did not read stdin, as VERSION does not), sending stops, so an
 * stdin that never ends (a terminal) cannot hold up the answer. 0, or -1 when the connection failed.
 */
static int send_stdin(int sock) {
  for (;;) {
    struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = sock, .events = POLLIN}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (p[1].revents != 0) return flush_frames(sock, NO_DEADLINE); /* the agent spoke: relay it */
    ssize_t n = read(0, buf, CHUNK);
    if (n > 0) {
      if (queue_frame(sock, 'I', buf, (size_t)n, NO_DEADLINE) < 0) return -1;
      continue;
    }
    if (n == 0) return send_frame(sock, 'Z', NULL, 0, NO_DEADLINE);
    if (errno == EINTR || errno == EAGAIN) continue;
    unsigned char code[4];
    put_u32(code, (uint32_t)errno);
    return send_frame(sock, 'Y', code, sizeof code, NO_DEADLINE);
  }
}

/*
 * Connects the non-blocking `sock` by `deadline`. 0, or -1: nobody listens, or the listener's
 * backlog is full (EAGAIN at once: a frozen agent's queue stays full of the connections of shims
 * that gave up on it, so waiting would be for nothing), or the deadline passed. A unix stream
 * connect completes or fails at once; EINPROGRESS is handled all the same.
 */
static int connect_by(int sock, const struct sockaddr_un *addr, int64_t deadline) {
  if (connect(sock, (const struct sockaddr *)addr, sizeof *addr) == 0) return 0;
  if (errno != EINPROGRESS && errno != EINTR) return -1;
  if (!wait_ready(sock, POLLOUT, deadline)) return -1;
  int err = 0;
  socklen_t len = sizeof err;
  return getsockopt(sock, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0 ? 0 : -1;
}

/*
 * Whether the process listening at the other end may be sent the call: the kernel's word on who
 * called listen(2) (SO_PEERCRED of the connected socket) is root or this shim's own user. The
 * socket's path proves nothing: whoever could write to its directory could have bound it, and
 * the request holds the call's whole environment and the answer would be believed.
 */
static int listener_trusted(int sock) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof cred) return 0;
  return cred.uid == 0 || cred.uid == geteuid();
}

/* Connects and sends the request, all by `deadline`; the socket, or -1 (fall back). */
static int send_request(const char *path, int argc, char **argv, int64_t deadline) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof addr.sun_path) return -1;
  strcpy(addr.sun_path, path);
  int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (sock < 0) return -1;
  if (connect_by(sock, &addr, deadline) < 0 || !listener_trusted(sock)) goto fail;

  mode_t mask = umask(0);
  umask(mask);
  size_t id_len = strlen(CNI_BUILD_ID);
  unsigned char hello[12 + sizeof CNI_BUILD_ID];
  put_u32(hello, PROTOCOL_VERSION);
  put_u32(hello + 4, (uint32_t)getpid());
  put_u32(hello + 8, (uint32_t)mask);
  memcpy(hello + 12, CNI_BUILD_ID, id_len);
  if (queue_frame(sock, 'H', hello, 12 + id_len, deadline) < 0) goto fail;
  for (int i = 0; i < argc; i++)
    if (queue_frame(sock, 'A', argv[i], strlen(argv[i]), deadline) < 0) goto fail;
  for (char **e = environ; *e != NULL; e++)
    if (queue_frame(sock, 'E', *e, strlen(*e), deadline) < 0) goto fail;
  if (send_frame(sock, 'Q', NULL, 0, deadline) < 0) goto fail;
  return sock;
fail:
  close(sock);
  return -1;
}

/*
 * Waits (by `deadline`, renewed by each 'P' up to QUEUED_BUDGET_MS after `started`) for the agent's
 * answer to the request: 1 accepted, 0 anything else (fall back). Accepted, the socket blocks
 * again: the call is the agent's now, and the relay waits for it as long as it runs (the relay's
 * waits handle EAGAIN as well, should the switch fail).
 */
static int accepted(int sock, int64_t started, int64_t deadline) {
  uint32_t len;
  int type;
  while ((type = read_frame(sock, &len, deadline)) == 'P') {
    int64_t renewed = now_ms() + REQUEST_BUDGET_MS;
    int64_t cap = started + QUEUED_BUDGET_MS;
    deadline = renewed < cap ? renewed : cap;
  }
  if (type != 'K') return 0;
  int flags = fcntl(sock, F_GETFL);
  if (flags >= 0) fcntl(sock, F_SETFL, flags & ~O_NONBLOCK);
  return 1;
}

/* Relays the accepted request until the agent's exit status. */
__attribute__((noreturn)) static void relay(int sock, const char *path) {
  /* Stdin that could not be sent: the agent may have answered and closed already (a call that
   * ends without reading it); its answer is still to be read, so only a missing answer is lost. */
  int stdin_cut = 0;
  for (;;) {
    uint32_t len;
    switch (read_frame(sock, &len, NO_DEADLINE)) {
      case 'S':
        if (send_stdin(sock) < 0) stdin_cut = 1;
        break;
      case 'O':
        if (write_all(1, buf, len, 0, NO_DEADLINE) < 0) exit(1);
        break;
      case 'W':
        write_all(2, buf, len, 0, NO_DEADLINE);
        break;
      case 'X':
        if (len != 4) agent_lost(path, "sent a malformed exit status");
        exit((int)(get_u32(buf) & 0xff));
      case -1:
        agent_lost(path, stdin_cut ? "closed the connection while reading stdin" : "closed the connection before the call ended");
      default:
        agent_lost(path, "sent an unknown frame");
    }
  }
}

/* `cni-plugins-shim --namespaces-of PID PROGRAM ARGS...`: exec PROGRAM in PID's namespaces. */
static int namespaces_of(const char *pid, char **argv) {
  static const struct {
    const char *name;
    int type;
  } spaces[] = {{"mnt", CLONE_NEWNS}, {"uts", CLONE_NEWUTS}, {"ipc", CLONE_NEWIPC}, {"cgroup", CLONE_NEWCGROUP}};
  for (size_t i = 0; i < sizeof spaces / sizeof spaces[0]; i++) {
    char path[64];
    if (strspn(pid, "0123456789") != strlen(pid) || strlen(pid) > 10) {
      fprintf(stderr, "%s: --namespaces-of needs a process id, got \"%s\"\n", SHIM_NAME, pid);
      return 2;
    }
    snprintf(path, sizeof path, "/proc/%s/ns/%s", pid, spaces[i].name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, spaces[i].type) < 0) {
      fprintf(stderr, "%s: joining the %s namespace of pid %s: %s (needs its pid namespace and CAP_SYS_ADMIN)\n",
              SHIM_NAME, spaces[i].name, pid, strerror(errno));
      return 1;
    }
    close(fd);
  }
  if (chdir("/") < 0) return 1;
  execve(argv[0], argv, environ);
  fprintf(stderr, "%s: exec %s: %s\n", SHIM_NAME, argv[0], strerror(errno));
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 1 || argv[0] == NULL) return 1;
  if (strcmp(base_name(argv[0]), SHIM_NAME) == 0) {
    if (argc >= 4 && strcmp(argv[1], "--namespaces-of") == 0) return namespaces_of(argv[2], argv + 3);
    fprintf(stderr, "%s: the exec shim of cni-plugins-ts; run it under a plugin name (docs/resident.md)\n"
                    "usage: %s --namespaces-of PID PROGRAM [ARGS...]\n", SHIM_NAME, SHIM_NAME);
    return 2;
  }
  const char *path = getenv("CNI_PLUGINS_SOCKET");
  if (path == NULL || path[0] == '\0') path = DEFAULT_SOCKET;
  int64_t started = now_ms();
  int64_t deadline = started + REQUEST_BUDGET_MS;
  int sock = send_request(path, argc, argv, deadline);
  if (sock >= 0 && accepted(sock, started, deadline)) relay(sock, path);
  if (sock >= 0) close(sock);
  run_standalone(argv);
}
