"""A stand-in for juliacall, for the tests of weanj's Julia worker where no Julia runs.

The real worker (`weanj/_backends/_julia_worker.py`) imports it when `tests/stand_ins`
comes first on its `PYTHONPATH`, and uses it as it uses juliacall: `Main.seval` (`using
WeanJ` loads the stand-in WeanJ below), `Main.Array`, and the functions of WeanJ.
Nothing here is Julia, and nothing it computes is a Julia result:

- WeanJ's kernels answer from the fixtures the Python reference wrote
  (`julia/test/fixtures/<variant>.json`): given arguments equal to a case's inputs (cast
  to the element type received), the case's loss and gradient in that element type;
  any other arguments (transposed, reordered, another dtype) are an error. So a test
  sees that what crossed is exactly what the kernels would read. `$WEANJ_TEST_EXTRA_CASES`
  (a JSON file, `{loss name: [case, ...]}`) adds cases the reference computed.
- A user's file `NAME.jl` takes its kernels from `KERNELS["NAME.jl"]` of the Python
  file `$WEANJ_TEST_USER_KERNELS` (`{loss name: (loss(*args), gradients(*args))}`,
  `gradients` giving one array or None per argument), called with numpy arrays (index
  arrays as they crossed: 1-based) and the parameters; a file with a line
  `# stand-in: does not load: MESSAGE` fails to include with MESSAGE.
- `$WEANJ_TEST_RECORD`: a file to which every call appends one JSON line (what crossed),
  and each import of this module (one per worker started) a `start` line with its pid.
- `WeanJ.timings` answers times of its own clock (`perf_counter_ns` around the stand-in's
  Python calls); weanj labels times from a configured stand-in worker as the stand-in's.
- A user's package `P` (`using P`) takes its functions from `KERNELS["package P"]` of
  the same file: `(loss, gradients)` pairs as above, optionally with a third item
  `{ad: message}` naming the AD packages that refuse the kernel (`ad_loss_and_gradient`
  raises the message, as that AD would), and plain callables: gradient functions written
  by hand (`handwritten_loss_and_gradient`), returning the gradient arrays. A kernel may
  write its arguments in place (the worker must notice). `$WEANJ_TEST_NO_PACKAGE` names a
  package whose `using` fails.
- `ad_loss_and_gradient` answers as each AD would through DifferentiationInterface: the
  gradient (ForwardDiff, Mooncake, Zygote and FiniteDifferences alike) and the loss,
  ForwardDiff's converted to the element type of the differentiated arrays (DI's
  `GradientResult(x)`), the others' in the kernel's own type; or the refusal above (the
  text Julia would print: a `MethodError` with its candidates, Zygote's mutation error).
  With `prep`, it must be `ad_prepare`'s for the same AD and argument types and shapes
  (DI's `PreparationMismatchError` otherwise). `$WEANJ_TEST_NO_AD` (comma separated)
  names AD packages whose `import` fails.
- The worker's stacking of the user's environment (`import Pkg`, then the function of
  `_julia_worker.STACK` called with the folder) is recorded, and puts the folder's
  Project.toml first on `Base.load_path()`, above `$WEANJ_TEST_WEANJ_ENVIRONMENT`'s (a
  folder standing for weanj's environment, if set).
- Beyond the gradient (julia/src/outputs.jl, second_order.jl): `LossAlone`,
  `outputs_layout` (a kernel of an example with outputs returns `(loss, {name: array})`,
  else Julia's `OutputsConventionError` text), `enzyme_backends`, `outputs_backends` (a
  forward role for ForwardDiff and FiniteDifferences only), `outputs_prepare`,
  `outputs_loss_and_gradient`, `outputs_derivatives`, `hvp_prepare`, `loss_hvps` and
  `handwritten_outputs`: the products by linear algebra on the kernel's fourth item,
  `{"jacobian": ..., "hessian": ..., "arrays": [...]}` (a fixture's: the reference's
  matrices), each preparation held to its AD, argument types and number of seeds.
- `$WEANJ_TEST_JULIA_VERSION` (default 1.11.5) is `string(VERSION)`;
  `$WEANJ_TEST_NO_ENZYME` set makes `import Enzyme` fail.
"""

