"""Shared test helpers: running the CLI in a subprocess, writing HDF5 files by hand, and
a plain-numpy Jacobi reference that the store and CLI tests check numbers against."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import struct
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np

PYTHON = sys.executable


def subprocess_env(root: Path | None = None, **extra: str) -> dict[str, str]:
    """The current environment with `$WEANJ_ROOT` set to `root` (when given)."""
    env = dict(os.environ)
    if root is not None:
        env["WEANJ_ROOT"] = str(root)
    env.update(extra)
    return env


def run_python(
    *argv, env: dict[str, str], cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """`python ARGV` in a fresh process (the arguments as strings), its output captured;
    a non-zero exit is the caller's to judge."""
    return subprocess.run(
        [PYTHON, *map(str, argv)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_weanj(
    *args, root: Path, timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    """`python -m weanj ARGS` in a fresh process whose project root is `root`."""
    return run_python("-m", "weanj", *args, env=subprocess_env(root), cwd=cwd, timeout=timeout)


def weanj_main(*args, root: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`weanj ARGS` as `run_weanj` runs it, but in this process: the command line's `main`
    with `$WEANJ_ROOT` set to `root` (and the current folder `cwd`) while it runs; its
    exit code, stdout and stderr as a finished process's. For a test of what a command
    computes, writes or says of the built-in examples (already registered here), not of
    the process (those run `run_weanj`)."""
    import pytest

    from weanj._cli import main

    out, err = io.StringIO(), io.StringIO()
    words = [str(a) for a in args]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WEANJ_ROOT", str(root))
        if cwd is not None:
            mp.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(words)
    return subprocess.CompletedProcess(["weanj", *words], code, out.getvalue(), err.getvalue())


# The prefix the command line puts before every error, and how long its first line may be.
PREFIX = "weanj: error: "
FIRST_LINE = 200 + len(PREFIX)


def assert_one_line_error(stderr: str, *fragments: str) -> str:
    """`stderr` is one error message and no traceback: one line, or, where a long path
    pushes it past the ~200 characters of a first line, that line broken where the
    message allows, the rest indented below it (`weanj._errors.wrapped`). Every fragment
    is in the message (read as one line); **returns** that line."""
    lines = stderr.strip().splitlines()
    assert lines, "expected an error on stderr, got nothing"
    assert "Traceback" not in stderr
    assert len(lines[0]) <= FIRST_LINE, f"first line of {len(lines[0])} characters:\n{stderr}"
    more = lines[1:]
    assert all(line.startswith("  ") for line in more), f"expected one message, got:\n{stderr}"
    message = " ".join([lines[0], *(line.strip() for line in more)])
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    return message


def rejection(example: str, arrays: dict) -> str:
    """The one-line `InputError` the example's `validate` raises on `arrays` (it must
    raise one)."""
    import pytest

    import weanj

    with pytest.raises(weanj.InputError) as e:
        weanj.example(example).validate(arrays)
    message = str(e.value)
    assert "\n" not in message
    return message


def central_differences(loss, x, h: float) -> np.ndarray:
    """∂loss/∂x by central differences, one entry at a time: `(loss(x + h·e) − loss(x −
    h·e)) / 2h` for each unit array e of x's shape, in float64 (2·x.size losses). Its
    error is the loss's own: truncation ~ h²·|∂³L|, rounding ~ eps·L/h."""
    x = np.asarray(x, dtype=np.float64)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[idx] += h
        minus[idx] -= h
        g[idx] = (loss(plus) - loss(minus)) / (2 * h)
    return g


def write_h5(path: Path, attrs: dict | None = None, **datasets) -> Path:
    """An HDF5 file with the given datasets and attributes (a user's own inputs file)."""
    with h5py.File(path, "w") as f:
        for name, data in datasets.items():
            f.create_dataset(name, data=data)
        for key, value in (attrs or {}).items():
            f.attrs[key] = value
    return path


def raw_datasets(path: Path) -> dict[str, np.ndarray]:
    """Every dataset of an HDF5 file, read with h5py directly (not through weanj)."""
    with h5py.File(path, "r") as f:
        return {name: f[name][()] for name in f}


def format1_sha256(*arrays: np.ndarray) -> str:
    """The format-1 inputs digest (weanj before format 2): the little-endian float64 bytes
    of the arrays, in order. Format-1 gradient files record it as `inputs_sha256`."""
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a, dtype="<f8").tobytes())
    return h.hexdigest()


# The earlier name of `format1_sha256`, for test modules not yet migrated to format 2.
sha256_of = format1_sha256


def inputs_sha256(arrays: dict[str, np.ndarray] | list[tuple[str, np.ndarray]]) -> str:
    """The format-2 inputs digest, written out from its definition (docs/DESIGN.md,
    "Inputs files") rather than by calling weanj: "weanj-inputs/2\n", then for each array in
    the example's order its name, NUL, dtype string (little-endian `.str`), NUL, the shape
    joined by ",", NUL, and its C-order little-endian bytes."""
    h = hashlib.sha256(b"weanj-inputs/2\n")
    for name, a in arrays.items() if isinstance(arrays, dict) else arrays:
        a = np.asarray(a)
        little = a.dtype.newbyteorder("<")
        h.update(name.encode("utf-8") + b"\0")
        h.update(little.str.encode("ascii") + b"\0")
        h.update(",".join(str(d) for d in a.shape).encode("ascii") + b"\0")
        h.update(np.ascontiguousarray(a, dtype=little).tobytes())
    return h.hexdigest()


def provenance_key(inputs_digest: str, params: dict, dtype: str) -> str:
    """The provenance key, written out from its definition (docs/DESIGN.md, "The provenance
    key"): the sha256 of the lines `weanj-key/2`, `inputs=...`, `dtype=...` and
    `param:NAME=KIND:VALUE` (sorted by name; a float as the big-endian hex of its IEEE-754
    binary64 bits)."""
    lines = ["weanj-key/2", f"inputs={inputs_digest}", f"dtype={dtype}"]
    for name in sorted(params):
        value = params[name]
        if isinstance(value, (bool, np.bool_)):
            text = "bool:" + ("true" if value else "false")
        elif isinstance(value, (int, np.integer)):
            text = f"int:{int(value)}"
        else:
            text = "float:" + struct.pack(">d", float(value)).hex()
        lines.append(f"param:{name}={text}")
    return hashlib.sha256("".join(line + "\n" for line in lines).encode("utf-8")).hexdigest()


def bench_record(variant: str, n: int, K: int, **fields) -> dict:
    """One record of a Poisson example's benchmark file: `variant` at size n (N = n²) and
    K, float64, in the sweep over n; `fields` (device, timings, memory, ...) add to these
    or replace them."""
    record = {"variant": variant, "dtype": "float64", "N": n * n, "n": n, "K": K, "sweep": "n"}
    return record | fields


def jacobi_reference(theta: np.ndarray, K: int) -> np.ndarray:
    """u^K of the Jacobi iteration from u⁰ = 0, interior only, in plain numpy."""
    n = theta.shape[0]
    h2 = 1.0 / (n + 1) ** 2
    u = np.zeros((n + 2, n + 2))
    for _ in range(K):
        interior = (h2 * theta + u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) / 4
        u = u.copy()
        u[1:-1, 1:-1] = interior
    return u[1:-1, 1:-1]


def jacobi_loss_and_gradient(theta: np.ndarray, uobs: np.ndarray, K: int):
    """Loss and gradient of the Jacobi example without any AD.

    u^K = A θ with A = (h2/4) Σ_{k<K} Sᵏ, and the 5-point averaging S with a zero boundary
    is symmetric, so A is too: ∇L = 2 Aᵀ (Aθ − uobs) = A (2 (u^K − uobs)), i.e. one more
    Jacobi solve with the residual as the source.
    """
    residual = jacobi_reference(theta, K) - uobs
    return float(np.sum(residual**2)), jacobi_reference(2 * residual, K)


# --- an example with every kind of array and parameter --------------------------------

TYPED = "90-typed"


def typed_arrays(seed: int) -> dict[str, np.ndarray]:
    """The arrays of `typed_example`: one of each kind, a 0-d one, an int32 one."""
    rng = np.random.default_rng(seed)
    n, m = 6, 4
    return {
        "x": rng.standard_normal(n),
        "z": rng.standard_normal(n) + 1j * rng.standard_normal(n),
        "idx": rng.integers(0, n, size=m),  # int64, 0-based indices into x
        "mask": rng.random(n) < 0.5,
        "s": np.array(0.75),
        "counts": rng.integers(1, 4, size=m).astype(np.int32),
    }


def typed_example(name: str = TYPED):
    """An `Example` (not registered) with float, complex, int (index), bool, 0-d and
    int32 arrays and int, float and bool parameters; its loss is

        L = c · S · nu · Σ_j counts_j · x[idx_j]²  +  s · Σ_i mask_i · |z_i|²,

    with c = 2 if `upwind` else 1, so that `typed_gradient` gives its gradient exactly."""
    import weanj

    return weanj.Example(
        name=name,
        arrays=(
            weanj.Array("x", shape=("n",)),
            weanj.Array("z", kind="complex", shape=("n",)),
            weanj.Array("idx", kind="int", shape=("m",), index=True),
            weanj.Array("mask", kind="bool", shape=("n",)),
            weanj.Array("s", shape=()),
            weanj.Array("counts", kind="int", shape=("m",), dtype="int32"),
        ),
        wrt=("x", "z"),
        generate=typed_arrays,
        params=(
            weanj.Param("S", 3, maximum=9),
            weanj.Param("nu", 0.25, minimum=0.0),
            weanj.Param("upwind", True),
        ),
        seed=5,
        describe=lambda arrays: {"n": int(arrays["x"].shape[0])},
    )


@contextlib.contextmanager
def registered_typed(*, variant: bool = False, inputs: bool = False):
    """`typed_example` registered (after the built-in examples) while the block runs, with
    its JAX variant `jax-typed` (`typed_loss`) when `variant`, its shared inputs written
    into the project when `inputs`; then withdrawn (no module keeps what it read: each
    command and notebook call reads its inputs afresh)."""
    import weanj
    from weanj import _registry

    weanj.example_names()  # the built-in examples first
    ex = weanj.register_example(typed_example())
    try:
        if variant:
            weanj.jax_variant(ex, "jax-typed", family="typed", loss=typed_loss)
        if inputs:
            weanj.write_inputs(TYPED)
        yield ex
    finally:
        _registry.unregister_example(TYPED)


def typed_loss(x, z, idx, mask, s, counts, S, nu, upwind):
    import jax.numpy as jnp

    c = 2.0 if upwind else 1.0
    return c * S * nu * jnp.sum(counts * x[idx] ** 2) + s * jnp.sum(
        jnp.where(mask, jnp.abs(z) ** 2, 0.0)
    )


def typed_gradient(arrays: dict, S: int, nu: float, upwind: bool) -> dict[str, np.ndarray]:
    """∂L/∂x, and ∂L/∂Re z + i ∂L/∂Im z (weanj's convention for complex arrays), by hand."""
    c = 2.0 if upwind else 1.0
    x, idx, counts = arrays["x"], arrays["idx"], arrays["counts"]
    gx = np.zeros_like(x)
    np.add.at(gx, idx, 2 * c * S * nu * counts * x[idx])
    gz = 2 * arrays["s"] * np.where(arrays["mask"], arrays["z"], 0)
    return {"x": gx, "z": gz}


# --- a graph example: arrays of every kind crossing the Julia bridge -------------------------


def graph_fields() -> dict:
    """The arrays, `wrt` and parameters of the graph examples that cross the Julia bridge
    (test_julia_worker against a stand-in juliacall, test_julia_variants refusing their
    mistakes, crossval/test_julia against Julia): x (float), z (complex), edges (int32
    0-based indices into z, `index=True`), mask (bool) and w (float, not differentiated);
    a float, an int and a bool parameter; wrt z, then x."""
    import weanj

    return {
        "arrays": (
            weanj.Array("x", shape=("n",)),
            weanj.Array("z", "complex", shape=("n",)),
            weanj.Array("edges", "int", shape=("m", 2), index=True, dtype="int32"),
            weanj.Array("mask", "bool", shape=("m",)),
            weanj.Array("w", shape=("n",)),
        ),
        "wrt": ("z", "x"),
        "params": (weanj.Param("scale", 0.5), weanj.Param("steps", 3), weanj.Param("flag", True)),
    }


def graph_gradient(x, z, edges, mask, scale, steps) -> dict[str, np.ndarray]:
    """∂L/∂z (weanj's stored convention, ∂L/∂Re z + i ∂L/∂Im z) and ∂L/∂x of the graph loss
    L = scale · Σ_e mask_e |z[a_e] − z[b_e]|² + steps · Σ x² + flag · Σ w, from the 0-based
    edges (a_e, b_e), in numpy."""
    d = 2 * scale * mask * (z[edges[:, 0]] - z[edges[:, 1]])
    gz = np.zeros_like(z)
    np.add.at(gz, edges[:, 0], d)
    np.add.at(gz, edges[:, 1], -d)
    return {"z": gz, "x": 2 * steps * x}


# --- a small smooth example, registered in this process (added by the tests regrouping) ----

SMOOTH = "94-smooth"


@contextlib.contextmanager
def registered_smooth(name: str = SMOOTH):
    """`name` (x and y of 24 entries, the parameter S = 3) with one JAX variant, `jax-loop`
    of family `smooth` (`toy_kernels.smooth_loop`), registered and its shared inputs
    written into the current project while the block runs; then withdrawn."""
    import weanj
    from weanj import _registry

    from .toy_kernels import smooth_loop

    weanj.example_names()  # the project's own examples first
    ex = weanj.register_example(
        weanj.Example(
            name=name,
            arrays=(weanj.Array("x", shape=("n",)), weanj.Array("y", shape=("n",))),
            wrt="x",
            params=(weanj.Param("S", 3),),
            generate=lambda seed: {
                "x": np.random.default_rng(seed).standard_normal(24),
                "y": np.random.default_rng(seed + 1).standard_normal(24),
            },
        )
    )
    try:
        weanj.jax_variant(ex, "jax-loop", family="smooth", loss=smooth_loop)
        weanj.write_inputs(name)
        yield ex
    finally:
        _registry.unregister_example(name)


def needs_xla_cpu(what: str) -> None:
    """Skip a test that states what XLA's CPU code does (which sums it fuses, in which
    order a scatter adds) where JAX computes on another backend by default (a GPU)."""
    import jax
    import pytest

    backend = jax.default_backend()
    if backend != "cpu":
        pytest.skip(f"{what} is a fact of XLA's CPU code; JAX's default backend here is {backend}")


def main_in_thread(argv: list[str], seconds: float, meanwhile=None, left=None):
    """`weanj ARGV` (the command line's `main`) in a thread of this process, its output
    captured: (its exit code, or None if it had not ended within `seconds`, its stdout, its
    stderr). `meanwhile()` is called every 50 ms while it runs; `left()`, where it had not
    ended, to end what it started (it is then given 60 s more)."""
    import threading
    import time

    from weanj._cli import main

    got: dict = {}
    out, err = io.StringIO(), io.StringIO()

    def target():
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            got["code"] = main(argv)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    deadline = time.monotonic() + seconds
    try:
        while thread.is_alive() and time.monotonic() < deadline:
            if meanwhile is not None:
                meanwhile()
            thread.join(0.05 if meanwhile is not None else max(0.0, deadline - time.monotonic()))
    finally:
        if thread.is_alive() and left is not None:
            left()
            thread.join(60)
    return got.get("code"), out.getvalue(), err.getvalue()
