"""The Julia environments of weanj's worker, read without starting Julia.

- **weanj's own** (juliapkg's, `environment_folder`): what `weanj/juliapkg.json`,
  juliacall's and the project's top-level `Project.toml` declare (`requirements`), WeanJ
  `dev`ed by path, and the AD packages the project's Julia variants use (`AD`: only
  those, `write_requirements`).
- **the user's** (`[tool.weanj.julia] project`, `user_environment`): their Project.toml
  and Manifest.toml, with their own packages; the worker activates and instantiates it
  as it is (never resolving it, never writing it) and stacks weanj's below it on
  `LOAD_PATH` (docs/julia.md, "Your own package as the reference").

What computes a Julia evaluation (`identity`, `gradient_provenance`: the
`backend_version` of its records and gradient files, part of every record's key) is
known from these files alone, so that a record is reused by a later command that starts
no worker.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import re
import sys
from pathlib import Path

from .._errors import ProjectError, UnavailableError, WeanjError
from .._sources import text_digest
from ._julia_find import locate_julia
from ._julia_stand_in import (
    stand_in,
    stand_in_identity,
)

_PACKAGE = Path(__file__).resolve().parent.parent


# --- the AD packages -------------------------------------------------------------------------


# `julia_variant(ad=...)`: the AD package, its UUID, and the compat bound weanj declares
# for it (DifferentiationInterface 0.7.21's own bounds, docs/julia.md "Compat"). "enzyme"
# is WeanJ's own one-pass Enzyme gradient (Enzyme is always in the environment).
AD = {
    "enzyme": ("Enzyme", "7da242da-08ed-463a-9acd-ee780be4f1d9", "0.13"),
    "forwarddiff": ("ForwardDiff", "f6369f11-7733-5829-9624-2563aa707210", "0.10.36, 1"),
    "mooncake": ("Mooncake", "da2b9cff-9c12-43a0-ae48-6db2b0edb7d6", "0.5"),
    "zygote": ("Zygote", "e88e6eb3-aa80-5325-afca-941959d7151f", "0.6.69, 0.7"),
    "finitedifferences": (
        "FiniteDifferences",
        "26cc04aa-876d-5657-8c51-4c34ba976000",
        "0.12.31",
    ),
}
HAND_WRITTEN = "hand-written"


def ad_in_use() -> list[str]:
    """The AD packages (besides Enzyme) the current project's Julia variants use, sorted:
    only those go into the worker's environment."""
    from .._context import current

    try:
        tables = current().registry.variants.values()
    except ProjectError:  # outside any project: no worker starts there
        return []
    declared = [v.declared for t in tables for v in t.values()]
    used = {getattr(d, k, None) for d in declared for k in ("ad", "hvp")}  # hvp=: an outer AD
    return sorted(a for a in used if a in AD and a != "enzyme")


def ad_requirements() -> dict[str, tuple[str, str]]:
    """`{name: (uuid, bound)}`: the AD packages of `ad_in_use`, as weanj declares them."""
    return {name: (uuid, bound) for name, uuid, bound in (AD[a] for a in ad_in_use())}


# --- weanj's environment: the project's Julia packages ------------------------------------


def _weanj_packages() -> dict:
    """What weanj's own `juliapkg.json` declares: `{name: {"uuid", "version"}}`, and
    `"julia"`."""
    path = _PACKAGE / "juliapkg.json"
    declared = json.loads(path.read_text(encoding="utf-8"))
    return {**declared.get("packages", {}), "julia": declared.get("julia")}


