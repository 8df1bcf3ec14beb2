"""The ``meanfield`` console script: Ctrl-C is deferred from the first instruction, then :func:`meanfield.cli.main`.

Importing the library takes about a second (numpy, scipy, numba, xarray). A
SIGINT or SIGTERM in that second would otherwise end the process with a raw
``KeyboardInterrupt`` traceback; here it is recorded and handed to
:func:`meanfield.interrupts.deferred`, so the command honours it like any
other interrupt (exit code 130, and a results file whose ``status`` is
"interrupted" when a study had been asked for). This module imports nothing
of the library before its handlers are in place, which is why it lives outside
the ``meanfield`` package (importing ``meanfield.cli`` imports the package).
"""

import signal
import sys


def main() -> int:
    early = []

    def record(signum, frame):
        early.append(signum)

    previous = {s: signal.signal(s, record) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        from meanfield import cli, interrupts
    except BaseException:
        for s, h in previous.items():
            signal.signal(s, h)
        raise
    # deferred() replaces `record` and then reads what it saw; on exit it puts `record` back, which
    # only swallows a signal arriving while the process returns its exit code
    try:
        with interrupts.deferred(pending=early):
            code = cli.main()
    except KeyboardInterrupt:  # a signal after main() returned, or a second one
        print("meanfield: interrupted", file=sys.stderr)
        code = 130
    # the work is done and its exit code known: a signal during the interpreter's teardown (which
    # resets Python-level handlers to the default, so SIGINT would kill with status -2) is ignored
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_IGN)
    if code == 130:
        _leave(code)
    return code


def _leave(code: int) -> None:
    """Exit at once after an interrupt, the results written and closed: the exit handlers run (logging's flush,
    multiprocessing's and dask's clean-up, the kernels' idle threads), then ``os._exit`` skips the interpreter's
    finalization — freeing every module of numpy, scipy, numba, xarray, matplotlib: 0.4–0.7 s of the time from
    Ctrl-C to the prompt on two cores, twice that under load (benchmarks/bench_interrupts.py)."""
    import atexit
    import logging
    import os

    try:
        logging.shutdown()
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed or broken pipe: nothing more can be said on it
                pass
        os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
