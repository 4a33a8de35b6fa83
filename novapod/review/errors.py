"""The review's one error: bad input or a missing engine, said in one sentence."""

from __future__ import annotations


class ReviewError(Exception):
    """Not a cloud assembly, Node.js or the diff engine missing, or the engine failed."""
