"""JAX's persistent compilation cache, on for weanj's commands and `pytest --weanj`.

A scientist re-runs `weanj check` after every edit of a port; with the cache, a second
run of an unchanged program loads its executables instead of compiling them again. The
cache lives in `<project root>/.weanj-cache/jax-<jax version>-jaxlib-<jaxlib version>/`,
so that two JAX versions never share entries (JAX's keys include them too; separate
folders make it plain and easy to delete). `$WEANJ_COMPILATION_CACHE` moves it (a path)
or turns it off (`0`, `off`, `false`).

`CompileClock` adds up, from JAX's own monitoring events, the seconds spent in XLA
compilation and the programs the cache served, for `weanj check`'s summary line and the
benchmark records (a first call served from the cache is marked as such, so compile
times stay honest). What the cache saved is an estimate: JAX's own
`compile_time_saved_sec` is no measure of it (jax 0.10 stores a compile time of 0 in its
entries, so that event is minus the retrieval time), so the folder keeps a ledger,
`weanj-compile-ledger.json`, of the programs compiled into it and the seconds they took;
saved ≈ programs served × the ledger's seconds per program − the retrieval time.

A cache that cannot be written (a full disk) costs nothing but the keeping: JAX warns
for every program it could not keep, two lines of its own each; weanj says it once, in
one line naming the folder and why (`_one_line_for_failed_writes`).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

VARIABLE = "WEANJ_COMPILATION_CACHE"
_OFF = ("0", "off", "false", "no")
_state: dict = {"dir": None, "done": False, "clock": None}
_lock = threading.Lock()

COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
RETRIEVAL_EVENT = "/jax/compilation_cache/cache_retrieval_time_sec"
HIT_EVENT = "/jax/compilation_cache/cache_hits"
REQUEST_EVENT = "/jax/compilation_cache/compile_requests_use_cache"
LEDGER = "weanj-compile-ledger.json"
FAILED_WRITE = "Error writing persistent compilation cache entry"  # JAX's warning, per program


def cache_dir(root: Path | None = None) -> Path | None:
    """Where the cache goes for this JAX (None: turned off)."""
    setting = os.environ.get(VARIABLE, "").strip()
    if setting.lower() in _OFF:
        return None
    import importlib.metadata as md

    versions = f"jax-{md.version('jax')}-jaxlib-{md.version('jaxlib')}"
    if setting:
        return Path(setting).expanduser() / versions
    if root is None:
        from .._places import places

        return places().cache / versions
    return Path(root) / ".weanj-cache" / versions


def enable(root: Path | None = None) -> Path | None:
    """Turn JAX's persistent compilation cache on for this process, in the project's
    `.weanj-cache/` (or `$WEANJ_COMPILATION_CACHE`), as the commands do. In a notebook,
    `weanj.enable_compilation_cache()` before the first compilation makes a re-run load
    compiled programs instead of compiling them again. A process that moves to another
    project (or whose folder was deleted) follows: the folder is made again, or the cache
    pointed at the new project's. **Returns** the folder, or None where the cache is off or
    not writable."""
    from .._arguments import in_path

    root = in_path(root, "root", "enable_compilation_cache", "None or a folder")
    with _lock:
        folder = cache_dir(root)
        if _state["done"] and folder == _state["dir"]:
            if folder is not None:
                folder.mkdir(parents=True, exist_ok=True)
            return folder
        moved = _state["done"] and _state["dir"] is not None
        _state["done"] = True
        _state["dir"] = None
        if folder is None:
            return None
        try:
            folder.mkdir(parents=True, exist_ok=True)
            probe = folder / f".weanj-write-test-{os.getpid()}"
            probe.unlink(missing_ok=True)  # one left by a killed process of this number
            # a new file, never through a link
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW))
            probe.unlink()
        except OSError as e:  # read-only: run without the cache, said once, not per program
            from .._errors import say

            say(
                f"weanj: note: the compilation cache {folder} is not writable "
                f"({e.strerror or e}); compiling without it (WEANJ_COMPILATION_CACHE moves it)"
            )
            return None
        import jax

        jax.config.update("jax_compilation_cache_dir", str(folder))
        if moved:  # JAX opened the earlier folder once; open the new one instead
            try:
                from jax._src import compilation_cache

                compilation_cache.reset_cache()
            except Exception:  # noqa: BLE001 - a JAX without it keeps the earlier folder
                pass
        # weanj's kernels compile in tens of milliseconds to seconds: cache them all.
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        _state["dir"] = folder
        _one_line_for_failed_writes()
        return folder


def _one_line_for_failed_writes() -> None:
    """JAX's warning for a program it could not keep in the cache, shown by weanj as one
    line, once per folder (`weanj: note: cannot keep compiled programs in FOLDER: no
    space left on the device ...`); every other warning is shown as before. Installed
    once per process, around whatever shows warnings then."""
    if _state.get("hooked"):
        return
    _state["hooked"] = True
    shown = warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        text = str(message)
        if not text.startswith(FAILED_WRITE):
            return shown(message, category, filename, lineno, file, line)
        folder = _state["dir"]
        if folder in _state.setdefault("failed", set()):
            return None
        _state["failed"].add(folder)
        from .._errors import say
        from ._atomic import why_not_written

        why = why_not_written(OSError(text.partition("': ")[2] or text))
        say(
            f"weanj: note: cannot keep compiled programs in {folder}: {why} "
            "(WEANJ_COMPILATION_CACHE moves the cache)"
        )
        return None

    warnings.showwarning = showwarning


@dataclass
class CompileClock:
    """Seconds of XLA compilation (a program loaded from the cache counts its loading),
    cache hits, cacheable compile requests and retrieval seconds, counted from JAX's
    monitoring events since the clock was made (`clock()`)."""

    compiled_s: float = 0.0
    retrieval_s: float = 0.0
    hits: int = 0
    requests: int = 0

    def _on_duration(self, event: str, seconds: float, **_) -> None:
        if event == COMPILE_EVENT:
            self.compiled_s += seconds
        elif event == RETRIEVAL_EVENT:
            self.retrieval_s += seconds

    def _on_event(self, event: str, **_) -> None:
        if event == HIT_EVENT:
            self.hits += 1
        elif event == REQUEST_EVENT:
            self.requests += 1

    def summary(self) -> str:
        """The line `weanj check` ends with; adds this run's compiled programs to the
        folder's ledger (the estimate of what later hits save). Never raises: the
        verdicts are printed already, and an estimate must not change the exit status."""
        try:
            return self._summary()
        except Exception as e:  # noqa: BLE001 - the line is information only
            return f"compilation {self.compiled_s:.1f} s (no cache summary: {type(e).__name__})"

    def _summary(self) -> str:
        where = _state["dir"]
        if where is None:
            return f"compilation {self.compiled_s:.1f} s (compilation cache off)"
        missed = max(self.requests - self.hits, 0)
        if missed:
            _add_to_ledger(where, missed, max(self.compiled_s - self.retrieval_s, 0.0))
        if not self.hits:
            return f"compilation {self.compiled_s:.1f} s, none from the cache ({where})"
        programs, seconds = _ledger(where)
        if not programs:
            saved = "saving an unknown time (no program compiled into it was timed)"
        else:
            estimate = self.hits * seconds / programs - self.retrieval_s
            saved = f"saving about {max(estimate, 0.0):.1f} s"
        return (
            f"compilation {self.compiled_s:.1f} s, {self.hits} program(s) from the compilation "
            f"cache, {saved} ({where})"
        )


def _ledger(folder: Path) -> tuple[int, float]:
    """(programs, seconds) compiled into the cache folder so far; (0, 0) if unknown. A
    ledger that is not what `_add_to_ledger` writes (hand-edited, huge or deeply nested
    JSON, `1e400`) counts as unknown; the next addition rebuilds it, with a note."""
    import json
    import math

    try:
        path = Path(folder) / LEDGER
        if path.stat().st_size > 4096:  # two numbers: anything larger is not a ledger
            raise ValueError("too large")
        data = json.loads(path.read_text(encoding="utf-8"))
        programs, seconds = data["programs"], data["seconds"]
        if isinstance(programs, bool) or not isinstance(programs, int):
            raise ValueError("programs is not an integer")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
            raise ValueError("seconds is not a number")
        if not (programs > 0 and math.isfinite(seconds) and seconds >= 0):
            raise ValueError("out of range")
    except FileNotFoundError:
        return 0, 0.0
    except (OSError, ValueError, KeyError, TypeError, RecursionError, AttributeError):
        _state["bad_ledger"] = True
        return 0, 0.0
    return int(programs), float(seconds)


def _add_to_ledger(folder: Path, programs: int, seconds: float) -> None:
    """Add to the ledger under its lock, atomically; a failure leaves it as it was."""
    import json

    from ._atomic import atomic_path, locked

    path = Path(folder) / LEDGER
    try:
        # weanj's own hidden ledger, of no one else's format: rewritten whatever it holds
        with locked(path), atomic_path(path, force=True) as tmp:
            before, total = _ledger(folder)
            if _state.pop("bad_ledger", False):
                from .._errors import say

                say(f"weanj: note: {path} was not a ledger weanj writes; rebuilt it")
            text = json.dumps({"programs": before + programs, "seconds": total + seconds})
            tmp.write_text(text + "\n", encoding="utf-8")
    except Exception:  # an estimate for later runs, never a reason to fail this one
        pass


@contextlib.contextmanager
def compilations(where: Callable[[], str] = lambda: "") -> Iterator[list[tuple[str, str, float]]]:
    """Every XLA compilation while the block runs, from JAX's own monitoring event
    (`COMPILE_EVENT`; a program the persistent cache serves counts too, its loading
    timed): **yields** the list, filled as they happen, of `(where(), program, seconds)`,
    `where()` asked at each (what was running: a benchmark's or a test's attribution),
    `program` JAX's name of it (`jit(loss_and_gradient)`)."""
    from jax import monitoring

    found: list[tuple[str, str, float]] = []

    def on_duration(event: str, seconds: float, **kwargs) -> None:
        if event == COMPILE_EVENT:
            found.append((where(), str(kwargs.get("fun_name", "")), seconds))

    monitoring.register_event_duration_secs_listener(on_duration)
    try:
        yield found
    finally:
        monitoring.unregister_event_duration_listener(on_duration)


