"""Bad input to the hand-off chart: one line a user can act on, never a traceback."""

from __future__ import annotations

from lockstudy.validation.problems import InputError


class HandoffInputError(InputError):
    """A run folder, lock name or trace the chart cannot be drawn from; the message says why and what to do."""
