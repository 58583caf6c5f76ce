"""The Julia worker: the process that runs weanj's Julia variants.

weanj starts it once per command, on the first Julia evaluation (`_julia_client`), as

    python path/to/weanj/_backends/_julia_worker.py

and talks to it through its stdin and stdout (`_julia_wire`); its stderr, and anything
Julia or a kernel prints, goes to the log weanj names. It is the only process that
imports juliacall, and it imports no JAX: Julia and XLA never share an address space
(Julia exports its LLVM symbols to the whole process, which corrupts the heap of
libraries loaded after it that carry LLVM symbols of their own: PythonCall's FAQ), and
a crash inside Julia (Enzyme's failures are often segfaults or LLVM assertions) ends
this process only, which weanj reports as that variant's error.

It runs as a script, not as `python -m weanj...`: importing the package `weanj` would
load numpy, and numpy loads the system's `libstdc++` before Julia's newer one, which
Julia then cannot load (PythonCall's FAQ, "`ccall requires the compiler`"). So juliacall
is imported first, numpy after it, and nothing of weanj but the modules beside it that
the worker shares (`_julia_wire`, `_julia_faults`, `_julia_bounds`, `_julia_beyond`).

On start it imports juliacall (juliapkg resolves the Julia packages first: those of
`weanj/juliapkg.json`, juliacall's, and, in the folder `requirements` names, WeanJ
`dev`ed by path and the project's `Project.toml` as weanj declared them), checks
Julia's version, loads Enzyme and then WeanJ as the package it is (`using WeanJ`:
precompiled by Pkg once, the cache reused by every later start), and answers with the
versions. With a user's environment (`[tool.weanj.julia] project`) it first activates
and instantiates that one as it is (`Pkg.instantiate(; manifest = true)`: never resolved,
never written) and stacks weanj's below it on `LOAD_PATH` (`STACK`); before loading
anything it checks every package weanj needs against weanj's bound in the environments
on the load path (`_julia_bounds`). Then, per request (`_julia_wire.OPS`), it calls a
kernel's loss and gradient from one reverse pass (`WeanJ.loss_and_gradient`), through
DifferentiationInterface (`WeanJ.ad_loss_and_gradient`, `ad=`, prepared once per variant
and argument shapes, `WeanJ.ad_prepare`) or by a hand-written gradient function
(`WeanJ.handwritten_loss_and_gradient`), its loss alone (`WeanJ.loss_value`), or times
both inside Julia (`WeanJ.timings`); beyond the gradient, a kernel's outputs, their
pullbacks and pushforwards and the Hessian-vector products (`_julia_beyond`: WeanJ's
`outputs.jl`, `second_order.jl`), on the arrays it receives, after including a user's
kernel file once into a module of its own (`WeanJ.include_kernels`) or loading a user's
package (`using`). Every call is followed by a check that the kernel left its array
arguments as they came (`written`): a kernel writing a `Const` argument can make Enzyme
return a wrong gradient silently. What goes wrong is said in one line (`_julia_faults`).
"""

from __future__ import annotations

import os
import re
import sys

if __package__:  # imported as weanj._backends._julia_worker (tests)
    from . import _julia_beyond as beyond
    from . import _julia_bounds as bounds
    from . import _julia_faults as faults
    from . import _julia_wire as wire
else:  # run as a script: this folder, not the package, is where its modules are found
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _julia_beyond as beyond
    import _julia_bounds as bounds
    import _julia_faults as faults
    import _julia_wire as wire

Refusal = wire.Refusal
# The ADs whose loss, as DifferentiationInterface returns it, is converted to the element
# type of the differentiated arrays: ForwardDiff's (DI's ForwardDiff extension,
# `value_and_gradient`: `GradientResult(x)`, a DiffResults value of `eltype(x)`). Their
# loss is taken from one primal call first, so that its own type is checked.
LOSS_IN_INPUT_TYPE = {"forwarddiff"}

# The user's environment above weanj's: activated (so `@`, the first entry of LOAD_PATH,
# is theirs) and instantiated from its Manifest as it is (`manifest = true`: an error,
# never a resolve, where it has none); weanj's environment (juliapkg's, the one active
# until now) goes right after `@`, where Julia's default stack keeps `@v#.#` (the
# manual's "Environment stacks"): the user's packages and versions come first, WeanJ,
# Enzyme, DifferentiationInterface and the AD packages from below.
STACK = """
function (user::AbstractString)
    weanj = dirname(Base.active_project())
    Pkg.activate(user)
    Pkg.instantiate(; manifest = true)
    at = something(findfirst(==("@"), LOAD_PATH), 0)
    insert!(LOAD_PATH, at + 1, weanj)
    return weanj
end
"""


