"""Every backend, registered by importing its module."""

from lockstudy.campaign import gem5_backend  # noqa: F401  (registers "gem5")
from lockstudy.campaign import qemu_backend  # noqa: F401  (registers "qemu")
from lockstudy.campaign.backends import BACKENDS

__all__ = ["BACKENDS"]
