"""What the Julia worker says when something goes wrong, each in one line: a start that
fails (with what to do), a Julia exception of a request (a kernel's own check, Enzyme's
activity errors, an AD that cannot push its numbers through a kernel or cannot
differentiate one that writes arrays), a kernel that wrote its inputs, a loss in another
type than its inputs'. Julia's own text goes to the log.

Part of the worker (`_julia_worker`): like `_julia_wire`, it imports only the standard
library and, inside its functions, numpy, which the worker imports after juliacall.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

if __package__:  # imported as weanj._backends._julia_faults (weanj, the tests)
    from . import _julia_wire as wire
else:  # imported by the worker running as a script, from this folder
    import _julia_wire as wire

Refusal = wire.Refusal

DOCS = "docs/julia.md"
# The AD packages of `julia_variant(ad=...)` (weanj's `_julia_env.AD`): loaded with
# `import` on first use, which also loads DifferentiationInterface's extension for it.
AD_PACKAGES = {
    "forwarddiff": "ForwardDiff",
    "mooncake": "Mooncake",
    "zygote": "Zygote",
    "finitedifferences": "FiniteDifferences",
}
# The number types an AD pushes through a kernel instead of floats, as Julia prints them,
# and its AD (a key of AD_PACKAGES): only ForwardDiff's among the ADs weanj offers
# (Mooncake, Zygote and FiniteDifferences call the kernel on floats).
AD_NUMBERS = {"ForwardDiff.Dual{": "forwarddiff"}
GENERIC = f"{DOCS}: Kernels every AD can differentiate"


def first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# --- starting ----------------------------------------------------------------------------


def glibcxx_hint(message: str, julia: str | None) -> str:
    """What to do when an older libstdc++ was loaded into this process before Julia's."""
    if "GLIBCXX" not in message and "CXXABI" not in message:
        return ""
    bundled = "<Julia's folder>/lib/julia/libstdc++.so.6"
    if julia:
        # Julia's binary distributions (juliaup's included) ship theirs in lib/julia.
        candidate = os.path.join(
            os.path.dirname(os.path.dirname(os.path.realpath(julia))), "lib", "julia"
        )
        if os.path.isfile(os.path.join(candidate, "libstdc++.so.6")):
            bundled = os.path.join(candidate, "libstdc++.so.6")
    return (
        f"; an older libstdc++ than Julia needs was loaded first: start weanj with "
        f"LD_PRELOAD={bundled} ({DOCS}: Troubleshooting)"
    )


def enzyme_hint() -> str:
    project = os.environ.get("PYTHON_JULIACALL_PROJECT")
    if project:
        return (
            f"PYTHON_JULIACALL_PROJECT={project} is used as it is and nothing installs "
            f"Enzyme there: run julia --project={project} -e 'using Pkg; Pkg.add(\"Enzyme\")', "
            "or unset PYTHON_JULIACALL_EXE and PYTHON_JULIACALL_PROJECT"
        )
    return (
        "juliapkg installs it from weanj/juliapkg.json; reinstall with "
        "python -c 'import juliapkg; juliapkg.resolve(force=True)'"
    )


def weanj_hint(sources: str | None) -> str:
    project = os.environ.get("PYTHON_JULIACALL_PROJECT")
    where = sources or "<weanj>/julia"
    if project:
        return (
            f"PYTHON_JULIACALL_PROJECT={project} is used as it is: add WeanJ there with "
            f"julia --project={project} -e 'using Pkg; Pkg.develop(path=\"{where}\")', or "
            "unset PYTHON_JULIACALL_EXE and PYTHON_JULIACALL_PROJECT"
        )
    return (
        f"juliapkg develops it from {where}; reinstall with "
        "python -c 'import juliapkg; juliapkg.resolve(force=True)'"
    )


