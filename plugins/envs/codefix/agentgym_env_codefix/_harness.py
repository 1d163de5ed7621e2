"""The child side of the sandbox: lock this process down, then run a solution's tests.

Run as ``python -I -S _harness.py`` with a JSON job on stdin; prints one result line,
``<nonce> <json>``, on stdout. Standard library only, and nothing from this package: the
file runs in a fresh interpreter that may have no access to site-packages.

Order matters: read the job and import every module the code may need while still able
to; then leave the network (a new network namespace), set resource limits, drop to an
unprivileged user when started as root, enter the private directory, and install the audit
hook that refuses sockets, new processes, and writes outside that directory.
"""
import ast
import io
import json
import os
import resource
import signal
import sys

# Modules HumanEval code imports, loaded before the interpreter may lose access to its stdlib.
PRELOAD = ("typing", "math", "random", "copy", "string", "collections", "re", "hashlib", "itertools",
           "functools", "heapq", "bisect", "fractions", "statistics", "operator", "json", "decimal",
           "socket", "subprocess", "ctypes", "encodings.idna")
CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
#: World-writable places that get a private, empty tmpfs in the child's mount namespace.
SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock")
BLOCKED_PREFIXES = ("socket.", "ctypes.", "subprocess.", "os.exec", "os.spawn", "os.posix_spawn", "pty.")
BLOCKED_EVENTS = {"os.fork", "os.forkpty", "os.system", "os.kill", "os.killpg", "resource.setrlimit",
                  "resource.prlimit", "gc.get_objects", "gc.get_referrers", "os.startfile"}
PATH_EVENTS = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.symlink",
               "os.link", "os.truncate", "os.utime", "shutil.rmtree", "shutil.copyfile", "shutil.copytree",
               "shutil.move", "os.chflags", "os.lchflags", "os.setxattr", "os.removexattr", "os.mkfifo", "os.mknod"}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


class SandboxViolation(PermissionError):
    """Raised inside the sandbox when the code does something it may not."""


class TestTimeout(BaseException):
    """One test ran past its time limit (BaseException: `except Exception` cannot swallow it)."""


