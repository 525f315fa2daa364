"""Stand-in package: see lmcache/v1/storage_backend/connector/."""
