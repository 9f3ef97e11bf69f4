"""Object names checked as the cluster checks them, per kind, so a placement never names an
object the API server (or the kind's admission webhook) would have refused.

Input: an object's `metadata.name` and, when its kind is namespaced, `metadata.namespace`;
for a vcjob its task names, for a PyTorchJob its name again. Output: nothing, or a `FieldError` at `metadata.name` (`metadata.namespace`,
`spec.tasks[i].name`) in the API server's own words, e.g.

    jobs.yaml: document 2 (Job default/Hello_Job): metadata.name: Invalid value: "Hello_Job":
    a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-'
    or '.', and must start and end with an alphanumeric character (e.g. 'example.com', ...)

The rules (apimachinery `pkg/util/validation/validation.go` for the wording):

    every object, built-in or custom (Pod, Node, PriorityClass, Queue, PodGroup, HyperNode,
      Numatopology, vcjob, PyTorchJob)   metadata.name an RFC 1123 subdomain, <= 253
      (`ValidateObjectMeta` with `NameIsDNSSubdomain`; CRDs' objects the same by default)
    a namespace                          an RFC 1123 label, <= 63 (`ValidateNamespaceName`)
    Volcano Job (vcjob)                  Volcano's job admission webhook
      (volcano-sh/volcano `pkg/webhooks/admission/jobs/validate/admit_job.go`,
      `validateJobCreate`) adds: the job name a qualified name (`IsQualifiedName`, so
      <= 63 characters), each task name an RFC 1123 label, and each pod name it will
      create, `<job>-<task>-<index>`, a qualified name too (<= 63; the webhook puts the
      task's position in spec.tasks as the index). It asks a qualified name, not an RFC
      1123 label, of the job, so `a.b` passes there (and here).
    Kubeflow PyTorchJob                  the training operator's webhook
      (kubeflow/training-operator `pkg/webhooks/pytorch/pytorchjob_webhook.go`,
      `validatePyTorchJob`) wants an RFC 1035 label (<= 63, starting with a letter): its
      services are named after the job.

Not checked: names of kinds batchplace skips, label keys and values, generateName.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from models.errors import FieldError, Location, PathPart

__all__ = [
    "check_object_name",
    "check_vcjob_names",
    "check_pytorch_job_name",
    "qualified_name_problem",
]

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = rf"{_LABEL}(\.{_LABEL})*"
_DNS1035 = r"[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"

_LABEL_MAX = 63
_SUBDOMAIN_MAX = 253
_QUALIFIED_NAME_MAX = 63

_RULES = {
    # (pattern, max length, the API server's sentence, its examples)
    "label": (
        _LABEL,
        _LABEL_MAX,
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character",
        "'my-name',  or '123-abc'",
    ),
    "subdomain": (
        _SUBDOMAIN,
        _SUBDOMAIN_MAX,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
        "and must start and end with an alphanumeric character",
        "'example.com'",
    ),
    "dns1035": (
        _DNS1035,
        _LABEL_MAX,
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
        "start with an alphabetic character, and end with an alphanumeric character",
        "'my-name',  or 'abc-123'",
    ),
    "qualified": (
        _QUALIFIED_NAME,
        _QUALIFIED_NAME_MAX,
        "name part must consist of alphanumeric characters, '-', '_' or '.', "
        "and must start and end with an alphanumeric character",
        "'MyName',  or 'my.name',  or '123-abc'",
    ),
}
_COMPILED = {rule: re.compile(pattern) for rule, (pattern, *_) in _RULES.items()}


def _problem(rule: str, value: str) -> str | None:
    """The API server's sentence for `value` under `rule`, None when it passes."""
    pattern, maximum, sentence, examples = _RULES[rule]
    if len(value) > maximum:
        return f"must be no more than {maximum} characters"
    if _COMPILED[rule].fullmatch(value) is None:
        return f"{sentence} (e.g. {examples}, regex used for validation is '{pattern}')"
    return None


def qualified_name_problem(value: str) -> str | None:
    """`IsQualifiedName`: an optional RFC 1123 subdomain prefix and `/`, then a name part."""
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or _problem("subdomain", prefix)):
        return "prefix part " + (_problem("subdomain", prefix) or "must be non-empty")
    return _problem("qualified", name)


def _raise(problem: str, value: str, location: Location, path: Sequence[PathPart]) -> None:
    raise FieldError(f'Invalid value: "{value}": {problem}', location=location, path=tuple(path))


def check_object_name(
    name: str, namespace: str | None, location: Location, path: Sequence[PathPart]
) -> None:
    """Every object's name an RFC 1123 subdomain; a namespaced one's namespace (None for a
    cluster-scoped kind) a label. `path`: where the object sits in its document (`()`, or
    `("items", 3)` in a List)."""
    problem = _problem("subdomain", name)
    if problem:
        _raise(problem, name, location, (*path, "metadata", "name"))
    if namespace is not None:
        problem = _problem("label", namespace)
        if problem:
            _raise(problem, namespace, location, (*path, "metadata", "namespace"))


def check_vcjob_names(job: str, tasks: Sequence[str], location: Location, path: Sequence[PathPart]) -> None:
    """Volcano's webhook rules (module docstring). `tasks`: the task names in spec order."""
    problem = qualified_name_problem(job)
    if problem:
        _raise(problem, job, location, (*path, "metadata", "name"))
    for position, task in enumerate(tasks):
        task_path = (*path, "spec", "tasks", position, "name")
        problem = _problem("label", task)
        if problem:
            _raise(problem, task, location, task_path)
        pod = f"{job}-{task}-{position}"
        problem = qualified_name_problem(pod)
        if problem:
            message = f"create pod with name {pod} validate failed: {problem}"
            raise FieldError(message, location=location, path=task_path)


def check_pytorch_job_name(name: str, location: Location, path: Sequence[PathPart]) -> None:
    """The training operator's webhook rule (module docstring), in its words (`should match:`)."""
    problem = _problem("dns1035", name)
    if problem:
        raise FieldError(
            f'Invalid value: "{name}": should match: {problem}', location=location, path=(*path, "metadata", "name")
        )