def start_failure(what: str, e: Exception, julia: str | None) -> str:
    """Why importing juliacall failed, in one line (its exception in the log)."""
    log(f"importing juliacall failed: {e!r}")
    if isinstance(e, subprocess.CalledProcessError):
        # juliapkg runs Julia processes of its own (to find libjulia, to install the
        # packages with Pkg), whose output went to the log.
        return (
            f"could not start {what}: juliapkg's setup of the Julia environment failed "
            f"(a Julia process exited with status {e.returncode} finding libjulia or "
            "installing packages; its output is in the log)"
        )
    hint = glibcxx_hint(str(e), julia)
    return f"could not start {what} through juliacall ({first_line(e)}){hint}"


# --- requests ------------------------------------------------------------------------------


def written(request: dict, arrays: list, given: list, wrt: tuple) -> None:
    """A `Refusal` (`error`) naming the first array argument the call left changed: a
    kernel must leave its arguments as they came; one that writes a `Const` (not
    differentiated) argument can make Enzyme's gradient wrong without any error."""
    import numpy as np

    names = request.get("names") or [f"argument {k + 1}" for k in range(len(arrays))]
    for k, (before, after) in enumerate(zip(arrays, given, strict=True)):
        now = after.to_numpy()
        nan = before.dtype.kind in "fc"
        if now.shape != before.shape or not np.array_equal(now, before, equal_nan=nan):
            role = "differentiated" if k < len(wrt) and wrt[k] else "not differentiated"
            raise Refusal(
                "error",
                f"{request['variant']}: {request['loss']} wrote its input {names[k]} "
                f"({role}): a kernel must leave its arguments unchanged (for Enzyme, a "
                f"written Const argument can make the gradient wrong silently; {DOCS})",
            )


def loss_type_refusal(request: dict, loss, arrays: list, wrt: tuple) -> Refusal | None:
    """A `Refusal` (`error`) where the loss (a 0-d numpy array) is not of the real type of
    the differentiated arrays, told before an AD that converts it sees it; or None."""
    import numpy as np

    flagged = [a for a, flag in zip(arrays, wrt, strict=False) if flag]
    if not flagged or loss.dtype == np.finfo(flagged[0].dtype).dtype:
        return None
    expected = np.finfo(flagged[0].dtype).dtype
    package = AD_PACKAGES.get(request.get("ad") or "", "the AD")
    return Refusal(
        "error",
        f"{request['variant']}: {request['loss']} returned a {loss.dtype} loss on "
        f"{expected} inputs (seen before {package} ran: it returns its loss in its inputs' "
        "type, which would hide this); a Julia loss returns the element type of its float "
        "arrays (julia/README.md: Sums in Float64, rounded to T once)",
    )


def refusal_of(request: dict, e: Exception) -> Refusal:
    """A Julia exception as one line: a loss that breaks the outputs' convention (`error`,
    `OutputsConventionError`), a kernel's own check (`input`), Enzyme's activity
    errors naming the option of `weanj.julia_variant` that fixes them (`definition`), an
    AD that cannot differentiate the kernel as written (`definition`, `ad_refusal`),
    anything else (`error`: a bug in the kernel; Julia's stack trace goes to the log)."""
    text, first = str(e), first_line(e)
    variant, loss = request["variant"], request["loss"]
    options = f"{DOCS}: Closures and callables"
    if "EnzymeMutabilityException" in text or "cannot be proven readonly" in text:
        return Refusal(
            "definition",
            f"{variant}: Enzyme cannot prove that {loss} leaves what it captured unwritten "
            "(EnzymeMutabilityException): pass function='duplicated' to weanj.julia_variant "
            f"if that state holds values the loss depends on, function='const' if it does "
            f"not ({options})",
        )
    if "Constant memory is stored" in text or "EnzymeRuntimeActivityError" in text:
        fix = "runtime_activity=True"
        if request.get("activity") != "duplicated":
            fix = f"function='duplicated' (if {loss} keeps a buffer of its own) or {fix}"
        return Refusal(
            "definition",
            f"{variant}: Enzyme found constant memory stored into a differentiable variable "
            f"(EnzymeRuntimeActivityError): pass {fix} to weanj.julia_variant ({options})",
        )
    if first.startswith("OutputsConventionError: "):  # the variant's own fault, not an input
        said = first.removeprefix("OutputsConventionError: ")
        return Refusal("error", f"{variant}: {loss}: {said} ({DOCS}: Outputs)")
    if first.startswith(("DimensionMismatch", "ArgumentError")):
        return Refusal("input", f"{variant}: {first}")
    log(f"{variant}: {text}")
    refused = ad_refusal(request, text, first)
    if refused is not None:
        return refused
    ad = request.get("ad") or "enzyme"
    if not request.get("gradient") and ad != "enzyme" and request.get("op") != "loss":
        package = AD_PACKAGES.get(ad, ad)
        return Refusal("error", f"{variant}: {package} (ad={ad!r}) failed on {loss}: {first}")
    return Refusal("error", f"{variant}: {first}")


