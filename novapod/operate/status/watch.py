"""`novapod status --watch SECONDS`: one round, then another every SECONDS, until
interrupted (Ctrl-C) or a round fails. The sleep is passed in, so tests run rounds
without waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

# ANSI: cursor home, clear the screen (a terminal redraws in place).
CLEAR = "\x1b[H\x1b[2J"


def watch(
    round_: Callable[[], tuple[str, int]],
    seconds: float,
    *,
    sleep: Callable[[float], None],
    out: TextIO,
    redraw: bool,
) -> int:
    """Print each round's output (after clearing the screen with `redraw`); return the
    exit status of the last round shown once interrupted. An exception from a round (an
    AWS call that failed) ends the watch and propagates."""
    status = 0
    try:
        while True:
            text, status = round_()
            out.write(f"{CLEAR if redraw else ''}{text}\n")
            out.flush()
            sleep(seconds)
    except KeyboardInterrupt:
        return status
