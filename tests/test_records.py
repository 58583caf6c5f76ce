"""Evaluation records (docs/DESIGN.md, "Evaluation records"): `weanj check` reuses an
evaluation whose inputs, code and versions did not change, recomputes it the moment one of
them changes, and says which and why.

A user project outside the repository, run as a user runs it (a fresh `weanj check` per
step, in its folder), holds two examples: `21-one` (its module imports a helper module of
the project) and `22-two`. Which evaluations a run reused is read from the check file it
leaves (`results/<ex>/check.json`, the judgement's data: `reuse`), not from its text.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from .projects import weanj_here, weanj_in, write_project

HELPER = """\
def scale():
    return 1.0
"""

ONE = """\
import jax.numpy as jnp
import numpy as np
import weanj
from kernels.helper import scale

ex = weanj.register_example(weanj.Example(
    name="21-one", arrays=("x",), wrt="x", params=(weanj.Param("S", default=2),),
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(8)},
))


@weanj.jax_variant(ex, "jax-a", family="f")
def a(x, S):
    return jnp.sum((S * scale()) * x**2)


@weanj.jax_variant(ex, "jax-b", family="f")
def b(x, S):
    return jnp.sum(S * x * x)
"""

TWO = """\
import jax.numpy as jnp
import numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="22-two", arrays=("y",), wrt="y",
    generate=lambda seed: {"y": np.random.default_rng(seed).standard_normal(8)},
))


@weanj.jax_variant(ex, "jax-c", family="g")
def c(y):
    return jnp.sum(jnp.sin(y))


@weanj.jax_variant(ex, "jax-d", family="g")
def d(y):
    return jnp.sum(jnp.sin(y) * 1.0)
