"""`jax-jacobi-sharded` and `jax-rb-sharded` (`weanj/examples/_sharded.py`, issue 18).

The sharded programs perform the single-device variants' arithmetic point by point and
sum the loss on the assembled grid, so their losses and grids are bitwise those of
`jax-jacobi` / `jax-rb`; their gradients (JAX AD through the sharded iteration) agree
under the tolerance policy. Halo off-by-ones, a wrong colour offset on a block, padding
rows that leak into the domain or a reduction reassociated across devices would all
show as a difference in the last bits.

Several devices need `XLA_FLAGS=--xla_force_host_platform_device_count=N` before JAX
starts, so those cases run in subprocesses (this file run as a script, `--worker N`):
4 devices by default, 8 as well with `-m slow` (at once), each compiling every program
once and writing its results to an .npz that the tests below read. n = 30 is not
divisible by 4 or 8 (padding rows); n = 32 is; the reference-loop sizes n = 7 (4
devices) and n = 5 (8 devices: three devices hold only padding) are small enough for
`reference.py`'s Python loops. In this process JAX sees one CPU device: the variants
run on a mesh of one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import weanj

SEED = 18_2026_12  # unseen inputs: not the shared inputs' seeds
K = 6  # several iterations, so that values cross block boundaries more than once
SIZES = (30, 32)
GRID_SIZE = 30  # u^K compared too where padding rows are in play (compilations cost time)
SMALL = {4: 7, 8: 5}  # devices -> n for the reference loops
SMALL_K = 5
DEVICE_COUNTS = (4, 8)
VARIANTS = {  # sharded variant -> (its single-device sibling, reference algorithm)
    "jax-jacobi-sharded": ("jax-jacobi", "jacobi"),
    "jax-rb-sharded": ("jax-rb", "rb"),
}


def _inputs(n, seed=SEED):
    rng = np.random.default_rng((seed, n))
    return rng.standard_normal((n, n)), 0.01 * rng.standard_normal((n, n))


def _particles(P=61, n=8, seed=SEED):
    """Unseen particles for jax-cic-sharded: P (prime) is divisible by no device count."""
    rng = np.random.default_rng((seed, P))
    return rng.uniform(0, 1, (P, 2)), rng.standard_normal(P), rng.standard_normal((n, n))


def _functions(name):
    """(sharded loss, sharded solve, single-device loss, single-device solve)."""
    from weanj.examples import _sharded, gauss_seidel, jacobi

    if name == "jax-jacobi-sharded":
        return (
            _sharded.jacobi_sharded_loss,
            _sharded.jacobi_sharded_solve,
            jacobi.jacobi_loss,
            jacobi.jacobi_solve,
        )
    return (
        _sharded.rb_sharded_loss,
        _sharded.rb_sharded_solve,
        gauss_seidel.rb_loss,
        gauss_seidel.rb_solve,
    )


# --- the subprocess: every multi-device computation, once ------------------------------


def _worker(devices: int, out: str) -> None:
    from weanj.examples import _sharded

    assert jax.device_count() == devices, jax.devices()
    results: dict[str, np.ndarray] = {}

    def compiled(fn, *args, static=2):
        return jax.jit(fn, static_argnums=static).lower(*args).compile()

    with jax.enable_x64(True):  # as weanj's InX64Setting wrapper runs every variant
        for name in VARIANTS:
            loss, solve, ref_loss, ref_solve = _functions(name)
            for n in SIZES:
                theta, uobs = _inputs(n)
                key = f"{name}/{n}"
                compiled_loss = compiled(loss, theta, uobs, K)
                compiled_grad = compiled(jax.grad(loss), theta, uobs, K)
                results[f"{key}/loss"] = np.asarray(compiled_loss(theta, uobs))
                results[f"{key}/grad"] = np.asarray(compiled_grad(theta, uobs))
                results[f"{key}/loss_hlo"] = np.array(compiled_loss.as_text())
                results[f"{key}/grad_hlo"] = np.array(compiled_grad.as_text())
                if n == GRID_SIZE:
                    results[f"{key}/grid"] = np.asarray(jax.jit(solve, static_argnums=1)(theta, K))
                    results[f"{key}/ref_grid"] = np.asarray(
                        jax.jit(ref_solve, static_argnums=1)(theta, K)
                    )
                results[f"{key}/ref_loss"] = np.asarray(
                    jax.jit(ref_loss, static_argnums=2)(theta, uobs, K)
                )
                results[f"{key}/ref_grad"] = np.asarray(
                    jax.jit(jax.grad(ref_loss), static_argnums=2)(theta, uobs, K)
                )
            theta, uobs = _inputs(SMALL[devices])
            results[f"{name}/small/loss"] = np.asarray(
                jax.jit(loss, static_argnums=2)(theta, uobs, SMALL_K)
            )
            results[f"{name}/small/grad"] = np.asarray(
                jax.jit(jax.grad(loss), static_argnums=2)(theta, uobs, SMALL_K)
            )

        # The device selection is read at trace time; set_devices must force a retrace.
        loss = _sharded.jacobi_sharded_loss
        theta, uobs = _inputs(SMALL[devices])
        counts = []
        for selection in (None, 2, None):
            weanj.set_devices(selection)
            value = jax.jit(loss, static_argnums=2)(theta, uobs, SMALL_K)
            counts.append(len(value.sharding.device_set))
        results["set_devices/device_counts"] = np.array(counts)

        # jax-cic-sharded: P not divisible by the device count, against jax-scatter.
        from weanj.examples import deposition

        pos, q, rhoobs = _particles()
        for name, fn in (
            ("cic", deposition.cic_sharded_loss),
            ("scatter", deposition.scatter_loss),
        ):
            results[f"{name}/loss"] = np.asarray(jax.jit(fn)(pos, q, rhoobs))
            grads = jax.jit(jax.grad(fn, argnums=(0, 1)))(pos, q, rhoobs)
            results[f"{name}/pos"], results[f"{name}/q"] = (np.asarray(g) for g in grads)
        results["cic/hlo"] = np.array(
            jax.jit(deposition.cic_sharded_loss).lower(pos, q, rhoobs).compile().as_text()
        )
    np.savez(out, **results)


# --- the tests -------------------------------------------------------------------------


# Session-scoped (once per process, even where xdist runs this module's tests in two
# batches, which would set a module fixture up twice).
@pytest.fixture(scope="session")
def runs(request, tmp_path_factory):
    """{devices: results of `_worker(devices)`} for the device counts the selected tests
    ask for (8 devices only with `-m slow`); the subprocesses run concurrently."""
    import weanj

    wanted = {
        item.callspec.params["devices"]
        for item in request.session.items
        if Path(item.fspath) == Path(__file__) and "runs" in item.fixturenames
    }

    tmp = tmp_path_factory.mktemp("sharded")
    env = dict(os.environ)  # the subprocesses import the weanj this process imported
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(weanj.__file__).resolve().parents[1]), env.get("PYTHONPATH", "")]
    )
    procs = {}
    for devices in sorted(wanted & set(DEVICE_COUNTS)):
        # Simulated devices are CPU devices: on a machine with a GPU, JAX's default
        # platform would be the GPU's, with one device.
        env_n = dict(
            env,
            XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
            JAX_PLATFORMS="cpu",
        )
        out = tmp / f"devices-{devices}.npz"
        procs[devices] = (
            subprocess.Popen(
                [sys.executable, __file__, "--worker", str(devices), str(out)],
                env=env_n,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            ),
            out,
        )
    try:
        logs = {devices: proc.communicate(timeout=300)[0] for devices, (proc, _) in procs.items()}
    finally:  # a worker that hangs past the timeout is not left behind
        for proc, _ in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    results = {}
    for devices, (proc, out) in procs.items():
        assert proc.returncode == 0, f"{devices}-device worker failed:\n{logs[devices]}"
        with np.load(out) as data:
            results[devices] = {key: data[key] for key in data.files}
    return results


# Each device count is a worker process of its own (~10 to 20 s of compiling): with
# `-m slow`. By default the sharded variants run on one device in the family matrix, and
# across two processes under jax.distributed (tests/test_distributed.py).
def _devices(count: int):
    return pytest.param(count, marks=pytest.mark.slow)


DEVICES = [_devices(d) for d in DEVICE_COUNTS]
CASES = [
    pytest.param(
        devices,
        name,
        n,
        id=f"{devices}dev-{name}-n{n}",
        marks=[pytest.mark.slow],
    )
    for devices in DEVICE_COUNTS
    for name in VARIANTS
    for n in SIZES
]


@pytest.mark.parametrize("devices,name,n", CASES)
def test_loss_bitwise_single_device_sibling(runs, devices, name, n):
    r, key = runs[devices], f"{name}/{n}"
    loss, ref = float(r[f"{key}/loss"]), float(r[f"{key}/ref_loss"])
    assert loss.hex() == ref.hex(), f"{name} {loss!r} vs {VARIANTS[name][0]} {ref!r}"


@pytest.mark.parametrize("devices", DEVICES)
@pytest.mark.parametrize("name", list(VARIANTS))
def test_grid_bitwise_single_device_sibling(runs, devices, name):
    # The loss could agree by luck of cancellation; the grid u^K cannot.
    r, n = runs[devices], GRID_SIZE
    grid, ref_grid = r[f"{name}/{n}/grid"], r[f"{name}/{n}/ref_grid"]
    assert grid.shape == ref_grid.shape == (n + 2, n + 2)
    assert grid.tobytes() == ref_grid.tobytes(), np.abs(grid - ref_grid).max()


@pytest.mark.parametrize("devices,name,n", CASES)
def test_gradient_within_policy(runs, devices, name, n):
    from .cases import assert_within_policy

    r, key = runs[devices], f"{name}/{n}"
    assert_within_policy(
        float(r[f"{key}/ref_loss"]),
        r[f"{key}/ref_grad"],
        float(r[f"{key}/loss"]),
        r[f"{key}/grad"],
        what=f"{name} on {devices} devices vs {VARIANTS[name][0]}, n = {n}",
    )


@pytest.mark.parametrize("devices", DEVICES)
@pytest.mark.parametrize("name", list(VARIANTS))
def test_several_devices_match_reference_loops(runs, devices, name):
    from . import reference
    from .cases import assert_within_policy

    algorithm = VARIANTS[name][1]
    theta, uobs = _inputs(SMALL[devices])
    assert_within_policy(
        reference.loss(algorithm, theta, uobs, SMALL_K),
        reference.adjoint_gradient(algorithm, theta, uobs, SMALL_K),
        float(runs[devices][f"{name}/small/loss"]),
        runs[devices][f"{name}/small/grad"],
        what=f"{name} on {devices} devices vs reference.py, n = {SMALL[devices]}",
    )


# Compiled HLO: computations are `[ENTRY ]%name (...) -> ... {` ... `}`; a while loop
# names its body, and a body may call further computations.
_HEADER = re.compile(r"^(?:ENTRY )?%([\w.\-]+) .*\{$")
_CALLED = re.compile(r"(?:body|condition|calls|to_apply)=%([\w.\-]+)")
_CALLED_LISTS = re.compile(r"(?:branch_computations|called_computations)=\{([^}]*)\}")
_WHILE_BODY = re.compile(r"\swhile\(.*\bbody=%([\w.\-]+)")
_COLLECTIVE = re.compile(
    r"\s(collective-permute|all-gather|all-reduce|all-to-all|reduce-scatter)(?:-start)?\("
)


def _computations(hlo: str) -> dict[str, list[str]]:
    out, current = {}, None
    for line in hlo.splitlines():
        header = _HEADER.match(line)
        if header:
            current = out.setdefault(header.group(1), [])
        elif line.startswith("}"):
            current = None
        elif current is not None:
            current.append(line)
    return out


def _collectives_in(hlo: str) -> list[list[str]]:
    """For each while loop: the collectives its body runs, called computations included."""
    comps = _computations(hlo)

    def closure(name, seen):
        if name in seen or name not in comps:
            return seen
        seen.add(name)
        for line in comps[name]:
            called = _CALLED.findall(line)
            for group in _CALLED_LISTS.findall(line):
                called += [c.strip().lstrip("%") for c in group.split(",")]
            for c in called:
                closure(c, seen)
        return seen

    bodies = [
        m.group(1) for lines in comps.values() for line in lines if (m := _WHILE_BODY.search(line))
    ]
    in_loops = [
        [op for c in closure(body, set()) for line in comps[c] for op in _COLLECTIVE.findall(line)]
        for body in bodies
    ]
    return in_loops


@pytest.mark.parametrize("program", ["loss", "grad"])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("devices", DEVICES)
def test_loops_exchange_halos_not_grids(runs, devices, name, n, program):
    hlo = str(runs[devices][f"{name}/{n}/{program}_hlo"])
    loops = _collectives_in(hlo)
    # The loss: the forward iteration; the gradient: forward and transposed iterations.
    assert len(loops) == (1 if program == "loss" else 2), f"while loops: {len(loops)}"
    halos_per_iteration = 2 if name == "jax-jacobi-sharded" else 4  # rb: per half-sweep
    for ops in loops:
        assert ops.count("collective-permute") == halos_per_iteration, ops
        assert set(ops) == {"collective-permute"}, f"a loop also runs {sorted(set(ops))}"
    if program == "loss":
        # u^K and uobs are assembled once, after the loop, for the bitwise sum.
        assert len(re.findall(r"\sall-gather(?:-start)?\(", hlo)) == 2


@pytest.mark.parametrize("devices", DEVICES)
def test_set_devices_retraces(runs, devices):
    assert list(runs[devices]["set_devices/device_counts"]) == [devices, 2, devices]


# --- one device (this process): a mesh of one ----------------------------------------


@pytest.mark.parametrize("name", list(VARIANTS))
def test_mesh_of_one_bitwise_and_matches_reference_loops(name):
    from . import reference
    from .cases import assert_within_policy

    loss, _, ref_loss, _ = _functions(name)
    n = 7
    theta, uobs = _inputs(n, SEED + 1)
    with jax.enable_x64(True):
        value = float(jax.jit(loss, static_argnums=2)(theta, uobs, SMALL_K))
        grad = np.asarray(jax.jit(jax.grad(loss), static_argnums=2)(theta, uobs, SMALL_K))
        sibling = float(jax.jit(ref_loss, static_argnums=2)(theta, uobs, SMALL_K))
    assert value.hex() == sibling.hex()
    algorithm = VARIANTS[name][1]
    assert_within_policy(
        reference.loss(algorithm, theta, uobs, SMALL_K),
        reference.adjoint_gradient(algorithm, theta, uobs, SMALL_K),
        value,
        grad,
        what=f"{name} on one device vs reference.py",
    )


@pytest.mark.parametrize("devices", DEVICES)
def test_cic_sharded_agrees_with_jax_scatter(runs, devices):
    """Particles split over the devices, grids combined by psum: within the tolerance
    policy of jax-scatter (another summation order, so not bitwise), pos and q."""
    from .cases import assert_within_policy

    r = runs[devices]
    assert "all-reduce" in str(r["cic/hlo"])  # the psum of the partial grids
    assert_within_policy(
        float(r["scatter/loss"]),
        {"pos": r["scatter/pos"], "q": r["scatter/q"]},
        float(r["cic/loss"]),
        {"pos": r["cic/pos"], "q": r["cic/q"]},
        what=f"jax-cic-sharded on {devices} devices vs jax-scatter",
    )


@pytest.mark.parametrize("name", list(VARIANTS))
def test_weanj_run_on_unseen_inputs_matches_reference(name, project):
    """`weanj run 0X VARIANT --inputs F --out O` on the default (single) device, as a user
    runs it, against the independent loops (issue 18, acceptance 4)."""
    import h5py

    from . import reference

    example = "01-jacobi" if "jacobi" in name else "02-gauss-seidel"
    theta, uobs = _inputs(11, seed=SEED + 1)
    inputs = project / "unseen.h5"
    with h5py.File(inputs, "w") as f:
        f["theta"], f["uobs"] = theta, uobs
    out = project / "o.h5"
    env = {**os.environ, "WEANJ_ROOT": str(project)}
    env.pop("XLA_FLAGS", None)
    args = ["run", example, name, "--inputs", inputs, "--K", "7", "--out", out]
    r = subprocess.run(
        [sys.executable, "-m", "weanj", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    algorithm = VARIANTS[name][1]
    loss_ref = reference.loss(algorithm, theta, uobs, 7)
    g_ref = reference.adjoint_gradient(algorithm, theta, uobs, 7)
    with h5py.File(out) as f:
        loss, g = float(f.attrs["loss"]), f["gradient"][()]
    assert abs(loss - loss_ref) <= 1e-12 * abs(loss_ref)
    assert np.max(np.abs(g - g_ref)) <= 1e-11 * np.max(np.abs(g_ref))


def test_device_selection():
    from weanj import InputError
    from weanj.examples import _sharded

    assert _sharded.mesh().shape == {_sharded.AXIS: jax.device_count()}
    assert _sharded.mesh(1).devices.tolist() == jax.devices()[:1]
    too_many = jax.device_count() + 1
    with pytest.raises(InputError, match=f"asked for {too_many} devices; JAX sees {too_many - 1}"):
        _sharded.mesh(too_many)
    with pytest.raises(InputError, match="xla_force_host_platform_device_count"):
        weanj.set_devices(too_many)
    assert weanj.set_devices(None) == (None, None)


def test_bench_records_the_device_count(project):
    """`weanj bench --devices N` runs the sharded variants on N (simulated) devices and
    says so in every record; more devices than JAX sees is one line and exit 2."""
    env = {**os.environ, "WEANJ_ROOT": str(project)}
    args = [sys.executable, "-m", "weanj", "bench", "01-jacobi", "--variants"]
    args += ["jax-jacobi-sharded", "jax-jacobi", "--ns", "8", "--K", "2", "--samples", "1"]
    args += ["--memory-Ks", "--devices", "4"]
    flags = {"XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    r = subprocess.run(args, env={**env, **flags}, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    records = json.loads((project / "results/01-jacobi/bench/jax-cpu.json").read_text())
    devices = {rec["variant"]: rec["devices"] for rec in records["records"]}
    assert devices == {"jax-jacobi-sharded": 4, "jax-jacobi": 1}
    assert "| devices |" in r.stdout
    env.pop("XLA_FLAGS", None)
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "xla_force_host_platform_device_count" in lines[0], r.stderr


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    _worker(int(sys.argv[2]), sys.argv[3])
    print(json.dumps({"devices": int(sys.argv[2]), "out": sys.argv[3]}))
