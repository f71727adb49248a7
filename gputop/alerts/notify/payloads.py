"""The JSON bodies a webhook posts, one pure function per receiver's shape.

- ``generic``: the alert as `Alert.to_json` writes it, in an envelope naming its schema
  (``gputop-alert/1``) and the gputop version that sent it, with a one-line ``text`` for
  receivers that show only that.
- ``slack``: a Slack incoming webhook's ``text`` (the notification's fallback) and Block Kit
  ``blocks``: a header (plain text, at most 150 characters), the summary (mrkdwn, at most 3000)
  and the facts as section fields (at most 10, each at most 2000). ``&``, ``<`` and ``>`` are
  escaped as Slack asks, so alert text can neither link nor mention (``<!channel>``).
- ``teams``: a Microsoft Teams message carrying one Adaptive Card (version 1.2) in
  ``attachments``: what a Teams Workflows "When a Teams webhook request is received" flow
  posts, Office 365 connectors (MessageCard) being retired.
- ``discord``: a Discord execute-webhook body: ``content`` (at most 2000 characters) and one
  embed (title 256, description 4096, at most 25 fields of 256/1024, footer 2048, 6000 in all),
  with ``allowed_mentions`` empty so that no ``@everyone`` in alert text pings anyone.

Text a person reads in a chat (summaries, labels: a process name can hold anything) passes
`gputop.core.visible.visible`; the generic body keeps it as it is (JSON escapes it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from gputop import __version__
from gputop.alerts.model import Alert
from gputop.core import jsonout
from gputop.core.visible import visible

SCHEMA = "gputop-alert/1"
FORMATS = ("generic", "slack", "teams", "discord")

# Limits each receiver documents; a longer text is cut with "…", never refused by the receiver.
SLACK_TEXT = 3000
SLACK_HEADER = 150
SLACK_FIELDS = 10
SLACK_FIELD = 2000
DISCORD_CONTENT = 2000
DISCORD_TITLE = 256
DISCORD_DESCRIPTION = 4096
DISCORD_FIELDS = 25
DISCORD_FIELD_NAME = 256
DISCORD_FIELD_VALUE = 1024
DISCORD_FOOTER = 2048
DISCORD_EMBED_TOTAL = 6000
TEAMS_FACTS = 20
TEAMS_CARD_VERSION = "1.2"
ADAPTIVE_CARD = "application/vnd.microsoft.card.adaptive"

# One colour per state and severity: resolved is green whatever the severity.
_DISCORD_COLOUR = {"critical": 0xD83C3E, "warning": 0xE8A33D, "info": 0x3B82F6, "resolved": 0x2EB67D}
_TEAMS_COLOUR = {"critical": "Attention", "warning": "Warning", "info": "Accent",
                 "resolved": "Good"}


def cut(text: str, limit: int) -> str:
    """Return ``text`` cut to ``limit`` characters, its end marked with ``…``."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def when(epoch: float | None) -> str:
    """Return an epoch time as ISO 8601 in UTC (``2026-05-01T12:00:00Z``), or ''."""
    if epoch is None:
        return ""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _look(alert: Alert) -> str:
    return "resolved" if alert.state == "resolved" else alert.severity


def headline(alert: Alert) -> str:
    """Return the alert's one-line title: ``FIRING critical: hot on node-a GPU 0``."""
    where = ""
    if alert.node:
        where += f" on {alert.node}"
    if alert.gpu is not None:
        where += f" GPU {alert.gpu}"
    return visible(f"{alert.state.upper()} {alert.severity}: {alert.rule}{where}")


def facts(alert: Alert) -> list[tuple[str, str]]:
    """Return the alert's facts as (name, value) pairs a person reads, labels last."""
    rows = [("Rule", alert.rule), ("State", alert.state), ("Severity", alert.severity)]
    if alert.node:
        rows.append(("Node", alert.node))
    if alert.gpu is not None:
        rows.append(("GPU", str(alert.gpu)))
    if alert.since is not None:
        rows.append(("Since", when(alert.since)))
    rows.append(("At", when(alert.at)))
    rows.extend(alert.labels)
    rows.append(("Key", alert.key))
    return [(visible(name), visible(value)) for name, value in rows]