"""


def _check(root: Path, *args: str, here: bool = False):
    """`weanj check --dtype float64 ARGS` in the folder `root`: a fresh process, or with
    `here`, this process as a fresh one runs it (`weanj_here`)."""
    r = (weanj_here if here else weanj_in)(root, "check", "--dtype", "float64", *args)
    assert "Traceback" not in r.stderr, r.stderr
    reuse = {}
    for ex in ("21-one", "22-two"):
        data = json.loads((root / "results" / ex / "check.json").read_text())
        reuse[ex] = data["reuse"]
    return r, reuse


def _reused(reuse: dict, ex: str) -> set[str]:
    return {label for label, how in reuse[ex].items() if how.startswith("reused")}


def _write(root: Path) -> Path:
    """The project of `21-one` and `22-two` in `root`, its inputs written."""
    write_project(root, {"kernels/helper.py": HELPER, "kernels/one.py": ONE, "kernels/two.py": TWO})
    # kernels.helper is a project module, not an example module: list only the examples
    (root / "pyproject.toml").write_text(
        '[tool.weanj]\nexamples = ["kernels.one", "kernels.two"]\n'
    )
    return root


@pytest.fixture
def project(tmp_path):
    return _write(tmp_path)


@pytest.mark.slow  # six checks of two examples; the copy, clone and tamper tests run by default
def test_reuse_follows_the_code_and_the_inputs_each_example_depends_on(project):
    """One user's sequence of edits, each step a fresh `weanj check` (records on disk)."""
    first, reuse = _check(project)
    assert first.returncode == 0, first.stdout + first.stderr
    assert _reused(reuse, "21-one") == _reused(reuse, "22-two") == set()
    # nothing changed: every evaluation reused, the same verdicts, the checks judged afresh
    again, reuse = _check(project)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _reused(reuse, "21-one") == {"jax-a", "jax-b"}
    assert _reused(reuse, "22-two") == {"jax-c", "jax-d"}
    assert "evaluations: reused 4 of 4" in again.stdout
    for ex in ("21-one", "22-two"):
        data = json.loads((project / "results" / ex / "check.json").read_text())
        assert data["verdict"] == "ok"
        assert {c["kind"] for c in data["checks"]} == {"taylor", "jvp"}
        assert all(c["verdict"] == "ok" for c in data["checks"]), data["checks"]
    # a helper module that 21-one's module imports: 21-one only
    helper = project / "kernels" / "helper.py"
    helper.write_text("def scale():\n    return 1.0  # edited\n")
    _, reuse = _check(project)
    assert _reused(reuse, "21-one") == set()
    assert reuse["21-one"]["jax-a"] == (
        "recomputed: its example's module, or a module it imports, changed"
    )
    assert _reused(reuse, "22-two") == {"jax-c", "jax-d"}
    # a planted bug in one variant of 21-one: recomputed and FAIL on that very run; the
    # other example's module is untouched, so nothing of it is recomputed
    one = project / "kernels" / "one.py"
    one.write_text(
        one.read_text().replace("return jnp.sum(S * x * x)", "return jnp.sum(S * x * x * 1.001)")
    )
    r, reuse = _check(project)
    assert r.returncode == 1, r.stdout + r.stderr
    assert _reused(reuse, "21-one") == set() and _reused(reuse, "22-two") == {"jax-c", "jax-d"}
    data = json.loads((project / "results" / "21-one" / "check.json").read_text())
    pair = next(p for p in data["pairs"] if p["case"] == "21-one::f::jax-a~jax-b")
    assert pair["verdict"] == "FAIL"
    losses = {g["label"]: g["loss"] for g in data["gradients"]}
    assert losses["jax-b"] == pytest.approx(1.001 * losses["jax-a"], rel=1e-12)
    # 22-two's own module edited: nothing of 21-one recomputed; its inputs regenerated from
    # another seed, a truncated record and a tampered one: each recomputed, saying why
    two = project / "kernels" / "two.py"
    two.write_text(TWO + "\n# an edit\n")
    folder = project / "results" / "22-two" / "evaluations"
    truncated, tampered = folder / "jax-c.npz", folder / "jax-d.npz"
    truncated.write_bytes(truncated.read_bytes()[:100])
    with np.load(tampered, allow_pickle=False) as stored:
        arrays = {k: np.array(stored[k]) for k in stored.files}
    arrays["g_y"] = arrays["g_y"] + 1.0  # values no longer match their recorded sha256
    with open(tampered, "wb") as f:
        np.savez(f, **arrays)
    r, reuse = _check(project)
    assert _reused(reuse, "21-one") == {"jax-a", "jax-b"}
    assert reuse["22-two"] == {
        "jax-c": "recomputed: its record was unusable",
        "jax-d": "recomputed: its record was unusable",
    }
    notes = [line for line in r.stdout.splitlines() if "discarded" in line]
    assert len(notes) == 1 and "discarded 2 evaluation record(s)" in notes[0], r.stdout
    assert "e.g. 22-two jax-" in notes[0] and "other reason" in notes[0], notes
    one.write_text(ONE.replace('name="21-one",', 'name="21-one", seed=7,'))
    assert weanj_in(project, "inputs", "regenerate", "21-one").returncode == 0
    _, reuse = _check(project)
    assert reuse["21-one"]["jax-a"] == (
        "recomputed: the inputs changed (arrays, parameters or dtype)"
    )
    # a parameter's default changed: the inputs file still holds S = 2, so no command runs
    # at either value until the inputs are regenerated; then everything of 21-one is
    # recomputed at S = 3
    one.write_text(
        one.read_text().replace('weanj.Param("S", default=2)', 'weanj.Param("S", default=3)')
    )
    r = weanj_in(project, "check", "--dtype", "float64")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "holds S = 2 where 21-one registers S = 3" in r.stderr, r.stderr
    assert "weanj inputs regenerate 21-one" in r.stderr
    assert weanj_in(project, "inputs", "regenerate", "21-one").returncode == 0
    r, reuse = _check(project)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _reused(reuse, "21-one") == set() and _reused(reuse, "22-two") == {"jax-c", "jax-d"}
    data = json.loads((project / "results" / "21-one" / "check.json").read_text())
    with h5py.File(project / "shared_inputs" / "21-one.h5", "r") as f:
        x, S = f["x"][()], f.attrs["S"]
    assert S == 3
    losses = {g["label"]: g["loss"] for g in data["gradients"]}
    assert losses["jax-a"] == pytest.approx(3 * np.sum(x * x), rel=1e-12)
    # --fresh recomputes everything
    _, reuse = _check(project, "--fresh")
    assert _reused(reuse, "21-one") == _reused(reuse, "22-two") == set()


# --- the key, in process ----------------------------------------------------------------------


