"""The typed model: arrays, parameters, examples, variants, inputs and gradients (no
registry, no JAX, no files)."""

from .._vocabulary import DTYPES as DTYPES
from ._catalog import Catalog as Catalog
from ._configuration import Configuration as Configuration
from ._configuration import host_configuration as host_configuration
from ._configuration import run_label as run_label
from ._example import Example as Example
from ._expected import Expected as Expected
from ._gradient import Emulated as Emulated
from ._gradient import Gradient as Gradient
from ._inputs import Inputs as Inputs
from ._inputs import from_arrays as from_arrays
from ._inputs import provenance_key as provenance_key
from ._kinds import COMPLEX_OF as COMPLEX_OF
from ._kinds import Array as Array
from ._kinds import check_dtype as check_dtype
from ._kinds import check_finite as check_finite
from ._kinds import first_nonfinite as first_nonfinite
from ._kinds import index_text as index_text
from ._kinds import shown as shown
from ._names import check_name as check_name
from ._params import INT32_MAX as INT32_MAX
from ._params import Param as Param
from ._policies import FDPolicy as FDPolicy
from ._policies import Sizes as Sizes
from ._policies import TaylorPolicy as TaylorPolicy
from ._provenance import DeviceProvenance as DeviceProvenance
from ._provenance import Distributed as Distributed
from ._variant import EXTRAS as EXTRAS
from ._variant import Functions as Functions
from ._variant import Place as Place
from ._variant import Variant as Variant
from ._variant_run import VariantRun as VariantRun
