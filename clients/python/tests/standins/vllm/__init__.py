"""Stand-in package: see vllm/v1/kv_offload/tiering/base.py."""
