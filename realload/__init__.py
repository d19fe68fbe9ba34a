"""Real-client load driver: real Mooncake clients against a real (or our) master; see
``python -m realload --help`` and scripts/realload.sh."""
