"""The one error of the hot-line profile's inputs (besides a damaged trace, protocol_trace.TraceFormatError)."""

from __future__ import annotations


class HotlinesError(ValueError):
    """hotlines.toml, a config.json topology or a System.map the profile cannot use: one line naming file, field and value."""
