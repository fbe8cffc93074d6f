# cibench HumanEval executor (run as `python3 -I -c <this file>`; the Go side embeds it).
#
# It reproduces how upstream judges a completion (openai/human-eval 6d43fb98
# human_eval/execution.py check_correctness, driven by simple-evals humaneval_eval.py
# evaluate_functional_correctness), because three things there change verdicts:
#
# 1. Preloaded modules. Upstream forks the checking child from the simple-evals process,
#    which has already imported numpy (common.py, human_eval.evaluation), pandas
#    (simple_evals.py) and scipy.optimize (drop_eval.py). In the child, `import numpy`
#    after reliability_guard is a sys.modules lookup and works; a fresh import would call
#    the disabled os.putenv and fail with "'NoneType' object is not callable".
#    So this process imports the same modules before forking.
# 2. Stack depth. The completion runs at the bottom of the forking thread's stack:
#    threading bootstrap -> concurrent.futures worker -> check_correctness ->
#    Process.start -> ... -> Popen._launch -> Process._bootstrap -> run -> unsafe_execute
#    -> exec. The same chain is built here (a ThreadPoolExecutor worker forks a
#    multiprocessing.Process with the fork start method), so RecursionError happens at
#    the same depth as upstream on the same Python version.
# 3. The verdict channel. The child's verdict travels over a private pipe, and this
#    process reports to the Go side on a dedicated descriptor, never on stdout/stderr,
#    so whatever the completion writes to fd 1/2 cannot corrupt it.
#
# Protocol: the Go side starts one executor per HumanEval run and keeps it while checks
# arrive (like upstream's single long-lived process, so the preloads are imported once).
# argv[1]: JSON {"preload": [...], "result_fd": 3, "workers": 12, "workdir": DIR}.
# stdin: one JSON request per line {"id", "program", "timeout"}; EOF ends the executor,
# which then removes DIR (its working directory, created by the Go side): the Go process
# may already have exited, so it cannot be relied on to remove it.
# result_fd: a hello line {"hello": {python, executable, preloaded, missing}}, then one
# {"id", "result"} line per request, in completion order.
# Deliberate differences from upstream (see docs/accuracy.md): the verdict uses a pipe
# instead of a multiprocessing.Manager list, and socket creation is disabled in the child.
import sys
import os
import json

_cfg = json.loads(sys.argv[1])
_result_fd = _cfg["result_fd"]
_preloaded, _missing = [], []
for _name in _cfg["preload"]:
    try:
        __import__(_name)
        _preloaded.append(_name)
    except Exception:
        _missing.append(_name)

import builtins
import contextlib
import faulthandler
import io
import multiprocessing
import platform
import signal
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor

# Python 3.14 made forkserver the Linux default; upstream's verdicts come from fork.
multiprocessing.set_start_method("fork", force=True)


class TimeoutException(Exception):
    pass


class WriteOnlyStringIO(io.StringIO):
    def read(self, *args, **kwargs):
        raise IOError

    def readline(self, *args, **kwargs):
        raise IOError

    def readlines(self, *args, **kwargs):
        raise IOError

    def readable(self, *args, **kwargs):
        return False


class redirect_stdin(contextlib._RedirectStream):
    _stream = "stdin"


@contextlib.contextmanager
def swallow_io():
    stream = WriteOnlyStringIO()
    with contextlib.redirect_stdout(stream):
        with contextlib.redirect_stderr(stream):
            with redirect_stdin(stream):
                yield


@contextlib.contextmanager
def time_limit(seconds):
    def handler(signum, frame):
        raise TimeoutException("Timed out!")

    signal.setitimer(signal.ITIMER_REAL, seconds)
    signal.signal(signal.SIGALRM, handler)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


@contextlib.contextmanager
def chdir(root):
    if root == ".":
        yield
        return
    cwd = os.getcwd()
    os.chdir(root)
    try:
        yield
    finally:
        os.chdir(cwd)


@contextlib.contextmanager
def create_tempdir():
    with tempfile.TemporaryDirectory() as dirname:
        with chdir(dirname):
            yield dirname


