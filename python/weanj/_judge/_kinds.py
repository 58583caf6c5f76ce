"""The verdicts and the kinds of case, as the judge and the views import them.

They are defined once, one layer down, in `_model._verdicts` (`weanj.Expected`, in the
typed model, names them too); this module re-exports that definition, nothing more.
"""

from .._model._verdicts import COLOURS as COLOURS
from .._model._verdicts import GRADIENT_CHECKS as GRADIENT_CHECKS
from .._model._verdicts import KINDS as KINDS
from .._model._verdicts import RANKING as RANKING
from .._model._verdicts import CaseKind as CaseKind
from .._model._verdicts import Verdict as Verdict
