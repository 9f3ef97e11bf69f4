"""Validated input (`Snapshot`) and output (`Placement`, `Decision`) of batchplace.

Imports no Kubernetes or HTTP code: loaders read YAML/JSON text, not API objects.
"""
