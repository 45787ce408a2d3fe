"""State resynchronisation after a process group is re-formed (ptrun.recovery): agree on the most
advanced rank, then broadcast its module state, optimizer state and position, exactly (bytes, no
arithmetic). Collective: every rank of the group calls these in the same order. Imports torch."""
import torch
import torch.distributed as dist


def _as_row(position):
    if isinstance(position, int):
        return (position,)
    row = tuple(position)
    if not row or not all(isinstance(v, int) for v in row):
        raise TypeError(f"position {position!r}: expected an int or a tuple of ints")
    return row


def agree(position, have_state, world_size):
    """Gathers every rank's position (a rank without state contributes -1s); returns (the lowest
    rank at the maximum, or None when no rank has state; the maximum, shaped as `position`)."""
    row = _as_row(position)
    mine = torch.tensor(row if have_state else [-1] * len(row), dtype=torch.int64)
    rows = [torch.empty_like(mine) for _ in range(world_size)]
    dist.all_gather(rows, mine)
    rows = [tuple(r.tolist()) for r in rows]
    best = max(rows)
    if best[0] < 0:
        return None, position
    agreed = best[0] if isinstance(position, int) else type(position)(best)
    return rows.index(best), agreed


def _broadcast_tensor(tensor, source):
    buf = tensor if tensor.is_contiguous() else tensor.contiguous()
    dist.broadcast(buf, source)
    if buf is not tensor:
        tensor.copy_(buf)


def broadcast_module(module, source):
    """Overwrites every parameter and buffer of `module` (or a DDP's .module) with source's."""
    module = getattr(module, "module", module)
    with torch.no_grad():
        for tensor in module.state_dict().values():
            _broadcast_tensor(tensor, source)


class _Slot:
    """A tensor's place in an optimizer state skeleton: its index, shape and dtype."""

    def __init__(self, index, tensor):
        self.index, self.shape, self.dtype = index, tuple(tensor.shape), tensor.dtype


def _hollow(obj, tensors):
    """obj with every tensor replaced by a _Slot (the tensors appended to `tensors`)."""
    if isinstance(obj, torch.Tensor):
        tensors.append(obj)
        return _Slot(len(tensors) - 1, obj)
    if isinstance(obj, dict):
        return {k: _hollow(v, tensors) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_hollow(v, tensors) for v in obj)
    return obj


def _fill(obj, tensors):
    if isinstance(obj, _Slot):
        return tensors[obj.index]
    if isinstance(obj, dict):
        return {k: _fill(v, tensors) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_fill(v, tensors) for v in obj)
    return obj


def broadcast_optimizer(optimizer, source, rank):
    """Makes every rank's `optimizer` state source's: the state dict's structure (pickled, with
    ints such as Adam's 'step' on torch 1.13), then each tensor; an empty state is materialised."""
    tensors = []
    skeleton = [_hollow(optimizer.state_dict(), tensors) if rank == source else None]
    dist.broadcast_object_list(skeleton, src=source)
    if rank != source:
        tensors = [torch.empty(s.shape, dtype=s.dtype) for s in _slots(skeleton[0])]
    for tensor in tensors:
        _broadcast_tensor(tensor, source)
    if rank != source:
        optimizer.load_state_dict(_fill(skeleton[0], tensors))


def _slots(obj):
    """The _Slots of a skeleton in index order."""
    found = []

    def walk(o):
        if isinstance(o, _Slot):
            found.append(o)
        elif isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, (list, tuple)):
            for v in o:
                walk(v)

    walk(obj)
    return sorted(found, key=lambda s: s.index)
