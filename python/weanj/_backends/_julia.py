"""The Julia bridge: the only module that imports juliacall.

`julia_variant` registers a variant whose loss is a Julia function, either of weanj's
own package (`julia/src/WeanJ.jl`, which includes the kernels `julia/<stem>.jl`) or of a
user's file, and whose gradient is Enzyme.jl's (`WeanJ.enzyme_gradient`: `Duplicated`
for the example's `wrt` arrays, `Const` for every other argument).

Registering a variant runs nothing; listing the variants runs at most `julia --version`
(once per executable and process), never Julia itself. juliacall is imported only when a
Julia variant's `loss` or `grad` is first used. weanj needs Julia 1.10 or 1.11
(`SUPPORTED`); it hands the Julia it chose to juliapkg, so that juliapkg never looks for,
or downloads, another. Every failure is one line saying what to do.

Arrays cross with the index convention of DESIGN.md: numpy's `a[i, j]` is Julia's
`a[i+1, j+1]` (same axis order); they are copied into Julia `Array`s, column-major, after
the example's `validate` accepted them, and the gradients come back as C-order numpy
arrays.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError, UnavailableError
from .._model import Functions, Variant
from .._project import project_root
from .._registry import example_names, example_of, register_variant

# A weanj-specific setting, checked first: the path of a `julia` executable.
ENV_VAR = "WEANJ_JULIA"

# The Julia versions weanj supports, as (major, minor); the same bounds as the `julia`
# entries of python/weanj/juliapkg.json, julia/Project.toml and Project.toml (a test
# checks). 1.12 is left out: juliapkg cannot resolve it with a Python whose OpenSSL is
# older than 3.5, and Enzyme.jl's support for it is recent.
SUPPORTED = ((1, 10), (1, 11))
SUPPORTED_TEXT = "Julia 1.10 or 1.11"

# `julia --version` answers at once; the limit only keeps a broken executable from
# hanging the listing of variants.
VERSION_TIMEOUT_S = 30

_PACKAGE = Path(__file__).resolve().parent.parent
_INSTALL_HINT = (
    "install Julia 1.10 or 1.11 with juliaup (curl -fsSL https://install.julialang.org | sh, "
    "then `juliaup add 1.11`) or set WEANJ_JULIA=/path/to/julia"
)
_FIX_VERSION = "run `juliaup add 1.11` (or set WEANJ_JULIA=/path/to/julia-1.11/bin/julia)"


def julia_sources() -> Path | None:
    """The folder `julia/` holding the package (`src/WeanJ.jl`) and the kernels: the
    checkout's for an editable install (so edits take effect), else the copy a wheel
    ships as `weanj/julia/`."""
    for folder in (_PACKAGE.parent.parent / "julia", _PACKAGE / "julia"):
        if (folder / "src" / "WeanJ.jl").is_file():
            return folder
    return None


# --- finding a supported Julia ---------------------------------------------------------


def _executable(path: str | Path) -> bool:
    return Path(path).is_file() and os.access(path, os.X_OK)


_VERSION_OUTPUT = re.compile(r"julia version (\d+\.\d+\.\d+\S*)")
_VERSION_FOLDER = re.compile(r"julia-(\d+\.\d+\.\d+(?:-[^+]+)?)(?:\+|$)")


def version_key(text: str) -> tuple[int, int, int, int, str] | None:
    """A sortable key of a version as Julia and juliaup write it (`1.11.5`,
    `1.12.0-rc1`): numbers compare as numbers, a pre-release sorts before its release."""
    m = re.match(r"(\d+)\.(\d+)\.(\d+)(?:-(\S+))?", text)
    if m is None:
        return None
    major, minor, patch, pre = m.groups()
    return int(major), int(minor), int(patch), 0 if pre else 1, pre or ""


def _version_text(key: tuple) -> str:
    return ".".join(str(k) for k in key[:3]) + (f"-{key[4]}" if key[4] else "")


def supported(key: tuple) -> bool:
    return tuple(key[:2]) in SUPPORTED


@functools.lru_cache(maxsize=64)
def _probe_version(path: str, mtime_ns: int, size: int) -> tuple[tuple | None, str | None]:
    """`(version key, None)` from `path --version`, or `(None, what went wrong)`."""
    try:
        done = subprocess.run(
            [path, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return None, f"`{path} --version` did not answer within {VERSION_TIMEOUT_S} s"
    except OSError as e:
        return None, f"cannot run {path} ({e.strerror or e})"
    m = _VERSION_OUTPUT.search(done.stdout)
    if done.returncode != 0 or m is None:
        return None, (
            f"{path} is not a working Julia (`--version` exited with status {done.returncode})"
        )
    return version_key(m.group(1)), None


def julia_version(path: str | Path) -> tuple[tuple | None, str | None]:
    """The version of the Julia at `path` (`julia --version`, cached per file)."""
    st = os.stat(path)
    return _probe_version(str(path), st.st_mtime_ns, st.st_size)


def _juliaup_versions() -> list[Path]:
    """The supported Julia executables juliaup installed (`julia-1.11.5+0.x64.linux.gnu`),
    newest first by version number, not by name (1.9.4 is older than 1.11.5, and 1.10.9
    than 1.10.10)."""
    name = "julia.exe" if os.name == "nt" else "julia"
    depot = Path(os.environ.get("JULIAUP_DEPOT_PATH") or Path.home() / ".julia")
    found = []
    for folder in (depot / "juliaup").glob("julia-*"):
        m = _VERSION_FOLDER.match(folder.name)
        key = version_key(m.group(1)) if m else None
        if key is not None and supported(key):
            found.append((key, folder / "bin" / name))
    # Releases first (newest first), then pre-releases: an installed 1.11.0-rc1 is used
    # only where no released 1.10 or 1.11 is.
    found.sort(key=lambda item: (item[0][3], item[0]), reverse=True)
    return [path for _, path in found]


@dataclass(frozen=True)
class JuliaFound:
    """The outcome of looking for Julia: the executable and its version, or why not."""

    path: Path | None
    version: str | None = None
    why: str | None = None


def locate_julia() -> JuliaFound:
    """The Julia weanj uses, or why there is none.

    An explicit setting is used as it is or refused: `$WEANJ_JULIA`, juliacall's
    `$PYTHON_JULIACALL_EXE` (with its `$PYTHON_JULIACALL_PROJECT`), juliapkg's
    `$PYTHON_JULIAPKG_EXE`, in this order. Otherwise the first supported one of `julia` on
    PATH, juliaup's launcher and the versions juliaup installed (newest first): a
    launcher whose default is 1.12 is passed over for an installed 1.11. Runs only
    `julia --version`.
    """
    for var in (ENV_VAR, "PYTHON_JULIACALL_EXE", "PYTHON_JULIAPKG_EXE"):
        value = os.environ.get(var)
        if not value:
            continue
        path = shutil.which(value) if os.sep not in value else value
        if path is None or not _executable(path):
            return JuliaFound(None, why=f"{var}={value} is not an executable file; {_INSTALL_HINT}")
        if var == "PYTHON_JULIACALL_EXE" and not os.environ.get("PYTHON_JULIACALL_PROJECT"):
            return JuliaFound(
                None,
                why="PYTHON_JULIACALL_EXE is set without PYTHON_JULIACALL_PROJECT (juliacall "
                "needs both); set both, or set WEANJ_JULIA instead",
            )
        key, problem = julia_version(path)
        if problem is not None:
            return JuliaFound(None, why=f"{var}={value}: {problem}; {_INSTALL_HINT}")
        if not supported(key):
            return JuliaFound(
                None,
                why=f"{var}={value} is Julia {_version_text(key)}, but weanj's Julia variants "
                f"need {SUPPORTED_TEXT}: run `juliaup add 1.11` and set {var} to that "
                "Julia, or unset it",
            )
        return JuliaFound(Path(path), _version_text(key))

    home = Path.home()
    launcher = home / ".juliaup" / "bin" / ("julia.exe" if os.name == "nt" else "julia")
    candidates = [shutil.which("julia"), launcher, *_juliaup_versions()]
    seen, passed_over = set(), []
    for candidate in candidates:
        if candidate is None or not _executable(candidate):
            continue
        real = Path(candidate).resolve()
        if real in seen:
            continue
        seen.add(real)
        key, problem = julia_version(candidate)
        if problem is not None:
            passed_over.append(problem)
        elif not supported(key):
            passed_over.append(f"Julia {_version_text(key)} at {candidate}")
        else:
            return JuliaFound(Path(candidate), _version_text(key))
    if not passed_over:
        return JuliaFound(
            None, why=f"no Julia found (no `julia` on PATH, no juliaup install); {_INSTALL_HINT}"
        )
    return JuliaFound(
        None,
        why=f"no usable Julia: {'; '.join(passed_over)}; weanj's Julia variants need "
        f"{SUPPORTED_TEXT}: {_FIX_VERSION}",
    )


def find_julia() -> tuple[Path | None, str | None]:
    """`(executable, None)` when a supported Julia is found here, else `(None, why not)`."""
    found = locate_julia()
    return found.path, found.why


def unavailable_reason() -> str | None:
    """Why the Julia variants cannot run here, or None. Runs at most `julia --version`."""
    if "failed" in _session:
        return _session["failed"]
    julia, why = find_julia()
    if julia is None:
        return why
    if "juliacall" not in sys.modules and importlib.util.find_spec("juliacall") is None:
        return "needs the Python package 'juliacall' (pip install 'weanj[julia]')"
    if julia_sources() is None:
        return (
            f"the Julia package julia/src/WeanJ.jl is missing from this installation ({_PACKAGE})"
        )
    return None


# --- starting Julia ----------------------------------------------------------------------

_session: dict = {}  # "Main", "WeanJ", "modules" once Julia runs; "failed" if it did not


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def _threads_requested() -> bool:
    """Whether Julia will start with more than one thread (juliacall's own default: 1,
    or `$JULIA_NUM_THREADS`)."""
    value = os.environ.get("PYTHON_JULIACALL_THREADS") or os.environ.get("JULIA_NUM_THREADS")
    return value is not None and value.strip() != "1"


def _point_juliapkg_at(julia: Path) -> None:
    """Make juliapkg use `julia` and nothing else.

    juliapkg reads `$PYTHON_JULIAPKG_EXE` once, when it is imported; if something
    imported it before, setting the variable is not enough and its recorded override is
    changed too (forcing a new resolve with this Julia). A juliapkg whose state cannot be
    changed this way is refused rather than left free to download a Julia.
    """
    os.environ["PYTHON_JULIAPKG_EXE"] = str(julia)
    if "juliapkg" not in sys.modules:
        return
    try:
        state = importlib.import_module("juliapkg.state").STATE
    except Exception:
        state = None
    if not isinstance(state, dict) or "override_executable" not in state:
        raise UnavailableError(
            "juliapkg was imported before weanj started Julia, and this juliapkg's choice "
            f"of Julia cannot be changed from here; set PYTHON_JULIAPKG_EXE={julia} before "
            "Python starts"
        )
    if state["override_executable"] != str(julia):
        state["override_executable"] = str(julia)
        state["resolved"] = False


def _configure_juliacall(julia: Path) -> None:
    """The settings juliacall reads on import; the user's own settings win."""
    if not os.environ.get("PYTHON_JULIACALL_EXE"):
        # juliapkg uses the Julia found here (which honoured this very setting, after
        # WEANJ_JULIA) and never looks for one to download.
        _point_juliapkg_at(julia)
    # The kernels are serial loops: one Julia thread unless the user asks for more.
    if "JULIA_NUM_THREADS" not in os.environ:
        os.environ.setdefault("PYTHON_JULIACALL_THREADS", "1")
    # With more than one Julia thread, Julia must handle signals (its GC stops threads
    # with deliberate segfaults): PythonCall's advice. This installs Julia's handlers for
    # the whole process, so Ctrl-C no longer raises KeyboardInterrupt anywhere; with one
    # thread juliacall's default (Julia leaves signals to Python) is kept.
    if _threads_requested():
        os.environ.setdefault("PYTHON_JULIACALL_HANDLE_SIGNALS", "yes")


