"""The admin's fixtures (an app with settings overrides, browsers) for the
audit log's tests."""

from tests.admin.conftest import app_with

__all__ = ["app_with"]
