#!/usr/bin/env bash
# End to end on a kind cluster, for users with Docker (CI here has no Docker engine and runs
# the same checks against a local kube-apiserver instead: tests/controller/).
#
#   scripts/kind-e2e.sh            create cluster "batchplace", build and load the image,
#                                  install CRDs + batchplace, run the hello vcjob's pods
#   KEEP=1 scripts/kind-e2e.sh     leave the cluster running afterwards
#
# Needs: docker, kind, kubectl. Volcano itself is not installed: batchplace schedules the
# PodGroup and pods that Volcano's job controller would create (with Volcano installed, set
# its scheduler's replicas to 0 and keep its controllers; see docs/controller.md).
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTER="${CLUSTER:-batchplace}"
NS=e2e

kind get clusters | grep -qx "$CLUSTER" || kind create cluster --name "$CLUSTER" --wait 120s
docker build -f deploy/Dockerfile -t batchplace:dev .
kind load docker-image batchplace:dev --name "$CLUSTER"

kubectl apply -f deploy/crds/
kubectl wait --for condition=established --timeout=60s crd --all
kubectl apply -k deploy/
kubectl -n batchplace-system rollout status deployment/batchplace --timeout=180s
kubectl -n batchplace-system get lease batchplace -o jsonpath='{.spec.holderIdentity}{"\n"}'

kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f -
cat <<YAML | kubectl apply -f -
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: hello, namespace: $NS}
spec: {minMember: 2, queue: default}
---
apiVersion: v1
kind: Pod
metadata: {name: hello-0, namespace: $NS, annotations: {scheduling.k8s.io/group-name: hello}}
spec:
  schedulerName: batchplace
  containers: [{name: main, image: busybox:1.36, command: [sleep, "600"], resources: {requests: {cpu: 100m}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: hello-1, namespace: $NS, annotations: {scheduling.k8s.io/group-name: hello}}
spec:
  schedulerName: batchplace
  containers: [{name: main, image: busybox:1.36, command: [sleep, "600"], resources: {requests: {cpu: 100m}}}]
YAML

kubectl -n "$NS" wait --for=condition=Ready pod/hello-0 pod/hello-1 --timeout=180s
kubectl -n "$NS" get pods -o wide
kubectl -n "$NS" get podgroups
phase="$(kubectl -n "$NS" get podgroup hello -o jsonpath='{.status.phase}')"
[[ "$phase" == Running ]] || { echo "PodGroup phase is $phase, expected Running"; exit 1; }
kubectl -n "$NS" get events --field-selector reason=Scheduled
echo "kind e2e: OK"

[[ "${KEEP:-}" == 1 ]] || kind delete cluster --name "$CLUSTER"
