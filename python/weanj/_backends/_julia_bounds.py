"""The packages weanj's Julia environment needs, their compat bounds, and the check that
the environments stacked on Julia's `LOAD_PATH` hold versions inside them.

With the user's environment stacked above weanj's (`[tool.weanj.julia] project`), a
package both hold (Enzyme, ForwardDiff, DifferentiationInterface) loads at the user's
version, which may lie outside weanj's bounds; the first symptom would be a method error
deep inside WeanJ. So the worker checks, right after stacking and before loading
anything, each package weanj needs against its bound in the environments Julia would
load it from, and refuses in one line naming the package, the version found, where it
came from and the bound.

Both sides use this module: weanj (`weanj_bounds`, sent in the worker's start message)
and the worker (`stacked_refusal`). It imports only the standard library (and `tomli`
where Python has no `tomllib`).

How Julia finds the version it loads (Julia's base/loading.jl, `locate_package_env`,
`manifest_uuid_path`, `project_file_manifest_path`, read on Julia's master of 2026):
each environment of `Base.load_path()` in turn (project files), the first whose project
is the package or whose manifest holds an entry of the package's UUID; the manifest is
the project's `manifest` entry, else the first of `JuliaManifest-vX.Y.toml` and
`Manifest-vX.Y.toml` (from Julia 1.11 on), `JuliaManifest.toml`, `Manifest.toml` beside
it; its entries are under `[deps]` (format 2) or at the top (format 1).

Compat bounds are read by the rules of Pkg's documentation ("Compatibility", "Version
specifier format"): caret (bare or `^`), tilde (`~`), equality (`=`) and hyphen (`a - b`)
clauses, separated by commas (`compat_ranges`).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

Version = tuple[int, int, int]


def compat_ranges(spec: str) -> list[tuple[Version, Version]]:
    """The half-open version ranges `[lo, hi)` a Pkg compat entry allows; a `ValueError`
    for a clause Pkg's documentation does not define."""
    ranges = []
    for clause in (c.strip() for c in spec.split(",")):
        if " - " in clause:
            first, last = (part.strip().split(".") for part in clause.split(" - "))
            lo = tuple(int(x) for x in first) + (0,) * (3 - len(first))
            b = [int(x) for x in last]
            hi = (b[0] + 1, 0, 0) if len(b) == 1 else (b[0], b[1] + 1, 0)
            ranges.append((lo, hi if len(b) < 3 else (b[0], b[1], b[2] + 1)))
            continue
        m = re.fullmatch(r"([\^~=]?)(\d+)(?:\.(\d+))?(?:\.(\d+))?", clause)
        if m is None:
            raise ValueError(f"no Pkg compat clause: {clause!r}")
        op, given = m.group(1), [int(x) for x in m.groups()[1:] if x is not None]
        lo = tuple(given) + (0,) * (3 - len(given))
        major, minor, patch = lo
        if op == "=":
            hi = (major, minor, patch + 1)
        elif op == "~":
            hi = (major + 1, 0, 0) if len(given) == 1 else (major, minor + 1, 0)
            if len(given) == 3 and major == minor == 0:
                hi = (0, 0, patch + 1)
        elif major != 0 or len(given) == 1:
            hi = (major + 1, 0, 0)
        elif minor != 0 or len(given) == 2:
            hi = (0, minor + 1, 0)
        else:
            hi = (0, 0, patch + 1)
        ranges.append((lo, hi))
    return ranges


def version_of(text: str) -> Version | None:
    """(major, minor, patch) of a version string; a pre-release or build counts as its
    release, as Pkg compares them against a compat bound."""
    m = re.match(r"v?(\d+)\.(\d+)\.(\d+)", text)
    return None if m is None else (int(m.group(1)), int(m.group(2)), int(m.group(3)))


def within(version: Version, spec: str) -> bool:
    return any(lo <= version < hi for lo, hi in compat_ranges(spec))


def _toml(path: Path) -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib
    with open(path, "rb") as f:
        return tomllib.load(f)


# --- what weanj needs (its side) ------------------------------------------------------------