@pytest.fixture
def key_parts(project, monkeypatch):
    """`(parts, variant, inputs)`: the key of 22-two's jax-c, computed in this process as a
    fresh check would (the project's modules imported as the registry imports them)."""
    from weanj import _registry
    from weanj._pipeline.records._records import Records
    from weanj._places import Places
    from weanj._project import project_config
    from weanj._registry import _loading

    monkeypatch.syspath_prepend(str(project))
    try:
        _loading.import_example_module("kernels.two", "a test")
        cat = _registry.catalog("22-two")
        v = cat.find("jax-c")
        from weanj._io._inputs import read_inputs

        records = Records(Places(project), project_config(project))
        inputs = read_inputs(cat.example, Places(project))
        yield records, v, inputs
    finally:
        _registry.unregister_example("22-two")
        for name in [m for m in sys.modules if m == "kernels" or m.startswith("kernels.")]:
            del sys.modules[name]


def test_the_key_holds_inputs_parameters_dtype_and_versions(key_parts, monkeypatch):
    from weanj._pipeline.records import _record_key

    records, v, inputs = key_parts
    base = records.parts(v, inputs, "float64")
    assert records.parts(v, inputs, "float64") == base  # nothing changed: the same key
    assert _record_key.why_changed(base, base) is None
    assert _record_key.why_changed(base, records.parts(v, inputs, "float32")) == (
        "the inputs changed (arrays, parameters or dtype)"
    )
    assert base["code"] == records._key.code_of(v) and len(base["code"]) == 64
    real = _record_key.core_versions
    monkeypatch.setattr(_record_key, "core_versions", lambda: {**real(), "jax": "99.0.0"})
    other = records.parts(v, inputs, "float64")
    assert _record_key.why_changed(base, other).startswith("jax changed (")
    monkeypatch.setattr(_record_key, "core_versions", real)
    config_changed = {**base, "config": "0" * 64}
    assert _record_key.why_changed(base, config_changed) == "[tool.weanj] changed"


def test_the_code_is_every_project_file_the_module_reaches(project):
    from weanj._sources import reachable_files

    (project / "kernels" / "deep.py").write_text("X = 1\n")
    (project / "kernels" / "helper.py").write_text("from kernels import deep\n" + HELPER)
    import subprocess

    from .helpers import PYTHON

    # resolved in a fresh process, so that nothing of this one's imports counts
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, '.');"
        "from weanj._sources import reachable_files;"
        "print('\\n'.join(str(p.relative_to(Path.cwd())) for p in "
        "reachable_files('kernels.one', (Path.cwd().resolve(),))))"
    )
    r = subprocess.run(
        [PYTHON, "-c", code], cwd=project, capture_output=True, text=True, check=False
    )
    assert r.returncode == 0, r.stderr
    assert set(r.stdout.split()) == {
        "kernels/__init__.py",
        "kernels/one.py",
        "kernels/helper.py",
        "kernels/deep.py",
    }
    assert reachable_files  # the function under test is importable without running a project


# --- records that are not what weanj wrote: discarded, recomputed, never believed ------------

# `31-port`: a correct port `jax-good` of the reference `jax-ref`, and a wrong one
# (`jax-wrong`: its gradient 1e-3 off at x[2]). A correct judgement: jax-ref~jax-good ok,
# jax-ref~jax-wrong FAIL, whatever the records on disk say.
PORT = """\
import jax
import jax.numpy as jnp
import numpy as np
import weanj

ex = weanj.register_example(weanj.Example(
    name="31-port", arrays=("x",), wrt="x",
    generate=lambda seed: {"x": np.random.default_rng(seed).standard_normal(6)},
))


def loss(x):
    return jnp.sum(jnp.sin(x) * x)


weanj.jax_variant(ex, "jax-ref", family="f", loss=loss)
weanj.jax_variant(ex, "jax-good", family="f")(lambda x: jnp.sum(x * jnp.sin(x)))
weanj.jax_variant(
    ex, "jax-wrong", family="f", grad=lambda x: jax.grad(loss)(x).at[2].multiply(1.001)
)(loss)
"""


