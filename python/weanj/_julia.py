"""The Julia bridge: the only module that imports juliacall.

The Julia variants (`julia-jacobi`, `julia-lex`, `julia-rb`) run the loops of
`julia/WeanJ.jl` with gradients by Enzyme.jl. Registering them costs nothing: Julia is
looked for (an explicit setting, `julia` on PATH, a juliaup install) without running it,
and juliacall is imported only when a Julia variant's `loss` or `grad` is first used.
Where no Julia is found the variants are unavailable with one line saying how to install
Julia or point weanj at it; juliacall is never asked to download one.

Arrays cross with the index convention of DESIGN.md: numpy's `theta[i-1, j-1]` is Julia's
`θ[i, j]` (the first axis is `i` in both); the arrays are copied into Julia `Array`s,
column-major, before Enzyme sees them, and the gradient comes back as a C-order numpy array.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import os
import shutil
from pathlib import Path

import numpy as np

from ._errors import InputError, UnavailableError
from ._registry import Example, Variant

# A weanj-specific setting, checked first: the path of a `julia` executable.
ENV_VAR = "WEANJ_JULIA"

_PACKAGE = Path(__file__).resolve().parent
_INSTALL_HINT = (
    "install Julia >= 1.10 with juliaup (curl -fsSL https://install.julialang.org | sh) "
    "or set WEANJ_JULIA=/path/to/julia"
)


def julia_sources() -> Path | None:
    """The folder holding `WeanJ.jl`: the checkout's `julia/` for an editable install
    (so edits take effect), else the copy a wheel ships as `weanj/julia/`."""
    for folder in (_PACKAGE.parent.parent / "julia", _PACKAGE / "julia"):
        if (folder / "WeanJ.jl").is_file():
            return folder
    return None


def _executable(path: str | Path) -> bool:
    return Path(path).is_file() and os.access(path, os.X_OK)


def _juliaup_candidates() -> list[Path]:
    """Where juliaup puts Julia: its launcher, then the versions it installed."""
    home = Path.home()
    name = "julia.exe" if os.name == "nt" else "julia"
    candidates = [home / ".juliaup" / "bin" / name]
    depot = os.environ.get("JULIAUP_DEPOT_PATH") or str(home / ".julia")
    candidates += sorted((Path(depot) / "juliaup").glob(f"julia-*/bin/{name}"), reverse=True)
    return candidates


def find_julia() -> tuple[Path | None, str | None]:
    """`(executable, None)` when Julia is found here, else `(None, why not)`.

    Looks, in order, at `$WEANJ_JULIA`, juliacall's `$PYTHON_JULIACALL_EXE` (with its
    `$PYTHON_JULIACALL_PROJECT`), juliapkg's `$PYTHON_JULIAPKG_EXE`, `julia` on PATH and
    juliaup's install folders. Runs nothing, so it never hangs.
    """
    for var in (ENV_VAR, "PYTHON_JULIACALL_EXE", "PYTHON_JULIAPKG_EXE"):
        value = os.environ.get(var)
        if not value:
            continue
        found = shutil.which(value) if os.sep not in value else value
        if found is None or not _executable(found):
            return None, f"{var}={value} is not an executable file; {_INSTALL_HINT}"
        if var == "PYTHON_JULIACALL_EXE" and not os.environ.get("PYTHON_JULIACALL_PROJECT"):
            return None, (
                "PYTHON_JULIACALL_EXE is set without PYTHON_JULIACALL_PROJECT (juliacall "
                "needs both); set both, or set WEANJ_JULIA instead"
            )
        return Path(found), None
    on_path = shutil.which("julia")
    if on_path is not None:
        return Path(on_path), None
    for candidate in _juliaup_candidates():
        if _executable(candidate):
            return candidate, None
    return None, f"no Julia found (no `julia` on PATH, no juliaup install); {_INSTALL_HINT}"


def unavailable_reason() -> str | None:
    """Why the Julia variants cannot run here, or None. Cheap: starts no Julia."""
    julia, why = find_julia()
    if julia is None:
        return why
    if importlib.util.find_spec("juliacall") is None:
        return "needs the Python package 'juliacall' (pip install 'weanj[julia]')"
    if julia_sources() is None:
        return f"the Julia kernels julia/WeanJ.jl are missing from this installation ({_PACKAGE})"
    return None


_session: dict = {}  # "Main" and "WeanJ" once Julia runs in this process


def _start_julia() -> tuple:
    """`(Main, WeanJ)`: Julia started through juliacall, once per process, with
    `julia/WeanJ.jl` loaded.

    The first start installs Enzyme into juliacall's environment and precompiles it,
    which takes minutes; later starts take seconds.
    """
    if _session:
        return _session["Main"], _session["WeanJ"]
    julia, why = find_julia()
    if julia is None:
        raise UnavailableError(why)
    # Settings juliacall reads on import; the user's own settings win.
    if not os.environ.get("PYTHON_JULIACALL_EXE"):
        # juliapkg uses the Julia found above (which honoured this very setting, after
        # WEANJ_JULIA) and never looks for one to download.
        os.environ["PYTHON_JULIAPKG_EXE"] = str(julia)
    # Julia's signal handlers are needed once Julia runs threads beside Python's
    # (PythonCall's advice); the price: Ctrl-C during a Julia call does not raise
    # KeyboardInterrupt.
    os.environ.setdefault("PYTHON_JULIACALL_HANDLE_SIGNALS", "yes")
    # The kernels are serial loops: one Julia thread unless the user asks for more.
    if "JULIA_NUM_THREADS" not in os.environ:
        os.environ.setdefault("PYTHON_JULIACALL_THREADS", "1")
    sources = julia_sources() / "WeanJ.jl"
    try:
        from juliacall import Main

        Main.include(str(sources))
    except Exception as e:  # juliacall and Julia report failures as plain Exceptions
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UnavailableError(
            f"could not start Julia {julia} through juliacall and load {sources} ({first})"
        ) from e
    _session.update(Main=Main, WeanJ=Main.WeanJ)
    return Main, Main.WeanJ


def _as_julia(Main, theta, uobs) -> tuple:
    """Copies of the arrays as Julia `Matrix`es with the same indices (numpy's
    `theta[i-1, j-1]` is `θ[i, j]`), and their common dtype. juliacall hands a numpy
    array to Julia as a `PyArray` (numpy's strides, Julia's indices); `Array` copies it
    into a column-major Julia array, which Enzyme can differentiate."""
    theta, uobs = np.asarray(theta), np.asarray(uobs)
    dtype = np.result_type(theta, uobs)
    if dtype not in (np.float32, np.float64):
        raise InputError(f"the Julia variants take float32 or float64 arrays, got {dtype}")
    return Main.Array(theta.astype(dtype)), Main.Array(uobs.astype(dtype)), dtype


def _build(loss_name: str) -> tuple:
    """`(loss, grad)` on numpy arrays: `WeanJ.<loss_name>` and `WeanJ.gradient` of it."""
    Main, WeanJ = _start_julia()
    julia_loss = getattr(WeanJ, loss_name)

    def loss(theta, uobs, K):
        t, o, dtype = _as_julia(Main, theta, uobs)
        return dtype.type(julia_loss(t, o, int(K)))

    def grad(theta, uobs, K):
        t, o, _ = _as_julia(Main, theta, uobs)
        g = WeanJ.gradient(julia_loss, t, o, int(K))
        return g.to_numpy(order="C")  # a copy, C order, same indices as `theta`

    return loss, grad


def backend_version() -> str:
    """The Julia and Enzyme versions once Julia runs in this process; juliacall's always."""
    try:
        juliacall = f"juliacall {importlib.metadata.version('juliacall')}"
    except importlib.metadata.PackageNotFoundError:
        juliacall = "juliacall (not installed)"
    if _session:
        return f"{_session['WeanJ'].backend_version()}, {juliacall}"
    return f"Julia (not started in this process), {juliacall}"


def julia_variant(
    example: Example, name: str, *, family: str, loss: str, description: str = ""
) -> Variant:
    """A Julia variant of `example` whose loss is `WeanJ.<loss>` (see `julia/WeanJ.jl`)."""
    return Variant(
        example=example.name,
        name=name,
        family=family,
        backend="julia",
        build=functools.partial(_build, loss),
        check=unavailable_reason,
        versions=backend_version,
        description=description,
    )
