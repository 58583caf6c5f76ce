"""The Julia bridge: starting Julia (the only module that imports juliacall), the table
of Julia kernels and `julia_variant`, whose loss is a Julia function of weanj's package
(`julia/src/WeanJ.jl`) or of a user's file and whose gradient is Enzyme.jl's
(`WeanJ.enzyme_gradient`: `Duplicated` for the `wrt` arrays, `Const` for the rest).

Registering runs nothing; listing runs at most `julia --version` (`_julia_find`).
juliacall is imported when a Julia variant is first used, with the Julia weanj chose
handed to juliapkg, which then never looks for or downloads another.

What crosses (docs/DESIGN.md, "The Julia side"): numpy's `a[i, j]` is Julia's
`a[i+1, j+1]`; each array becomes a Julia `Array` of its own element type (`Float64`,
`Float32`, `ComplexF64`, `ComplexF32`, `Int64`, `Int32`, ..., `Bool`), index arrays plus
one; parameters `Int`, `Float64` or `Bool`. Gradients come back as C-order numpy arrays,
complex ones as Enzyme gives them, `∂L/∂Re z + i·∂L/∂Im z` (the stored convention).
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import DefinitionError, InputError, UnavailableError
from .._model import Functions, Variant
from .._project import project_root
from .._registry import example_names, example_of, register_variant
from ._julia_find import (
    FIX_VERSION,
    SUPPORTED_TEXT,
    configure_juliacall,
    find_julia,
    locate_julia,
    supported,
    version_key,
    why_unsupported,
)

_PACKAGE = Path(__file__).resolve().parent.parent

# `function=` of julia_variant (julia/README.md, "Closures and callables"). None passes the
# loss bare: constant, and Enzyme refuses one that writes to what it captured.
FUNCTION_ACTIVITY = {None: "bare", "const": "const", "duplicated": "duplicated"}


def julia_sources() -> Path | None:
    """The folder `julia/` holding the package (`src/WeanJ.jl`) and the kernels: the
    checkout's for an editable install (so edits take effect), else the copy a wheel
    ships as `weanj/julia/`."""
    for folder in (_PACKAGE.parent.parent / "julia", _PACKAGE / "julia"):
        if (folder / "src" / "WeanJ.jl").is_file():
            return folder
    return None


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


def _glibcxx_hint(message: str, julia: Path) -> str:
    """What to do when an older libstdc++ was loaded into Python before Julia's."""
    if "GLIBCXX" not in message and "CXXABI" not in message:
        return ""
    # Julia's binary distributions (juliaup's included) ship theirs in lib/julia.
    bundled = julia.resolve().parent.parent / "lib" / "julia" / "libstdc++.so.6"
    library = bundled if bundled.is_file() else "<Julia's folder>/lib/julia/libstdc++.so.6"
    return (
        f"; Python loaded an older libstdc++ than Julia needs: start Python with "
        f"LD_PRELOAD={library} (docs: The Julia side)"
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
        configure_juliacall(found.path)
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
        what = why_unsupported(key) if key is not None else "not a version weanj knows"
        raise UnavailableError(
            f"juliacall runs Julia {running} (started before weanj chose one; {what}), but "
            f"weanj's Julia variants need {SUPPORTED_TEXT}: {FIX_VERSION}, and let weanj "
            "start Julia"
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
    """What a Julia variant calls: `loss` of WeanJ (`file` None) or of a user's file, the
    example's arrays, `wrt` arrays and parameters, and Enzyme's options for it."""

    example: str
    variant: str
    loss: str
    file: Path | None
    arrays: tuple[str, ...]
    wrt: tuple[str, ...]
    params: tuple[str, ...]
    activity: str = "bare"
    runtime_activity: bool = False

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


def _crossing(a: Any) -> np.ndarray:
    """`a` in C order and native byte order (PythonCall does not byte-swap), 0-d kept 0-d
    (`np.ascontiguousarray` would make it 1-d)."""
    a = np.asarray(a)
    if not a.dtype.isnative:
        a = a.astype(a.dtype.newbyteorder("="))
    return a if a.flags.c_contiguous else np.array(a, order="C")


def _one_based(name: str, a: np.ndarray, variant: str) -> np.ndarray:
    """An index array plus one, in its own dtype (an `InputError` if that wraps)."""
    if a.size and a.max() == np.iinfo(a.dtype).max:
        raise InputError(
            f"{variant}: {name} holds {a.max()}, the largest {a.dtype}: plus one (Julia's "
            "1-based index) would wrap around"
        )
    return a + a.dtype.type(1)


def _arguments(example: Any, kernel: JuliaKernel, args: tuple) -> tuple[dict, list, Any]:
    """The arrays (by name), the parameters and the dtype under test, checked before
    anything crosses (`Example.check_call`, then `validate` on the 0-based values); index
    arrays plus one; parameters as Python int/float/bool (Julia's Int/Float64/Bool)."""
    dtype = example.check_call(kernel.variant, args)
    n_arrays = len(kernel.arrays)
    arrays = {name: _crossing(a) for name, a in zip(kernel.arrays, args[:n_arrays], strict=True)}
    example.validate(arrays)
    for spec in example.specs:
        if spec.index:
            arrays[spec.name] = _one_based(spec.name, arrays[spec.name], kernel.variant)
    params = [p.check(v) for p, v in zip(example.params, args[n_arrays:], strict=True)]
    return arrays, params, np.dtype(dtype)


def _julia_failure(kernel: JuliaKernel, e: Exception) -> Exception:
    """One line for a kernel's own check (`InputError`) or Enzyme's activity errors
    (`DefinitionError` naming the option that fixes them); anything else is returned as
    it is (a bug in the kernel, reported with Julia's message)."""
    text, first = str(e), _first_line(e)
    options = "julia/README.md: Closures and callables"
    if "EnzymeMutabilityException" in text or "cannot be proven readonly" in text:
        return DefinitionError(
            f"{kernel.variant}: Enzyme cannot prove that {kernel.loss} leaves what it captured "
            "unwritten (EnzymeMutabilityException): pass function='duplicated' to "
            "weanj.julia_variant if that state holds values the loss depends on, "
            f"function='const' if it does not ({options})"
        )
    if "Constant memory is stored" in text or "EnzymeRuntimeActivityError" in text:
        fix = "runtime_activity=True"
        if kernel.activity != "duplicated":
            fix = f"function='duplicated' (if {kernel.loss} keeps a buffer of its own) or {fix}"
        return DefinitionError(
            f"{kernel.variant}: Enzyme found constant memory stored into a differentiable "
            f"variable (EnzymeRuntimeActivityError): pass {fix} to weanj.julia_variant "
            f"({options})"
        )
    if first.startswith(("DimensionMismatch", "ArgumentError")):
        return InputError(f"{kernel.variant}: {first}")
    return e


def _build(example: Any, kernel: JuliaKernel) -> Functions:
    """`Functions(loss, grad)` on numpy arrays, calling Julia; no `jvp` (a Julia loss
    cannot be pushed forward by JAX)."""
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
    flagged = [a for a in kernel.arrays if a in kernel.wrt]  # enzyme_gradient's order

    def julia_arguments(args):
        arrays, params, dtype = _arguments(example, kernel, args)
        # `Array` copies juliacall's view of each array (a PyArray of the same element
        # type, 1-based indices on the same axes) into a column-major Julia array.
        return [Main.Array(arrays[a]) for a in kernel.arrays] + params, dtype

    def call(fn, *args, **options):
        try:
            return fn(*args, **options)
        except Exception as e:
            failure = _julia_failure(kernel, e)
            if failure is e:
                raise
            raise failure from e

    def loss(*args):
        julia_args, dtype = julia_arguments(args)
        return dtype.type(call(julia_loss, *julia_args))

    def grad(*args):
        julia_args, _ = julia_arguments(args)
        shadows = call(
            WeanJ.enzyme_gradient,
            julia_loss,
            flags,
            *julia_args,
            activity=kernel.activity,
            runtime_activity=kernel.runtime_activity,
        )
        # C-order copies; complex shadows are the stored convention already.
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


def _activity(variant: str, function: Any, runtime_activity: Any) -> str:
    if function not in FUNCTION_ACTIVITY or isinstance(function, bool):
        raise DefinitionError(
            f"julia_variant {variant!r}: function must be None, 'const' or 'duplicated', "
            f"got {function!r}"
        )
    if not isinstance(runtime_activity, bool):
        raise DefinitionError(
            f"julia_variant {variant!r}: runtime_activity must be True or False, "
            f"got {runtime_activity!r}"
        )
    return FUNCTION_ACTIVITY[function]


def julia_variant(
    example: Any,
    name: str,
    *,
    family: str,
    loss: str,
    file: str | os.PathLike | None = None,
    description: str = "",
    dtypes: tuple[str, ...] = ("float64", "float32"),
    function: str | None = None,
    runtime_activity: bool = False,
    excludes: Any = None,
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
    - `function`: for a closure or callable that captures state: None passes it bare
      (Enzyme refuses one that writes to what it captured); `"const"`: `Const(f)`, state
      without derivatives; `"duplicated"`: `Duplicated(f, make_zero(f))`, a captured
      buffer holding values the loss depends on (julia/README.md).
    - `runtime_activity`: `Enzyme.set_runtime_activity(Reverse)`, for code whose
      activity Enzyme cannot settle statically.

    `grad` returns a C-order numpy array, or `{name: array}` in `wrt` order for several
    `wrt` arrays; `jvp` is None.

    **Returns:** the registered `Variant`.
    """
    example = example_of(example)
    activity = _activity(name, function, runtime_activity)
    path = None if file is None else _resolve_file(file, name, example.name)
    kernel = JuliaKernel(
        example=example.name,
        variant=name,
        loss=loss,
        file=path,
        arrays=tuple(example.arrays),
        wrt=example.wrt_names,
        params=example.param_names,
        activity=activity,
        runtime_activity=runtime_activity,
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
            excludes=excludes,
        )
    )
    _KERNELS[(example.name, name)] = kernel
    return variant
