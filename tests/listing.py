"""An error with a list (known names): one line, and the list on it when the whole fits in
about 200 characters, else on the next line (`weanj._errors.with_list`)."""

from __future__ import annotations


def assert_error_with_list(stderr: str, fragments, heading: str, names) -> str:
    """`stderr` holds one error line containing `fragments` and the list `heading: names`
    (on that line or the next), and no traceback; returns the error line."""
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    listed = f"{heading}: {', '.join(names)}"
    if len(lines) == 1:
        first, rest = lines[0].split(f"; {heading}: ")
        assert f"{heading}: {rest}" == listed
    else:
        first, second = lines
        assert second.strip() == listed
        assert len(first) <= 200 < len(f"{first}; {listed}")  # it did not fit
    for fragment in fragments:
        assert fragment in first, (fragment, first)
    return first