def _glibcxx_hint(message: str, julia: Path) -> str:
    """What to do when an older libstdc++ was loaded into Python before Julia's."""
    if "GLIBCXX" not in message and "CXXABI" not in message:
        return ""
    # Julia's binary distributions (juliaup's included) ship theirs in lib/julia.
    bundled = julia.resolve().parent.parent / "lib" / "julia" / "libstdc++.so.6"
    library = bundled if bundled.is_file() else "<Julia's folder>/lib/julia/libstdc++.so.6"
    return (
        f"; Python loaded an older libstdc++ than Julia needs: start Python with "
        f"LD_PRELOAD={library} (README: Running the Julia side)"
    )


def _enzyme_hint() -> str:
    project = os.environ.get("PYTHON_JULIACALL_PROJECT")
    if project:
        return (
            f"PYTHON_JULIACALL_PROJECT={project} is used as it is and nothing installs "
            f"Enzyme there: run julia --project={project} -e 'using Pkg; Pkg.add(\"Enzyme\")', "
            "or unset PYTHON_JULIACALL_EXE and PYTHON_JULIACALL_PROJECT"
        )
    return (
        "juliapkg installs it from python/weanj/juliapkg.json; reinstall with "
        "python -c 'import juliapkg; juliapkg.resolve(force=True)'"
    )