def requirements(root: Path) -> dict | None:
    """The Julia packages the project's top-level `Project.toml` declares (`[deps]`, with
    their `[compat]` bounds, and `[compat] julia`) that weanj does not declare itself
    with the same bounds, in juliapkg's format (`{"julia": ..., "packages": {name:
    {"uuid", "version"}}}`); None when there are none (or no Project.toml).

    The Julia convention: `julia --project=. -e 'using Pkg; Pkg.add("SpecialFunctions")'`
    adds a package there (docs/julia.md, "Julia packages").
    """
    path = root / "Project.toml"
    if not path.is_file():
        return None
    try:
        project = _read_toml(path)
    except WeanjError as e:
        raise UnavailableError(f"the project's Julia packages cannot be read: {e}") from None
    deps, compat = project.get("deps", {}), project.get("compat", {})
    if not isinstance(deps, dict) or not isinstance(compat, dict):
        raise UnavailableError(f"{path}: [deps] and [compat] must be tables")
    own = _weanj_packages()
    packages = {}
    for name, uuid in deps.items():
        if not isinstance(uuid, str):
            raise UnavailableError(f"{path}: [deps] {name} must be a UUID string")
        entry = {"uuid": uuid}
        if name in compat:
            entry["version"] = str(compat[name])
        if own.get(name) != entry:
            packages[name] = entry
    out: dict = {}
    if "julia" in compat and str(compat["julia"]) != own["julia"]:
        out["julia"] = str(compat["julia"])
    if packages:
        out["packages"] = packages
    return out or None


def weanj_requirement(sources: Path) -> dict:
    """WeanJ as juliapkg declares a package `dev`ed by path: `{"uuid", "path", "dev"}`,
    its uuid from `julia/Project.toml`. Pkg then precompiles it once into the worker's
    environment (and again only when its sources change), and the worker loads it with
    `using WeanJ`."""
    uuid = _read_toml(sources / "Project.toml").get("uuid")
    if not isinstance(uuid, str):
        raise UnavailableError(f"{sources / 'Project.toml'} declares no uuid for WeanJ")
    return {"uuid": uuid, "path": str(sources), "dev": True}


def write_requirements(root: Path, folder: Path, sources: Path) -> Path:
    """The folder holding the `juliapkg.json` weanj adds to juliapkg's requirements
    (rewritten only when it changes: juliapkg resolves again when it does): WeanJ, `dev`ed
    from `sources` (`weanj_requirement`), the project's own Julia packages
    (`requirements`), and the AD packages its Julia variants use (`ad_requirements`: only
    those; DifferentiationInterface and ADTypes come with WeanJ)."""
    wanted = requirements(root) or {}
    packages = wanted.setdefault("packages", {})
    for name, (uuid, bound) in ad_requirements().items():
        packages.setdefault(name, {"uuid": uuid, "version": bound})
    packages["WeanJ"] = weanj_requirement(sources)
    target = folder / "requirements"
    path = target / "juliapkg.json"
    text = json.dumps(wanted, indent=4, sort_keys=True) + "\n"
    with contextlib.suppress(OSError):
        if path.read_text(encoding="utf-8") == text:
            return target
    target.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".juliapkg.json.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return target


# --- what computes: known without starting Julia --------------------------------------------


def environment_folder(environ=None) -> Path:
    """The Julia environment the worker runs in, as juliacall and juliapkg choose it
    (pyjuliapkg's `state.py`, read): `$PYTHON_JULIACALL_PROJECT` (used as it is), else
    `$PYTHON_JULIAPKG_PROJECT`, else `<virtual environment>/julia_env` (the worker runs
    this Python, so `sys.prefix` is its), else `$CONDA_PREFIX/julia_env`, else
    `<depot>/environments/pyjuliapkg`."""
    env = os.environ if environ is None else environ
    for var in ("PYTHON_JULIACALL_PROJECT", "PYTHON_JULIAPKG_PROJECT"):
        if env.get(var):
            return Path(env[var])
    if sys.prefix != sys.base_prefix:
        return Path(sys.prefix).resolve() / "julia_env"
    if env.get("CONDA_PREFIX"):
        return Path(env["CONDA_PREFIX"]).resolve() / "julia_env"
    depot = env.get("JULIA_DEPOT_PATH", "").split(os.pathsep)[0]
    return Path(depot or Path.home() / ".julia").resolve() / "environments" / "pyjuliapkg"


