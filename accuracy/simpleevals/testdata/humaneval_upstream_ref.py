# humaneval_upstream_ref.py: a reference model of how upstream judges HumanEval completions,
# used by TestHumanEvalVerdictsMatchUpstreamModel to cross-check cibench's executor.
#
# Provenance: written for cibench from a reading of openai/human-eval (commit 6d43fb98)
# human_eval/execution.py (check_correctness, unsafe_execute, reliability_guard,
# swallow_io, time_limit, create_tempdir) and openai/simple-evals (commit ee3b0318)
# humaneval_eval.py (evaluate_functional_correctness: ThreadPoolExecutor(max_workers=4),
# timeout 3.0), common.py / simple_evals.py / drop_eval.py (the process has imported
# numpy, pandas and scipy.optimize before any check runs). It keeps upstream's structure
# where it matters for verdicts: a multiprocessing.Manager list for the result, a
# multiprocessing.Process with the platform default start method (fork on Linux before
# Python 3.14) started from a ThreadPoolExecutor worker, p.join(timeout + 1), terminate,
# and "timed out" when the child left no result. It is not the cibench executor: that one
# uses a pipe instead of the Manager and blocks sockets, and the test shows both agree.
#
# stdin: JSON list of check programs; argv[1]: timeout in seconds; argv[2]: output file.
# The output file gets a JSON list of verdicts ("passed", "timed out", "failed: ...") in
# input order (not stdout: completions may write to fd 1 directly).
import contextlib
import faulthandler
import io
import json
import multiprocessing
import os
import signal
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

for _m in ("numpy", "pandas", "scipy.optimize"):
    try:
        __import__(_m)
    except ImportError:
        pass


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
    s = WriteOnlyStringIO()
    with contextlib.redirect_stdout(s), contextlib.redirect_stderr(s), redirect_stdin(s):
        yield


@contextlib.contextmanager
def time_limit(seconds):
    def on_alarm(signum, frame):
        raise TimeoutException("Timed out!")

    signal.setitimer(signal.ITIMER_REAL, seconds)
    signal.signal(signal.SIGALRM, on_alarm)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


@contextlib.contextmanager
def create_tempdir():
    with tempfile.TemporaryDirectory() as d:
        cwd = os.getcwd()
        os.chdir(d)
        try:
            yield d
        finally:
            os.chdir(cwd)


def reliability_guard():
    import builtins
    import shutil
    import subprocess

    faulthandler.disable()
    builtins.exit = None
    builtins.quit = None
    os.environ["OMP_NUM_THREADS"] = "1"
    for n in ("kill system putenv remove removedirs rmdir fchdir setuid fork forkpty killpg "
              "rename renames truncate replace unlink fchmod fchown chmod chown chroot fchdir "
              "lchflags lchmod lchown getcwd chdir").split():
        setattr(os, n, None)
    shutil.rmtree = None
    shutil.move = None
    shutil.chown = None
    subprocess.Popen = None
    builtins.help = None
    for n in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[n] = None


def unsafe_execute(program, timeout, result):
    with create_tempdir():
        import shutil

        saved = (shutil.rmtree, os.rmdir, os.chdir)
        reliability_guard()
        try:
            g = {}
            with swallow_io():
                with time_limit(timeout):
                    exec(program, g)
            result.append("passed")
        except TimeoutException:
            result.append("timed out")
        except BaseException as e:
            result.append(f"failed: {e}")
        shutil.rmtree, os.rmdir, os.chdir = saved


def check_correctness(program, timeout):
    manager = multiprocessing.Manager()
    result = manager.list()
    p = multiprocessing.Process(target=unsafe_execute, args=(program, timeout, result))
    p.start()
    p.join(timeout=timeout + 1)
    if p.is_alive():
        p.terminate()
        p.join()
    if not result:
        result.append("timed out")
    return result[0]


def main():
    programs = json.loads(sys.stdin.read())
    timeout = float(sys.argv[1])
    with ThreadPoolExecutor(max_workers=4) as ex:
        futures = [ex.submit(check_correctness, p, timeout) for p in programs]
        verdicts = [f.result() for f in futures]
    with open(sys.argv[2], "w") as f:
        f.write(json.dumps(verdicts))


if __name__ == "__main__":
    main()
