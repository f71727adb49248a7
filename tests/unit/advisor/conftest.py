"""The advisor tests' environment, one per test (`adv`)."""

from tests.support.advise import adv_fixture  # noqa: F401 - the `adv` fixture
