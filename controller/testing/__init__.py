"""Test and demo support: a real local control plane, a kubelet stand-in, the seed examples
as the objects Volcano's controllers would create. Used by the tests, `batchplace demo
--live` and the controller benchmark; never by the controller itself. The files they read
at run time (examples, CRDs, RBAC, the kube-apiserver build) ship here: see `files`."""
