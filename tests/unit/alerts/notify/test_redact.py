"""Webhook URLs shown without their secrets."""

from __future__ import annotations

import pytest

from gputop.alerts.notify.redact import redact_url, scrub, secrets_of


@pytest.mark.parametrize(("url", "shown"), [
    ("https://hooks.slack.com/services/T000/B000/XXXXXXXX", "https://hooks.slack.com/…"),
    ("https://discord.com/api/webhooks/123456789/tokenTOKENtoken", "https://discord.com/…"),
    ("https://prod-01.westeurope.logic.azure.com:443/workflows/abc/triggers/manual/paths/invoke"
     "?api-version=2016-06-01&sig=SIGNATURE", "https://prod-01.westeurope.logic.azure.com:443/…"),
    ("http://user:password@127.0.0.1:8080/hook?token=abc", "http://127.0.0.1:8080/…"),
    ("http://[::1]:9/x", "http://[::1]:9/…"),
    ("https://host", "https://host/…"),
    ("not a url at all", "…"),
    ("http://[::1/broken", "…"),
])
def test_a_url_is_shown_as_its_scheme_and_host_only(url, shown):
    assert redact_url(url) == shown


def test_scrub_removes_every_secret_part_a_message_may_quote():
    url = "https://hooks.example.com/services/T0SECRET/B0SECRET?sig=SIGNATURE1&v=1"
    secrets = secrets_of(url, ["Bearer abcdef"])
    for text in [f"unknown url type: {url!r}", "path /services/T0SECRET/B0SECRET refused",
                 "segment T0SECRET alone", "query sig=SIGNATURE1", "header Bearer abcdef"]:
        out = scrub(text, secrets)
        for secret in ("T0SECRET", "B0SECRET", "SIGNATURE1", "abcdef"):
            assert secret not in out, (text, out)
    assert scrub("HTTP 500: Internal Server Error", secrets) == "HTTP 500: Internal Server Error"


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:9/SECRETPATH\x01tok?sig=SECRETSIG",  # http.client quotes it, escaped
    "http://127.0.0.1:notaport/SECRETPATH",
    "htp://x/SECRETPATH",  # urllib quotes the whole URL
])
def test_a_webhook_error_never_quotes_the_url(url):
    """Defence in depth: the settings file's check refuses these URLs at start already."""
    from gputop.alerts.model import DeliveryError
    from gputop.alerts.notify.webhook import WebhookNotifier
    from tests.support.notify import make_alert

    notifier = WebhookNotifier("x", url)
    with pytest.raises(DeliveryError) as info:
        notifier.send(make_alert(), 1.0)
    assert "SECRET" not in str(info.value), str(info.value)
    assert "SECRET" not in repr(notifier) and "SECRET" not in notifier.describe()
