"""Subcommands. Each module has ``add_arguments(parser)``, ``configure(args)``, which turns the
parsed namespace into the command's frozen config object, and ``run(config) -> int``; argparse
goes no further than this package.

Modules here import only the standard library and light gputop modules (the model, the bounds,
the config objects) at import time: heavy imports (Textual, a device library) happen inside
``run`` so that `gputop agent` starts fast.
"""
