"""batchplace's in-cluster controller: places pods whose `schedulerName` is batchplace.

Layout (one concern per module; the cycle reads top to bottom in `loop.py`):

    kube        the edge: the only module that imports `kubernetes`; raw JSON in and out
    errors      the error tree every API failure is mapped into (retry or not)
    kinds       the resources read and written, their paths, the verbs RBAC grants
    informer    list + watch of one kind into a store (bookmarks, relist on 410 Gone)
    caches      the informers of every watched kind → one `ClusterView`
    assumed     binds and evictions made but not yet seen by the watch
    observe     ClusterView → Snapshot + what acting needs           (pure)
    plan        Observation + Decision → ordered actions per gang     (pure)
    status      PodGroup phase, conditions, messages in Volcano's words (pure)
    act         actions → API calls, with retries and leader checks
    leader      Lease-based leader election
    metrics     Prometheus metrics
    timing      injected clock and backoff
    loop        the Controller: observe → decide → plan → act, every period
    testing/    a local control plane (etcd + kube-apiserver), a kubelet stand-in, seeds

It imports `models` and `solver`, never `service`, `experiments` or `batchplace`.
"""
