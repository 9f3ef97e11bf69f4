"""A model copied with changed fields forgets what was computed from the old ones."""

from models.snapshot import Gpu
from tests.builders import make_gang, make_node


def test_node_copied_with_new_gpus_indexes_the_new_gpus() -> None:
    node = make_node("n1", gpus=2).node
    assert sorted(node.gpu_by_index) == [0, 1]  # computed and cached on the original
    copied = node.model_copy(update={"gpus": [Gpu(index=0, used_milli=400), Gpu(index=1, numa_cell=1)]})
    assert copied.gpu_by_index[0].used_milli == 400
    assert copied.gpu_by_index[1].numa_cell == 1
    assert node.gpu_by_index[0].used_milli == 0  # the original keeps its own


def test_copy_without_update_keeps_cached_values() -> None:
    node = make_node("n1", gpus=2).node
    index = node.gpu_by_index
    assert node.model_copy().gpu_by_index is index


def test_pod_group_copied_with_new_tasks_finds_the_new_tasks() -> None:
    group = make_gang("g", replicas=2).group
    (task,) = group.tasks
    assert group.task_by_name[task.name] is task  # computed and cached on the original
    renamed = task.model_copy(update={"name": "trainer"})
    copied = group.model_copy(update={"tasks": (renamed,)})
    assert set(copied.task_by_name) == {"trainer"}
