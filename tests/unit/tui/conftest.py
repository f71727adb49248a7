"""What every dashboard test gets: clock text in UTC, and none of the developer's own themes,
settings or advisor journals."""

from tests.support.procs import child_fixture  # noqa: F401 - the fixture, by name
from tests.support.tui import no_user_themes_fixture, utc_fixture  # noqa: F401 - autouse
