"""The webhook bodies against the shapes their receivers document, and their limits."""

from __future__ import annotations

import json

from gputop import __version__
from gputop.alerts.model import Alert
from gputop.alerts.notify import payloads
from tests.support.notify import make_alert

HUGE = make_alert(summary="x" * 10000, rule="r" * 500, node="n" * 300,
                  labels=tuple((f"label{i}" + "k" * 300, "v" * 2000) for i in range(40)))
HOSTILE = make_alert(summary="boom \x1b]0;owned\x07 <!channel> @everyone \u202egnp.exe\n2nd",
                     labels=(("cmd", "python\x1b[2Jtrain.py"),))


def mrkdwn_texts(body: dict) -> list[str]:
    out = [body["text"]]
    for block in body["blocks"]:
        if block["type"] == "section":
            out += [block["text"]["text"]] if "text" in block else [f["text"] for f in block["fields"]]
        elif block["type"] == "context":
            out += [e["text"] for e in block["elements"]]
    return out


def test_the_generic_body_is_the_alert_in_an_envelope_and_reads_back():
    alert = make_alert()
    body = json.loads(payloads.body("generic", alert))
    assert body["schema"] == "gputop-alert/1" and body["gputop"] == __version__
    assert body["alert"] == alert.to_json()
    assert Alert.from_json(body["alert"]) == alert
    assert body["text"] == "FIRING critical: hot on node-a GPU 0: GPU 0 at 91 °C for 2m (limit 85)"


def test_the_generic_body_keeps_text_as_it_is_and_is_strict_json():
    body = payloads.body("generic", make_alert(summary="bad \udcff byte \x1b"))
    text = body.decode("utf-8")  # no lone surrogate: strict parsers (Go, jq) accept it
    assert json.loads(text)["alert"]["summary"] == "bad \ufffd byte \x1b"


def test_slack_has_text_and_blocks_within_its_limits():
    alert = make_alert()
    body = payloads.slack(alert)
    assert body["text"].startswith("FIRING critical: hot on node-a GPU 0")
    kinds = [b["type"] for b in body["blocks"]]
    assert kinds == ["header", "section", "section", "context"]
    assert body["blocks"][0]["text"] == {"type": "plain_text",
                                         "text": "FIRING critical: hot on node-a GPU 0"}
    assert {"type": "mrkdwn", "text": "*GPU*\n0"} in body["blocks"][2]["fields"]
    big = payloads.slack(HUGE)
    assert len(big["blocks"][0]["text"]["text"]) <= 150
    assert all(len(t) <= 3000 for t in mrkdwn_texts(big))
    fields = big["blocks"][2]["fields"]
    assert len(fields) <= 10 and all(len(f["text"]) <= 2000 for f in fields)


def test_slack_text_can_neither_mention_nor_link():
    texts = mrkdwn_texts(payloads.slack(HOSTILE))
    assert not any("<" in t or ">" in t for t in texts)
    assert any("&lt;!channel&gt;" in t for t in texts)


def test_teams_is_a_message_with_one_adaptive_card():
    body = payloads.teams(make_alert())
    assert body["type"] == "message"
    (attachment,) = body["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    assert attachment["contentUrl"] is None
    card = attachment["content"]
    assert card["type"] == "AdaptiveCard" and card["version"] == "1.2"
    assert card["$schema"] == "http://adaptivecards.io/schemas/adaptive-card.json"
    title, summary, factset = card["body"]
    assert title["type"] == "TextBlock" and title["color"] == "Attention"
    assert summary == {"type": "TextBlock", "text": "GPU 0 at 91 °C for 2m (limit 85)", "wrap": True}
    assert {"title": "Node", "value": "node-a"} in factset["facts"]
    resolved = payloads.teams(make_alert(state="resolved"))
    assert resolved["attachments"][0]["content"]["body"][0]["color"] == "Good"


def test_discord_has_content_and_one_embed_and_pings_no_one():
    body = payloads.discord(make_alert())
    assert body["content"] == "FIRING critical: hot on node-a GPU 0"
    assert body["allowed_mentions"] == {"parse": []}
    (embed,) = body["embeds"]
    assert embed["title"] == "hot" and embed["description"].startswith("GPU 0 at 91")
    assert embed["timestamp"] == "2026-01-01T12:00:00Z"
    assert {"name": "User", "value": "alice", "inline": True} not in embed["fields"]
    assert {"name": "user", "value": "alice", "inline": True} in embed["fields"]


def test_discord_keeps_to_every_limit_of_an_embed():
    body = payloads.discord(HUGE)
    assert len(body["content"]) <= 2000
    (embed,) = body["embeds"]
    assert len(embed["title"]) <= 256 and len(embed["description"]) <= 4096
    assert len(embed["fields"]) <= 25
    assert all(len(f["name"]) <= 256 and len(f["value"]) <= 1024 for f in embed["fields"])
    total = (len(embed["title"]) + len(embed["description"]) + len(embed["footer"]["text"])
             + sum(len(f["name"]) + len(f["value"]) for f in embed["fields"]))
    assert total <= 6000
    assert len(embed["description"]) >= 256  # the summary is kept before the facts


def test_chat_text_shows_controls_and_reordering_characters_instead_of_obeying_them():
    for fmt in ("slack", "teams", "discord"):
        text = json.dumps(payloads.BUILDERS[fmt](HOSTILE), ensure_ascii=False)
        assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text, fmt
        assert "^[]0;owned^G" in text, fmt


def test_the_docs_show_each_body_as_it_is_sent():
    """docs/alerts-channels.md's examples are what the builders make of its example alert."""
    import re

    from tests.support.paths import ROOT

    page = (ROOT / "docs" / "alerts-channels.md").read_text(encoding="utf-8")
    shown = dict(re.findall(r"<!-- payload: (\w+) -->\n```json\n(.*?)\n```", page, re.S))
    assert sorted(shown) == sorted(payloads.FORMATS)
    alert = make_alert(key="hot/node-a/gpu0", labels=(("user", "alice"), ("value", "91")))
    for fmt, text in shown.items():
        text = text.replace('"0.1.0"', json.dumps(__version__)).replace("gputop 0.1.0",
                                                                         f"gputop {__version__}")
        assert json.loads(text) == payloads.BUILDERS[fmt](alert), fmt