def _start_julia() -> tuple[Any, Any]:
    """`(Main, WeanJ)`: Julia started through juliacall, once per process, with Enzyme and
    the package `julia/src/WeanJ.jl` loaded.

    The first start installs Enzyme into juliacall's environment and precompiles it,
    which takes minutes; later starts take seconds. A failure is remembered: the Julia
    variants are then unavailable for the rest of the process, saying why.
    """
    if "WeanJ" in _session:
        return _session["Main"], _session["WeanJ"]
    if "failed" in _session:
        raise UnavailableError(_session["failed"])
    try:
        _session["Main"], _session["WeanJ"] = _load_weanj()
    except UnavailableError as e:
        # Once juliacall was asked to start Julia, trying again in this process could
        # only fail the same way, or worse; before that (no Julia found, say), the user
        # may still fix the settings.
        if _session.get("attempted"):
            _session["failed"] = str(e)
        raise
    _session["modules"] = {}
    return _session["Main"], _session["WeanJ"]


def _load_weanj() -> tuple[Any, Any]:
    found = locate_julia()
    if found.path is None:
        raise UnavailableError(found.why)
    sources = julia_sources()
    if sources is None:
        raise UnavailableError(unavailable_reason() or "julia/src/WeanJ.jl is missing")
    if "juliacall" not in sys.modules:
        _configure_juliacall(found.path)
    _session["attempted"] = True
    try:
        from juliacall import Main
    except Exception as e:  # juliacall and juliapkg report failures as plain Exceptions
        raise UnavailableError(
            f"could not start Julia {found.version} ({found.path}) through juliacall "
            f"({_first_line(e)}){_glibcxx_hint(str(e), found.path)}"
        ) from e
    try:
        running = str(Main.seval("string(VERSION)"))
    except Exception as e:
        raise UnavailableError(f"Julia started but does not answer ({_first_line(e)})") from e
    key = version_key(running)
    if key is None or not supported(key):
        raise UnavailableError(
            f"juliacall runs Julia {running} (started before weanj chose one), but weanj's "
            f"Julia variants need {SUPPORTED_TEXT}: {_FIX_VERSION}, and let weanj start Julia"
        )
    try:
        Main.seval("import Enzyme")
    except Exception as e:
        raise UnavailableError(
            f"Julia {running} started but could not load Enzyme: {_first_line(e)}; {_enzyme_hint()}"
        ) from e
    package = sources / "src" / "WeanJ.jl"
    try:
        Main.include(str(package))
    except Exception as e:
        raise UnavailableError(
            f"Julia {running} started but could not load {package} ({_first_line(e)})"
        ) from e
    return Main, Main.WeanJ