def weanj_bounds(juliapkg: Path, sources: Path, ad: dict[str, tuple[str, str]]) -> list[dict]:
    """`[{"name", "uuid", "bound", "declared"}]`: each package weanj's environment needs
    with its bound, as declared: weanj's `juliapkg.json`, WeanJ's `Project.toml` (`[deps]`
    and `[compat]`), and `ad` (`{name: (uuid, bound)}`: the AD packages the project's
    variants use, `julia_variant(ad=...)`)."""
    found, declared = [], f"weanj's {juliapkg.name}"
    for name, entry in json.loads(juliapkg.read_text(encoding="utf-8"))["packages"].items():
        found.append(
            {"name": name, "uuid": entry["uuid"], "bound": entry["version"], "declared": declared}
        )
    project = _toml(sources / "Project.toml")
    compat = project.get("compat", {})
    declared = "WeanJ's Project.toml"
    for name, uuid in project.get("deps", {}).items():
        if name in compat:
            found.append({"name": name, "uuid": uuid, "bound": compat[name], "declared": declared})
    declared = "julia_variant(ad=...)"
    for name, (uuid, bound) in ad.items():
        found.append({"name": name, "uuid": uuid, "bound": bound, "declared": declared})
    return found


# --- what the stacked environments hold (the worker's side) ---------------------------------


def _manifest(project: Path, data: dict, julia: Version) -> Path | None:
    folder = project.parent
    if isinstance(data.get("manifest"), str):
        named = folder / data["manifest"]
        if named.is_file():
            return named
    names = ["JuliaManifest.toml", "Manifest.toml"]
    if julia[:2] >= (1, 11):
        names[:0] = [
            f"{stem}-v{julia[0]}.{julia[1]}.toml" for stem in ("JuliaManifest", "Manifest")
        ]
    return next((folder / n for n in names if (folder / n).is_file()), None)


def _entries(manifest: dict) -> dict:
    """A manifest's entries by name: `[deps]` of format 2, the top level of format 1."""
    form = manifest.get("manifest_format")
    if form is None or isinstance(form, dict):
        return manifest
    return manifest.get("deps") or {}


def located(env: str, uuid: str, julia: Version) -> tuple[str | None, str] | None:
    """Where the environment `env` (a project file or its folder, as `Base.load_path()`
    gives it) holds the package of `uuid`: `(its version or None, the file saying so)`,
    or None where it does not (Julia then looks further down the load path)."""
    path = Path(env)
    project = (
        path
        if path.is_file()
        else next(
            (path / n for n in ("JuliaProject.toml", "Project.toml") if (path / n).is_file()), None
        )
    )
    if project is None:
        return None
    try:
        data = _toml(project)
        if data.get("uuid") == uuid:
            return data.get("version"), str(project)
        manifest = _manifest(project, data, julia)
        entries = _entries(_toml(manifest)) if manifest is not None else {}
    except (OSError, ValueError):  # unreadable: Julia would fail on it itself
        return None
    for versions in entries.values():
        for entry in versions if isinstance(versions, list) else ():
            if isinstance(entry, dict) and entry.get("uuid") == uuid:
                return entry.get("version"), str(manifest)
    return None


def stacked_refusal(
    load_path: list[str], bounds: list[dict], julia: Version, user: str | None
) -> str | None:
    """One line for the first package of `bounds` that the environments of `load_path`
    would load at a version outside its bound (naming the package, the version, the file
    it came from and the bound, and the fix), or None. `user`: the user's environment
    folder (`[tool.weanj.julia] project`), named as theirs."""
    for need in bounds:
        found = next((hit for env in load_path if (hit := located(env, need["uuid"], julia))), None)
        version = None if found is None or found[0] is None else version_of(str(found[0]))
        if version is None or within(version, need["bound"]):
            continue
        where = found[1]
        name, bound = need["name"], need["bound"]
        last = bound.split(",")[-1].strip().lstrip("^~=")
        folder = os.path.dirname(where)
        theirs = user is not None and Path(folder).resolve() == Path(user).resolve()
        fix = (
            f'julia --project={folder} -e \'using Pkg; Pkg.add(name="{name}", '
            f'version="{last}")\' moves it there'
        )
        if not theirs:
            fix = f"{fix}, or python -c 'import juliapkg; juliapkg.resolve(force=True)'"
        owner = "your Julia environment" if theirs else "the Julia environment"
        return (
            f"{name} {found[0]} in {owner} ({where}) lies outside weanj's bound {bound!r} "
            f"for it ({need['declared']}); stacked on the load path, that is the {name} "
            f"Julia would load: {fix}"
        )
    return None
