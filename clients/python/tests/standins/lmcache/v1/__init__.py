"""Stand-in package: see lmcache/__init__.py."""
