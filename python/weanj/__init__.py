"""weanj: cross-validation of Julia reference kernels and their JAX ports.

The public API at a glance; each name lives in a private module of one concern
(docs/DESIGN.md, "Layout"). `import weanj` loads neither JAX nor any example module.
"""

import os as _os

from ._interrupts import hold as _hold
from ._interrupts import release as _release

# A Ctrl-C while the modules below import (numpy, h5py) is only noted, and handed on once
# they are done (`_interrupts`).
_held = _hold()

# Before JAX initialises a backend: do not grab most of a GPU's memory up front, so that
# benchmarks measure what a variant uses and several processes can share one device.
_os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# The judgement, as notebooks and the command line get it
from ._api import environment as environment  # noqa: E402
from ._api import evaluate as evaluate  # noqa: E402
from ._api import generate_inputs as generate_inputs  # noqa: E402
from ._api import gradient_path as gradient_path  # noqa: E402
from ._api import inputs_path as inputs_path  # noqa: E402
from ._api import load_gradient as load_gradient  # noqa: E402
from ._api import load_inputs as load_inputs  # noqa: E402
from ._api import read_inputs as read_inputs  # noqa: E402
from ._api import stored_gradients as stored_gradients  # noqa: E402
from ._api import verify_inputs as verify_inputs  # noqa: E402
from ._api import write_inputs as write_inputs  # noqa: E402
from ._api import write_results as write_results  # noqa: E402

# Declaring examples and variants (one calling convention: example, name, *, family, ...);
# the devices multi-device variants span; the environment
from ._backends._devices import device_count as device_count  # noqa: E402
from ._backends._devices import set_devices as set_devices  # noqa: E402
from ._backends._enzyme import enzyme_variant as enzyme_variant  # noqa: E402
from ._backends._jax import jax_variant as jax_variant  # noqa: E402
from ._backends._julia import julia_variant as julia_variant  # noqa: E402
from ._backends._jvp_check import jvp_check as jvp_check  # noqa: E402
from ._commands.check import check as check  # noqa: E402
from ._commands.diff import diff as diff  # noqa: E402
from ._commands.report import report as report  # noqa: E402
from ._environment import __version__ as __version__  # noqa: E402

# Errors
from ._errors import DefinitionError as DefinitionError  # noqa: E402
from ._errors import InputError as InputError  # noqa: E402
from ._errors import InputFileError as InputFileError  # noqa: E402
from ._errors import ProjectError as ProjectError  # noqa: E402
from ._errors import StaleGradientError as StaleGradientError  # noqa: E402
from ._errors import UnavailableError as UnavailableError  # noqa: E402
from ._errors import UnknownNameError as UnknownNameError  # noqa: E402
from ._errors import VariantError as VariantError  # noqa: E402
from ._errors import WeanjError as WeanjError  # noqa: E402
from ._io._jax_cache import enable as enable_compilation_cache  # noqa: E402, F401 (public)

# The judge's rules and numbers
from ._judge._compare import ArrayComparison as ArrayComparison  # noqa: E402
from ._judge._compare import compare as compare  # noqa: E402
from ._judge._compare import ulp_distance as ulp_distance  # noqa: E402
from ._judge._judgement import Judgement as Judgement  # noqa: E402
from ._judge._jvp import JvpResult as JvpResult  # noqa: E402

DirectionalResult = JvpResult  # the jvp check's numbers under their earlier public name
from ._judge._policy import TOLERANCES as TOLERANCES  # noqa: E402
from ._judge._policy import Tolerance as Tolerance  # noqa: E402
from ._judge._policy import tolerance as tolerance  # noqa: E402
from ._judge._taylor import TaylorResult as TaylorResult  # noqa: E402
from ._judge._verdict import CaseJudgement as CaseJudgement  # noqa: E402
from ._judge._verdict import ExampleJudgement as ExampleJudgement  # noqa: E402

# The typed model
from ._model import Array as Array  # noqa: E402
from ._model import Catalog as Catalog  # noqa: E402
from ._model import Example as Example  # noqa: E402
from ._model import Expected as Expected  # noqa: E402
from ._model import FDPolicy as FDPolicy  # noqa: E402
from ._model import Functions as Functions  # noqa: E402
from ._model import Gradient as Gradient  # noqa: E402
from ._model import Inputs as Inputs  # noqa: E402
from ._model import Param as Param  # noqa: E402
from ._model import Sizes as Sizes  # noqa: E402
from ._model import TaylorPolicy as TaylorPolicy  # noqa: E402
from ._model import Variant as Variant  # noqa: E402
from ._model._verdicts import Verdict as Verdict  # noqa: E402
from ._pipeline.bench._measure import time_median as time_median  # noqa: E402

# Gradient checks for any function (jvp_check, which pushes a JAX function forward, above)
from ._pipeline.checks._remainders import fd_check as fd_check  # noqa: E402
from ._pipeline.checks._remainders import taylor_test as taylor_test  # noqa: E402

# The project and its tables
from ._project import project_config as project_config  # noqa: E402
from ._project import project_root as project_root  # noqa: E402
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
from ._report._judgement import JudgementView as JudgementView  # noqa: E402
from ._saved_gradient import save_gradient as save_gradient  # noqa: E402
from ._saved_inputs import save_inputs as save_inputs  # noqa: E402

__all__ = [
    "Array",
    "ArrayComparison",
    "CaseJudgement",
    "Catalog",
    "check",
    "compare",
    "DefinitionError",
    "device_count",
    "diff",
    "differ_at_kinks",
    "DirectionalResult",
    "enable_compilation_cache",
    "environment",
    "enzyme_variant",
    "evaluate",
    "example",
    "Example",
    "example_names",
    "ExampleJudgement",
    "Expected",
    "families",
    "fd_check",
    "FDPolicy",
    "Functions",
    "fuzz_strategy",
    "generate_inputs",
    "Gradient",
    "gradient_path",
    "InputError",
    "InputFileError",
    "Inputs",
    "inputs_path",
    "jax_variant",
    "Judgement",
    "JudgementView",
    "julia_variant",
    "jvp_check",
    "JvpResult",
    "load_gradient",
    "load_inputs",
    "Param",
    "project_config",
    "project_root",
    "ProjectError",
    "read_inputs",
    "register_example",
    "register_variant",
    "report",
    "save_gradient",
    "save_inputs",
    "set_devices",
    "Sizes",
    "StaleGradientError",
    "stored_gradients",
    "taylor_test",
    "TaylorPolicy",
    "TaylorResult",
    "time_median",
    "tolerance",
    "Tolerance",
    "TOLERANCES",
    "ulp_distance",
    "unavailable_variants",
    "UnavailableError",
    "UnknownNameError",
    "variant",
    "Variant",
    "VariantError",
    "variants",
    "Verdict",
    "verify_inputs",
    "WeanjError",
    "write_inputs",
    "write_results",
]

_release(_held)
