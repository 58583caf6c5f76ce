"""What passes between weanj and its Julia worker: messages on a pair of pipes.

Both sides use this module: weanj (`_julia_client`) and the worker
(`_julia_worker`, or a stand-in for it: see `serve`). It imports only the standard
library, and numpy only once an array crosses, because the worker must import juliacall
before numpy (numpy loads the system's `libstdc++`, older than the one Julia needs:
PythonCall's FAQ).

A message is

    8 bytes     N, the length of the header (big-endian unsigned)
    N bytes     the header: a JSON object, UTF-8
    ...         the bytes of each array the header's "arrays" list describes
                ({"dtype": numpy's dtype string, "shape": [...]}), in C order, in turn

weanj sends `{"op": "start", ...}` first, then requests, one at a time, and `{"op":
"quit"}` (or closes the pipe) at the end. The requests (`OPS`): `loss_and_grad` (the
loss and the gradient arrays of one evaluation, from one reverse pass), `loss` (the loss
alone: the extra losses of a Taylor test), `grad` (the gradient alone), `timings` (the
forward and gradient times measured inside the worker, `samples` of each after a
warm-up call: `{"forward_ns": [...], "gradient_ns": [...], "clock": ...}`), and beyond
the gradient (docs/outputs.md; `_julia_evaluation` says what crosses): `outputs` (the
loss and the outputs of one call, their shapes for the seeded weights) and `evaluation`
(a check's: the outputs, their pullbacks and pushforwards, the Hessian-vector products).
Every request names the example's outputs (`"outputs": [...]`, empty where it declares
none); `loss_and_grad` then answers them after the gradient arrays. The worker
answers each with `{"reply": <the op, or "hello" to the start>, ...}` or `{"reply":
"failed", "kind": ..., "message": ...}`, preceded by any number of `{"reply": "note",
"text": ...}` (what it is doing, for the progress lines). The kinds of failure:
`unavailable` (cannot run here: no Julia, a package that does not resolve, a kernel
file that does not load), `input` (the kernel refused its arguments), `definition` (the
variant is declared wrongly, e.g. a loss not in its file) and `error` (the kernel
itself failed).
"""

from __future__ import annotations

import json
import os
import signal
import struct
import sys
import traceback
from collections.abc import Callable
from typing import BinaryIO

PROTOCOL = 3
OPS = ("loss_and_grad", "loss", "grad", "timings", "outputs", "evaluation")
# The environment variable naming the worker's end of its lifeline (`watch_lifeline`).
LIFELINE_VARIABLE = "WEANJ_JULIA_LIFELINE"
_LENGTH = struct.Struct(">Q")
# A header is a few hundred bytes; a length beyond this is a stream out of step (a
# stand-in that printed to its stdout, say), not a header.
MAX_HEADER = 1 << 24
FAILURES = ("unavailable", "input", "definition", "error")


class Closed(EOFError):
    """The other side closed the pipe (it exited, or died) before a whole message came."""


class Garbled(ValueError):
    """Bytes that are not a message of this protocol."""


class Refusal(Exception):
    """A failure the worker reports as `{"reply": "failed", "kind": kind, ...}`."""

    def __init__(self, kind: str, message: str):
        assert kind in FAILURES, kind
        super().__init__(message)
        self.kind, self.message = kind, message


def _read_exact(stream: BinaryIO, view: memoryview) -> None:
    while view.nbytes:
        n = stream.readinto(view)
        if not n:
            raise Closed("the pipe closed in the middle of a message")
        view = view[n:]


def _byte_view(a) -> memoryview:
    return memoryview(a.reshape(-1).view("u1"))


def write(stream: BinaryIO, header: dict, arrays=()) -> None:
    """Send one message: `header` (a JSON object) and `arrays` (numpy arrays)."""
    arrays = list(arrays)
    if arrays:  # numpy only once an array crosses (module docstring)
        import numpy as np

        arrays = [np.asarray(a) for a in arrays]
        arrays = [a if a.flags.c_contiguous else a.copy(order="C") for a in arrays]
    header = {**header, "arrays": [{"dtype": a.dtype.str, "shape": list(a.shape)} for a in arrays]}
    text = json.dumps(header).encode("utf-8")  # NaN as Python writes and reads it
    stream.write(_LENGTH.pack(len(text)) + text)
    for a in arrays:
        if a.size:
            stream.write(_byte_view(a))
    stream.flush()


