"""A user's own project, run as a user runs it: a folder outside this repository holding a
`pyproject.toml` with `[tool.weanj]` and the example modules beside it, and `python -m weanj
...` or `pytest --weanj` in a fresh process in that folder, which finds the project from the
current folder (root discovery), never from `$WEANJ_ROOT`. Also: one example module loaded
in this process as the registry loads a project's (`import_failure`), and `12-ring`, an
example module two projects hold."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import run_python

TOY_KERNELS = Path(__file__).with_name("toy_kernels.py")


def user_env(**extra: str) -> dict[str, str]:
    """This process's environment without `$WEANJ_ROOT`, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k != "WEANJ_ROOT"}
    env.update(extra)
    return env


def run_in(
    root: Path, *argv, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    """`python ARGV` in a fresh process in the folder `root` (by default `user_env()`)."""
    return run_python(*argv, cwd=root, env=env or user_env(), timeout=timeout)


def weanj_in(root: Path, *args, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m weanj ARGS` in the folder `root`."""
    return run_in(root, "-m", "weanj", *args, timeout=timeout)


@contextlib.contextmanager
def as_user_in(root: Path):
    """This process as a fresh `python -m weanj` in the folder `root` would be, while the
    block runs: `root` the current folder, `$WEANJ_ROOT` unset, the registry emptied, so
    that the next lookup loads the project found from `root` (root discovery, its
    `[tool.weanj]` modules imported afresh, as a new process imports them). Afterwards the
    registry (weanj's own examples), `sys.path`, the current folder and the environment are
    put back, the modules imported from the project forgotten, and those it hid put back."""
    import jax

    from weanj import _context
    from weanj._project import find_root

    x64 = bool(jax.config.jax_enable_x64)
    path = list(sys.path)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("WEANJ_ROOT", raising=False)
        mp.chdir(root)
        try:
            folders = {Path(root).resolve(), find_root()[0]}
        except Exception:  # the command says what is wrong with the project
            folders = {Path(root).resolve()}
        # modules of the names the project's own take (another project's `kernels` package,
        # loaded in this process): hidden while the block runs, as from a new process
        tops = {p.stem if p.suffix == ".py" else p.name for f in folders for p in f.iterdir()}
        hidden = {m: sys.modules.pop(m) for m in list(sys.modules) if m.split(".")[0] in tops}
        imported = set(sys.modules)
        opened = dict(_context._OPENED["projects"])  # a fresh process has opened none here
        for key in [k for k in opened if Path(k) in folders]:
            _context.forget(opened[key])
        try:
            yield root
        finally:
            for key, project in list(_context._OPENED["projects"].items()):
                if Path(key) in folders or key not in opened:
                    config = project.config
                    folders |= {Path(config.root).resolve(), *map(Path, config.pythonpath)}
                    _context.forget(project)
            jax.config.update("jax_enable_x64", x64)
            sys.path[:] = path
            for name in set(sys.modules) - imported:
                file = getattr(sys.modules[name], "__file__", None) or ""
                if file and any(Path(file).resolve().is_relative_to(f) for f in folders):
                    sys.modules.pop(name)
            sys.modules.update(hidden)


def weanj_here(root: Path, *args) -> subprocess.CompletedProcess:
    """`weanj ARGS` as `weanj_in` runs it, but in this process (`as_user_in(root)`: the
    project loaded afresh from `root`, as a new process loads it), through the command
    line's `main`; its exit code, stdout and stderr as a finished process's. For the tests
    whose point is what a command says and writes, not the process boundary (signals,
    `os._exit`, what a fresh interpreter inherits, a Julia worker's life): those use
    `weanj_in`. Not for a project that loads weanj's built-in examples (`builtin = true`):
    their modules, imported here already, would not register them again."""
    from weanj._cli import main

    out, err = io.StringIO(), io.StringIO()
    words = [str(a) for a in args]
    with as_user_in(root), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(words)
    return subprocess.CompletedProcess(["weanj", *words], code, out.getvalue(), err.getvalue())


def run_here(root: Path, code: str) -> subprocess.CompletedProcess:
    """`python -c CODE` as `run_in` runs it, but in this process (`as_user_in(root)`): its
    output captured, and an exception it raises a traceback on stderr and exit code 1."""
    import traceback

    out, err = io.StringIO(), io.StringIO()
    with as_user_in(root), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            exec(compile(code, "<string>", "exec"), {"__name__": "__main__"})
            status = 0
        except Exception:
            traceback.print_exc()
            status = 1
    argv = ["python", "-c", code]
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())


def pytest_weanj_in(
    root: Path, *args, env: dict[str, str] | None = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    """`python -m pytest --weanj ARGS` in the folder `root`, without pytest's cache."""
    return run_in(
        root, "-m", "pytest", "--weanj", *args, "-p", "no:cacheprovider", env=env, timeout=timeout
    )


def pyproject(*modules: str, name: str | None = None) -> str:
    """A `pyproject.toml` whose `[tool.weanj]` lists the example modules (after a `[project]`
    table when the project has a `name`)."""
    listed = ", ".join(f'"{m}"' for m in modules)
    head = f'[project]\nname = "{name}"\nversion = "0.0.1"\n\n' if name else ""
    return f"{head}[tool.weanj]\nexamples = [{listed}]\n"


def write_project(
    root: Path, files: dict[str, str], *, name: str | None = None, regenerate: bool = True
) -> Path:
    """A user project in `root`: `files` ({path relative to root: text}; folders made as
    needed, a package folder given its empty `__init__.py`), a `pyproject.toml` listing
    each `.py` file but a `conftest.py` as an example module (`kernels/ring.py`:
    `kernels.ring`), in order, and beside them `toy_kernels.py`, a helper module they may
    import; then, unless told not to, `weanj inputs regenerate` (in this process,
    `weanj_here`), which must succeed."""
    shutil.copyfile(TOY_KERNELS, root / "toy_kernels.py")
    modules = []
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if path.suffix == ".py" and path.name != "conftest.py":
            parts = Path(relative).with_suffix("").parts
            modules.append(".".join(parts))
            if len(parts) > 1:
                (path.parent / "__init__.py").touch()
    (root / "pyproject.toml").write_text(pyproject(*modules, name=name))
    if regenerate:
        r = weanj_here(root, "inputs", "regenerate")
        assert r.returncode == 0, r.stderr
    return root


def import_failure(folder: Path, monkeypatch, module: str, body: str) -> str:
    """The error of loading the example module `module` (written with `body` in `folder`)
    as the registry loads one, in this process: it must be one `ProjectError` of one line
    naming the module, with what the module registered taken back and the module
    forgotten. Returns the message."""
    import weanj
    from weanj._registry import _loading

    (folder / f"{module}.py").write_text(body)
    monkeypatch.syspath_prepend(str(folder))
    before = weanj.example_names()
    with pytest.raises(weanj.ProjectError) as info:
        _loading.import_example_module(module, "[tool.weanj] of a test")
    message = str(info.value)
    assert "\n" not in message and f"example module {module!r}" in message, message
    assert weanj.example_names() == before and module not in sys.modules
    return message


# --- 12-ring, a project's example -----------------------------------------------------------

# `12-ring`: a 1-D kernel with sizes to sweep, two correct variants, and one (`jax-wrong`)
# whose gradient is off by 1e-3 relative at x[7].
RING = """\
import jax, numpy as np
import weanj
from toy_kernels import smooth_loop, smooth_scan

ex = weanj.register_example(weanj.Example(
    name="12-ring", arrays=("x", "y"), wrt="x", shapes={"x": ("n",), "y": ("n",)},
    params=(weanj.Param("S", default=3),),
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(40),
                           "y": np.random.default_rng(seed + 1).standard_normal(40)},
    sizes=weanj.Sizes(generate=lambda seed, n: {"x": np.ones(n), "y": np.zeros(n)},
                      values=(16, 32)),
))
weanj.jax_variant(ex, "jax-loop", family="smooth", loss=smooth_loop)
weanj.jax_variant(ex, "jax-scan", family="smooth", loss=smooth_scan)


def wrong_grad(x, y, S):
    return jax.grad(smooth_loop)(x, y, S).at[7].multiply(1.001)


weanj.jax_variant(ex, "jax-wrong", family="smooth", grad=wrong_grad)(smooth_loop)
"""


def reproduce_case(root: Path, commands: list[str]) -> list[subprocess.CompletedProcess]:
    """Run the commands that `weanj bisect` and `weanj fuzz` print to reproduce a case, in
    `root`: the two `weanj run`s, which must succeed, then `weanj bisect EX A B --inputs
    CASE`, which judges the pair on the case. Returns the three results (each run's stdout
    says where it saved its gradient)."""
    assert len(commands) == 3, commands
    assert [line.split()[:2] for line in commands] == [["weanj", "run"]] * 2 + [["weanj", "bisect"]]
    done = []
    for line in commands:
        done.append(weanj_in(root, *shlex.split(line)[1:]))
    for r in done[:2]:
        assert r.returncode == 0, r.stdout + r.stderr
    return done


def saved_path(root: Path, run: subprocess.CompletedProcess) -> Path:
    """Where a `weanj run` saved its gradient (its `saved PATH` line), under `root`."""
    (line,) = [x for x in run.stdout.splitlines() if x.startswith("saved ")]
    path = Path(line.removeprefix("saved "))
    return path if path.is_absolute() else root / path


# --- a tiny user project: two examples of a few entries (added by the tests regrouping) -------

# `10-tiny`: two variants of one family; `11-other`: one variant. A whole `weanj check` of
# the project takes seconds.
TINY = """\
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="10-tiny", arrays=("x", "y"), wrt="x", params=(weanj.Param("S", 2),),
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(8),
                           "y": np.random.default_rng(seed + 1).standard_normal(8)},
))

@weanj.jax_variant(ex, "jax-a", family="f")
def a(x, y, S):
    for _ in range(S):
        x = (jnp.roll(x, 1) + 2 * x + jnp.roll(x, -1)) / 4
    return jnp.sum((x - y) ** 2)

@weanj.jax_variant(ex, "jax-b", family="f")
def b(x, y, S):
    for _ in range(S):
        x = 0.25 * jnp.roll(x, 1) + 0.5 * x + 0.25 * jnp.roll(x, -1)
    return jnp.sum((x - y) ** 2)
"""

OTHER = """\
import jax.numpy as jnp, numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="11-other", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(5)},
))

@weanj.jax_variant(ex, "jax-sq", family="g")
def sq(x):
    return jnp.sum(x ** 2)
"""


def tiny_project(root: Path) -> Path:
    """The tiny project (`kernels.tiny`: 10-tiny, `kernels.other`: 11-other) in `root`,
    its inputs written (`weanj inputs regenerate` in this process, which must succeed)."""
    (root / "pyproject.toml").write_text(pyproject("kernels.tiny", "kernels.other"))
    (root / "kernels").mkdir()
    (root / "kernels" / "__init__.py").write_text("")
    (root / "kernels" / "tiny.py").write_text(TINY)
    (root / "kernels" / "other.py").write_text(OTHER)
    r = weanj_here(root, "inputs", "regenerate")
    assert r.returncode == 0, r.stderr
    return root


@contextlib.contextmanager
def loaded(root: Path, *modules: str):
    """The user project in `root` loaded in this process, for the in-process front ends
    (`weanj.check()`, `weanj.diff()`, `weanj.report()`, `bisect`, `fuzz`, the command
    line's `main`): `$WEANJ_ROOT` is `root` (every path weanj reads or writes is under it),
    `root` is on `sys.path`, and the example `modules` are imported as the registry imports
    a project's (each as its own program: what it leaves `jax_enable_x64` at is its
    variants' configuration, and the process's setting is put back). Afterwards the
    examples they registered are withdrawn and the modules (and
    the project's `toy_kernels`) forgotten. The registry of this process is loaded first
    (weanj's own examples), so that nothing of the project outlives the block."""
    import weanj
    from weanj import _registry
    from weanj._registry import _loading

    before = set(weanj.example_names())
    imported = set(sys.modules)
    ours = {m.split(".")[0] for m in modules} | {"toy_kernels"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("WEANJ_ROOT", str(root))
        mp.syspath_prepend(str(root))
        try:
            for module in modules:
                _loading.import_example_module(module, f"[tool.weanj] of {root}")
            yield root
        finally:
            for name in set(weanj.example_names()) - before:
                _registry.unregister_example(name)
            for name in set(sys.modules) - imported:
                if name.split(".")[0] in ours:
                    sys.modules.pop(name)
