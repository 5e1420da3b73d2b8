"""Models bigger than the memory they run in, through accelerate's big-model inference (its device maps and offload
hooks on attnlab's own layer modules), not a hand-written streamer.

    placement = plan_placement(module, tiers=[("cuda:0", gpu_bytes), ("cpu", host_bytes), ("disk", None)])
    dispatch(module, placement, load, offload_dir)      # layers stream to the run's device as they are needed
    placement.summary()  -> "layers 1–18 on cuda:0, 19–26 in the computer's memory, 27–28 read from disk"

Everything a run reads outside a layer's own forward (the token and position tables, the tied output matrix, the
final norms, the output head) stays on the run's device: only whole encoder/decoder layers move (a layer's weights
are read inside its forward, where accelerate's hook has put them). A "cpu" layer of a GPU run is copied to the GPU
for its forward; a "disk" layer is read from memory-mapped files (accelerate's offload folder) each time. Shapes are
the model's own; nothing here changes a number.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from attnlab.limits import gb

DISK = "disk"
HOST = "cpu"
LAYER_STACKS = ("encoder", "decoder")  # the ModuleLists whose items move


def layer_names(module: nn.Module) -> list[str]:
    """'encoder.0', …, 'decoder.N-1': the modules that may live away from the run's device, in run order."""
    found = []
    for stack in LAYER_STACKS:
        layers = getattr(module, stack, None)
        if isinstance(layers, nn.ModuleList):
            found += [f"{stack}.{i}" for i in range(len(layers))]
    return found


def resident_names(module: nn.Module) -> list[str]:
    """The top-level parts that always stay on the run's device (everything but the layer stacks)."""
    return [name for name, _child in module.named_children() if name not in LAYER_STACKS]


def module_bytes(module: nn.Module, dtype_bytes: int | None = None) -> int:
    """Bytes a module's parameters and persistent buffers take (in `dtype_bytes` per value when given, else as
    they are; a parameter on the meta device counts as well: only its shape is read)."""
    total = 0
    for t in [*module.parameters(), *module.buffers()]:
        total += t.numel() * (dtype_bytes or t.element_size())
    return total


@dataclass(frozen=True)
class Placement:
    """Where each part of a model lives: module name -> a device ("cuda:0", "cpu") or "disk"; the run's device
    (`main`) computes everything."""

    device_map: dict[str, str]
    main: str
    layer_order: list[str] = field(default_factory=list)

    @property
    def offloaded(self) -> bool:
        """Whether some layer lives away from the run's device."""
        return any(self.device_map[name] != self.main for name in self.layer_order)

    def where(self, name: str) -> str:
        return self.device_map[name]

    def summary(self) -> str:
        """Where the weights live, in words: 'layers 1–18 on cuda:0, 19–28 in the computer's memory'."""
        if not self.offloaded:
            return f"all weights on {_device_words(self.main)}"
        runs: list[tuple[str, int, int]] = []  # (where, first, last), 1-based over all layers
        for i, name in enumerate(self.layer_order, start=1):
            where = self.device_map[name]
            if runs and runs[-1][0] == where and runs[-1][2] == i - 1:
                runs[-1] = (where, runs[-1][1], i)
            else:
                runs.append((where, i, i))
        parts = [
            f"layer{'s' if a != b else ''} {a}{'–' + str(b) if a != b else ''} {_device_words(where)}"
            for where, a, b in runs
        ]
        return ", ".join(parts) + f"; computed on {self.main}"


def _device_words(where: str) -> str:
    if where == DISK:
        return "read from disk"
    if where == HOST:
        return "in the computer's memory"
    return f"on {where}"


def plan_placement(
    module: nn.Module, tiers: Iterable[tuple[str, int | None]], dtype_bytes: int | None = None
) -> Placement:
    """Fill the tiers in order (the first is the run's device): the resident parts first, then the layers in run
    order, each on the first tier with room left (a tier's budget None: unlimited). Raises MemoryError (with the
    numbers) when even the resident parts do not fit the first tier or some layer fits nowhere."""
    tiers = list(tiers)
    main, budget = tiers[0]
    left = {where: room for where, room in tiers}
    need = sum(module_bytes(getattr(module, n), dtype_bytes) for n in resident_names(module))
    if budget is not None and need > budget:
        raise MemoryError(
            f"the embeddings and output of this model take {gb(need)}, more than the {gb(budget)} "
            f"{_device_words(main)} can hold"
        )
    if left[main] is not None:
        left[main] = int(left[main] or 0) - need
    device_map = dict.fromkeys(resident_names(module), main)
    layers = layer_names(module)
    tier_index = 0
    for name in layers:
        size = module_bytes(module.get_submodule(name), dtype_bytes)
        while tier_index < len(tiers):
            where = tiers[tier_index][0]
            room = left[where]
            if room is None or size <= room:
                break
            tier_index += 1  # later layers never go back to an earlier tier: runs stay contiguous
        if tier_index == len(tiers):
            raise MemoryError(f"layer {name} ({gb(size)}) fits on none of {', '.join(left)}")
        where = tiers[tier_index][0]
        if left[where] is not None:
            left[where] = int(left[where] or 0) - size
        device_map[name] = where
    return Placement(device_map, main, layers)


def dispatch(
    module: nn.Module,
    placement: Placement,
    load: Callable[[str], torch.Tensor],
    offload_dir: str | os.PathLike[str],
) -> nn.Module:
    """Put every parameter where `placement` says, through accelerate: `load(name)` gives a parameter's values
    (attnlab's name, e.g. 'decoder.3.ffn.up.weight'), read one at a time so a disk layer is never held whole in
    memory; disk layers are written to `offload_dir` as memory-mapped files. Returns the dispatched module, whose
    layers accelerate's hooks bring to `placement.main` for their forward (and send back after)."""
    from accelerate import dispatch_model
    from accelerate.utils import offload_weight, save_offload_index, set_module_tensor_to_device

    folder = Path(offload_dir)
    index: dict[str, dict] = {}
    for part, where in placement.device_map.items():
        sub = module.get_submodule(part)
        for local, _p in [*sub.named_parameters(), *sub.named_buffers()]:
            name = f"{part}.{local}"
            if where == DISK:
                folder.mkdir(parents=True, exist_ok=True)
                offload_weight(load(name), name, str(folder), index)  # written, then dropped
                set_module_tensor_to_device(module, name, "meta")
            else:
                device = HOST if where == HOST else where
                set_module_tensor_to_device(module, name, device, value=load(name))
    if index:
        save_offload_index(index, str(folder))
    if not placement.offloaded:
        return module
    return dispatch_model(
        module,
        device_map=placement.device_map,
        main_device=placement.main,
        offload_dir=str(folder) if index else None,
        offload_index=None,
    )


def streamed_layers(module: nn.Module, placement: Placement) -> list[tuple[int, nn.Module]]:
    """(1-based layer number, layer module) of the layers that live away from the run's device: those a run
    waits on while their weights stream in (the progress bar counts them)."""
    return [
        (i, module.get_submodule(name))
        for i, name in enumerate(placement.layer_order, start=1)
        if placement.where(name) != placement.main
    ]
