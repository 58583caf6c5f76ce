"""The environments on the worker's load path checked against weanj's bounds before
anything loads (issue 63): with the user's environment stacked above weanj's, a package
both hold loads at the user's version, so each package weanj needs (its juliapkg.json,
WeanJ's Project.toml, the AD packages the variants use) is looked up as Julia looks it up
(`_julia_bounds`, after Julia's base/loading.jl) and a version outside its bound is one
line naming the package, the version, the file it came from and the bound.

The lookup is tested on manifests written here; the whole start on weanj's own worker
program with the stand-in juliacall (`tests/stand_ins/juliacall`, whose load path is the
stacked environment above `$WEANJ_TEST_WEANJ_ENVIRONMENT`). No Julia runs here.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import weanj
from weanj._backends import _julia_env
from weanj._backends._julia_bounds import located, stacked_refusal, weanj_bounds

from . import julia_helpers
from .julia_helpers import one_line
from .test_julia_worker import fake, no_worker  # noqa: F401 (fixtures)

new_example = julia_helpers.new_example
REPO = Path(__file__).resolve().parent.parent
ENZYME = "7da242da-08ed-463a-9acd-ee780be4f1d9"
FORWARDDIFF = "f6369f11-7733-5829-9624-2563aa707210"


def environment(folder: Path, versions: dict, *, manifest: str = "Manifest.toml") -> Path:
    """A Julia environment holding `versions` (`{name: (uuid, version)}`) in a manifest of
    format 2 named `manifest`, beside a Project.toml naming them."""
    folder.mkdir(parents=True, exist_ok=True)
    deps = "".join(f'{name} = "{uuid}"\n' for name, (uuid, _) in versions.items())
    (folder / "Project.toml").write_text(f"[deps]\n{deps}")
    entries = "".join(
        f'\n[[deps.{name}]]\ndeps = ["CEnum"]\ngit-tree-sha1 = "0000"\nuuid = "{uuid}"\n'
        f'version = "{version}"\n'
        for name, (uuid, version) in versions.items()
    )
    (folder / manifest).write_text(
        f'julia_version = "1.11.5"\nmanifest_format = "2.0"\nproject_hash = "00"\n{entries}'
    )
    return folder


def test_what_weanj_needs_is_read_from_its_declarations():
    """weanj's juliapkg.json, WeanJ's [deps] with their [compat], and the AD packages in
    use: each with its bound and where it is declared."""
    ad = {name: _julia_env.AD["forwarddiff"][1:] for name in ("ForwardDiff",)}
    found = weanj_bounds(REPO / "python" / "weanj" / "juliapkg.json", REPO / "julia", ad)
    named = {(b["name"], b["declared"]): b["bound"] for b in found}
    assert named[("Enzyme", "weanj's juliapkg.json")] == "0.13"
    assert named[("Enzyme", "WeanJ's Project.toml")] == "0.13"
    assert named[("DifferentiationInterface", "WeanJ's Project.toml")] == "0.7"
    assert named[("ADTypes", "WeanJ's Project.toml")] == "1"
    assert named[("ForwardDiff", "julia_variant(ad=...)")] == "0.10.36, 1"
    assert {b["uuid"] for b in found if b["name"] == "Enzyme"} == {ENZYME}


def test_the_first_environment_holding_a_package_is_the_one_julia_loads_it_from(tmp_path):
    """Julia's order (`locate_package_env`): the first environment of the load path whose
    manifest holds the package's UUID; a later one's version does not matter."""
    user = environment(tmp_path / "user", {"Enzyme": (ENZYME, "0.12.36")})
    weanj_env = environment(tmp_path / "weanj", {"Enzyme": (ENZYME, "0.13.30")})
    bounds = [{"name": "Enzyme", "uuid": ENZYME, "bound": "0.13", "declared": "juliapkg.json"}]
    load_path = [str(user / "Project.toml"), str(weanj_env / "Project.toml")]
    refused = stacked_refusal(load_path, bounds, (1, 11, 5), str(user))
    assert one_line(refused).startswith(
        f"Enzyme 0.12.36 in your Julia environment ({user / 'Manifest.toml'}) lies outside "
        "weanj's bound '0.13' for it (juliapkg.json)"
    )
    assert f'julia --project={user} -e \'using Pkg; Pkg.add(name="Enzyme", version="0.13")\'' in (
        refused
    )
    assert stacked_refusal(load_path[::-1], bounds, (1, 11, 5), str(user)) is None
    # a package no environment holds is not checked here (loading it says why)
    assert stacked_refusal([str(tmp_path / "nowhere")], bounds, (1, 11, 5), None) is None


def test_the_manifest_julia_reads_is_the_one_checked(tmp_path):
    """The versioned manifest of the running Julia's minor version first (Julia 1.11 on),
    the project's own `manifest` entry before any, and the first format's top-level
    entries; the package's own project where the environment is the package."""
    env = environment(tmp_path / "env", {"Enzyme": (ENZYME, "0.13.1")})
    environment(env, {"Enzyme": (ENZYME, "0.12.1")}, manifest="Manifest-v1.11.toml")
    assert located(str(env), ENZYME, (1, 11, 2)) == ("0.12.1", str(env / "Manifest-v1.11.toml"))
    assert located(str(env), ENZYME, (1, 10, 9)) == ("0.13.1", str(env / "Manifest.toml"))
    old = tmp_path / "old"
    old.mkdir()
    (old / "Project.toml").write_text('manifest = "deps/M.toml"\n')
    (old / "deps").mkdir()
    (old / "deps" / "M.toml").write_text(f'[[Enzyme]]\nuuid = "{ENZYME}"\nversion = "0.11.0"\n')
    assert located(str(old / "Project.toml"), ENZYME, (1, 12, 0)) == (
        "0.11.0",
        str(old / "deps" / "M.toml"),
    )
    package = tmp_path / "Enzyme"
    package.mkdir()
    (package / "Project.toml").write_text(
        f'name = "Enzyme"\nuuid = "{ENZYME}"\nversion = "0.9.0"\n'
    )
    assert located(str(package), ENZYME, (1, 11, 0)) == ("0.9.0", str(package / "Project.toml"))
    assert located(str(tmp_path / "empty"), ENZYME, (1, 11, 0)) is None


