"""`gputop report`'s room: what each job and user used of the GPUs over a recorded stream or a
Prometheus server's range, and what they held idle (docs/waste.md).

A *source* produces records in the job ledger's format (gputop.analysis.accounting.record) plus
``"nodes"``: a recording of the agent stream (``recording``) or a Prometheus server
(``prometheus``). ``rows`` merges them into one row per job and one per user, ``render`` writes
the rows as text, CSV or JSON. ``timerange`` reads the range a report covers. Textual-free.
"""
