"""The management API: models, roles, keys, locales, health."""
