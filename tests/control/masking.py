"""Keeps access tokens out of test output.

A token is held in a `Secret`, whose repr and str are masked, so it cannot
reach an assertion message or pytest's introspection by accident. Every token
the suite has seen is also registered here, and conftest scrubs any that still
appears in a failure report or captured output (belt and braces).
"""

MASK = "********"

_known = set()


class Secret:
    """A value that must never be printed."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value
        if value:
            _known.add(value)

    def __repr__(self):
        return f"Secret({MASK})"

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, Secret) and other.value == self.value

    def __hash__(self):
        return hash(self.value)


def scrub(text):
    """`text` with every known secret replaced by the mask."""
    # Longest first, so a secret containing another is masked whole.
    for value in sorted(_known, key=len, reverse=True):
        if value in text:
            text = text.replace(value, MASK)
    return text


def register(value):
    """Marks a string (e.g. a made-up wrong token) as never to be printed."""
    if value:
        _known.add(value)
    return value