def leave_network():
    """Enter a new, empty network namespace (only a down loopback). Returns whether it worked."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        flags = CLONE_NEWNET if os.geteuid() == 0 else CLONE_NEWUSER | CLONE_NEWNET
        return libc.unshare(flags) == 0
    except Exception:  # noqa: BLE001 - no namespaces here: the audit hook still blocks sockets
        return False


def private_tmp(job):
    """As root: a new mount namespace where every world-writable temp dir is a fresh tmpfs.

    The sandbox user can then write nowhere the rest of the machine can see. The private
    directory moves to ``/tmp/sandbox`` inside it. Returns whether it worked.
    """
    if os.geteuid() != 0 or not job.get("mount_namespace"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(CLONE_NEWNS) != 0 or libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
            return False
        size = f"size={job['limits']['fsize_mb'] * 4}m,mode=1777".encode()
        for path in SHARED_TMP:
            if os.path.isdir(path) and not os.path.islink(path):
                if libc.mount(b"tmpfs", path.encode(), b"tmpfs", 0, size) != 0:
                    return False
        os.makedirs("/tmp/sandbox", mode=0o700)
        with open("/tmp/sandbox/solution.py", "w") as f:
            f.write(job["code"])
        if job.get("uid") is not None:
            os.chown("/tmp/sandbox", job["uid"], job["gid"])
            os.chown("/tmp/sandbox/solution.py", job["uid"], job["gid"])
        job["sandbox"] = "/tmp/sandbox"
        return True
    except Exception:  # noqa: BLE001 - no mount namespace: the audit hook still guards writes
        return False


def set_limits(job):
    lim = job["limits"]
    mb = 1024 * 1024
    for which, value in ((resource.RLIMIT_AS, lim["memory_mb"] * mb), (resource.RLIMIT_CPU, lim["cpu_s"]),
                         (resource.RLIMIT_FSIZE, lim["fsize_mb"] * mb), (resource.RLIMIT_NOFILE, lim["nofile"]),
                         (resource.RLIMIT_CORE, 0), (resource.RLIMIT_NPROC, lim["nproc"])):
        resource.setrlimit(which, (value, value))


def drop_privileges(job):
    if os.geteuid() != 0 or job.get("uid") is None:
        return os.geteuid()
    os.setgroups([])
    os.setgid(job["gid"])
    os.setuid(job["uid"])
    return os.geteuid()


def make_audit_hook(root, violations):
    root = os.path.realpath(root)

    def inside(path):
        if isinstance(path, int):
            return True  # an already-open descriptor
        try:
            full = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        return full == root or full.startswith(root + os.sep)

    def refuse(what):
        violations.append(what)
        raise SandboxViolation(f"sandbox: {what} is not allowed")

    def hook(event, args):
        if event in BLOCKED_EVENTS or event.startswith(BLOCKED_PREFIXES):
            kind = "network access" if event.startswith("socket.") else "starting processes" \
                if event.startswith(("os.fork", "os.exec", "os.spawn", "os.posix", "subprocess", "os.system", "pty")) \
                else "this operation"
            refuse(f"{kind} ({event})")
        elif event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                (isinstance(flags, int) and flags & WRITE_FLAGS)
            if writing and path is not None and not inside(path):
                refuse(f"writing outside the sandbox ({os.fsdecode(path) if not isinstance(path, int) else path})")
        elif event in PATH_EVENTS:
            for arg in args:
                if isinstance(arg, (str, bytes, os.PathLike)) and not inside(arg):
                    refuse(f"changing files outside the sandbox ({event} {os.fsdecode(arg)})")

    return hook


class Capped(io.TextIOBase):
    """A text stream that keeps only the first *limit* characters (the code's prints)."""

    def __init__(self, limit):
        self.limit, self.parts, self.size = limit, [], 0

    def write(self, text):
        if self.size < self.limit:
            self.parts.append(text[: self.limit - self.size])
        self.size += len(text)
        return len(text)

    def getvalue(self):
        more = self.size - self.limit
        return "".join(self.parts) + (f"\n... ({more} more characters)" if more > 0 else "")


#: Modules whose types a solution may return: anything else (a class defined in the solution,
#: ``unittest.mock.ANY``, ...) could fake equality with the expected value.
PLAIN_MODULES = {"builtins", "collections", "fractions", "decimal", "datetime"}


def check_plain(value, depth=0):
    """Refuse return values of types that could cheat ``==`` (objects whose ``__eq__`` is always true)."""
    kind = type(value)
    if kind.__module__ not in PLAIN_MODULES:
        raise TypeError(f"the function returned a {kind.__module__}.{kind.__qualname__} object; "
                        "return plain values (numbers, strings, lists, tuples, dicts, ...)")
    if depth < 3 and isinstance(value, (list, tuple, set, frozenset)):
        for i, item in enumerate(value):
            if i == 1000:
                break
            check_plain(item, depth + 1)
    elif depth < 3 and isinstance(value, dict):
        for i, (k, v) in enumerate(value.items()):
            if i == 1000:
                break
            check_plain(k, depth + 1)
            check_plain(v, depth + 1)


def guarded(fn):
    def candidate(*args, **kwargs):
        result = fn(*args, **kwargs)
        check_plain(result)
        return result

    return candidate


class BuiltinsGuard:
    """Notices (and undoes) changes the code makes to the ``builtins`` module the tests rely on."""

    def __init__(self, violations):
        import builtins

        self.space, self.saved, self.violations = vars(builtins), dict(vars(builtins)), violations

    def check(self):
        if self.space != self.saved:
            changed = sorted(k for k in set(self.space) | set(self.saved)
                             if self.space.get(k, self) is not self.saved.get(k, self))
            self.space.clear()
            self.space.update(self.saved)
            self.violations.append(f"changing Python builtins ({', '.join(changed[:5])})")
            return True
        return False


def describe(exc):
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


def short_repr(value):
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def split_tests(test_src):
    """The test module minus ``check``, and check's statements: ``[(is_test, stmt), ...]``."""
    tree = ast.parse(test_src)
    top, check = [], None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == "check":
            check = node
        else:
            top.append(node)
    steps = []
    for stmt in check.body if check else []:
        asserts = [n for n in ast.walk(stmt) if isinstance(n, ast.Assert)]
        trivial = isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Constant)
        steps.append((bool(asserts) and not trivial, stmt))
    return ast.Module(body=top, type_ignores=[]), steps