def _user_module(path: Path) -> Any:
    """The module of a user's Julia file, included once per process."""
    _, WeanJ = _start_julia()
    modules = _session["modules"]
    if path not in modules:
        try:
            modules[path] = WeanJ.include_kernels(str(path))
        except Exception as e:
            raise InputError(f"the Julia file {path} does not load: {_first_line(e)}") from e
    return modules[path]


# --- variants --------------------------------------------------------------------------


@dataclass(frozen=True)
class JuliaKernel:
    """What a Julia variant calls: the loss function `loss` of WeanJ (`file` None) or of
    a user's file, with the example's arrays (call order), `wrt` arrays and parameters."""

    example: str
    variant: str
    loss: str
    file: Path | None
    arrays: tuple[str, ...]
    wrt: tuple[str, ...]
    params: tuple[str, ...]

    @property
    def wrt_flags(self) -> tuple[bool, ...]:
        """`WeanJ.enzyme_gradient`'s flags: one per argument, true for the `wrt` arrays."""
        return tuple(a in self.wrt for a in self.arrays) + (False,) * len(self.params)


_KERNELS: dict[tuple[str, str], JuliaKernel] = {}


def julia_kernels() -> dict[tuple[str, str], JuliaKernel]:
    """`{(example, variant): JuliaKernel}` for every registered Julia variant (the
    project's example modules are imported first)."""
    example_names()
    return dict(_KERNELS)


