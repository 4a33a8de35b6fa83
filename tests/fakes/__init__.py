"""Fakes that stand in for AWS in tests."""
