"""Placement engines, the rules they share, and the independent checker.

Imports `models` only — never Kubernetes or HTTP code.
"""