def _manifests(folder: Path) -> list[Path]:
    """The environment's manifests (`Manifest.toml`, `JuliaManifest.toml` and their
    versioned forms `Manifest-v1.11.toml`): whichever Julia reads, all are digested."""
    try:
        return sorted(p for p in folder.glob("*Manifest*.toml") if p.is_file())
    except OSError:
        return []


# Enzyme's entry of a Manifest (`[[deps.Enzyme]]`, its keys up to the next table) and
# its version.
_ENZYME = re.compile(r'^\[\[deps\.Enzyme\]\]\n(?:[^\[\n].*\n|\n)*?version\s*=\s*"([^"]+)"', re.M)


def environment_identity(folder: Path) -> str:
    """The worker environment as resolved: the Enzyme version its Manifest holds and a
    digest of the Manifest's content; before any worker resolved it, "no manifest yet"
    (then the first command that starts a worker writes it, and the key of every Julia
    record changes once)."""
    found = _manifests(folder)
    if not found:
        return f"environment {folder}: no manifest yet"
    texts = []
    for path in found:
        with contextlib.suppress(OSError):
            texts.append(path.name + "\n" + path.read_text(encoding="utf-8", errors="replace"))
    joined = "\n\0\n".join(texts)
    enzyme = _ENZYME.search(joined)
    said = f"Enzyme {enzyme.group(1)}" if enzyme else "no Enzyme in the manifest"
    return f"{said} (environment {folder}, manifest sha256 {text_digest(joined)[:16]})"


def weanj_sources_digest(sources: Path) -> str:
    """A digest of WeanJ's package: `src/` and `Project.toml`, by paths relative to it
    (a dev'ed package's Manifest entry holds no digest of its files)."""
    files = sorted(p for p in (sources / "src").rglob("*.jl") if p.is_file())
    files.append(sources / "Project.toml")
    h = hashlib.sha256()
    for path in files:
        h.update(path.relative_to(sources).as_posix().encode() + b"\0")
        with contextlib.suppress(OSError):
            h.update(path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:16]


def identity() -> str:
    """What computes the Julia variants here, known without starting Julia (module
    docstring): the same text when a record is written and when a later command looks it
    up, so that Julia records are reused; any part that changes makes them recomputed."""
    if stand_in() is not None:
        return stand_in_identity()
    found = locate_julia()
    if found.path is None:
        return "Julia (none found here)"
    from ._julia_find import julia_sources  # looked up on use (the tests replace it)

    sources = julia_sources()
    weanj = "WeanJ missing" if sources is None else f"WeanJ sha256 {weanj_sources_digest(sources)}"
    try:
        juliacall = f"juliacall {importlib.metadata.version('juliacall')}"
    except importlib.metadata.PackageNotFoundError:
        juliacall = "juliacall (not installed)"
    environment = environment_identity(environment_folder())
    return f"Julia {found.version} ({found.path}), {environment}, {weanj}, {juliacall}"


# --- the user's environment --------------------------------------------------------------


def user_environment(root: Path | None = None) -> Path | None:
    """The folder of `[tool.weanj.julia] project` (absolute), or None."""
    from .._project import project_config

    try:
        return project_config(root).julia_project
    except ProjectError:
        return None


def environment_reason(env: Path | None, package: str) -> str | None:
    """Why `package` cannot be loaded from the user's environment `env`, or None: no
    environment configured, no Project.toml or Manifest.toml there (weanj never writes
    them: Pkg would resolve and write a Manifest), or a package it does not hold."""
    if env is None:
        return (
            f'package={package!r} needs [tool.weanj.julia] project = "path/to/environment" '
            "in pyproject.toml (the Julia environment holding it)"
        )
    for name in ("Project.toml", "Manifest.toml"):
        if not (env / name).is_file():
            return (
                f"the Julia environment {env} has no {name}: make it once with julia "
                f"--project={env} -e 'using Pkg; Pkg.instantiate()' (weanj never writes it)"
            )
    try:
        project = _read_toml(env / "Project.toml")
    except WeanjError as e:
        return f"the Julia environment's Project.toml cannot be read: {e}"
    deps = project.get("deps") if isinstance(project.get("deps"), dict) else {}
    if project.get("name") != package and package not in deps:
        return (
            f"the Julia environment {env} does not hold {package} (add it there: julia "
            f"--project={env} -e 'using Pkg; Pkg.develop(path=\"...\")')"
        )
    return None


