"""The Julia worker's side of outputs and second derivatives (docs/outputs.md; what
crosses: `_julia_evaluation`): the requests of a variant whose example declares outputs,
and the `outputs` and `evaluation` requests, answered by WeanJ's `julia/src/outputs.jl`
and `second_order.jl`. Imported by `_julia_worker` from the folder beside it, as
`_julia_faults` is: the standard library only (numpy through the worker's helpers).

The layout of a variant's outputs (their names and sizes) is found by one call of its
kernel (`WeanJ.outputs_layout`) and kept per variant and argument types and shapes, as
DifferentiationInterface's preparations are (`WeanJ.outputs_prepare`, `hvp_prepare`):
prepared once, valid for every later call on arguments of the same types and sizes.
"""

from __future__ import annotations

from typing import Any

# the requests answered here whatever the example declares
OPS = ("outputs", "evaluation")


def takes(op: str, request: dict) -> bool:
    """Whether this module answers the request: `outputs`, `evaluation`, and the loss
    with its gradient of a variant whose example declares outputs."""
    return op in OPS or (op == "loss_and_grad" and bool(request.get("outputs")))


def loss_of(WeanJ: Any, fn: Any, request: dict) -> Any:  # noqa: N803 (Julia's name)
    """The kernel as a loss alone: `LossAlone(fn)` where it returns outputs beside its
    loss (the `loss`, `grad` and `timings` requests), else `fn` itself."""
    return WeanJ.LossAlone(fn) if request.get("outputs") else fn


def _key(request: dict, arrays: list, wrt: tuple, what: str) -> tuple:
    """What a preparation is valid for: the variant, its kernel and AD, the flags, the
    arguments' types and shapes, and what it prepares."""
    shapes = tuple((a.dtype.str, a.shape) for a in arrays)
    params = tuple(type(p).__name__ for p in request.get("params", []))
    where = (request.get("file"), request.get("package"), request["loss"], request.get("ad"))
    where += (request.get("hvp"),)  # the outer AD of the Hessian products, if any
    options = (request.get("activity"), bool(request.get("runtime_activity")))
    return (request["variant"], *where, options, wrt, shapes, params, what)


def _once(session: Any, key: tuple, make) -> Any:
    if key not in session.preps:
        session.preps[key] = make()
    return session.preps[key]


def _backends(session: Any, method: dict, request: dict) -> Any:
    """The ADTypes backends of the variant's AD in each role (`WeanJ.enzyme_backends`,
    `outputs_backends`: the pullback's, the pushforward's or `nothing`, `hvp`'s)."""
    if "backend" in method:
        return session.WeanJ.outputs_backends(method["backend"])
    return session.WeanJ.enzyme_backends(
        request.get("activity", "bare"), bool(request.get("runtime_activity", False))
    )


def _layout(session: Any, fn: Any, request: dict, args: list, arrays: list, wrt: tuple):
    """`(layout, found)`: the outputs' layout, kept; `found` the call's `(value,
    outputs)` where this call found it, else None."""
    key = _key(request, arrays, wrt, "layout")
    if key in session.preps:
        return session.preps[key], None
    names = tuple(request["outputs"])
    found = session.WeanJ.outputs_layout(fn, names, *args)
    session.preps[key] = found.layout
    return found.layout, found


def answer(session: Any, op: str, fn: Any, wrt: tuple, args: list, method: dict, request, arrays):
    """The reply of `outputs` and of `loss_and_grad` with outputs (their arrays: the loss,
    the gradient's where asked, the outputs)."""
    WeanJ, names = session.WeanJ, list(request.get("outputs") or ())  # noqa: N806
    if op == "outputs":
        found = WeanJ.outputs_layout(fn, tuple(names), *args)
        session.preps[_key(request, arrays, wrt, "layout")] = found.layout
        loss = session._loss(found.value, request)
        return {"reply": op, "outputs": names}, [loss, *_numpy(found.outputs)]
    if "gradient" in method:
        value, gradients, outputs = WeanJ.handwritten_outputs(
            fn, method["gradient"], tuple(names), wrt, *args
        )
    else:
        backends = _backends(session, method, request)
        layout, _ = _layout(session, fn, request, args, arrays, wrt)
        prep = _once(
            session,
            _key(request, arrays, wrt, "gradient"),
            lambda: WeanJ.outputs_prepare(backends, fn, layout, wrt, *args, seeds=1),
        )
        value, gradients, outputs = WeanJ.outputs_loss_and_gradient(
            backends, fn, layout, wrt, *args, prep=prep
        )
    loss = session._loss(value, request)
    return {"reply": op, "outputs": names}, [loss, *_numpy(gradients), *_numpy(outputs)]


