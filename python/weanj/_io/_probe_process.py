"""The HDF5 probe process: a child Python that parses a file's bytes before weanj does.

It imports only h5py and numpy (`_h5probe.py` is its script and gives the protocol), is
started once per weanj process and again after a file that crashed it, hung it or made it
report an error; `_safeh5` decides which bytes it is asked about. `WEANJ_H5_TIMEOUT_S` sets
the time limit per file (default 10 s; `0` turns the probe off).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from .._errors import UnavailableError
from .._resources import on_exit
from ._file_bytes import max_file_bytes, number_setting

TIMEOUT_VARIABLE = "WEANJ_H5_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 10.0
# Importing h5py in a fresh interpreter takes ~0.25 s on an idle machine; allow for a
# heavily loaded one before calling the probe process broken.
STARTUP_TIMEOUT_S = 120.0

# The probe process's script (its docstring gives the protocol); weanj only imports its
# `size_text`.
_PROBE_SCRIPT = Path(__file__).with_name("_h5probe.py")


@dataclass(frozen=True)
class Outcome:
    """What probing one file's bytes found: `kind` is "ok", "problems", "error", "crash"
    or "hang"; `detail` the problem list, error line, signal name or time limit."""

    kind: str
    detail: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


OK = Outcome("ok")


def timeout_s() -> float:
    """The probe's time limit per file (`$WEANJ_H5_TIMEOUT_S`, default 10 s; 0: no probe)."""
    value = number_setting(TIMEOUT_VARIABLE, DEFAULT_TIMEOUT_S, float)
    raw = os.environ.get(TIMEOUT_VARIABLE, "")
    if value is None:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise UnavailableError(
            f"{TIMEOUT_VARIABLE} must be a number of seconds (0: no probe), got {raw!r}"
        )
    return value


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


class _Prober:
    """The probe process, started on first use and again after it crashed or hung."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self._stderr = None
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        if self._stderr is not None:
            self._stderr.close()
        self._stderr = tempfile.TemporaryFile()
        env = dict(os.environ)
        env.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's import need not start threads
        try:
            proc = subprocess.Popen(
                [sys.executable, str(_PROBE_SCRIPT)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env=env,
            )
        except OSError as e:
            raise UnavailableError(
                f"cannot start a Python process to check HDF5 files ({sys.executable}: "
                f"{e.strerror or e}); set {TIMEOUT_VARIABLE}=0 to read them unprotected"
            ) from None
        line = self._readline(proc, STARTUP_TIMEOUT_S)
        if line != b"ready\n":
            self._stop(proc)
            raise UnavailableError(
                f"the HDF5 probe process ({sys.executable}) did not start: "
                f"{self._stderr_tail() or 'no output'}; set {TIMEOUT_VARIABLE}=0 to read "
                "HDF5 files unprotected"
            )
        return proc

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.seek(0)
        lines = self._stderr.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else ""

    @staticmethod
    def _readline(proc: subprocess.Popen, limit: float) -> bytes | None:
        """One line of the probe's output, or None when none came within `limit` s."""
        got: list[bytes] = []
        reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(limit)
        if reader.is_alive():
            proc.kill()  # the reader then sees end-of-file and ends
            reader.join()
            return None
        return got[0]

    def _stop(self, proc: subprocess.Popen | None = None) -> int | None:
        proc = proc or self._proc
        self._proc = None
        if proc is None:
            return None
        with contextlib.suppress(OSError):
            proc.stdin.close()
        try:
            rc = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
        proc.stdout.close()
        return rc

    def probe(self, data: bytes, lookups: tuple[str, ...], limit: float) -> Outcome:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._stop()
                self._proc = self._start()
            proc = self._proc
            request = {"size": len(data), "lookups": list(lookups), "max_bytes": max_file_bytes()}
            header = json.dumps(request).encode()
            for attempt in (1, 2):
                try:
                    proc.stdin.write(header + b"\n")
                    proc.stdin.write(data)
                    proc.stdin.flush()
                    break
                except OSError:  # it died since the last file: start afresh, once
                    rc = self._stop(proc)
                    if attempt == 2:
                        return Outcome("crash", (f"exit code {rc}",))
                    self._proc = proc = self._start()
            line = self._readline(proc, limit)
            if line is None:
                self._stop(proc)
                return Outcome("hang", (f"{limit:g}",))
            if not line:
                rc = self._stop(proc)
                if rc is not None and rc < 0:
                    return Outcome("crash", (_signal_name(-rc),))
                tail = self._stderr_tail()
                return Outcome("crash", (f"exit code {rc}" + (f": {tail}" if tail else ""),))
            reply = json.loads(line)
            if "error" in reply:
                # libhdf5 noticed damage; start the next file in a fresh process, so that
                # nothing this file left behind in the library can affect it.
                self._stop(proc)
                return Outcome("error", (reply["error"],))
            problems = tuple(reply["problems"])
            return Outcome("problems", problems) if problems else OK

    def close(self) -> None:
        with self._lock:
            self._stop()
            if self._stderr is not None:
                self._stderr.close()
                self._stderr = None


PROBER = _Prober()
on_exit(PROBER.close)
