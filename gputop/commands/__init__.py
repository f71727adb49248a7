"""Subcommands. Each module has ``add_arguments(parser)`` and ``run(args) -> int``.

Modules here import only the standard library and gputop's model at import time: heavy imports
(Textual, a device library) happen inside ``run`` so that `gputop agent` starts fast.
"""
