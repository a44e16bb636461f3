"""The development scripts. A package so that their shared helper imports by this name
ahead of any other top-level `scripts` an environment may hold."""