def evaluation(session, fn, wrt: tuple, args: list, method: dict, request, arrays, directions):
    """The reply of a check's `evaluation` (`_julia_evaluation`'s order): the loss, the
    gradient, the outputs, their pullbacks and pushforwards where computed (`pulled`,
    `pushed`), the Hessian-vector products where asked and computed (`second`); what was
    refused, why, in one line (`forward_refused`, `second_refused`)."""
    WeanJ, names = session.WeanJ, list(request.get("outputs") or ())  # noqa: N806
    k = sum(wrt)
    tangents = tuple(session.Main.Array(a) for a in directions[:k])
    weights = tuple(session.Main.Array(a) for a in directions[k : k + len(names)])
    seconds = tuple(session.Main.Array(a) for a in directions[k + len(names) :])
    reply: dict[str, Any] = {"reply": "evaluation", "outputs": names}
    reply.update(pulled=False, pushed=False, second=False, forward_refused="", second_refused="")
    backends = None if "gradient" in method else _backends(session, method, request)
    if names and backends is not None:
        layout, _ = _layout(session, fn, request, args, arrays, wrt)
        prep = _once(
            session,
            _key(request, arrays, wrt, "derivatives"),
            lambda: WeanJ.outputs_prepare(
                backends, fn, layout, wrt, *args, seeds=1 + len(names), forward=True
            ),
        )
        found = WeanJ.outputs_derivatives(
            backends, fn, layout, wrt, tuple(args), tangents, weights, prep=prep
        )
        out = [session._loss(found.value, request), *_numpy(found.gradients)]
        out += [*_numpy(found.outputs), *_numpy(found.pullbacks)]
        reply["pulled"] = True
        if found.pushforwards is not None:
            out += _numpy(found.pushforwards)
            reply["pushed"] = True
        reply["forward_refused"] = str(found.forward_refused)
    elif names:  # a hand-written gradient: the outputs, nothing differentiates them
        _, out = answer(session, "loss_and_grad", fn, wrt, args, method, request, arrays)
    else:
        _, out = session._call("loss_and_grad", fn, wrt, args, method, request, arrays)
    if request.get("second"):
        found = (backends, fn, wrt, args, tangents, seconds)
        products, why = _hessian_products(session, request, arrays, *found)
        out += products
        reply["second"], reply["second_refused"] = bool(products), why
    return reply, out


def _hessian_products(
    session, request, arrays, backends, fn, wrt, args, tangents, seconds
) -> tuple[list, str]:
    """`(H_aa·v_a, H_aa·u_a per flagged array, "")`, or `([], why not)` in one line: the
    first order stands where DifferentiationInterface's `hvp` cannot differentiate the
    kernel (a preparation that failed is not tried again for these arguments)."""
    if backends is None:
        return [], f"{request['variant']}'s gradient is written by hand (no AD differentiates it)"
    WeanJ = session.WeanJ  # noqa: N806 (Julia's name)
    loss = loss_of(WeanJ, fn, request)
    key = _key(request, arrays, wrt, "hvp")
    try:
        second = _second_order(session, backends, request)
        if key not in session.preps:
            try:
                made = WeanJ.hvp_prepare(second, loss, wrt, *args, directions=2 * sum(wrt))
            except Exception as e:  # noqa: BLE001 - kept, said below
                made = e
            session.preps[key] = made
        if isinstance(session.preps[key], Exception):
            raise session.preps[key]
        products = WeanJ.loss_hvps(
            second, loss, wrt, tuple(args), tangents, seconds, prep=session.preps[key]
        )
    except Exception as e:  # noqa: BLE001 - the first order stands; the reason is said
        text = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        return [], f"DifferentiationInterface's hvp failed on {request['loss']}: {text}"
    return _numpy(products), ""


def _second_order(session: Any, backends: Any, request: dict) -> Any:
    """The backend of the Hessian products: DI's own combination for the variant's AD, or
    with `hvp=` `SecondOrder(outer, the variant's reverse backend)` (`WeanJ.second_order`)."""
    outer = request.get("hvp")
    if not outer:
        return backends.second
    if outer == "enzyme":  # Enzyme's forward mode, with the variant's Enzyme options
        options = (request.get("activity", "bare"), bool(request.get("runtime_activity")))
        pushing = session.WeanJ.enzyme_backends(*options).forward
    else:
        pushing = session.backend(outer)
    return session.WeanJ.second_order(pushing, backends.reverse)


def _numpy(values) -> list:
    """Julia arrays as C-order numpy copies."""
    import numpy as np

    return [np.ascontiguousarray(v.to_numpy()) for v in values]
