"""Stand-in package: see sglang/srt/mem_cache/hicache_storage.py."""