from __future__ import annotations

import sys

# What the worker had imported before juliacall: it must import juliacall before numpy
# (Julia's libstdc++ first), and never jax.
BEFORE = {name: name in sys.modules for name in ("numpy", "jax", "weanj")}

import importlib.util  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
from pathlib import Path  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import numpy as np  # noqa: E402

__version__ = "0.0.0-stand-in"

FIXTURES = Path(__file__).resolve().parents[3] / "julia" / "test" / "fixtures"


class JuliaError(Exception):
    """What juliacall raises for a Julia exception (its text is `showerror`'s)."""


def record(**entry) -> None:
    path = os.environ.get("WEANJ_TEST_RECORD")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")


class ArrayValue:
    """A Julia array as juliacall hands it to Python: `to_numpy` copies it."""

    def __init__(self, values):
        self.values = np.asfortranarray(np.array(values, copy=True))

    def to_numpy(self, dtype=None, copy=True, order="K"):
        return np.array(self.values, dtype=dtype, copy=copy, order=order)


class Module:
    def __init__(self, name, kernels):
        self.name, self.kernels = name, kernels


class Backend:
    """An ADTypes backend, as `WeanJ.ad_backend` makes it: its `ad` name."""

    def __init__(self, name):
        self.name = name


class Prep:
    """DifferentiationInterface's preparation, as `WeanJ.ad_prepare` makes it: valid for
    one AD and the arguments' types and shapes."""

    def __init__(self, ad, args):
        self.ad, self.signature = ad, _signature(args)


def _signature(args):
    return [
        (a.values.dtype.str, a.values.shape) if isinstance(a, ArrayValue) else type(a).__name__
        for a in args
    ]


def _user_kernels() -> dict:
    spec = importlib.util.spec_from_file_location(
        "user_kernels", os.environ["WEANJ_TEST_USER_KERNELS"]
    )
    user = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(user)
    return user.KERNELS


def _cases(loss_name: str):
    extra = os.environ.get("WEANJ_TEST_EXTRA_CASES")
    more = json.loads(Path(extra).read_text(encoding="utf-8")) if extra else {}
    for path in sorted(FIXTURES.glob("*.json")):
        content = json.loads(path.read_text(encoding="utf-8"))
        if content["loss"] == loss_name:
            content["cases"] += more.get(loss_name, [])
            return content
    return None


def _decode(a, dtype):
    return np.asarray(a["data"], dtype=np.float64).reshape(a["shape"]).astype(dtype)


def fixture_kernel(loss_name: str):
    """`(loss, gradients)` of a WeanJ kernel, answered from its fixture."""
    content = _cases(loss_name)
    if content is None:
        return None

    def find(args):
        n = len(content["arrays"])
        arrays, params = list(args[:n]), list(args[n:])
        dtype = arrays[0].dtype
        for case in content["cases"]:
            inputs = [_decode(case["inputs"][name], dtype) for name in content["arrays"]]
            wanted = [case["params"][p] for p in content["params"]]
            same = all(
                a.dtype == dtype and a.shape == b.shape and np.array_equal(a, b)
                for a, b in zip(arrays, inputs, strict=True)
            )
            if same and params == wanted and all(type(p) is int for p in params):
                return case, dtype
        raise JuliaError(f"MethodError: no fixture case of {loss_name} has these arguments")

    def loss(*args):
        case, dtype = find(args)
        if not content.get("outputs"):
            return dtype.type(case["loss"])
        outputs = {o: _decode(case["outputs"][o], dtype) for o in content["outputs"]}
        return dtype.type(case["loss"]), outputs  # the convention: (L, (; r = ...))

    def gradients(*args):
        case, dtype = find(args)
        named = [case["gradient"].get(name) for name in content["arrays"]]
        return [None if g is None else _decode(g, dtype) for g in named]

    if not content.get("outputs"):
        return loss, gradients

    def matrices(what):
        def of(*args):
            case, _ = find(args)
            return {k: _decode(m, np.float64) for k, m in case[what].items()}

        return of

    beyond = {
        "jacobian": matrices("jacobian"),
        "hessian": matrices("hessian"),
        "arrays": content["arrays"],
    }
    return loss, gradients, {}, beyond


