"""Finding a supported Julia, without starting one.

weanj's Julia variants need Julia 1.10.3 to 1.13 (`SUPPORTED_TEXT`): the same bounds as
the `julia` compat entries of python/weanj/juliapkg.json, julia/Project.toml and
Project.toml (`COMPAT`, in Pkg's syntax; a test checks all three, and that they lie
inside the bounds of the juliacall installed). 1.10.3 is PythonCall's own minimum
(juliacall's juliapkg.json asks for `^1.10.3`); 1.13 is the newest Julia that Enzyme.jl,
PythonCall and JET (the package's type checks) all support (docs/julia.md, "Julia
versions", with the sources and their dates). Where several are installed, the newest
one this Python can use is chosen.

Two obstacles lie in the Python, not in Julia, and each is one line:
- OpenSSL: juliacall bounds Julia's `OpenSSL_jll` by the Python's own OpenSSL
  (`"<=python"`), and Julia 1.12 and later bundle OpenSSL 3.5, so with a Python whose
  OpenSSL is older than 3.5 (`ssl.OPENSSL_VERSION_INFO`) only Julia 1.10 and 1.11 can be
  used (juliapkg itself then asks for Julia `1 - 1.11`: pyjuliapkg PR 74).
- Python 3.14: PythonCall supports it from 0.9.31 only (it was dropped in 0.9.30 and
  broke earlier ones at import), so juliacall older than that makes Julia unavailable.

Looking runs `julia --version` only (once per executable and process), never Julia
itself, and never downloads anything. Every reason for not finding one is one line
saying what to do. Starting Julia is the worker's business (`_julia_client` starts it
with `worker_settings`, `_julia_worker` imports juliacall).
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# A weanj-specific setting, checked first: the path of a `julia` executable.
ENV_VAR = "WEANJ_JULIA"

# The supported versions, [MINIMUM, BELOW) compared on (major, minor, patch) as Pkg
# compares them (a pre-release counts as its release: 1.13.0-rc1 is a 1.13, 1.14.0-DEV a
# 1.14).
MINIMUM = (1, 10, 3)
BELOW = (1, 14, 0)
# The same range in Pkg's compat syntax: a hyphen range whose upper bound `1.13` means
# every 1.13.x ("~1.10" would be [1.10.0, 1.11.0) and let 1.10.0-1.10.2 in).
COMPAT = "1.10.3 - 1.13"
# The minor versions CI runs (.github/workflows/julia.yml's matrix).
SUPPORTED_MINORS = ((1, 10), (1, 11), (1, 12), (1, 13))
SUPPORTED_TEXT = "Julia 1.10 (from 1.10.3) to 1.13"

# Julia 1.12 and later need OpenSSL 3.5 in the Python that embeds them (juliacall's
# `OpenSSL_jll = "<=python"`; pyjuliapkg's `openssl_compat`: "julia 1.12 requires openssl
# 3.5").
OPENSSL_JULIA = (1, 12)
OPENSSL_NEEDED = (3, 5)
OPENSSL_FIX = (
    "use a Python whose OpenSSL is 3.5 or newer "
    '(python -c "import ssl; print(ssl.OPENSSL_VERSION)"), e.g. a current python.org or '
    "`uv python` build, or run `juliaup add 1.11`"
)
# PythonCall 0.9.31 (2025-12-17) restored Python 3.14 support, which 0.9.30 had removed.
JULIACALL_FOR_PY314 = (0, 9, 31)

# `julia --version` answers at once; the limit only keeps a broken executable from
# hanging the listing of variants.
VERSION_TIMEOUT_S = 30


def openssl_version() -> tuple[int, int, int] | None:
    """(major, minor, patch) of this Python's OpenSSL, as juliapkg reads it
    (`ssl.OPENSSL_VERSION_INFO`); None for a Python without `ssl`."""
    try:
        import ssl
    except ImportError:
        return None
    return tuple(ssl.OPENSSL_VERSION_INFO[:3])


def openssl_blocks(key: tuple) -> bool:
    """Whether this Python's OpenSSL rules out a Julia of this version (1.12 and later
    need OpenSSL 3.5)."""
    found = openssl_version()
    return tuple(key[:2]) >= OPENSSL_JULIA and found is not None and found[:2] < OPENSSL_NEEDED


def openssl_reason(key: tuple) -> str:
    """Why a Julia 1.12+ cannot run from this Python, without the remedy."""
    found = ".".join(str(k) for k in openssl_version() or ())
    return (
        f"Julia {version_text(key)} needs a Python whose OpenSSL is 3.5 or newer, and this "
        f"one has OpenSSL {found} (juliacall bounds Julia's OpenSSL_jll by the Python's)"
    )


def fix_version() -> str:
    """What to run for a supported Julia: 1.11 where this Python's OpenSSL rules out
    1.12 and later, else 1.13."""
    if openssl_blocks(OPENSSL_JULIA):
        return "run `juliaup add 1.11` (or set WEANJ_JULIA=/path/to/julia-1.11/bin/julia)"
    return "run `juliaup add 1.13` (or set WEANJ_JULIA=/path/to/julia)"


def install_hint() -> str:
    """How to get a supported Julia at all (juliaup's installer, then the `fix_version`
    channel)."""
    channel = "1.11" if openssl_blocks(OPENSSL_JULIA) else "1.13"
    return (
        f"install Julia {channel} with juliaup (curl -fsSL https://install.julialang.org | sh, "
        f"then `juliaup add {channel}`) or set WEANJ_JULIA=/path/to/julia"
    )


# The fix when the worker finds another Julia running than the one found here (read by
# `_julia_client` when it starts the worker).
FIX_VERSION = fix_version()


def python_reason() -> str | None:
    """Why this Python cannot run Julia through the juliacall installed, or None: on
    Python 3.14 and later, a juliacall older than 0.9.31 (PythonCall issue 686, PR 723;
    release notes of 0.9.30 and 0.9.31). Without juliacall, None: that reason is given
    where juliacall is looked for."""
    if sys.version_info < (3, 14):
        return None
    try:
        installed = importlib.metadata.version("juliacall")
    except importlib.metadata.PackageNotFoundError:
        return None
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", installed)
    if m is None or tuple(int(x) for x in m.groups()) >= JULIACALL_FOR_PY314:
        return None
    python = f"{sys.version_info[0]}.{sys.version_info[1]}"
    return (
        f"Python {python} needs juliacall 0.9.31 or later (PythonCall dropped Python 3.14 in "
        f"0.9.30 and restored it in 0.9.31), and juliacall {installed} is installed: "
        "pip install -U 'juliacall>=0.9.31', or use Python 3.13"
    )


_VERSION_OUTPUT = re.compile(r"julia version (\d+\.\d+\.\d+\S*)")
_VERSION_FOLDER = re.compile(r"julia-(\d+\.\d+\.\d+(?:-[^+]+)?)(?:\+|$)")


def _executable(path: str | Path) -> bool:
    return Path(path).is_file() and os.access(path, os.X_OK)


def version_key(text: str) -> tuple[int, int, int, int, str] | None:
    """A sortable key of a version as Julia and juliaup write it (`1.11.5`,
    `1.12.0-rc1`): numbers compare as numbers, a pre-release sorts before its release."""
    m = re.match(r"(\d+)\.(\d+)\.(\d+)(?:-(\S+))?", text)
    if m is None:
        return None
    major, minor, patch, pre = m.groups()
    return int(major), int(minor), int(patch), 0 if pre else 1, pre or ""


def version_text(key: tuple) -> str:
    return ".".join(str(k) for k in key[:3]) + (f"-{key[4]}" if key[4] else "")


def supported(key: tuple) -> bool:
    """Whether a version key is in [MINIMUM, BELOW) (on major, minor, patch)."""
    return MINIMUM <= tuple(key[:3]) < BELOW


def why_unsupported(key: tuple) -> str:
    """What is wrong with an unsupported version, for the one-line reasons."""
    if tuple(key[:3]) >= BELOW:
        return "newer than 1.13, the newest release weanj supports"
    if tuple(key[:2]) == MINIMUM[:2]:
        return "older than 1.10.3, which PythonCall, juliacall's Julia side, requires"
    return "older than 1.10, the oldest that PythonCall and Enzyme.jl support"


@functools.lru_cache(maxsize=64)
def _probe_version(path: str, mtime_ns: int, size: int) -> tuple[tuple | None, str | None]:
    """`(version key, None)` from `path --version`, or `(None, what went wrong)`."""
    try:
        done = subprocess.run(
            [path, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return None, f"`{path} --version` did not answer within {VERSION_TIMEOUT_S} s"
    except OSError as e:
        return None, f"cannot run {path} ({e.strerror or e})"
    m = _VERSION_OUTPUT.search(done.stdout)
    if done.returncode != 0 or m is None:
        return None, (
            f"{path} is not a working Julia (`--version` exited with status {done.returncode})"
        )
    return version_key(m.group(1)), None


def julia_version(path: str | Path) -> tuple[tuple | None, str | None]:
    """The version of the Julia at `path` (`julia --version`, cached per file)."""
    st = os.stat(path)
    return _probe_version(str(path), st.st_mtime_ns, st.st_size)


def _juliaup_versions() -> list[Path]:
    """The supported Julia executables juliaup installed (`julia-1.11.5+0.x64.linux.gnu`),
    newest first by version number, not by name (1.9.4 is older than 1.11.5, and 1.10.9
    than 1.10.10)."""
    name = "julia.exe" if os.name == "nt" else "julia"
    depot = Path(os.environ.get("JULIAUP_DEPOT_PATH") or Path.home() / ".julia")
    found = []
    for folder in (depot / "juliaup").glob("julia-*"):
        m = _VERSION_FOLDER.match(folder.name)
        key = version_key(m.group(1)) if m else None
        if key is not None and supported(key):
            found.append((key, folder / "bin" / name))
    # Releases first (newest first), then pre-releases: an installed 1.11.0-rc1 is used
    # only where no supported release is.
    found.sort(key=lambda item: (item[0][3], item[0]), reverse=True)
    return [path for _, path in found]


@dataclass(frozen=True)
class JuliaFound:
    """The outcome of looking for Julia: the executable and its version, or why not."""

    path: Path | None
    version: str | None = None
    why: str | None = None


def _explicit(var: str, value: str) -> JuliaFound:
    """The Julia an explicit setting names, used as it is or refused (never replaced by
    another: the user asked for this one)."""
    path = shutil.which(value) if os.sep not in value else value
    if path is None or not _executable(path):
        return JuliaFound(None, why=f"{var}={value} is not an executable file; {install_hint()}")
    if var == "PYTHON_JULIACALL_EXE" and not os.environ.get("PYTHON_JULIACALL_PROJECT"):
        return JuliaFound(
            None,
            why="PYTHON_JULIACALL_EXE is set without PYTHON_JULIACALL_PROJECT (juliacall "
            "needs both); set both, or set WEANJ_JULIA instead",
        )
    key, problem = julia_version(path)
    if problem is not None:
        return JuliaFound(None, why=f"{var}={value}: {problem}; {install_hint()}")
    if not supported(key):
        return JuliaFound(
            None,
            why=f"{var}={value} is Julia {version_text(key)} ({why_unsupported(key)}); weanj's "
            f"Julia variants need {SUPPORTED_TEXT}: {fix_version()} and set {var} to that "
            "Julia, or unset it",
        )
    if openssl_blocks(key):
        return JuliaFound(None, why=f"{var}={value}: {openssl_reason(key)}; {OPENSSL_FIX}")
    return JuliaFound(Path(path), version_text(key))


def _newest_first(found: tuple[tuple, int]) -> tuple:
    """The order of preference among usable Julias: releases before pre-releases, then
    the newest version; among equal versions, the first candidate."""
    key, position = found
    return (-key[3], tuple(-k for k in key[:3]), position)


def locate_julia() -> JuliaFound:
    """The Julia weanj uses, or why there is none.

    First, whether this Python can run Julia at all (`python_reason`). An explicit setting
    is used as it is or refused: `$WEANJ_JULIA`, juliacall's `$PYTHON_JULIACALL_EXE` (with
    its `$PYTHON_JULIACALL_PROJECT`), juliapkg's `$PYTHON_JULIAPKG_EXE`, in this order.
    Otherwise the newest usable one of `julia` on PATH, juliaup's launcher and the
    versions juliaup installed: supported, and not ruled out by this Python's OpenSSL (a
    launcher whose default is 1.12 is passed over for an installed 1.11 where the
    Python's OpenSSL is older than 3.5). Runs only `julia --version`.
    """
    why = python_reason()
    if why is not None:
        return JuliaFound(None, why=why)
    for var in (ENV_VAR, "PYTHON_JULIACALL_EXE", "PYTHON_JULIAPKG_EXE"):
        value = os.environ.get(var)
        if value:
            return _explicit(var, value)

    home = Path.home()
    launcher = home / ".juliaup" / "bin" / ("julia.exe" if os.name == "nt" else "julia")
    candidates = [shutil.which("julia"), launcher, *_juliaup_versions()]
    seen, passed_over, usable = set(), [], []
    blocked_by_openssl = False
    for candidate in candidates:
        if candidate is None or not _executable(candidate):
            continue
        real = Path(candidate).resolve()
        if real in seen:
            continue
        seen.add(real)
        key, problem = julia_version(candidate)
        if problem is not None:
            passed_over.append(problem)
        elif not supported(key):
            passed_over.append(f"Julia {version_text(key)} at {candidate} ({why_unsupported(key)})")
        elif openssl_blocks(key):
            blocked_by_openssl = True
            passed_over.append(f"{openssl_reason(key)} (at {candidate})")
        else:
            usable.append((key, len(usable), Path(candidate)))
    if usable:
        key, _, path = min(usable, key=lambda item: _newest_first(item[:2]))
        return JuliaFound(path, version_text(key))
    if not passed_over:
        return JuliaFound(
            None, why=f"no Julia found (no `julia` on PATH, no juliaup install); {install_hint()}"
        )
    fix = OPENSSL_FIX if blocked_by_openssl else fix_version()
    return JuliaFound(
        None,
        why=f"no usable Julia: {'; '.join(passed_over)}; weanj's Julia variants need "
        f"{SUPPORTED_TEXT}: {fix}",
    )


def find_julia() -> tuple[Path | None, str | None]:
    """`(executable, None)` when a supported Julia is found here, else `(None, why not)`."""
    found = locate_julia()
    return found.path, found.why


# --- the worker's settings for juliapkg and juliacall -------------------------------------


def _threads_requested(environ: Mapping[str, str]) -> bool:
    """Whether Julia will start with more than one thread (juliacall's own default: 1,
    or `$JULIA_NUM_THREADS`)."""
    value = environ.get("PYTHON_JULIACALL_THREADS") or environ.get("JULIA_NUM_THREADS")
    return value is not None and value.strip() != "1"


def worker_settings(julia: Path, environ: Mapping[str, str]) -> dict[str, str]:
    """The settings juliapkg and juliacall read on import, for the Julia worker's
    environment (`environ` is the one it inherits; the user's own settings win).

    - `PYTHON_JULIAPKG_EXE`: the Julia found here (which honoured this very setting,
      after `WEANJ_JULIA`), so that juliapkg never looks for one to download; not with
      juliacall's own `PYTHON_JULIACALL_EXE`, which bypasses juliapkg.
    - `PYTHON_JULIACALL_THREADS=1`: the kernels are serial loops.
    - `PYTHON_JULIACALL_HANDLE_SIGNALS=yes` with more than one Julia thread (Julia's GC
      stops threads with deliberate segfaults that only Julia's handlers catch:
      PythonCall's advice); with one thread juliacall's default is kept.
    """
    settings = {}
    if not environ.get("PYTHON_JULIACALL_EXE"):
        settings["PYTHON_JULIAPKG_EXE"] = str(julia)
    if "JULIA_NUM_THREADS" not in environ and "PYTHON_JULIACALL_THREADS" not in environ:
        settings["PYTHON_JULIACALL_THREADS"] = "1"
    threads = _threads_requested({**environ, **settings})
    if threads and "PYTHON_JULIACALL_HANDLE_SIGNALS" not in environ:
        settings["PYTHON_JULIACALL_HANDLE_SIGNALS"] = "yes"
    return settings


_PACKAGE_DIR = Path(__file__).resolve().parent.parent


def julia_sources() -> Path | None:
    """The folder `julia/` holding the package WeanJ (`Project.toml`, and `src/WeanJ.jl`
    with the kernels beside it in `src/`): the checkout's for an editable install (so
    edits take effect), else the copy a wheel ships as `weanj/julia/`."""
    for folder in (_PACKAGE_DIR.parent.parent / "julia", _PACKAGE_DIR / "julia"):
        if (folder / "src" / "WeanJ.jl").is_file():
            return folder
    return None
