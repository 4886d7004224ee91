#!/usr/bin/env python3
"""Peak and private memory of one process, read at the moment it exits (test/bench, `make bench`).

    memprobe.py STDIN_FILE STDOUT_FILE PROGRAM [ARG...]

Runs PROGRAM (argv[0] = PROGRAM, environment inherited, stdin from STDIN_FILE, stdout to
STDOUT_FILE, stderr discarded) under ptrace with PTRACE_O_TRACEEXIT, so the kernel stops its main thread at exit while
its memory still exists, reads /proc/<pid>/status there, and lets it finish. Prints one JSON line:

    {"status": 0, "hwm_kb": 25104, "anon_kb": 2208, "file_kb": 22896}

hwm_kb   VmHWM: the process's peak resident set (its own pages, shared file pages included);
anon_kb  RssAnon at exit: private anonymous memory (heap, stacks, JIT code);
file_kb  RssFile at exit: file-backed pages (the executable's text and data, shared libraries).
Children the program runs (iptables, nft) are not included. (wait4's ru_maxrss, which GNU time
prints, is not used: here it would include the forked Python image the program was exec'd from.)

Only the main thread is traced (no PTRACE_O_TRACECLONE/FORK), so children and threads run
untraced; signals the main thread receives are passed on unchanged.
"""
import ctypes
import json
import os
import signal
import sys

PTRACE_TRACEME = 0
PTRACE_CONT = 7
PTRACE_SETOPTIONS = 0x4200
PTRACE_O_TRACEEXIT = 0x40
PTRACE_O_EXITKILL = 0x100000
PTRACE_EVENT_EXIT = 6

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def ptrace(req, pid, data=0):
    if libc.ptrace(req, pid, None, ctypes.c_void_p(data)) == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"ptrace({req}): {os.strerror(err)}")


def status_fields(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "RssAnon", "RssFile"):
                out[key] = int(rest.split()[0])
    return out


def main():
    stdin_file, stdout_file, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
    pid = os.fork()
    if pid == 0:
        try:
            fd = os.open(stdin_file, os.O_RDONLY)
            os.dup2(fd, 0)
            out = os.open(stdout_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(out, 1)
            null = os.open("/dev/null", os.O_WRONLY)
            os.dup2(null, 2)
            if libc.ptrace(PTRACE_TRACEME, 0, None, None) == -1:
                os._exit(126)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    # The child stops with SIGTRAP after execve.
    _, st = os.waitpid(pid, 0)
    if not os.WIFSTOPPED(st):
        print(json.dumps({"status": -1, "error": "child did not stop at exec"}))
        return 1
    ptrace(PTRACE_SETOPTIONS, pid, PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL)
    ptrace(PTRACE_CONT, pid, 0)
    fields = {}
    while True:
        _, st = os.waitpid(pid, 0x40000000)  # __WALL
        if os.WIFEXITED(st) or os.WIFSIGNALED(st):
            code = os.WEXITSTATUS(st) if os.WIFEXITED(st) else -os.WTERMSIG(st)
            break
        if not os.WIFSTOPPED(st):
            continue
        sig = os.WSTOPSIG(st)
        if sig == signal.SIGTRAP and (st >> 16) == PTRACE_EVENT_EXIT:
            fields = status_fields(pid)
            ptrace(PTRACE_CONT, pid, 0)
        else:
            ptrace(PTRACE_CONT, pid, 0 if sig == signal.SIGTRAP else sig)
    print(json.dumps({
        "status": code,
        "hwm_kb": fields.get("VmHWM", 0),
        "anon_kb": fields.get("RssAnon", 0),
        "file_kb": fields.get("RssFile", 0),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