class WeanJModule:
    """julia/src/WeanJ.jl, as the worker uses it."""

    @staticmethod
    def backend_version():
        return "Julia 0.0.0-stand-in, Enzyme 0.0.0-stand-in"

    def include_kernels(self, path):
        record(call="include_kernels", path=str(path))
        text = Path(path).read_text(encoding="utf-8")
        for line in text.splitlines():
            if line.startswith("# stand-in: does not load: "):
                raise JuliaError(line.removeprefix("# stand-in: does not load: "))
        return Module(Path(path).stem, _user_kernels().get(Path(path).name, {}))

    @staticmethod
    def ad_backend(name, package):
        assert package == ("AD package", name), package
        return Backend(name)

    def ad_prepare(self, backend, fn, flags, *args):
        """DifferentiationInterface's preparation for `ad_loss_and_gradient`."""
        assert isinstance(backend, Backend) and isinstance(flags, tuple)
        record(call="ad_prepare", ad=backend.name, signature=_signature(args))
        return Prep(backend.name, args)

    def ad_loss_and_gradient(self, backend, fn, flags, *args, prep=None):
        """DifferentiationInterface's `([loss], gradients)`: as `loss_and_gradient` (the
        loss in the arrays' float type for ForwardDiff), or the kernel's refusal by that
        AD."""
        assert isinstance(backend, Backend) and isinstance(flags, tuple)
        if prep is not None and (prep.ad, prep.signature) != (backend.name, _signature(args)):
            raise JuliaError("PreparationMismatchError (inconsistent types between ...)")
        record(
            call="ad_loss_and_gradient",
            ad=backend.name,
            flags=list(flags),
            arrays=_described(args),
            params=_params(args),
            prepared=prep is not None,
        )
        refusals = fn[2] if len(fn) > 2 else {}
        if backend.name in refusals:
            raise JuliaError(refusals[backend.name] + "\nStacktrace: ...")
        loss = np.array([fn[0](*_unwrapped(args))])
        if backend.name == "forwarddiff":  # DI's GradientResult(x): x's element type
            x = next(a.values for a, flag in zip(args, flags, strict=True) if flag)
            loss = loss.astype(np.finfo(x.dtype).dtype)
        return ArrayValue(loss), self._shadows(fn, flags, args)

    def handwritten_loss_and_gradient(self, fn, gradient, flags, *args):
        """`([loss(args...)], gradient(args...))`, the gradient function's arrays."""
        assert callable(gradient) and isinstance(flags, tuple)
        record(call="handwritten_loss_and_gradient", flags=list(flags), arrays=_described(args))
        value = ArrayValue(np.array([fn[0](*_unwrapped(args))]))
        found = gradient(*_unwrapped(args))
        found = found if isinstance(found, tuple) else (found,)
        if len(found) != sum(flags):
            raise JuliaError("ArgumentError: the gradient function returned ... arrays")
        return value, tuple(ArrayValue(g) for g in found)

    # --- beyond the gradient (julia/src/outputs.jl, second_order.jl) -----------------------
    # A kernel's fourth item, where it has one: `{"jacobian": args -> {"o::a": matrix},
    # "hessian": args -> {a: matrix}, "arrays": its arrays' names}` (rows and columns in
    # C order), from which the products are computed here, as linear algebra on what the
    # reference wrote.

    @staticmethod
    def LossAlone(fn):  # noqa: N802 (Julia's name)
        return (lambda *a: fn[0](*a)[0], *fn[1:])

    def outputs_layout(self, fn, names, *args):
        """`(value=[L], outputs, layout)`, the outputs in `names`' order; the convention's
        breach as Julia's `OutputsConventionError` would print it."""
        assert isinstance(names, tuple) and all(isinstance(n, str) for n in names), names
        record(call="outputs_layout", names=list(names), arrays=_described(args))
        found = fn[0](*_unwrapped(args))
        if not (isinstance(found, tuple) and len(found) == 2 and isinstance(found[1], dict)):
            raise JuliaError(
                f"OutputsConventionError: the loss returned a {type(found).__name__}, not "
                f"(loss, (; ...)): the example declares the outputs {', '.join(names)}"
            )
        if set(found[1]) != set(names):
            raise JuliaError(
                f"OutputsConventionError: the loss returned the outputs "
                f"{', '.join(found[1])}; the example declares {', '.join(names)}"
            )
        outputs = tuple(ArrayValue(np.asarray(found[1][n])) for n in names)
        layout = Prep("layout", args)
        layout.names = names
        return SimpleNamespace(
            value=ArrayValue(np.array([found[0]])), outputs=outputs, layout=layout
        )

    @staticmethod
    def enzyme_backends(activity, runtime_activity):
        assert activity in ("bare", "const", "duplicated") and type(runtime_activity) is bool
        record(call="enzyme_backends", activity=activity, runtime_activity=runtime_activity)
        enzyme = Backend("enzyme")
        return SimpleNamespace(reverse=enzyme, forward=enzyme, second=enzyme)

    @staticmethod
    def outputs_backends(backend):
        forward = backend if backend.name in ("forwarddiff", "finitedifferences") else None
        return SimpleNamespace(reverse=backend, forward=forward, second=backend)

    def outputs_prepare(self, backends, fn, layout, flags, *args, seeds=1, forward=False):
        record(call="outputs_prepare", seeds=seeds, forward=forward, signature=_signature(args))
        prep = Prep(backends.reverse.name, args)
        prep.seeds, prep.layout = seeds, layout
        return prep

    @staticmethod
    def _prepared(prep, backend, args, seeds):
        if (prep.ad, prep.signature, prep.seeds) != (backend.name, _signature(args), seeds):
            raise JuliaError("PreparationMismatchError (inconsistent types between ...)")

    def outputs_loss_and_gradient(self, backends, fn, layout, flags, *args, prep):
        self._prepared(prep, backends.reverse, args, 1)
        record(call="outputs_loss_and_gradient", ad=backends.reverse.name, flags=list(flags))
        value, outputs = fn[0](*_unwrapped(args))
        found = tuple(ArrayValue(np.asarray(outputs[n])) for n in layout.names)
        return ArrayValue(np.array([value])), self._shadows(fn, flags, args), found

    def outputs_derivatives(self, backends, fn, layout, flags, args, tangents, weights, prep):
        """DI's pullbacks (`Jᵀ·w` by flagged array, output by output) and pushforwards
        (`J·v`, direction by direction, where the backend has a forward mode)."""
        names = layout.names
        self._prepared(prep, backends.reverse, args, 1 + len(names))
        record(
            call="outputs_derivatives",
            ad=backends.reverse.name,
            tangents=_described(tangents),
            weights=_described(weights),
        )
        plain = _unwrapped(args)
        value, outputs = fn[0](*plain)
        jacobian = fn[3]["jacobian"](*plain)
        arrays = [a for a, flag in zip(args, flags, strict=False) if flag]
        pulled = [
            ArrayValue((jacobian[f"{o}::{a}"].T @ w.values.ravel()).reshape(x.values.shape))
            for o, w in zip(names, weights, strict=True)
            for a, x in zip(self._flagged_names(fn, flags), arrays, strict=True)
        ]
        pushed = None
        if backends.forward is not None:
            pushed = tuple(
                ArrayValue((jacobian[f"{o}::{a}"] @ v.values.ravel()).reshape(np.shape(outputs[o])))
                for a, v in zip(self._flagged_names(fn, flags), tangents, strict=True)
                for o in names
            )
        return SimpleNamespace(
            value=ArrayValue(np.array([value])),
            gradients=self._shadows(fn, flags, args),
            outputs=tuple(ArrayValue(np.asarray(outputs[n])) for n in names),
            pullbacks=tuple(pulled),
            pushforwards=pushed,
            forward_refused="",
        )

    @staticmethod
    def _flagged_names(fn, flags):
        """The flagged arrays' names (the kernel's fourth item names its arrays)."""
        return [a for a, flag in zip(fn[3]["arrays"], flags, strict=False) if flag]

    @staticmethod
    def second_order(outer, inner):
        return Backend(f"{outer.name} over {inner.name}")

    def hvp_prepare(self, backend, loss, flags, *args, directions):
        record(call="hvp_prepare", ad=backend.name, directions=directions)
        prep = Prep(backend.name, args)
        prep.seeds = directions
        return prep

    def loss_hvps(self, backend, loss, flags, args, tangents, seconds, prep):
        self._prepared(prep, backend, args, 2 * len(tangents))
        record(call="loss_hvps", ad=backend.name, tangents=_described(tangents))
        hessian = loss[3]["hessian"](*_unwrapped(args))
        names = self._flagged_names(loss, flags)
        return tuple(
            ArrayValue((hessian[a] @ d.values.ravel()).reshape(d.values.shape))
            for a, v, u in zip(names, tangents, seconds, strict=True)
            for d in (v, u)
        )

    def handwritten_outputs(self, fn, gradient, names, flags, *args):
        found = self.outputs_layout(fn, names, *args)
        _, shadows = self.handwritten_loss_and_gradient(
            (lambda *a: fn[0](*a)[0], *fn[1:]), gradient, flags, *args
        )
        return found.value, shadows, found.outputs

    def kernel_function(self, module, name):
        found = fixture_kernel(name) if module is self else module.kernels.get(name)
        if found is None:
            raise JuliaError(f"ArgumentError: {name} is not defined in module M\nStacktrace: ...")
        return found

    def loss_value(self, fn, *args):
        record(
            call="loss",
            arrays=_described(args),
            params=_params(args),
            jax="jax" in sys.modules,
        )
        return ArrayValue(np.array([fn[0](*_unwrapped(args))]))

    def loss_and_gradient(self, fn, flags, *args, activity="bare", runtime_activity=False):
        """Julia's `([loss], shadows)` from one reverse pass."""
        assert isinstance(flags, tuple) and all(type(f) is bool for f in flags), flags
        record(
            call="loss_and_gradient",
            flags=list(flags),
            activity=activity,
            runtime_activity=runtime_activity,
            arrays=_described(args),
            params=_params(args),
        )
        value = ArrayValue(np.array([fn[0](*_unwrapped(args))]))
        return value, self._shadows(fn, flags, args)

    def timings(
        self,
        fn,
        flags,
        *args,
        samples=7,
        activity="bare",
        runtime_activity=False,
        backend=None,
        gradient=None,
    ):
        """`(forward_ns=[...], gradient_ns=[...])` of this stand-in's own Python calls,
        after a warm-up call of each."""
        import time
        from types import SimpleNamespace

        record(
            call="timings",
            samples=samples,
            flags=list(flags),
            activity=activity,
            ad=None if backend is None else backend.name,
            handwritten=gradient is not None,
        )
        plain = _unwrapped(args)
        times = {"forward": [], "gradient": []}
        for which, call in (("forward", fn[0]), ("gradient", fn[1])):
            call(*plain)
            for _ in range(samples):
                t0 = time.perf_counter_ns()
                call(*plain)
                times[which].append(time.perf_counter_ns() - t0)
        return SimpleNamespace(forward_ns=times["forward"], gradient_ns=times["gradient"])

    def _shadows(self, fn, flags, args):
        assert len(flags) == len(args)
        for flag, a in zip(flags, args, strict=True):
            if flag and not (isinstance(a, ArrayValue) and a.values.dtype.kind in "fc"):
                raise JuliaError("ArgumentError: a gradient is taken only with respect to ...")
        every = fn[1](*_unwrapped(args))
        return tuple(ArrayValue(g) for g, flag in zip(every, flags, strict=False) if flag)

    def enzyme_gradient(self, fn, flags, *args, activity, runtime_activity):
        assert isinstance(flags, tuple) and all(type(f) is bool for f in flags), flags
        assert len(flags) == len(args)
        record(
            call="grad",
            flags=list(flags),
            activity=activity,
            runtime_activity=runtime_activity,
            arrays=_described(args),
            params=_params(args),
        )
        return self._shadows(fn, flags, args)