def generic(alert: Alert) -> dict[str, Any]:
    """Return the generic body: ``schema``, ``gputop`` (its version), ``text``, ``alert``."""
    return {"schema": SCHEMA, "gputop": __version__,
            "text": f"{headline(alert)}: {visible(alert.summary)}", "alert": alert.to_json()}


def _slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack(alert: Alert) -> dict[str, Any]:
    """Return a Slack incoming webhook's body: ``text`` and ``blocks``."""
    title = headline(alert)
    summary = visible(alert.summary)
    rows = facts(alert)
    fields = [{"type": "mrkdwn",
               "text": cut(f"*{_slack_escape(name)}*\n{_slack_escape(value)}", SLACK_FIELD)}
              for name, value in rows[:SLACK_FIELDS]]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": cut(title, SLACK_HEADER)}},
        {"type": "section", "text": {"type": "mrkdwn",
                                     "text": cut(_slack_escape(summary), SLACK_TEXT)}},
        {"type": "section", "fields": fields},
        {"type": "context", "elements": [
            {"type": "mrkdwn", "text": cut(_slack_escape(f"gputop {__version__} · {alert.key}"),
                                           SLACK_TEXT)}]},
    ]
    return {"text": cut(_slack_escape(f"{title}: {summary}"), SLACK_TEXT), "blocks": blocks}


def teams(alert: Alert) -> dict[str, Any]:
    """Return a Teams message with one Adaptive Card attachment."""
    card = {
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": TEAMS_CARD_VERSION,
        "body": [
            {"type": "TextBlock", "text": headline(alert), "weight": "Bolder", "size": "Medium",
             "color": _TEAMS_COLOUR[_look(alert)], "wrap": True},
            {"type": "TextBlock", "text": visible(alert.summary), "wrap": True},
            {"type": "FactSet", "facts": [{"title": name, "value": value}
                                          for name, value in facts(alert)[:TEAMS_FACTS]]},
        ],
    }
    return {"type": "message",
            "attachments": [{"contentType": ADAPTIVE_CARD, "contentUrl": None, "content": card}]}


def discord(alert: Alert) -> dict[str, Any]:
    """Return a Discord execute-webhook body: ``content`` and one embed, within its limits
    (facts that would pass the embed's 6000 characters are left out, the summary is kept)."""
    title = cut(visible(alert.rule), DISCORD_TITLE)
    footer = cut(f"gputop {__version__}", DISCORD_FOOTER)
    summary = visible(alert.summary)
    # the summary's first 256 characters are kept whatever the facts: it says what happened
    budget = DISCORD_EMBED_TOTAL - len(title) - len(footer) - min(len(summary), DISCORD_TITLE)
    fields = []
    for name, value in facts(alert)[:DISCORD_FIELDS]:
        name, value = cut(name, DISCORD_FIELD_NAME), cut(value or "-", DISCORD_FIELD_VALUE)
        if len(name) + len(value) > budget:
            break
        budget -= len(name) + len(value)
        fields.append({"name": name, "value": value, "inline": True})
    room = min(DISCORD_DESCRIPTION, budget + min(len(summary), DISCORD_TITLE))
    embed: dict[str, Any] = {"title": title, "color": _DISCORD_COLOUR[_look(alert)],
                             "fields": fields, "footer": {"text": footer},
                             "timestamp": when(alert.at)}
    if summary:  # Discord refuses an empty description
        embed["description"] = cut(summary, room)
    return {"content": cut(headline(alert), DISCORD_CONTENT), "embeds": [embed],
            "allowed_mentions": {"parse": []}}


BUILDERS: dict[str, Callable[[Alert], dict[str, Any]]] = {
    "generic": generic, "slack": slack, "teams": teams, "discord": discord}


def body(fmt: str, alert: Alert) -> bytes:
    """Return the UTF-8 JSON a webhook of format ``fmt`` posts for ``alert``."""
    return jsonout.dumps(BUILDERS[fmt](alert), ensure_ascii=False).encode("utf-8")