def _no_network(*args, **kwargs):
    raise OSError("network disabled by the cibench humaneval harness")


def reliability_guard():
    # Same names, same order as upstream's reliability_guard(None).
    faulthandler.disable()
    builtins.exit = None
    builtins.quit = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for name in ("kill", "system", "putenv", "remove", "removedirs", "rmdir", "fchdir",
                 "setuid", "fork", "forkpty", "killpg", "rename", "renames", "truncate",
                 "replace", "unlink", "fchmod", "fchown", "chmod", "chown", "chroot",
                 "fchdir", "lchflags", "lchmod", "lchown", "getcwd", "chdir"):
        setattr(os, name, None)
    import shutil
    shutil.rmtree = None
    shutil.move = None
    shutil.chown = None
    import subprocess
    subprocess.Popen = None
    builtins.help = None
    for name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[name] = None
    # cibench only: no new sockets (the real isolation is a network namespace).
    import socket
    socket.socket = _no_network
    socket.create_connection = _no_network
    socket.getaddrinfo = _no_network


class PipeResult:
    """The child's end of the verdict channel, in place of upstream's Manager().list()."""

    def __init__(self, fd):
        self.fd = fd

    def append(self, verdict):
        data = json.dumps(verdict).encode() + b"\n"
        while data:
            data = data[os.write(self.fd, data):]


def unsafe_execute(program, timeout, result):
    # The Go side's reply descriptor must not be reachable from the completion.
    os.close(_result_fd)
    with create_tempdir():
        import shutil
        rmtree = shutil.rmtree
        rmdir = os.rmdir
        chdir_ = os.chdir
        reliability_guard()
        try:
            exec_globals = {}
            with swallow_io():
                with time_limit(timeout):
                    exec(program, exec_globals)
            result.append("passed")
        except TimeoutException:
            result.append("timed out")
        except BaseException as e:
            result.append(f"failed: {e}")
        shutil.rmtree = rmtree
        os.rmdir = rmdir
        os.chdir = chdir_


def check_correctness(program, timeout):
    r, w = os.pipe()
    p = multiprocessing.Process(target=unsafe_execute, args=(program, timeout, PipeResult(w)))
    p.start()
    os.close(w)
    chunks = []

    def drain():
        # Read while the child runs, so a long verdict cannot fill the pipe and stall it.
        while True:
            b = os.read(r, 65536)
            if not b:
                return
            chunks.append(b)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    p.join(timeout=timeout + 1)
    if p.is_alive():
        p.terminate()
        p.join()
    reader.join(timeout=1)
    line = b"".join(chunks).split(b"\n", 1)[0]
    try:
        return json.loads(line)
    except ValueError:
        return "timed out"


_out = os.fdopen(_result_fd, "w")
_out_lock = threading.Lock()


def _reply(msg):
    with _out_lock:
        _out.write(json.dumps(msg) + "\n")
        _out.flush()


def _done(req_id, future):
    try:
        verdict = future.result()
    except BaseException as e:  # the harness itself failed: report, do not invent a verdict
        _reply({"id": req_id, "error": f"{type(e).__name__}: {e}"})
        return
    _reply({"id": req_id, "result": verdict})


_reply({"hello": {"python": platform.python_version(), "executable": sys.executable,
                  "preloaded": _preloaded, "missing": _missing}})
# Requests are read with os.read, never through sys.stdin: a forked child closes
# sys.stdin, and a buffered reader whose lock the main thread held at fork time would hang.
with ThreadPoolExecutor(max_workers=_cfg["workers"]) as _pool:
    _buf = b""
    while True:
        _chunk = os.read(0, 1 << 16)
        if not _chunk:
            break
        _buf += _chunk
        while b"\n" in _buf:
            _line, _buf = _buf.split(b"\n", 1)
            _r = json.loads(_line)
            _f = _pool.submit(check_correctness, _r["program"], _r["timeout"])
            _f.add_done_callback(lambda f, i=_r["id"]: _done(i, f))
_out.close()
if _cfg.get("workdir"):
    import shutil
    os.chdir("/")
    shutil.rmtree(_cfg["workdir"], ignore_errors=True)
os._exit(0)