def _arguments(example: Any, kernel: JuliaKernel, args: tuple) -> tuple[dict, list, Any]:
    """The checked numpy arrays (by name), the parameters, and the dtype under test.

    Everything is checked before anything crosses into Julia, by the example's own
    checks (`Example.check_call`: number, kinds, dtypes, shapes, parameter ranges; then
    its `validate`). Index arrays (`weanj.Array(..., index=True)`) cross 1-based.
    """
    dtype = example.check_call(kernel.variant, args)
    n_arrays = len(kernel.arrays)
    arrays = {
        name: np.ascontiguousarray(np.asarray(a))
        for name, a in zip(kernel.arrays, args[:n_arrays], strict=True)
    }
    example.validate(arrays)
    for spec in example.specs:
        if spec.index:
            arrays[spec.name] = arrays[spec.name] + 1  # Julia's indices start at 1
    return arrays, list(args[n_arrays:]), np.dtype(dtype)


def _build(example: Any, kernel: JuliaKernel) -> tuple[Callable, Callable]:
    """`(loss, grad)` on numpy arrays, calling Julia."""
    Main, WeanJ = _start_julia()
    module = WeanJ if kernel.file is None else _user_module(kernel.file)
    try:
        julia_loss = WeanJ.kernel_function(module, kernel.loss)
    except Exception as e:
        where = "WeanJ (julia/src/WeanJ.jl)" if kernel.file is None else str(kernel.file)
        raise InputError(
            f"{kernel.variant}: no Julia function {kernel.loss} in {where} ({_first_line(e)})"
        ) from e
    flags = kernel.wrt_flags
    # enzyme_gradient returns the gradients in argument order; grad gives them in `wrt`
    # order.
    flagged = [a for a in kernel.arrays if a in kernel.wrt]

    def julia_arguments(args):
        arrays, params, dtype = _arguments(example, kernel, args)
        # `Array` copies juliacall's view of each numpy array (numpy's strides, Julia's
        # 1-based indices on the same axes) into a column-major Julia array, which Enzyme
        # can differentiate.
        return [Main.Array(arrays[a]) for a in kernel.arrays] + params, dtype

    def loss(*args):
        julia_args, dtype = julia_arguments(args)
        return dtype.type(julia_loss(*julia_args))

    def grad(*args):
        julia_args, _ = julia_arguments(args)
        shadows = WeanJ.enzyme_gradient(julia_loss, flags, *julia_args)
        # Copies, in C order, with the same indices as the inputs.
        by_name = {a: g.to_numpy(order="C") for a, g in zip(flagged, shadows, strict=True)}
        if len(kernel.wrt) == 1:
            return by_name[kernel.wrt[0]]
        return {a: by_name[a] for a in kernel.wrt}

    return Functions(loss, grad)


