"""The web console: server-rendered pages over the store's read ports, live updates from
the watch port, and a few write actions behind a per-start secret."""