def _digest(data) -> str:
    import hashlib

    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def _array_digest(a) -> str:
    import hashlib

    a = np.asarray(a)
    return hashlib.sha256(np.ascontiguousarray(a, a.dtype.newbyteorder("<")).tobytes()).hexdigest()


def _open_record(path: Path) -> tuple[dict, dict]:
    with np.load(path, allow_pickle=False) as data:
        record = json.loads(str(data["record"][()]))
        arrays = {k: np.array(data[k]) for k in data.files if k != "record"}
    return record, arrays


def _write_record(path: Path, record: dict, arrays: dict, *, forge: bool = False) -> None:
    """Write a record file; `forge`: with its arrays' and payload digests made to match
    what it now holds (so that only its form or its key can give it away)."""
    if forge:
        for field, prefix in (("sha256", "g_"), ("noise_sha256", "n_")):  # gradients, levels
            if field in record:
                found = {k[2:]: a for k, a in arrays.items() if k.startswith(prefix)}
                record[field] = {k: _array_digest(a) for k, a in found.items()}
        record["payload"] = _digest({k: v for k, v in record.items() if k != "payload"})
    with open(path, "wb") as f:
        np.savez(f, record=np.array(json.dumps(record)), **arrays)


def _bomb(path: Path, record: dict) -> None:
    """A record whose gradient member is 1.5e8 float64 zeros, deflated to a few MB: a zip of
    the members `zipfile` would write (the same names, sizes and crc, deflated), written by
    hand so that the zeros are not deflated 1.2 GB over. Each 8 MiB block of zeros is
    deflated from a reset state (a full flush), so every block gives the same bytes:
    deflated once (twice, to see that it does), those bytes are repeated."""
    import io
    import struct
    import zlib

    n = 150_000_000
    members = []
    for name, zeros in (("record.npy", 0), ("g_x.npy", n * 8)):
        text = io.BytesIO()
        if zeros:
            header = {"descr": "<f8", "fortran_order": False, "shape": (n,)}
            np.lib.format.write_array_header_1_0(text, header)
        else:
            np.lib.format.write_array(text, np.array(json.dumps(record)))
        text = text.getvalue()
        deflate = zlib.compressobj(1, zlib.DEFLATED, -15)  # as zipfile's compresslevel=1
        data = [deflate.compress(text) + deflate.flush(zlib.Z_FULL_FLUSH)]
        crc = zlib.crc32(text)
        block = bytes(2**23)
        blocks, rest = divmod(zeros, len(block))
        if blocks:
            once = deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH)
            assert deflate.compress(block) + deflate.flush(zlib.Z_FULL_FLUSH) == once
            data.append(once * blocks)
            for _ in range(blocks):
                crc = zlib.crc32(block, crc)
        data.append(deflate.compress(bytes(rest)) + deflate.flush())
        crc = zlib.crc32(bytes(rest), crc)
        members.append((name.encode(), b"".join(data), crc, len(text) + zeros))
    with open(path, "wb") as f:  # local headers and data, the central directory, its end
        central = []
        for name, data, crc, size in members:
            # flags, deflated, 00:00 on 1980-01-01, crc, sizes, the name's length
            fields = (0, 8, 0, 0x21, crc, len(data), size, len(name))
            entry = struct.pack(
                "<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, *fields, 0, 0, 0, 0, 0, f.tell()
            )
            central.append(entry + name)
            f.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, *fields, 0) + name + data)
        start = f.tell()
        f.write(b"".join(central))
        end = (0, 0, len(members), len(members), f.tell() - start, start, 0)
        f.write(struct.pack("<IHHHHIIH", 0x06054B50, *end))


