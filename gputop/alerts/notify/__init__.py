"""The channels that carry alerts to people, and the dispatcher that drives them.

Each channel is a `gputop.alerts.model.Notifier`: a webhook (generic JSON, Slack, Teams,
Discord), a command, the terminal's bell and desktop notifications (OSC 9, OSC 777), and mail
through the local ``sendmail``. `dispatch.Dispatcher` runs each on a thread of its own, behind a
bounded queue, with timeouts and retries, so that delivery never blocks sampling or the UI;
`channels` reads their settings. What a channel is told to keep secret (a webhook's URL, its
headers) is never printed: `redact` says how it is shown instead.
"""
