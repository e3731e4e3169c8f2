"""tilec's logger, `logging.getLogger("tilec")` (and its children, e.g. "tilec.autotune").

Silent unless TILEC_LOG is set: TILEC_LOG=debug|info|warning (1 or yes: info) prints tilec's
messages of that level and above on stderr.
"""

from __future__ import annotations

import logging

from tilec import config

logger = logging.getLogger("tilec")
logger.addHandler(logging.NullHandler())  # a library logs nothing unless asked (no lastResort output)

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR,
           "1": logging.INFO, "true": logging.INFO, "yes": logging.INFO, "on": logging.INFO}


def configure(level: str) -> None:
    """Prints tilec's messages of `level` and above on stderr ("" or "0": none)."""
    if level in ("", "0", "false", "no", "off"):
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("[tilec %(levelname)s] %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(_LEVELS.get(level, logging.INFO))


configure(config.LOG)
