"""A check judges the code on disk (issue 70, item 2): in one process (a notebook's), a
`weanj.check()` after an edit of an example module, or of a module it imports, judges the
edited code: the module is reloaded (said in one line), its old registrations withdrawn
first, its x64 learnt again. Before, the second check was `ok` in 0.9 s, judged (and its
evaluations reused) on the code of before the edit.

The project: `kernels/ops.py` (a smoothing step) imported by `kernels/heat.py`, whose
reference `jax-ref` smooths with it and whose port `jax-port` writes the step out, wrong
(a centre weight of 2.5 for 2). The losses are held against numpy's, computed here.
"""

from __future__ import annotations

import json

import numpy as np

from .projects import pyproject, run_in, write_project

OPS = """\
import jax.numpy as jnp


def step(u):
    return (jnp.roll(u, 1) + 2 * u + jnp.roll(u, -1)) / 4
"""

HEAT = """\
import jax
import jax.numpy as jnp
import numpy as np
import weanj

from kernels.ops import step

jax.config.update("jax_enable_x64", True)

ex = weanj.register_example(weanj.Example(
    name="40-heat", arrays=("u",), wrt="u", params=(weanj.Param("T", 3),),
    generate=lambda seed: {"u": np.random.default_rng(seed).standard_normal(8)},
))


@weanj.jax_variant(ex, "jax-ref", family="h")
def ref(u, T):
    for _ in range(T):
        u = step(u)
    return jnp.sum(u ** 2)


@weanj.jax_variant(ex, "jax-port", family="h")
def port(u, T):
    for _ in range(T):
        u = (jnp.roll(u, 1) + 2.5 * u + jnp.roll(u, -1)) / 4
    return jnp.sum(u ** 2)
"""

# Another module adds a variant to 40-heat by its name, without importing kernels.heat:
# reloading kernels.heat withdraws the example, so this module is reloaded with it.
EXTRA = """\
import jax
import jax.numpy as jnp
import weanj

jax.config.update("jax_enable_x64", True)

weanj.jax_variant("40-heat", "jax-extra", family="x", loss=lambda u, T: T * jnp.sum(u ** 2))
"""

# One process: a check, an edit, a check, ... (the verdict of the pair and both losses
# after each, and the lines the checks said).
NOTEBOOK = """\
import json, os
from pathlib import Path
import weanj

heat, ops = Path("kernels/heat.py"), Path("kernels/ops.py")
said, out = [], []


def check(what):
    try:
        j = weanj.check("40-heat", dtype="float64", say=said.append)["40-heat"]
    except weanj.WeanjError as e:
        out.append([what, "refused", str(e)])
        return
    pair = [str(c.verdict) for c in j.judgements if c.kind == "pair" and c.family == "h"]
    runs = sorted({str(c.verdict) for c in j.judgements if c.kind == "run"})
    out.append([what, pair, runs, {k: g.loss for k, g in j.subjects.items()}])


check("wrong port")
heat.write_text(heat.read_text().replace("2.5 * u", "2 * u"))
check("port fixed")
# the same size, and the same time of change: an edit within the second of the last one,
# which Python's cached bytecode (its size and second) does not tell from the file it had
was = ops.stat()
ops.write_text(ops.read_text().replace("2 * u", "3 * u"))
os.utime(ops, ns=(was.st_atime_ns, was.st_mtime_ns))
check("helper broken")
good = heat.read_text()
heat.write_text(good.replace("def port(u, T):", "def port(u, T)"))
check("syntax error")
heat.write_text(good)
ops.write_text(ops.read_text().replace("3 * u", "2 * u"))
check("all fixed")
heat.write_text(good.replace('"jax_enable_x64", True', '"jax_enable_x64", False'))
check("x64 off")
print(json.dumps({"checks": out, "said": said}))
"""


def _loss(u: np.ndarray, T: int, centre: float) -> float:
    for _ in range(T):
        u = (np.roll(u, 1) + centre * u + np.roll(u, -1)) / 4
    return float(np.sum(u**2))


def test_a_module_edited_between_two_checks_is_judged_as_edited(tmp_path):
    files = {"kernels/ops.py": OPS, "kernels/heat.py": HEAT, "kernels/extra.py": EXTRA}
    root = write_project(tmp_path, files)
    (root / "pyproject.toml").write_text(pyproject("kernels.heat", "kernels.extra"))
    done = run_in(root, "-c", NOTEBOOK)
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    checks = {what: rest for what, *rest in found["checks"]}
    u = np.random.default_rng(0).standard_normal(8)  # the example's shared inputs (seed 0)
    import h5py

    with h5py.File(root / "shared_inputs" / "40-heat.h5") as f:
        np.testing.assert_array_equal(f["u"][()], u)

    def losses(ref: float, port: float) -> dict:
        extra = 3 * float(np.sum(u**2))
        return {"jax-ref": _loss(u, 3, ref), "jax-port": _loss(u, 3, port), "jax-extra": extra}

    for what, verdict, (ref, port) in (
        ("wrong port", "FAIL", (2, 2.5)),
        ("port fixed", "ok", (2, 2)),  # the edit judged, not the import
        ("helper broken", "FAIL", (3, 2)),  # an edit of a module it imports: the reverse
        ("all fixed", "ok", (2, 2)),
    ):
        pair, runs, got = checks[what]
        assert pair == [verdict] and runs == ["ok"], (what, pair, runs)
        for label, expected in losses(ref, port).items():
            np.testing.assert_allclose(got[label], expected, rtol=1e-13, err_msg=what)
    # its own x64 learnt again: turned off at import, its float64 runs are float32
    # programs, each its error (jax-extra's module turns it on for its own)
    pair, runs, got = checks["x64 off"]
    assert runs == ["error", "ok"] and list(got) == ["jax-extra"], (pair, runs, got)
    refused, message = checks["syntax error"]
    assert refused == "refused" and "\n" not in message, message
    assert message.startswith("example module 'kernels.heat'") and "SyntaxError" in message
    reloads = [line for line in found["said"] if "reloading" in line]
    said = (
        "weanj: note: reloading kernels.heat, kernels.extra: changed on disk since this "
        "process imported them (the check judges the code as it is now)"
    )
    assert reloads == [said] * 5, found["said"]
