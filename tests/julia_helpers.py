"""What the Julia tests share: a clean slate for the Julia variants of this process."""

from __future__ import annotations

from weanj._backends import _julia, _julia_client
from weanj._registry import find_variant


def forget_julia() -> None:
    """No worker running, no failed start remembered, and no Julia variant's functions
    built: a variant builds its functions once, after checking that it is available, so
    one built while a stand-in worker was configured would skip the check later."""
    _julia_client.forget()
    for example, name in _julia.julia_kernels():
        v = find_variant(example, name)
        if v is not None:
            v._built.clear()