def _manifest_entry(env: Path, name: str) -> dict | None:
    """`[[deps.<name>]]` of the environment's Manifest.toml (format 2), or None."""
    try:
        manifest = _read_toml(env / "Manifest.toml")
    except WeanjError:
        return None
    entries = (manifest.get("deps") or {}).get(name)
    return entries[0] if isinstance(entries, list) and entries else None


def package_sources(env: Path | None, package: str) -> tuple[Path, ...]:
    """What a variant of `package` depends on in the user's environment: its Project.toml
    and Manifest.toml, and the package's own source folder (its `.jl` files) and
    Project.toml where it lies on disk (the environment is the package, or it `dev`s it by
    path); a registered package's version is in the Manifest."""
    if env is None:
        return ()
    found = [env / "Project.toml", *_manifests(env)]
    folder = None
    with contextlib.suppress(WeanjError):
        if _read_toml(env / "Project.toml").get("name") == package:
            folder = env
    entry = _manifest_entry(env, package)
    if folder is None and entry is not None and isinstance(entry.get("path"), str):
        folder = (env / entry["path"]).resolve()
    if folder is not None:
        found += [folder / "Project.toml", folder / "src"]
    return tuple(dict.fromkeys(found))  # each once (the environment may be the package)


def package_version(name: str, env: Path | None = None) -> str:
    """The version of `name` the worker would load (the user's environment first, as
    stacked, then weanj's), read from their Manifests; "not resolved yet" otherwise."""
    for folder in (env, environment_folder()):
        if folder is None:
            continue
        entry = _manifest_entry(folder, name)
        if entry is not None and isinstance(entry.get("version"), str):
            return entry["version"]
    return "(not resolved yet)"


def gradient_provenance(ad: str, gradient: str | None, package: str | None) -> str:
    """What computes a variant's gradient, for its `backend_version` (and so its records'
    key): Enzyme, an AD package and DifferentiationInterface with their versions, or a
    hand-written function; and the user's environment a package variant loads."""
    env = user_environment()
    if gradient is not None:
        said = f"gradient: hand-written {gradient}"
    elif ad == "enzyme":
        said = "gradient: Enzyme (one ReverseWithPrimal pass)"
    else:
        name = AD[ad][0]
        said = (
            f"gradient: {name} {package_version(name, env)} through "
            f"DifferentiationInterface {package_version('DifferentiationInterface', env)}"
        )
    if package is None:
        return said
    files = [p for p in (env / "Project.toml", env / "Manifest.toml") if p.is_file()]
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest()[:16]
    return f"{said}; {package} from {env} (environment sha256 {digest})"


# --- a user's loose file ------------------------------------------------------------------

_INCLUDE = re.compile(r"^\s*include\(\s*\"([^\"$\\]+)\"\s*\)", re.M)
_ANY_INCLUDE = re.compile(r"\binclude\s*\(")


def kernel_sources(path: Path) -> tuple[Path, ...]:
    """A user's Julia file and the files it includes by a literal relative path (followed
    in turn), read, not run: what its variants' evaluation records depend on beyond
    Python. A file with any other `include` (a computed path) adds its whole folder, as
    it cannot be read which files it loads."""
    found: list[Path] = []
    todo = [path]
    while todo:
        current = todo.pop()
        if current in found:
            continue
        found.append(current)
        try:
            text = current.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        literal = _INCLUDE.findall(text)
        if len(literal) != len(_ANY_INCLUDE.findall(text)):
            return (*found, path.parent)
        todo.extend((current.parent / name).resolve() for name in literal)
    return tuple(found)


def _read_toml(path: Path) -> dict:
    from .._project import read_toml

    return read_toml(path)
