"""Julia variants: `julia_variant` and the table of Julia kernels; what crosses to the
Julia worker and comes back is `_julia_calls`.

A Julia variant's loss is a Julia function of weanj's package (`julia/src/WeanJ.jl`), of
a user's file, or of a user's own package (in their environment, `[tool.weanj.julia]
project`); its gradient is Enzyme.jl's one reverse pass (`WeanJ.loss_and_gradient`:
`Duplicated` for the `wrt` arrays, `Const` for the rest), another AD package's through
DifferentiationInterface (`ad=`), or a function written by hand (`gradient=`). All run in
the Julia worker, a process of their own (`_julia_client` starts it, `_julia_worker` is
its program); this module never imports juliacall.

Registering runs nothing, and a missing Julia file only makes its variants unavailable;
listing runs at most `julia --version` (`_julia_find`).

What crosses (docs/DESIGN.md, "The Julia side"): numpy's `a[i, j]` is Julia's
`a[i+1, j+1]`; each array becomes a Julia `Array` of its own element type (`Float64`,
`Float32`, `ComplexF64`, `ComplexF32`, `Int64`, `Int32`, ..., `Bool`), index arrays plus
one; parameters `Int`, `Float64` or `Bool`. The loss comes back as Julia's scalar (in
the dtype under test, else the variant's error), gradients as C-order numpy arrays,
complex ones as Enzyme gives them, `∂L/∂Re z + i·∂L/∂Im z` (the stored convention).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .._arguments import JULIA_NAME as _NAME
from .._arguments import declared_julia
from .._errors import DefinitionError
from .._model import Catalog, Variant
from .._project import project_root
from .._registry import example_of, register_variant
from .._vocabulary import DTYPES
from . import _julia_client, _julia_env
from ._julia_calls import JuliaKernel, julia_functions
from ._julia_env import (
    AD,
    HAND_WRITTEN,
)
from ._julia_find import (
    find_julia,
    julia_sources,
)
from ._runtime import Runtime
from ._runtime import register as register_runtime

_PACKAGE = Path(__file__).resolve().parent.parent

# `hvp=` of julia_variant: the ADs whose forward mode may push a gradient forward
OUTER_AD = ("forwarddiff", "enzyme", "finitedifferences")
# `function=` of julia_variant (docs/julia.md, "Closures and callables"). None passes the
# loss bare: constant, and Enzyme refuses one that writes derivative-carrying memory it
# captured.
FUNCTION_ACTIVITY = {None: "bare", "const": "const", "duplicated": "duplicated"}


def unavailable_reason() -> str | None:
    """Why the Julia variants cannot run here, or None. Runs at most `julia --version`;
    with a stand-in worker configured (`$WEANJ_JULIA_WORKER`), None."""
    if _julia_client.stand_in():
        return None
    failed = _julia_client.failed_reason()
    if failed is not None:
        return failed
    julia, why = find_julia()
    if julia is None:
        return why
    if importlib.util.find_spec("juliacall") is None:
        return "needs the Python package 'juliacall' (pip install 'weanj[julia]')"
    if julia_sources() is None:
        return (
            f"the Julia package julia/src/WeanJ.jl is missing from this installation ({_PACKAGE})"
        )
    return None


def file_reason(path: Path | None) -> str | None:
    """Why a variant's Julia file cannot be used, or None (weanj's own kernels: None)."""
    if path is None:
        return None
    if not path.is_file():
        return f"the Julia file {path} does not exist"
    if not os.access(path, os.R_OK):
        return f"the Julia file {path} cannot be read"
    return None


# --- variants --------------------------------------------------------------------------


def gradient_by(variant: Variant) -> str | None:
    """How a Julia variant's gradient is taken, for `weanj list`: its AD package's name
    (`Enzyme`, `ForwardDiff`, ...) or "hand-written"; None for any other variant."""
    kernel = variant.declared
    if not isinstance(kernel, JuliaKernel):
        return None
    return HAND_WRITTEN if kernel.gradient else AD[kernel.ad][0]


def julia_kernels(cats: Iterable[Catalog]) -> dict[tuple[str, str], JuliaKernel]:
    """`{(example, variant): JuliaKernel}` for the Julia variants of the catalogs given
    (the caller's: this module loads no example module)."""
    return {
        (cat.name, v.name): v.declared
        for cat in cats
        for v in cat.variants
        if isinstance(v.declared, JuliaKernel)
    }


class JuliaRuntime(Runtime):
    """What runs a Julia variant's functions (`_runtime`): round trips to its worker,
    answered with numpy arrays, on the CPU; and the times the worker measures itself,
    inside Julia (`time_ns`, after a warm-up call), beside the round trips."""

    name = "Julia"

    def runs(self, variant: Variant) -> bool:
        return variant.backend == "julia"

    def inside(self, fn, args: tuple, samples: int) -> dict | None:
        timed = getattr(fn, "timed_inside", None)
        return None if timed is None else timed(*args, samples=samples)


JULIA_RUNTIME = register_runtime(JuliaRuntime())


def backend_version(kernel: JuliaKernel | None = None) -> str:
    """What computes a Julia variant here, known without starting Julia
    (`_julia_env.identity`: the Julia executable's version and path, the worker
    environment's Manifest, WeanJ's sources, juliacall; or a stand-in's own words and
    files; then `gradient_provenance`: its AD package and DifferentiationInterface with
    their versions, or its hand-written gradient, and the user's environment of a package
    variant): part of every Julia evaluation record's key, the same at write and look-up."""
    said = _julia_env.identity()
    if kernel is None:
        return said
    said = f"{said}; {_julia_env.gradient_provenance(kernel.ad, kernel.gradient, kernel.package)}"
    if not (kernel.outputs or kernel.hvp):
        return said
    env = _julia_env.user_environment()  # beyond the gradient: DI (docs/outputs.md)
    said += "; outputs and Hessian products through DifferentiationInterface "
    said += _julia_env.package_version("DifferentiationInterface", env)
    if kernel.hvp is not None:
        outer = AD[kernel.hvp][0]
        said += f", pushed forward by {outer} {_julia_env.package_version(outer, env)}"
    return said


def _reason(kernel: JuliaKernel) -> str | None:
    """Why a variant cannot run here: its package's environment, or its file, then Julia."""
    if kernel.package is not None:
        env = _julia_env.user_environment()
        return _julia_env.environment_reason(env, kernel.package) or unavailable_reason()
    return file_reason(kernel.file) or unavailable_reason()


def _description(kernel: JuliaKernel, file: Any) -> str:
    if kernel.gradient is not None:
        how = f"gradient {kernel.gradient}, written by hand"
    else:
        how = f"gradient by {AD[kernel.ad][0]}.jl"
    return f"{kernel.package or file or 'WeanJ'}: {kernel.loss}; {how}"


def _sources_of(path: Path | None, package: str | None) -> tuple[Path, ...]:
    """What an evaluation record's key holds beyond Python: the kernel's file and the
    files it includes (so an edit of one file recomputes its variants only), or weanj's
    own Julia package, and for a package variant the user's environment and the
    package's own files."""
    if package is not None:  # the user's environment and the package's own files
        return (
            *(p for p in (julia_sources(),) if p),
            *_julia_env.package_sources(_julia_env.user_environment(), package),
        )
    if path is None:
        return tuple(p for p in (julia_sources(),) if p)
    return _julia_env.kernel_sources(path)


def _resolve_file(file: str | os.PathLike) -> Path:
    """The Julia file, relative to the project root unless absolute; it need not exist
    (then its variants are unavailable, saying so)."""
    path = Path(file).expanduser()
    if not path.is_absolute():
        path = project_root() / path
    return path.resolve()


def _gradient_by(variant: str, ad: Any, gradient: Any, enzyme_options: bool) -> str:
    """The `ad` of a variant (its `AD` name), checked against `gradient=` and Enzyme's
    own options, each mistake one `DefinitionError` line."""
    where = f"julia_variant {variant!r}"
    if gradient is not None:
        if not isinstance(gradient, str) or not _NAME.match(gradient):
            raise DefinitionError(f"{where}: gradient must name a Julia function, got {gradient!r}")
        if ad is not None:
            raise DefinitionError(
                f"{where}: gradient= is the hand-written gradient; ad= names an AD package "
                "instead of it: give one of them"
            )
        ad = HAND_WRITTEN
    elif ad is None:
        ad = "enzyme"
    elif not isinstance(ad, str) or ad not in AD:
        raise DefinitionError(f"{where}: ad must be one of {', '.join(map(repr, AD))}, got {ad!r}")
    if enzyme_options and ad != "enzyme":
        raise DefinitionError(
            f"{where}: function= and runtime_activity= are Enzyme's options, not {ad}'s"
        )
    return ad


def _package_name(variant: str, package: Any, file: Any) -> str | None:
    if package is None:
        return None
    if file is not None:
        raise DefinitionError(
            f"julia_variant {variant!r}: file= or package=, not both (a package's functions "
            "come from its environment, a file's from the file)"
        )
    if not isinstance(package, str) or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", package):
        raise DefinitionError(
            f"julia_variant {variant!r}: package must be a Julia package's name, got {package!r}"
        )
    return package


def _activity(variant: str, function: Any) -> str:
    """How Enzyme is to treat the loss function itself (`function=`), checked."""
    if not isinstance(function, (str, type(None))) or function not in FUNCTION_ACTIVITY:
        raise DefinitionError(
            f"julia_variant {variant!r}: function must be None, 'const' or 'duplicated', "
            f"got {function!r}"
        )
    return FUNCTION_ACTIVITY[function]


def _declared_kernel(
    example: Any,
    name: str,
    loss: Any,
    file: Any,
    function: Any,
    runtime_activity: Any,
    package: Any,
    ad: Any,
    gradient: Any,
    hvp: Any = None,
) -> JuliaKernel:
    """What `julia_variant`'s arguments declare, each checked (one `DefinitionError` line
    for a mistake): the kernel its variant calls."""
    declared_julia(name, loss, file, runtime_activity)
    activity = _activity(name, function)
    how = _gradient_by(name, ad, gradient, function is not None or runtime_activity)
    _outer_ad(name, hvp, how)
    package = _package_name(name, package, file)
    path = None if file is None else _resolve_file(file)
    return JuliaKernel(
        example=example.name,
        variant=name,
        loss=loss,
        file=path,
        arrays=tuple(example.arrays),
        wrt=example.wrt_names,
        params=example.param_names,
        activity=activity,
        runtime_activity=runtime_activity,
        package=package,
        ad="enzyme" if how == HAND_WRITTEN else how,
        gradient=gradient,
        outputs=tuple(getattr(example, "outputs", ())),
        hvp=hvp,
    )


def _outer_ad(variant: str, hvp: Any, how: str) -> None:
    """`hvp=`, checked: None, or an AD with a forward mode to push the variant's own
    gradient forward (DifferentiationInterface's `SecondOrder(outer, inner)`)."""
    if hvp is None:
        return
    where = f"julia_variant {variant!r}"
    if how == HAND_WRITTEN:
        raise DefinitionError(
            f"{where}: hvp= pushes an AD's gradient forward; a hand-written gradient has none"
        )
    if not isinstance(hvp, str) or hvp not in OUTER_AD:
        raise DefinitionError(
            f"{where}: hvp must be one of {', '.join(map(repr, OUTER_AD))} (an AD with a "
            f"forward mode), got {hvp!r}"
        )


def _variant_of(
    example: Any,
    kernel: JuliaKernel,
    family: str,
    file: Any,
    description: str,
    dtypes: tuple[str, ...],
    excludes: Any,
    expected: Any,
) -> Variant:
    """The `Variant` that calls `kernel` (not registered yet)."""
    return Variant(
        example=example,
        name=kernel.variant,
        family=family,
        backend="julia",
        build=functools.partial(julia_functions, example, kernel),
        check=functools.partial(_reason, kernel),
        versions=functools.partial(backend_version, kernel),
        description=description or _description(kernel, file),
        dtypes=dtypes,
        excludes=excludes,
        expected=expected,
        # what an evaluation record's key holds beyond Python (`_sources_of`)
        sources=_sources_of(kernel.file, kernel.package),
        declared=kernel,
    )


def julia_variant(
    example: Any,
    name: str,
    *,
    family: str,
    loss: str,
    file: str | os.PathLike | None = None,
    description: str = "",
    dtypes: tuple[str, ...] = DTYPES,
    function: str | None = None,
    runtime_activity: bool = False,
    excludes: Any = None,
    expected: Any = None,
    package: str | None = None,
    ad: str | None = None,
    gradient: str | None = None,
    hvp: str | None = None,
) -> Variant:
    """Register a variant of `example` whose loss is a Julia function; its gradient is
    Enzyme.jl's, another AD package's, or written by hand (docs/julia.md).

        weanj.julia_variant(ex, "julia-smooth", family="smooth",
                            file="julia/smooth.jl", loss="smooth_loss")

    **Arguments:**

    - `example`: the registered `weanj.Example`.
    - `name`, `family`: the variant's name (`julia-<algorithm>`) and family;
      `description`: one line for reports.
    - `loss`: the name of the Julia function, which takes the example's arrays then its
      parameters, in the example's order, and returns the scalar loss; for an example
      that declares outputs, the loss and its outputs, `(L, (; r = r))` (docs/outputs.md).
      A dotted name (`"Smooth.smooth_loss"`) looks into a module the file defines.
    - `file`: None for weanj's own kernels (`julia/src/WeanJ.jl`); else a Julia file,
      relative to the project root, included into a module of its own. A file that does
      not exist, or does not load, makes this variant unavailable, saying why.
    - `function`: for a closure or callable that captures state: None passes it bare;
      `"const"`: `Const(f)`, state without derivatives; `"duplicated"`: `Duplicated(f,
      make_zero(f))`, a buffer holding values the loss depends on (docs/julia.md).
    - `runtime_activity`: `Enzyme.set_runtime_activity(ReverseWithPrimal)`, for code
      whose activity Enzyme cannot settle statically.
    - `package`: a package of the user's environment (`[tool.weanj.julia] project`),
      loaded with `using`; `loss`, `gradient` name its functions (`"MyPorts.misfit"`).
    - `ad`: `"enzyme"` (default: one `ReverseWithPrimal` pass), `"forwarddiff"`,
      `"mooncake"`, `"zygote"`, `"finitedifferences"` (through DifferentiationInterface).
    - `gradient`: a Julia function returning the gradient arrays (one per `wrt` array, in
      order), written by hand; the loss comes from `loss`. Not with `ad`.
    - `hvp`: at the second order, the AD that pushes the variant's gradient forward for
      its Hessian-vector products, `"forwarddiff"`, `"enzyme"` or `"finitedifferences"`
      (DifferentiationInterface's `SecondOrder(outer, inner)`, inner the variant's `ad`);
      None: DI's own combination for `ad` (docs/outputs.md, "The Julia side").
    - `expected`: its known differences (`weanj.Expected`, one or several).

    `grad` returns a C-order numpy array (`{name: array}` for several); `jvp` is None.

    **Returns:** the registered `Variant`.
    """
    example = example_of(example)
    kernel = _declared_kernel(
        example, name, loss, file, function, runtime_activity, package, ad, gradient, hvp
    )
    variant = register_variant(
        _variant_of(example, kernel, family, file, description, dtypes, excludes, expected)
    )
    return variant
