"""The compiler's passes, one module each, run in WorkRail's order by `pipeline.py`:
templates/routines → bindings → features → refs → prompt blocks → metrics footer.

Every pass is pure and total on a definition the checks of `pipeline.check_source` found
nothing wrong with, and returns its input object itself when it has nothing to do, so a
v1.4-era definition comes out as the very same dict (same hash, same snapshot).
"""
