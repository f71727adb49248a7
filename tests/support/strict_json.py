"""JSON as a strict reader takes it: NaN and Infinity are not JSON, though Python writes them."""

import json


def _refuse(name: str):
    raise AssertionError(f"{name} is not JSON")


def loads(text: str):
    """Parse ``text``, failing the test on any NaN or Infinity in it."""
    return json.loads(text, parse_constant=_refuse)