# What a program costs before it runs: tracing the Python function, lowering the jaxpr to
# MLIR, XLA's compilation (or the cache's loading).
PREPARING = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    COMPILE_EVENT,
)


class RunningClock:
    """`time.monotonic()` less the seconds JAX spent tracing, lowering and compiling since
    it was made (nested spans counted once: a `jit` traced inside another's trace), from
    JAX's own time-span events: what `weanj fuzz` counts its `--seconds` on, so that a
    loaded machine's compilations (each new shape or parameter value compiles anew) do not
    eat its draws. Listening while `listening()` holds."""

    def __init__(self) -> None:
        self._spans: list[tuple[float, float]] = []
        self._lock = threading.Lock()

    def _on_span(self, event: str, start: float, end: float, **_) -> None:
        if event in PREPARING:
            with self._lock:
                self._spans.append((start, end))

    @property
    def compiling_s(self) -> float:
        """The seconds spent tracing, lowering and compiling so far (their union)."""
        with self._lock:
            spans = sorted(self._spans)
        total, reach = 0.0, float("-inf")
        for start, end in spans:
            if end > reach:
                total += end - max(start, reach)
                reach = end
        return total

    def __call__(self) -> float:
        return time.monotonic() - self.compiling_s

    @contextlib.contextmanager
    def listening(self) -> Iterator[RunningClock]:
        from jax import monitoring

        monitoring.register_event_time_span_listener(self._on_span)
        try:
            yield self
        finally:
            monitoring.unregister_event_time_span_listener(self._on_span)


def clock() -> CompileClock:
    """The process's clock, made (and its listeners registered) on first use."""
    with _lock:
        if _state["clock"] is None:
            from jax import monitoring

            c = CompileClock()
            monitoring.register_event_duration_secs_listener(c._on_duration)
            monitoring.register_event_listener(c._on_event)
            _state["clock"] = c
        return _state["clock"]
