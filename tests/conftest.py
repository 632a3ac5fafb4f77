"""Shared by every test folder: pytester drives the pytest-plugin tests in tests/core."""

pytest_plugins = ["pytester"]