def _unwrapped(args):
    """What a kernel here computes on: the arrays as numpy arrays, the parameters."""
    return [a.values if isinstance(a, ArrayValue) else a for a in args]


def _described(args):
    def data(a):
        if a.dtype.kind == "c":
            return np.stack([a.real, a.imag], axis=-1).tolist()
        return a.tolist()

    return [
        {"dtype": a.values.dtype.str, "shape": list(a.values.shape), "data": data(a.values)}
        for a in args
        if isinstance(a, ArrayValue)
    ]


def _params(args):
    return [[type(p).__name__, p] for p in args if not isinstance(p, ArrayValue)]


class MainModule:
    def __init__(self):
        self.WeanJ = None
        self.packages = {}
        weanj = os.environ.get("WEANJ_TEST_WEANJ_ENVIRONMENT")
        self.load_path = [] if not weanj else [str(Path(weanj) / "Project.toml")]

    def seval(self, code):
        record(call="seval", code=code)
        if code == "string(VERSION)":
            return os.environ.get("WEANJ_TEST_JULIA_VERSION", "1.11.5")
        if code == "Base.load_path()":
            return list(self.load_path)
        if "Pkg.instantiate(; manifest = true)" in code:

            def stack(env):
                record(call="stack", environment=str(env))
                self.load_path.insert(0, str(Path(env) / "Project.toml"))
                return "<weanj's environment>"

            return stack
        words = code.split()
        if len(words) == 2 and words[0] == "import" and words[1] != "Enzyme":
            refused = os.environ.get("WEANJ_TEST_NO_AD", "").split(",")
            if words[1] in refused:
                raise JuliaError(f"ArgumentError: Package {words[1]} not found in current path.")
            self.packages[words[1]] = ("AD package", words[1].lower())
            return None
        if len(words) == 2 and words[0] == "using" and words[1] != "WeanJ":
            if words[1] == os.environ.get("WEANJ_TEST_NO_PACKAGE"):
                raise JuliaError(f"ArgumentError: Package {words[1]} not found in current path.")
            kernels = _user_kernels().get(f"package {words[1]}", {})
            self.packages[words[1]] = Module(words[1], kernels)
            return None
        if code in self.packages:
            return self.packages[code]
        if code == "import Enzyme" and os.environ.get("WEANJ_TEST_NO_ENZYME"):
            raise JuliaError("ArgumentError: Package Enzyme not found in current path.")
        if code == "using WeanJ":
            if os.environ.get("WEANJ_TEST_NO_WEANJ"):
                raise JuliaError("ArgumentError: Package WeanJ not found in current path.")
            self.WeanJ = WeanJModule()
        return None

    @staticmethod
    def Array(values):  # noqa: N802 (Julia's name)
        assert isinstance(values, np.ndarray) and values.flags.c_contiguous
        assert values.dtype.isnative  # PythonCall does not byte-swap
        return ArrayValue(values)

    @staticmethod
    def eltype(value):
        return value.values.dtype.name


Main = MainModule()
record(call="start", pid=os.getpid(), before=BEFORE)