def _tamper(kind: str, folder: Path) -> str:
    """Apply one tamper case to the records in `folder`; returns the label it hits."""
    good, wrong = folder / "jax-good.npz", folder / "jax-wrong.npz"
    record, arrays = _open_record(good)
    if kind == "loss":
        record["loss"] *= 2
    elif kind == "checks":
        result = record["checks"]["taylor::x"]["result"]
        result["directions"][0]["slope"] = 1.0
    elif kind == "fault":
        for k in ("loss", "noise", "sha256", "noise_sha256"):
            del record[k]
        record["fault"] = {"verdict": "error", "what": "jax-good raised", "command": ""}
        arrays = {}
    elif kind == "shape":
        _write_record(good, record, {**arrays, "g_x": arrays["g_x"][:4]}, forge=True)
        return "jax-good"
    elif kind in ("levels edited", "levels negative"):  # each entry's rounding level
        arrays["n_x"] = arrays["n_x"] * (2 if kind == "levels edited" else -1)
        _write_record(good, record, arrays, forge=kind == "levels negative")
        return "jax-good"
    elif kind == "nan":
        arrays["g_x"][1] = np.nan
        _write_record(good, record, arrays, forge=True)
        return "jax-good"
    elif kind in ("copied", "relabelled"):
        if kind == "relabelled":
            record["variant"] = record["parts"]["variant"] = "jax-wrong"
            _write_record(wrong, record, arrays, forge=True)
        else:
            wrong.write_bytes(good.read_bytes())
        return "jax-wrong"
    elif kind == "seconds as text":
        record["seconds"] = "0.1"
    elif kind == "noise a list":
        record["noise"] = [0.0]
    elif kind == "junk in checks":
        record["checks"]["jvp::x"] = {"result": "junk"}
    elif kind == "directions as text":
        record["checks"]["taylor::x"]["result"]["directions"] = "many"
    elif kind in ("integer arrays", "string arrays"):
        arrays["g_x"] = arrays["g_x"].astype(np.int64 if kind == "integer arrays" else "U8")
        _write_record(good, record, arrays, forge=True)
        return "jax-good"
    elif kind == "another dtype":
        good.write_bytes((folder / "jax-good@float32.npz").read_bytes())
        return "jax-good"
    elif kind == "bomb":
        record.pop("noise_sha256")  # a record without its entries' levels: g_x alone
        _bomb(good, record)
        return "jax-good"
    wrote = kind in ("seconds as text", "noise a list", "junk in checks", "directions as text")
    _write_record(good, record, arrays, forge=wrote)  # a plain edit keeps the old payload
    return "jax-good"


# each tamper case, and what the one line says of it
TAMPERS = {
    "loss": "its contents do not match their recorded digest (edited?)",
    "checks": "its contents do not match their recorded digest (edited?)",
    "fault": "its contents do not match their recorded digest (edited?)",
    "shape": "x has shape (4,), not (6,)",
    "nan": "the gradient of x is not finite",
    "levels edited": "the rounding levels of x do not match their sha256",
    "levels negative": "the rounding levels of x are not finite and positive",
    "copied": "it records another variant (jax-good)",
    "relabelled": "its key is not the one its parts give",
    "seconds as text": "its seconds are not a number",
    "noise a list": "its rounding levels are malformed",
    "junk in checks": "its jvp check numbers are malformed",
    "directions as text": "its taylor check numbers are malformed",
    "integer arrays": "x is of dtype int64, not float64",
    "string arrays": "x is of dtype <U8, not float64",
    "another dtype": "it records another dtype (float32)",
    "bomb": "x has shape (150000000,), not (6,)",
}


@pytest.fixture(scope="module")
def port_project(tmp_path_factory):
    """The project of `31-port`, checked once in both dtypes (its records written), loaded
    in this process; yields `(root, pristine records)`."""
    from .projects import loaded

    root = write_project(tmp_path_factory.mktemp("port"), {"kernels/port.py": PORT})
    with loaded(root, "kernels.port"):
        import weanj

        first = weanj.check(["31-port"], dtype="both", say=lambda line: None)
        assert not first.ok
        folder = root / "results" / "31-port" / "evaluations"
        pristine = {p.name: p.read_bytes() for p in folder.iterdir()}
        assert {"jax-good.npz", "jax-wrong.npz", "jax-good@float32.npz"} <= set(pristine)
        yield root, pristine


RIGHT = {"jax-ref~jax-good": "ok", "jax-ref~jax-wrong": "FAIL", "jax-good~jax-wrong": "FAIL"}


def _verdicts(root: Path) -> dict[str, str]:
    data = json.loads((root / "results" / "31-port" / "check.json").read_text())
    return {p["case"].rsplit("::", 1)[-1]: p["verdict"] for p in data["pairs"]}


# Of each family of tampering (an edit under the digest, a malformed field, a wrong array),
# some cases run by default and their siblings with `-m slow`.
SLOW_TAMPERS = (
    "levels negative",
    "checks",
    "fault",
    "noise a list",
    "junk in checks",
    "directions as text",
    "string arrays",
)


