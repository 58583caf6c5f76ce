"""The `weanj` command line: the parser (imports nothing heavy) and the commands."""

from ._main import entry as entry
from ._main import main as main
