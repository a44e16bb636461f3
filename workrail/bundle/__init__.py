"""Session bundles (spec 60-bundles): one JSON document carrying a session's durable truth
so it can move between machines. `export` and `import_` are the imperative shell; `models`,
`integrity`, `validate` and `rename` are pure."""
