"""The sampler's history: the hints' window and typed columns sized by time (store.py).
"""

from gputop.history.fields import ProcessKey, process_key
from gputop.history.store import Columns, History, ProcessSeen, Series

__all__ = ["Columns", "History", "ProcessKey", "ProcessSeen", "Series", "process_key"]
