"""weanj: cross-validation of Julia reference kernels and their JAX ports.

The public API at a glance; each name lives in a private module of one concern
(docs/DESIGN.md, "Layout"). `import weanj` loads neither JAX nor any example module.
"""

import os as _os

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