@pytest.mark.parametrize(
    "kind",
    [pytest.param(k, marks=pytest.mark.slow) if k in SLOW_TAMPERS else k for k in TAMPERS],
)
def test_a_record_not_as_weanj_wrote_it_is_recomputed_with_one_line(port_project, kind):
    import weanj

    root, pristine = port_project
    folder = root / "results" / "31-port" / "evaluations"
    for name, data in pristine.items():
        (folder / name).write_bytes(data)
    label = _tamper(kind, folder)
    j = weanj.check(["31-port"], dtype="float64", say=lambda line: None)
    assert _verdicts(root) == RIGHT
    assert not j.ok
    notes = [n for n in j.notes if "discarded" in n]
    assert len(notes) == 1 and "\n" not in notes[0], j.notes
    assert notes[0].startswith("note: discarded 1 evaluation record(s): ")
    assert f"{TAMPERS[kind]}, e.g. 31-port {label}; recomputed" in notes[0], notes
    reuse = json.loads((root / "results" / "31-port" / "check.json").read_text())["reuse"]
    assert reuse[label] == "recomputed: its record was unusable"
    assert {k for k, v in reuse.items() if v.startswith("reused")} == (
        {"jax-ref", "jax-good", "jax-wrong"} - {label}
    )
    # the recomputed record is written again, as weanj writes it: the next check reuses all
    again = weanj.check(["31-port"], dtype="float64", say=lambda line: None)
    assert not any("discarded" in n for n in again.notes), again.notes
    assert _verdicts(root) == RIGHT


# --- relocatable: a copied or cloned project reuses every evaluation -------------------------


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> Path:
    """The project, checked once in this process (`_check(here=True)`): its evaluation
    records on disk. The tests that relocate it copy it first; none changes it."""
    root = _write(tmp_path_factory.mktemp("checked"))
    r, _ = _check(root, here=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return root


def _all_reused(root: Path) -> None:
    """A check of `root` in a fresh process (what it reuses is what is on disk) reuses every
    evaluation (the checks that wrote them run in this process, `_check(here=True)`)."""
    r, reuse = _check(root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert _reused(reuse, "21-one") == {"jax-a", "jax-b"}, reuse
    assert _reused(reuse, "22-two") == {"jax-c", "jax-d"}, reuse
    assert "discarded" not in r.stdout and "evaluations: reused 4 of 4" in r.stdout, r.stdout


def test_a_copied_project_reuses_every_evaluation(checked, tmp_path_factory):
    import shutil

    copy = tmp_path_factory.mktemp("elsewhere") / "copied project"
    shutil.copytree(checked, copy, symlinks=True)  # `cp -r`
    _all_reused(copy)


def test_a_cloned_project_reuses_every_evaluation(checked, tmp_path_factory):
    import shutil
    import subprocess

    def git(*args, cwd):
        r = subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=cwd, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        return r

    # the checked project, as its own folder (the module's stays as it is)
    project = tmp_path_factory.mktemp("own") / "project"
    shutil.copytree(checked, project, symlinks=True)
    git("init", "-q", cwd=project)
    git("add", "-A", cwd=project)
    git("add", "-f", "results", cwd=project)  # run outputs are ignored in a new project
    git("commit", "-q", "-m", "a project with its evaluations", cwd=project)
    clone = tmp_path_factory.mktemp("ci") / "checkout"
    git("clone", "-q", str(project), str(clone), cwd=project.parent)
    assert (clone / "results" / "22-two" / "evaluations" / "jax-c.npz").is_file()
    _all_reused(clone)


def test_concurrent_checks_never_leave_or_read_half_a_record(project):
    """Two `weanj check`s of one project at once: both judge as one would, and what they
    leave is whole (the next check reuses every evaluation, discarding none)."""
    import subprocess

    from .helpers import PYTHON
    from .projects import user_env

    command = [PYTHON, "-m", "weanj", "check", "--dtype", "float64"]
    runs = [
        subprocess.Popen(
            command, cwd=project, env=user_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    for p in runs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0 and b"Traceback" not in err, (out + err).decode()
    _all_reused(project)