def ad_refusal(request: dict, text: str, first: str) -> Refusal | None:
    """An AD that cannot differentiate the kernel as it is written, in one line naming
    what refused and the fix: Zygote on a kernel that writes an array, a method that
    refuses an AD's number type (its signature: `Matrix{T} where {T <: AbstractFloat}`),
    a conversion of one to a float type. None for anything else."""
    variant, loss = request["variant"], request["loss"]
    if first.startswith("Mutating arrays is not supported"):
        return Refusal(
            "definition",
            f"{variant}: Zygote (ad='zygote') cannot differentiate {loss}, which writes into "
            f"an array (Zygote: {first}); ad='enzyme' (the default) and ad='mooncake' "
            f"differentiate in-place loops ({DOCS}: Julia's AD besides Enzyme)",
        )
    m = re.match(r"MethodError: (?:no method matching (.+?)\((.*)\)\s*$|Cannot `convert`.*)", first)
    marker = next((k for k in AD_NUMBERS if k in first), None)
    if m is None or marker is None:
        return None
    ad = AD_NUMBERS[marker]
    package = AD_PACKAGES[ad]
    doing = f"{package} (ad={ad!r}) passes its dual numbers through {loss}"
    name = m.group(1)
    if name is None or name in ("Float64", "Float32", "Float16"):
        return Refusal(
            "definition",
            f"{variant}: {doing}, which converts one to a float type ({_short(first)}): "
            "Float64(x), or a store into a Float64 array such as zeros(n), drops the "
            "derivative; allocate and sum in the arrays' element type (zeros(eltype(x), "
            f"n); promote_type(Float64, eltype(x)) for a Float64 sum) ({GENERIC})",
        )
    candidate = _candidate(text, name)
    refuser = f"{candidate} refuses them" if candidate else f"no method of {name} takes them"
    return Refusal(
        "definition",
        f"{variant}: {doing}, and {refuser} (called as {name}({_short(m.group(2))})): type "
        "the differentiated arrays T <: Real, not AbstractFloat, or give the differentiated "
        "and the constant arrays type parameters of their own (x::Matrix{<:Real}), "
        f"allocating in their promoted type ({GENERIC})",
    )


def _short(text: str) -> str:
    """`text` with each AD number type's parameters elided: `ForwardDiff.Dual{…}`."""
    for marker in AD_NUMBERS:
        out, at = [], 0
        while (start := text.find(marker, at)) >= 0:
            depth, end = 0, start + len(marker) - 1
            for end in range(start + len(marker) - 1, len(text)):
                depth += {"{": 1, "}": -1}.get(text[end], 0)
                if depth == 0:
                    break
            out.append(text[at:start] + marker + "…}")
            at = end + 1
        text = "".join(out) + text[at:]
    return text


def _candidate(text: str, name: str) -> str | None:
    """The first of Julia's "Closest candidates are:" for `name` (its signature, without
    the `!Matched` marks of the arguments it did not match), or None."""
    lines = text.splitlines()
    called = re.compile(rf"^(?:\S*\.)?{re.escape(name.rsplit('.', 1)[-1])}\(")
    for k, line in enumerate(lines):
        if line.strip() == "Closest candidates are:":
            for after in lines[k + 1 :]:
                if called.match(after.strip()):
                    return after.strip().replace("!Matched::", "::")
            return None
    return None
