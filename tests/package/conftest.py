"""The helpers' asserts say what differed (pytest rewrites them as it does the tests')."""

import pytest

pytest.register_assert_rewrite("tests.package.package_helpers")