def read(stream: BinaryIO) -> tuple[dict, list]:
    """Receive one message: `(header, arrays)`. `Closed` if the pipe closes first."""
    head = bytearray(_LENGTH.size)
    _read_exact(stream, memoryview(head))
    (length,) = _LENGTH.unpack(head)
    if length > MAX_HEADER:
        raise Garbled(f"a header of {length} bytes: the stream is not this protocol's")
    text = bytearray(length)
    _read_exact(stream, memoryview(text))
    try:
        header = json.loads(text.decode("utf-8"))
        described = [(d["dtype"], tuple(d["shape"])) for d in header.get("arrays", [])]
    except (ValueError, TypeError, KeyError) as e:
        raise Garbled(f"a header that is not this protocol's JSON ({e})") from None
    if not isinstance(header, dict):
        raise Garbled("a header that is not a JSON object")
    arrays = []
    if described:
        import numpy as np

        for dtype, shape in described:
            a = np.empty(shape, dtype=np.dtype(dtype))
            if a.dtype.hasobject:
                raise Garbled("an array of Python objects")
            if a.size:
                _read_exact(stream, _byte_view(a))
            arrays.append(a)
    return header, arrays


# --- the worker's side ----------------------------------------------------------------------


def protocol_streams() -> tuple[BinaryIO, BinaryIO]:
    """The worker's ends of the pipes: its stdin and stdout as they were, returned as
    binary streams; file descriptors 0 and 1 themselves are then pointed elsewhere (0 at
    the null device, 1 at stderr, the log), so that anything else that writes to stdout
    (Julia's `println`, juliapkg's progress, a kernel's output) goes to the log instead of
    breaking the messages."""
    requests = os.fdopen(os.dup(0), "rb")
    replies = os.fdopen(os.dup(1), "wb")
    sys.stdout.flush()
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return requests, replies


def watch_lifeline() -> None:
    """Where weanj passed a lifeline (`$WEANJ_JULIA_LIFELINE`, the read end of a pipe
    whose write end only weanj holds): fork a watchdog that waits for the pipe to close,
    which happens when weanj ends however it ends (SIGTERM, SIGKILL included), and then
    kills this process group (the worker and everything it started).

    Forked before anything else runs here (no thread, no Julia yet), and a process of its
    own rather than a thread: a thread would wait for the GIL while Julia computes. The
    watchdog closes every other descriptor, so that the worker's pipes close when the
    worker dies."""
    text = os.environ.pop(LIFELINE_VARIABLE, "")
    if os.name != "posix" or not text.isdigit():
        return
    fd = int(text)
    if os.fork():
        os.close(fd)
        return
    try:  # the watchdog
        null = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1):
            os.dup2(null, target)
        os.closerange(3, fd)
        os.closerange(fd + 1, 1 << 16)
        while os.read(fd, 4096):
            pass
    finally:
        try:
            os.killpg(os.getpgid(0), signal.SIGKILL)
        finally:
            os._exit(0)


def serve(
    start: Callable[[dict, Callable[[str], None]], dict],
    handle: Callable[[dict, list], tuple[dict, list]],
) -> None:
    """The worker's loop: answer `start` to the first message, then `handle` to each
    request, until weanj says quit or closes the pipe.

    `start(setup, note)` returns the hello's fields (`versions`: what computes, for the
    gradient files' `backend_version`); `handle(request, arrays)` returns the reply's
    header and arrays. Either may raise `Refusal` (a failure of that kind). Anything else
    they raise is written to stderr (the log) and answered as an `error` naming it, so a
    bug in one request does not end the worker. `note(text)` sends a progress line.

    A stand-in for the Julia worker (a test double, `$WEANJ_JULIA_WORKER`) is a Python
    script calling `serve` with functions of its own. Either way the lifeline is watched
    first (`watch_lifeline`).
    """
    watch_lifeline()
    requests, replies = protocol_streams()

    def note(text: str) -> None:
        write(replies, {"reply": "note", "text": text})

    def answer(fn, *args) -> tuple[dict, list]:
        try:
            return fn(*args)
        except Refusal as e:
            return {"reply": "failed", "kind": e.kind, "message": e.message}, []
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            sys.stderr.flush()
            first = (str(e).strip().splitlines() or [""])[0]
            message = f"the Julia worker failed: {type(e).__name__}: {first}"
            return {"reply": "failed", "kind": "error", "message": message}, []

    try:
        setup, _ = read(requests)
    except Closed:
        return
    if setup.get("op") != "start":
        raise Garbled(f"expected the start message, got {setup.get('op')!r}")

    def hello(setup: dict, note: Callable[[str], None]) -> tuple[dict, list]:
        fields = start(setup, note)
        return {"reply": "hello", "protocol": PROTOCOL, **fields}, []

    reply, out = answer(hello, setup, note)
    write(replies, reply, out)
    if reply["reply"] == "failed":
        return
    while True:
        try:
            request, arrays = read(requests)
        except Closed:
            return
        if request.get("op") == "quit":
            return
        reply, out = answer(handle, request, arrays)
        write(replies, reply, out)