class JuliaSession:
    """Julia, started in this process, and the kernels loaded into it."""

    def __init__(self):
        self.Main = self.WeanJ = None
        self.project = None
        self.modules: dict[str, object] = {}  # a user's file: its module, or a Refusal
        self.packages: dict[str, object] = {}  # a user's package: its module, or a Refusal
        self.backends: dict[str, object] = {}  # an `ad`: its ADTypes backend, or a Refusal
        self.preps: dict[tuple, object] = {}  # DI's preparation per variant and shapes

    # --- starting -----------------------------------------------------------------------

    def start(self, setup: dict, note) -> dict:
        julia, version = setup.get("julia"), setup.get("julia_version")
        what = f"Julia {version} ({julia})" if julia else "Julia"
        self.project = setup.get("project")
        if setup.get("requirements"):
            # juliapkg reads the juliapkg.json of every folder on sys.path: the project's
            # own Julia packages (its Project.toml), as weanj wrote them there.
            sys.path.insert(0, setup["requirements"])
        note(
            "starting Julia through juliacall; juliapkg first makes sure the Julia packages "
            "are installed (the first time: installs and precompiles Enzyme, minutes)"
        )
        try:
            from juliacall import Main
        except Exception as e:  # juliacall and juliapkg fail with plain Exceptions
            raise Refusal("unavailable", faults.start_failure(what, e, julia)) from None
        try:
            running = str(Main.seval("string(VERSION)"))
        except Exception as e:
            raise Refusal(
                "unavailable", f"Julia started but does not answer ({faults.first_line(e)})"
            ) from None
        low, high = (tuple(v) for v in setup.get("supported") or ((0, 0, 0), (99, 0, 0)))
        key = bounds.version_of(running)
        if key is None or not low <= key < high:
            raise Refusal(
                "unavailable",
                f"juliacall runs Julia {running} (PYTHON_JULIACALL_EXE, or a Julia weanj did "
                f"not choose), but weanj's Julia variants need {setup.get('supported_text')}: "
                f"{setup.get('fix_version')}",
            )
        if setup.get("user_environment"):
            self._stack(Main, setup["user_environment"], note)
        self._check_bounds(Main, setup, key)
        note(f"Julia {running} started; loading Enzyme and WeanJ (using WeanJ)")
        try:
            Main.seval("import Enzyme")
        except Exception as e:
            raise Refusal(
                "unavailable",
                f"Julia {running} started but could not load Enzyme: {faults.first_line(e)}; "
                + faults.enzyme_hint(),
            ) from None
        try:
            Main.seval("using WeanJ")
        except Exception as e:
            faults.log(str(e))
            raise Refusal(
                "unavailable",
                f"Julia {running} started but could not load WeanJ ({faults.first_line(e)}); "
                + faults.weanj_hint(setup.get("sources")),
            ) from None
        self.Main, self.WeanJ = Main, Main.WeanJ
        import juliacall  # already imported: its version only

        return {"versions": f"{self.WeanJ.backend_version()}, juliacall {juliacall.__version__}"}

    @staticmethod
    def _stack(Main, env: str, note) -> None:  # noqa: N803 (juliacall's name)
        note(f"activating your Julia environment {env} (Pkg.instantiate), weanj's below it")
        try:
            Main.seval("import Pkg")
            Main.seval(STACK)(env)
        except Exception as e:
            faults.log(f"stacking {env} failed:\n{e}")
            raise Refusal(
                "unavailable",
                f"your Julia environment {env} does not instantiate: {faults.first_line(e)}",
            ) from None

    @staticmethod
    def _check_bounds(Main, setup: dict, julia: tuple) -> None:  # noqa: N803 (juliacall's)
        """Refuse, in one line, a package weanj needs that the environments on Julia's
        load path (the user's stacked above weanj's) hold at a version outside weanj's
        bound for it (`_julia_bounds`), before anything loads it."""
        needs = setup.get("bounds") or []
        if not needs:
            return
        load_path = [str(p) for p in Main.seval("Base.load_path()")]
        user = setup.get("user_environment")
        refused = bounds.stacked_refusal(load_path, needs, julia, user)
        if refused is not None:
            raise Refusal("unavailable", refused)

    # --- requests -----------------------------------------------------------------------

    def module_of(self, file: str | None, package: str | None = None):
        """WeanJ itself, the module of a user's kernel file (included once), or a user's
        package (`using`, once)."""
        if package is not None:
            return self._package(package)
        if file is None:
            return self.WeanJ
        return _once(
            self.modules,
            file,
            lambda: self.WeanJ.include_kernels(file),
            f"including {file}",
            lambda e: self._load_failure(file, e),
        )

    def _package(self, package: str):
        if package not in self.packages and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", package):
            raise Refusal("definition", f"{package!r} is not a Julia package's name")

        def load():
            self.Main.seval(f"using {package}")
            return self.Main.seval(package)

        return _once(
            self.packages,
            package,
            load,
            f"using {package}",
            lambda e: f"the Julia package {package} does not load: {faults.first_line(e)}",
        )

    def backend(self, ad: str):
        """The ADTypes backend of `ad`, its package imported (once)."""
        name = faults.AD_PACKAGES.get(ad)
        if name is None:
            raise Refusal("definition", f"no AD package called {ad!r}")

        def load():
            self.Main.seval(f"import {name}")
            return self.WeanJ.ad_backend(ad, self.Main.seval(name))

        return _once(
            self.backends,
            ad,
            load,
            f"import {name}",
            lambda e: (
                f"ad={ad!r} needs the Julia package {name}, which does not load: "
                f"{faults.first_line(e)} (weanj adds it to the worker's environment when a "
                "variant uses it; with PYTHON_JULIACALL_PROJECT, add it there)"
            ),
        )

    def _load_failure(self, file: str, e: Exception) -> str:
        message = f"the Julia file {file} does not load: {faults.first_line(e)}"
        m = re.search(r"Package (\w+) not found in current path", str(e))
        if m is not None:
            root = self.project or "."
            message += (
                f"; declare {m.group(1)} in the project's Project.toml: julia --project={root} "
                f"-e 'using Pkg; Pkg.add(\"{m.group(1)}\")' ({faults.DOCS}: Julia packages)"
            )
        return message

    def function(self, request: dict, name: str):
        """The Julia function `name` of the request's module (a package's name may lead)."""
        module = self.module_of(request.get("file"), request.get("package"))
        package = request.get("package")
        if package and name.startswith(f"{package}."):
            name = name[len(package) + 1 :]
        try:
            return self.WeanJ.kernel_function(module, name)
        except Exception as e:
            where = package or request.get("file") or "WeanJ (julia/src/)"
            raise Refusal(
                "definition",
                f"{request['variant']}: no Julia function {name} in {where} "
                f"({faults.first_line(e)})",
            ) from None

    def handle(self, request: dict, arrays: list) -> tuple[dict, list]:
        op = request["op"]
        if op not in wire.OPS:
            raise Refusal("error", f"the Julia worker does not know the request {op!r}")
        fn = self.function(request, request["loss"])
        gradient = request.get("gradient")
        method = {"gradient": self.function(request, gradient)} if gradient else {}
        ad = request.get("ad") or "enzyme"
        if not gradient and ad != "enzyme" and op != "loss":
            method = {"backend": self.backend(ad)}
        # `Array` copies juliacall's view of each array (a PyArray of the same element
        # type, 1-based indices on the same axes) into a column-major Julia array. After
        # the example's arrays, an `evaluation` carries its directions (`_julia_beyond`).
        n = len(request.get("names", arrays))
        arrays, directions = arrays[:n], arrays[n:]
        given = [self.Main.Array(a) for a in arrays]
        args = given + list(request.get("params", []))
        wrt = tuple(bool(flag) for flag in request.get("wrt", ()))
        try:
            if op == "evaluation":
                reply = beyond.evaluation(self, fn, wrt, args, method, request, arrays, directions)
            elif beyond.takes(op, request):
                reply = beyond.answer(self, op, fn, wrt, args, method, request, arrays)
            else:
                fn = beyond.loss_of(self.WeanJ, fn, request)  # the loss alone
                reply = self._call(op, fn, wrt, args, method, request, arrays)
        except Refusal:
            raise
        except Exception as e:
            raise faults.refusal_of(request, e) from None
        faults.written(request, arrays, given, wrt)
        return reply

    def _call(self, op: str, fn, wrt, args: list, method: dict, request: dict, arrays: list):
        WeanJ = self.WeanJ  # noqa: N806 (Julia's name)
        options = {
            "activity": request.get("activity", "bare"),
            "runtime_activity": bool(request.get("runtime_activity", False)),
        }
        if op == "loss":
            return {"reply": "loss"}, [self._loss(WeanJ.loss_value(fn, *args), request)]
        if op == "timings":
            samples = int(request.get("samples", 7))
            measured = WeanJ.timings(fn, wrt, *args, samples=samples, **options, **method)
            return {
                "reply": "timings",
                "forward_ns": [int(t) for t in measured.forward_ns],
                "gradient_ns": [int(t) for t in measured.gradient_ns],
                "clock": "inside Julia (time_ns, after a warm-up call)",
            }, []
        if "gradient" in method:
            value, shadows = WeanJ.handwritten_loss_and_gradient(fn, method["gradient"], wrt, *args)
        elif "backend" in method:
            value, shadows = self._ad(method["backend"], fn, wrt, args, request, arrays)
        elif op == "grad":
            return {"reply": "grad"}, _gradients(WeanJ.enzyme_gradient(fn, wrt, *args, **options))
        else:
            value, shadows = WeanJ.loss_and_gradient(fn, wrt, *args, **options)
        if op == "grad":
            return {"reply": "grad"}, _gradients(shadows)
        return {"reply": op}, [self._loss(value, request), *_gradients(shadows)]

    def _ad(self, backend, fn, wrt: tuple, args: list, request: dict, arrays: list):
        """DifferentiationInterface's loss and gradient (`WeanJ.ad_loss_and_gradient`),
        prepared once per variant and argument types and shapes (`WeanJ.ad_prepare`: DI's
        preparation is valid for arguments of the same types and sizes, so Mooncake
        compiles its rule once, as Enzyme compiles once per argument types). For an AD
        that returns its loss in its inputs' type, the loss comes from one primal call
        first, its own type checked before the AD runs."""
        WeanJ = self.WeanJ  # noqa: N806 (Julia's name)
        ad = request.get("ad")
        shapes = tuple((a.dtype.str, a.shape) for a in arrays)
        params = tuple(type(p).__name__ for p in request.get("params", []))
        where = (request.get("file"), request.get("package"), request["loss"])
        key = (request["variant"], *where, ad, wrt, shapes, params)
        value = None
        if ad in LOSS_IN_INPUT_TYPE:
            value = WeanJ.loss_value(fn, *args)
            refused = faults.loss_type_refusal(request, self._loss(value, request), arrays, wrt)
            if refused is not None:
                raise refused
        if key not in self.preps:
            self.preps[key] = WeanJ.ad_prepare(backend, fn, wrt, *args)
        found, shadows = WeanJ.ad_loss_and_gradient(backend, fn, wrt, *args, prep=self.preps[key])
        return (found if value is None else value), shadows

    def _loss(self, value, request: dict):
        """The loss, a `[loss]` vector in Julia, as a 0-d array of its own element type."""
        loss = value.to_numpy()
        if loss.shape != (1,) or loss.dtype.kind != "f":
            raise Refusal(
                "error",
                f"{request['variant']}: {request['loss']} returned a "
                f"{self.Main.eltype(value)}, not a real floating-point number",
            )
        return loss.reshape(())


def _once(cache: dict, key: str, load, what: str, why) -> object:
    """`load()` once per key, kept in `cache`. A load that fails is logged (`what`
    failed) and kept as a `Refusal("unavailable", why(error))`, raised again on every
    later request: a file or package that does not load is not tried again."""
    if key not in cache:
        try:
            cache[key] = load()
        except Exception as e:
            faults.log(f"{what} failed:\n{e}")
            cache[key] = Refusal("unavailable", why(e))
    found = cache[key]
    if isinstance(found, Refusal):
        raise found
    return found


def _gradients(shadows) -> list:
    """Enzyme's shadows as C-order numpy copies (complex ones are the stored convention
    already)."""
    import numpy as np

    return [np.ascontiguousarray(g.to_numpy()) for g in shadows]


def main() -> None:
    session = JuliaSession()
    wire.serve(session.start, session.handle)


if __name__ == "__main__":
    main()
