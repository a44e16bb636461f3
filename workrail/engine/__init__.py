"""Use cases: start, continue (advance / rehydrate), checkpoint, list, inspect.

Each takes typed input and the ports, decides through pure functions, and hands one append
plan to the store. This is the only layer that decides when to take the session lock.
"""