def run_tests(job, violations):
    per_test = job["limits"]["per_test_s"]
    builtins_guard = BuiltinsGuard(violations)
    ns = {"__name__": "solution"}

    def timed(fn):
        signal.setitimer(signal.ITIMER_REAL, per_test)
        try:
            return fn()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    top, steps = split_tests(job["test"])
    tests = []
    n_tests = sum(1 for is_test, _ in steps if is_test)
    try:
        code = compile(job["code"], "solution.py", "exec")
        timed(lambda: exec(code, ns))
        exec(compile(top, "tests.py", "exec"), ns)
        if not callable(ns.get(job["entry_point"])):
            raise NameError(f"solution.py does not define function {job['entry_point']!r}")
        if builtins_guard.check():
            raise PermissionError("solution.py changed Python builtins")
        ns["candidate"] = guarded(ns[job["entry_point"]])
    except (Exception, TestTimeout) as exc:
        error = f"time limit ({per_test} s) while loading solution.py" if isinstance(exc, TestTimeout) else describe(exc)
        return {"error": error, "tests": [{"ok": False, "error": "not run"} for _ in range(n_tests)]}
    for is_test, stmt in steps:
        mod = compile(ast.Module(body=[stmt], type_ignores=[]), "tests.py", "exec")
        if not is_test:
            try:
                timed(lambda mod=mod: exec(mod, ns))
            except (Exception, TestTimeout):
                pass
            continue
        entry = {"ok": False, "source": ast.get_source_segment(job["test"], stmt).splitlines()[0].strip()[:200]}
        try:
            timed(lambda mod=mod: exec(mod, ns))
            entry["ok"] = True
        except TestTimeout:
            entry["error"] = f"time limit ({per_test} s per test) exceeded"
        except MemoryError:
            entry["error"] = f"MemoryError (memory limit {job['limits']['memory_mb']} MB)"
        except AssertionError as exc:
            entry["error"] = describe(exc) if str(exc) else "AssertionError"
            if isinstance(stmt, ast.Assert) and isinstance(stmt.test, ast.Compare) and len(stmt.test.comparators) == 1:
                try:
                    lhs, rhs = (compile(ast.Expression(e), "t", "eval") for e in (stmt.test.left, stmt.test.comparators[0]))
                    left = timed(lambda lhs=lhs: eval(lhs, ns))
                    right = timed(lambda rhs=rhs: eval(rhs, ns))
                    entry["error"] = f"AssertionError: got {short_repr(left)}, expected {short_repr(right)}"
                except (Exception, TestTimeout):
                    pass
        except Exception as exc:  # noqa: BLE001 - any failure of the code is a failed test
            entry["error"] = describe(exc)
        if builtins_guard.check():
            entry.update(ok=False, error="PermissionError: the code changed Python builtins (undone)")
        tests.append(entry)
    return {"error": None, "tests": tests}


def main():
    job = json.loads(sys.stdin.read())
    nonce = job.pop("nonce")
    out = os.fdopen(os.dup(1), "w")
    for name in PRELOAD:
        __import__(name)
    isolation = {"netns": leave_network() if job["network_namespace"] else False, "private_tmp": private_tmp(job)}
    set_limits(job)
    isolation["uid"] = drop_privileges(job)
    isolation["audit"] = bool(job["audit"])
    os.chdir(job["sandbox"])
    violations = []

    def on_alarm(signum, frame):
        raise TestTimeout()

    signal.signal(signal.SIGALRM, on_alarm)
    capture = Capped(job["limits"]["max_output"])
    sys.stdout = sys.stderr = capture
    if job["audit"]:
        sys.addaudithook(make_audit_hook(job["sandbox"], violations))
    try:
        result = run_tests(job, violations)
    except MemoryError:
        result = {"error": f"MemoryError (memory limit {job['limits']['memory_mb']} MB)", "tests": []}
    result.update(violations=list(dict.fromkeys(violations)), output=capture.getvalue(), isolation=isolation)
    out.write(nonce + " " + json.dumps(result) + "\n")
    out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
