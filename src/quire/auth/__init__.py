"""API keys, roles and permissions, users."""