@pytest.fixture
def stacked(fake, new_example, monkeypatch):  # noqa: F811 (the fixture imported above)
    """`stack(user_versions, name, ad)`: the project's `[tool.weanj.julia] project` an
    environment holding `user_versions` above weanj's (Enzyme 0.13.30, ForwardDiff
    1.4.5), and a Julia variant of a stand-in kernel file with `ad`."""
    weanj_env = environment(
        fake.root / "weanj_env",
        {"Enzyme": (ENZYME, "0.13.30"), "ForwardDiff": (FORWARDDIFF, "1.4.5")},
    )
    monkeypatch.setenv("WEANJ_TEST_WEANJ_ENVIRONMENT", str(weanj_env))
    fake.kernels(
        "import numpy as np\nKERNELS = {'f.jl': {'f': (lambda x: x.dtype.type(np.sum(x**2)), "
        "lambda x: [2 * x])}}\n"
    )
    (fake.root / "f.jl").write_text("# a stand-in reads no Julia\n")
    ex = new_example("92-f", arrays=("x",), wrt="x")

    def stack(user_versions: dict, name: str = "julia-f", ad=None):
        user = environment(fake.root / "user", user_versions)
        (fake.root / "pyproject.toml").write_text(
            '[tool.weanj]\nexamples = []\n\n[tool.weanj.julia]\nproject = "user"\n'
        )
        return user, weanj.julia_variant(ex, name, family="f", loss="f", file="f.jl", ad=ad)

    return stack


def test_a_stacked_environment_with_enzyme_outside_the_bound_is_one_line(fake, stacked):  # noqa: F811
    """Issue 63's acceptance: Enzyme 0.12 in the user's environment, above weanj's 0.13:
    the Julia variants are unavailable, one line naming both (the version and its file,
    and weanj's bound), before Enzyme or WeanJ is loaded."""
    user, v = stacked({"Enzyme": (ENZYME, "0.12.36")})
    with pytest.raises(weanj.UnavailableError) as caught:
        v.loss(np.ones(3))
    message = one_line(str(caught.value))
    assert f"Enzyme 0.12.36 in your Julia environment ({user / 'Manifest.toml'})" in message
    assert "weanj's bound '0.13' for it (weanj's juliapkg.json)" in message
    assert "log: " in message
    (stack,) = fake.calls("stack")
    assert stack["environment"] == str(user)
    codes = [c["code"] for c in fake.calls("seval")]
    assert "import Enzyme" not in codes and "using WeanJ" not in codes


def test_an_ad_package_outside_its_bound_is_checked_when_a_variant_uses_it(stacked):
    """ForwardDiff 0.10.30 in the user's environment: nothing to check while no variant
    uses it; refused, naming the bound `julia_variant(ad=...)` declares, once one does."""
    _, v = stacked({"ForwardDiff": (FORWARDDIFF, "0.10.30")})
    assert v.loss(np.ones(3)) == 3.0
    julia_helpers.forget_julia()
    _, v = stacked({"ForwardDiff": (FORWARDDIFF, "0.10.30")}, "julia-fd", ad="forwarddiff")
    with pytest.raises(weanj.UnavailableError) as caught:
        v.loss(np.ones(3))
    message = one_line(str(caught.value))
    assert "ForwardDiff 0.10.30 in your Julia environment" in message
    assert "weanj's bound '0.10.36, 1' for it (julia_variant(ad=...))" in message
    assert 'Pkg.add(name="ForwardDiff", version="1")' in message


def test_versions_inside_the_bounds_start_as_usual(fake, stacked):  # noqa: F811
    _, v = stacked({"Enzyme": (ENZYME, "0.13.99"), "ForwardDiff": (FORWARDDIFF, "0.10.38")})
    assert v.loss(np.ones(3)) == 3.0
    codes = [c["code"] for c in fake.calls("seval")]
    assert (
        codes.index("Base.load_path()") < codes.index("import Enzyme") < codes.index("using WeanJ")
    )
