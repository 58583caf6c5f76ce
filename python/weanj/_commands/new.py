"""`weanj new NAME`: a new example in the current project, ready for `weanj check`.

Writes `examples/<stem>.py` (the example and one JAX variant), `julia/<stem>.jl` (the
same kernel as a Julia loop, for the `julia-<stem>` variant), the module's entry in
`[tool.weanj]` of `pyproject.toml` (created if missing) and, where the project has none, a
`.gitignore` of what weanj's runs write (`GITIGNORE`: everything under `results/` but the
recorded references, and the compilation cache). It refuses to overwrite anything. The
kernel is a placeholder that works: S sweeps of a periodic three-point smoothing of a
vector, so that `weanj check` passes before the user changes a line.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .._errors import InputError
from .._io._atomic import atomic_path
from .._project import ROOT_VARIABLE, user_project

PYTHON_TEMPLATE = '''\
"""{name}: S sweeps of a periodic three-point smoothing of x, fitted to y.

Replace this docstring with your kernel's mathematics and the hazard of porting it.
The placeholder: x^0 = x, x^(s+1)[i] = (x^s[i-1] + 2 x^s[i] + x^s[i+1]) / 4 (indices
mod n, additions in this order), loss Σ (x^S[i] - y[i])², gradient with respect to x.
Its Julia twin is julia/{stem}.jl (same stem), the same loop in place.
"""

import jax
import jax.numpy as jnp
import numpy as np

import weanj

# A float64 program, as its Julia twin (Float64) is: weanj runs each variant in the x64
# configuration its module leaves, and never switches it on (docs/verdicts.md, "x64").
jax.config.update("jax_enable_x64", True)


def generate(seed, n=64):
    """The inputs: a random signal x and a random target y, both of length n."""
    rng = np.random.default_rng(seed)
    return {{"x": rng.standard_normal(n), "y": rng.standard_normal(n)}}


def validate(arrays):
    x, y = arrays["x"], arrays["y"]
    if x.ndim != 1 or x.shape != y.shape or x.size < 3:
        raise weanj.InputError(
            f"x and y must be vectors of one length >= 3, got shapes {{x.shape}} and {{y.shape}}"
        )


EXAMPLE = weanj.register_example(
    weanj.Example(
        name="{name}",
        stem="{stem}",
        title="periodic three-point smoothing (placeholder: replace with your kernel)",
        arrays=("x", "y"),
        wrt="x",
        params=(weanj.Param("S", default=3, help="smoothing sweeps", sweep=(10, 100, 1000)),),
        generate=generate,
        validate=validate,
        sizes=weanj.Sizes(generate=generate, values=(256, 1024, 4096, 16384), name="n"),
    )
)


@weanj.jax_variant(EXAMPLE, "jax-{stem}", family="{stem}")
def {stem}_loss(x, y, S):
    """S smoothing sweeps with jnp.roll in a lax.scan; gradient by JAX AD."""

    def sweep(x, _):
        return (jnp.roll(x, 1) + 2 * x + jnp.roll(x, -1)) / 4, None

    xs, _ = jax.lax.scan(sweep, x, None, length=S)
    return jnp.sum((xs - y) ** 2)


# The Julia loop of julia/{stem}.jl, gradient by Enzyme.jl (skipped, saying why, where
# Julia is not installed).
weanj.julia_variant(
    EXAMPLE, "julia-{stem}", family="{stem}", file="julia/{stem}.jl", loss="{stem}_loss"
)
'''

JULIA_TEMPLATE = '''\
# {name}: S sweeps of a periodic three-point smoothing of x, fitted to y.
# Python twin: examples/{stem}.py (same stem). Replace with your kernel.

"""
    {stem}_loss(x, y, S)