def backend_version() -> str:
    """The Julia and Enzyme versions once Julia runs in this process; juliacall's always."""
    try:
        juliacall = f"juliacall {importlib.metadata.version('juliacall')}"
    except importlib.metadata.PackageNotFoundError:
        juliacall = "juliacall (not installed)"
    if "WeanJ" in _session:
        return f"{_session['WeanJ'].backend_version()}, {juliacall}"
    return f"Julia (not started in this process), {juliacall}"


def _resolve_file(file: str | os.PathLike, variant: str, example: str) -> Path:
    path = Path(file).expanduser()
    if not path.is_absolute():
        path = project_root() / path
    if not path.is_file():
        raise InputError(
            f"julia_variant {variant!r} of {example}: the Julia file {path} does not exist"
        )
    return path.resolve()


def julia_variant(
    example: Any,
    name: str,
    *,
    family: str,
    loss: str,
    file: str | os.PathLike | None = None,
    description: str = "",
    dtypes: tuple[str, ...] = ("float64", "float32"),
) -> Variant:
    """Register a variant of `example` whose loss is a Julia function and whose gradient
    is Enzyme.jl's.

        weanj.julia_variant(ex, "julia-smooth", family="smooth",
                            file="julia/smooth.jl", loss="smooth_loss")

    **Arguments:**

    - `example`: the registered `weanj.Example`.
    - `name`, `family`: the variant's name (`julia-<algorithm>`) and family.
    - `loss`: the name of the Julia function, which takes the example's arrays then its
      parameters, in the example's order, and returns the scalar loss. A dotted name
      (`"Smooth.smooth_loss"`) looks into a module the file defines.
    - `file`: None for weanj's own kernels (`julia/src/WeanJ.jl`); else a Julia file,
      relative to the project root (or absolute), included into a module of its own.
      It must exist now.
    - `description`: one line for reports.

    The arrays reach Julia as `Array`s with numpy's indices plus one on the same axes;
    `grad` returns a C-order numpy array, or a dict `{name: array}` in `wrt` order when
    the gradient is taken with respect to several arrays.

    **Returns:** the registered `Variant`.
    """
    example = example_of(example)
    path = None if file is None else _resolve_file(file, name, example.name)
    kernel = JuliaKernel(
        example=example.name,
        variant=name,
        loss=loss,
        file=path,
        arrays=tuple(example.arrays),
        wrt=example.wrt_names,
        params=example.param_names,
    )

    def check() -> str | None:
        if path is not None and not path.is_file():
            return f"the Julia file {path} does not exist"
        return unavailable_reason()

    variant = register_variant(
        Variant(
            example=example,
            name=name,
            family=family,
            backend="julia",
            build=functools.partial(_build, example, kernel),
            check=check,
            versions=backend_version,
            description=description or f"{file or 'WeanJ'}: {loss}; gradient by Enzyme.jl",
            dtypes=dtypes,
        )
    )
    _KERNELS[(example.name, name)] = kernel
    return variant
