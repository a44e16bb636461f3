"""What the bundle shell needs from a backend: the three stores a session's history lives
in, nothing local-only, so a server backend can export and import too."""

from __future__ import annotations

from workrail.store.ports import LogStores as BundleBackend

__all__ = ["BundleBackend"]
