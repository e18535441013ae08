"""relay/jsontext.py: the relay's one JSON encoder, compact and refusing NaN and Infinity (a
browser's ``JSON.parse`` refuses them, and one would blank every page of the account)."""

from __future__ import annotations

import pytest

from relay.jsontext import dumps


def test_the_relay_json_encoder_refuses_non_finite_values() -> None:
    assert dumps({"a": 1.5, "b": [1, "x"]}) == '{"a":1.5,"b":[1,"x"]}'
    for bad in (float("inf"), float("-inf"), float("nan")):
        with pytest.raises(ValueError):
            dumps({"position": bad})
