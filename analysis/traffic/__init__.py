"""Coherence traffic: per run and ROI, per lock hand-off, and per lock from ROI traces.

  metrics.py           Coherence metrics per run and ROI, normalised by the guest's own counts.
  handoffs.py          Messages per contended hand-off against the analytical bound, per variant.
  locks.py             Coherence traffic per lock: the kernel's lock registry joined with a run's ROI trace.
  protocol_trace.py    Per-lock coherence events from a Ruby ProtocolTrace, streamed.
  trace_attribution.py Per-lock attribution of many ROI traces: in parallel, and each trace read once.
  trace_cache.py       What is computed from an ROI trace, kept in the machine's lockstudy cache.
"""
