"""The shared fixtures come from the tests' plug-in, tests/support/plugin.py; its helpers are plain
modules in tests/support/, imported by the tests that use them."""

import pytest

# Plain asserts in the helpers report their values as they do in a test module.
pytest.register_assert_rewrite("tests.support")

pytest_plugins = ["tests.support.plugin"]
