"""The imperative shell for durable truth: ports (Protocols) and their backends."""
