"""The embedded default backend: files under one data directory."""
