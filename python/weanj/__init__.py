"""weanj: cross-validation of Julia reference kernels and their JAX ports.

The public API at a glance; each name lives in a private module of one concern
(docs/DESIGN.md, "Layout"). `import weanj` loads neither JAX nor any example module.
"""

import os as _os
import signal as _signal
import sys as _sys
import threading as _threading


def _started_as_program() -> bool:
    """`python -m weanj ...` (while runpy locates `weanj.__main__`, `sys.argv[0]` is
    "-m") or the `weanj` console script, as opposed to `import weanj` in a program."""
    orig = getattr(_sys, "orig_argv", [])
    if _sys.argv[:1] == ["-m"] and "-m" in orig[:-1]:
        return orig[orig.index("-m") + 1] == "weanj"
    main = getattr(_sys.modules.get("__main__"), "__file__", None)
    name = _os.path.basename(_sys.argv[0]) if _sys.argv else ""
    return name in ("weanj", "weanj.exe") and main == _sys.argv[0]


# A Ctrl-C while the modules below import (numpy, h5py: an interrupt inside an
# extension's initialisation becomes an ImportError, or an abort) is only noted here, and
# handed on once they are done: started as the program, to `_cli._main.entry`, which ends
# with "weanj: interrupted" and 130; imported (a script, pytest's plugin loading), to the
# handler that was in place, at the end of this import.
_INTERRUPTED: list[int] = []
_NOT_SET = object()
_SIGINT_BEFORE = _NOT_SET
if _threading.current_thread() is _threading.main_thread():
    # None: a handler installed outside Python, which could not be put back
    if _signal.getsignal(_signal.SIGINT) is not None:
        _SIGINT_BEFORE = _signal.signal(_signal.SIGINT, lambda s, f: _INTERRUPTED.append(s))

# Before JAX initialises a backend: do not grab most of a GPU's memory up front, so that
# benchmarks measure what a variant uses and several processes can share one device.
_os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# The typed model
# Backends: one calling convention, (example, name, *, family, loss=..., ...)
from ._backends._enzyme import enzyme_variant as enzyme_variant  # noqa: E402
from ._backends._jax import jax_variant as jax_variant  # noqa: E402
from ._backends._julia import julia_variant as julia_variant  # noqa: E402

# Projects, devices, timing
from ._devices import device_count as device_count  # noqa: E402
from ._devices import set_devices as set_devices  # noqa: E402

# Errors
from ._errors import DefinitionError as DefinitionError  # noqa: E402
from ._errors import InputError as InputError  # noqa: E402
from ._errors import InputFileError as InputFileError  # noqa: E402
from ._errors import ProjectError as ProjectError  # noqa: E402
from ._errors import StaleGradientError as StaleGradientError  # noqa: E402
from ._errors import UnavailableError as UnavailableError  # noqa: E402
from ._errors import UnknownNameError as UnknownNameError  # noqa: E402
from ._errors import WeanjError as WeanjError  # noqa: E402

# Inputs and the store
from ._io._inputs import Inputs as Inputs  # noqa: E402
from ._io._inputs import generate_inputs as generate_inputs  # noqa: E402
from ._io._inputs import inputs_path as inputs_path  # noqa: E402
from ._io._inputs import load_inputs as load_inputs  # noqa: E402
from ._io._inputs import read_inputs as read_inputs  # noqa: E402
from ._io._inputs import verify_inputs as verify_inputs  # noqa: E402
from ._io._inputs import write_inputs as write_inputs  # noqa: E402
from ._io._store import gradient_path as gradient_path  # noqa: E402
from ._io._store import load_gradient as load_gradient  # noqa: E402
from ._io._store import save_gradient as save_gradient  # noqa: E402
from ._io._store import stored_gradients as stored_gradients  # noqa: E402

# The judge
from ._judge._compare import TOLERANCES as TOLERANCES  # noqa: E402
from ._judge._compare import ArrayComparison as ArrayComparison  # noqa: E402
from ._judge._compare import PairComparison as PairComparison  # noqa: E402
from ._judge._compare import Tolerance as Tolerance  # noqa: E402
from ._judge._compare import compare as compare  # noqa: E402
from ._judge._compare import tolerance as tolerance  # noqa: E402
from ._judge._compare import ulp_distance as ulp_distance  # noqa: E402
from ._judge._gradcheck import fd_check as fd_check  # noqa: E402
from ._judge._verdict import Verdict as Verdict  # noqa: E402
from ._model import Array as Array  # noqa: E402
from ._model import Example as Example  # noqa: E402
from ._model import FDPolicy as FDPolicy  # noqa: E402
from ._model import Functions as Functions  # noqa: E402
from ._model import Gradient as Gradient  # noqa: E402
from ._model import Param as Param  # noqa: E402
from ._model import Sizes as Sizes  # noqa: E402
from ._model import TaylorPolicy as TaylorPolicy  # noqa: E402
from ._model import Variant as Variant  # noqa: E402
from ._project import project_config as project_config  # noqa: E402
from ._project import project_root as project_root  # noqa: E402

# The tables
from ._registry import differ_at_kinks as differ_at_kinks  # noqa: E402
from ._registry import example as example  # noqa: E402
from ._registry import example_names as example_names  # noqa: E402
from ._registry import families as families  # noqa: E402
from ._registry import fuzz_strategy as fuzz_strategy  # noqa: E402
from ._registry import register_example as register_example  # noqa: E402
from ._registry import register_variant as register_variant  # noqa: E402
from ._registry import unavailable_variants as unavailable_variants  # noqa: E402
from ._registry import variant as variant  # noqa: E402
from ._registry import variants as variants  # noqa: E402
from ._run import evaluate as evaluate  # noqa: E402
from ._timing import environment as environment  # noqa: E402
from ._timing import time_median as time_median  # noqa: E402
from ._timing import write_results as write_results  # noqa: E402

# Earlier names of one object: a gradient with its provenance, computed or stored.
StoredGradient = Gradient
Evaluation = Gradient

__version__ = "0.2.0"

# Started as the program, the noting handler stays until `entry` installs its own (an
# interrupt while `weanj._cli` imports is noted too); imported, the usual Ctrl-C again.
if _SIGINT_BEFORE is not _NOT_SET and not _started_as_program():
    _signal.signal(_signal.SIGINT, _SIGINT_BEFORE)
    if _INTERRUPTED:
        _INTERRUPTED.clear()
        if callable(_SIGINT_BEFORE):  # Python's default raises KeyboardInterrupt: here
            _SIGINT_BEFORE(_signal.SIGINT, None)
        elif _SIGINT_BEFORE == _signal.SIG_DFL:
            _signal.raise_signal(_signal.SIGINT)