`S` sweeps of `x[i] <- (x[i-1] + 2x[i] + x[i+1]) / 4` (indices mod n, additions in this
order, as in the JAX variant), then `Σ (x[i] - y[i])²`, summed in Float64.
"""
function {stem}_loss(x::Vector{{T}}, y::Vector{{T}}, S::Integer) where {{T <: AbstractFloat}}
    n = length(x)
    current, next = copy(x), similar(x)
    for _ in 1:S
        for i in 1:n
            left = current[i == 1 ? n : i - 1]
            right = current[i == n ? 1 : i + 1]
            next[i] = (left + 2 * current[i] + right) / 4
        end
        current, next = next, current
    end
    s = 0.0  # Float64 whatever T is: the sum of n squares loses no precision in Float32
    for i in 1:n
        s += Float64(current[i] - y[i])^2
    end
    return T(s)
end
'''


# What weanj's commands write and a project does not commit (docs/DESIGN.md, "Files"): the
# shared inputs and `results/<example>/recorded/` are committed; the rest is this machine's.
GITIGNORE = """\
# Written by weanj's commands on this machine (the shared inputs and the recorded
# references, results/<example>/recorded/, are committed).
results/*/gradients/
results/*/runs/
results/*/cases/
results/*/evaluations/
results/*/bench/
results/*/plots/
results/*/diff/
results/*/check.json
results/report.html
results/report.md
results/.weanj-fuzz/
results/.weanj-inputs-checked.json
results/.weanj-h5-probed.json
.weanj-cache/
.*.tmp
"""


def stem_of(name: str) -> str:
    """The module and Julia file stem of an example name: `11-my-kernel` -> `my_kernel`."""
    stem = re.sub(r"^[0-9]+[-_.]*", "", name)
    stem = re.sub(r"[^A-Za-z0-9_]", "_", stem).strip("_").lower()
    if not stem or not stem.isidentifier():
        stem = "example_" + re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_")
    return stem


def _target_root() -> Path:
    """`$WEANJ_ROOT`, else the nearest project with `[tool.weanj]`, else the current
    directory (never weanj's own checkout: a new example belongs to the user)."""
    env = os.environ.get(ROOT_VARIABLE)
    if env:
        return Path(env).expanduser().resolve()
    cwd = Path.cwd().resolve()
    return user_project(cwd) or cwd


def _add_module(pyproject: Path, module: str) -> str:
    """The text of `pyproject` with `module` in `[tool.weanj] examples` (formatting kept)."""
    import tomlkit

    text = pyproject.read_text() if pyproject.is_file() else ""
    try:
        doc = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as e:
        raise InputError(f"{pyproject} is not valid TOML ({e}); nothing was written") from None
    tool = doc.setdefault("tool", tomlkit.table(is_super_table=True))
    weanj_table = tool.setdefault("weanj", tomlkit.table()) if isinstance(tool, dict) else None
    if not isinstance(weanj_table, dict):
        raise InputError(f"{pyproject}: [tool.weanj] must be a table; nothing was written")
    examples = weanj_table.setdefault("examples", tomlkit.array())
    if not isinstance(examples, list) or not all(isinstance(m, str) for m in examples):
        raise InputError(
            f"{pyproject}: [tool.weanj] examples must be a list of module names, e.g. "
            'examples = ["kernels.smooth"]; nothing was written'
        )
    if module not in examples:
        examples.append(module)
    return tomlkit.dumps(doc)


def _refuse_links(root: Path, paths: tuple[Path, ...]) -> None:
    """One line where a path `weanj new` would write, or a folder it would write into, is
    a symbolic link (dangling or not): a new file is never written through a link, nor
    put in a link's place, so the file a link names stays as it was."""
    folders = {path.parent for path in paths if path.parent != root}
    for path in (*sorted(folders), *paths):
        if path.is_symlink():
            raise InputError(
                f"{path} is a symbolic link (to {os.readlink(path)}); weanj new never writes "
                "through or over a link (make it a file or a folder, or remove it); nothing "
                "was written"
            )


def scaffold(name: str) -> tuple[list[str], list[str]]:
    """Write the new example's files; **Returns:** what was written (as the user reads it)
    and the next commands to run."""
    from .._model import check_name

    check_name("example", name)
    root = _target_root()
    stem = stem_of(name)
    python_file = root / "examples" / f"{stem}.py"
    julia_file = root / "julia" / f"{stem}.jl"
    pyproject = root / "pyproject.toml"
    package_init = root / "examples" / "__init__.py"
    gitignore = root / ".gitignore"
    _refuse_links(root, (python_file, julia_file, pyproject, package_init))
    for path in (python_file, julia_file):
        if os.path.lexists(path):
            raise InputError(
                f"{path} already exists; weanj new never overwrites (choose another name)"
            )
    module = f"examples.{stem}"
    new_pyproject = _add_module(pyproject, module)

    writes = [
        (python_file, PYTHON_TEMPLATE.format(name=name, stem=stem)),
        (julia_file, JULIA_TEMPLATE.format(name=name, stem=stem)),
        (pyproject, new_pyproject),
    ]
    if not package_init.exists():
        writes.insert(0, (package_init, '"""The examples of this weanj project."""\n'))
    written = [f"examples/{stem}.py", f"julia/{stem}.jl", "[tool.weanj] in pyproject.toml"]
    if not os.path.lexists(gitignore):  # a project's own .gitignore (a link too) is left as it is
        writes.append((gitignore, GITIGNORE))
        written.append(".gitignore")
    for path, text in writes:
        # new files (checked above), and the project's pyproject.toml, edited on purpose
        # (its own text kept, the module added)
        with atomic_path(path, force=True) as tmp:
            tmp.write_text(text)
    return written, [
        f"weanj inputs regenerate {name}",
        f"weanj check {name}",
    ]
