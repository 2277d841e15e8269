"""Quire: a headless CMS with a JSON REST API."""

__version__ = "0.1.0"
