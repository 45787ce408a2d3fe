"""Recovery in place for PyTorch gloo scripts under `ptrun --restart-policy failed` (issue #36).

When one worker dies, ptrun starts a replacement for it alone; the survivors keep their
processes, tear their process group down, wait for the new generation, build the group again and
take the state of the most advanced rank (no checkpoint is read). The worker side of README's
"Recovery in place" protocol, in a few calls:

    from ptrun.recovery import Recovery
    rec = Recovery()
    rec.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    step = rec.resync(net, opt, 0)             # a replacement catches up here; others: no-op
    model = DDP(net)
    while step < steps:
        try:
            train_step(model, opt, step)         # parameters change only after its collectives
        except RuntimeError as err:
            model = None                         # the old wrapper holds the old group
            step = rec.recover(err, net, opt, step)  # re-raises unless --restart-policy failed
            model = DDP(net)
            continue
        step += 1

Drop the DDP wrapper before recover(): peers blocked on this rank learn of the failure when the
old gloo group is freed (torch 1.13; torch 2.6 keeps it, so they wait out the group's timeout).
`position` is the number of steps a rank has completed: an int, or a tuple of ints compared most
significant first (epoch, step). Without PTRUN_RESTART_POLICY=failed every call behaves as plain
torch.distributed (init_process_group env://, resync a no-op, recover re-raises). gloo only: NCCL
needs an abortable communicator. Data loader and RNG state are the script's to derive from the
position. torch is imported by the calls, not by `import ptrun`."""
import datetime
import os
import traceback

POLICY_ENV = "PTRUN_RESTART_POLICY"
GENERATION_ENV = "PTRUN_GENERATION"
GENERATION_KEY = "ptrun/generation"


class RecoveryError(RuntimeError):
    """Recovery in place failed (the store did not answer in time, or no rank has state); the
    message says which step and key."""


def _gen_key(generation, leaf):
    return f"ptrun/gen/{generation}/{leaf}"


def _seconds(timeout):
    if isinstance(timeout, datetime.timedelta):
        return timeout
    return datetime.timedelta(seconds=timeout)


def _env_int(env, name):
    value = env.get(name)
    if value is None:
        raise RecoveryError(f"{name} is not set: run under ptrun (or torchrun)")
    try:
        return int(value)
    except ValueError:
        raise RecoveryError(f"{name}={value!r}: expected an integer") from None


class Recovery:
    """One worker's view of ptrun's generations: its rank, its generation, the store."""

    def __init__(self, env=None, store_timeout=90):
        """Reads PTRUN_RESTART_POLICY, PTRUN_GENERATION, RANK, WORLD_SIZE, MASTER_ADDR/PORT from
        `env` (default os.environ); `store_timeout` (seconds) bounds every wait on the store."""
        env = os.environ if env is None else env
        self.enabled = env.get(POLICY_ENV) == "failed"
        self.rank = _env_int(env, "RANK")
        self.world_size = _env_int(env, "WORLD_SIZE")
        self.generation = _env_int(env, GENERATION_ENV) if self.enabled else 0
        self.store_timeout = _seconds(store_timeout)
        self._master = (env.get("MASTER_ADDR", "127.0.0.1"), _env_int(env, "MASTER_PORT"))
        self._store = None
        self._backend = None
        self._pg_timeout = None
        self._behind = self.enabled and self.generation > 0  # a replacement: state to receive
        self.last_source = None  # the rank whose state the last resync adopted

    # -- the store --------------------------------------------------------------------------------
    def store(self):
        """torch's TCPStore client to ptrun's store (made on first use; classic backend on 2.x)."""
        if self._store is None:
            import torch.distributed as dist
            kwargs = {}
            if "use_libuv" in (dist.TCPStore.__init__.__doc__ or ""):
                kwargs["use_libuv"] = False  # the classic client; some builds lack libuv
            host, port = self._master
            self._store = dist.TCPStore(host, port, None, False, self.store_timeout,
                                        wait_for_workers=False, **kwargs)
        return self._store

    def _wait(self, key, what):
        try:
            self.store().wait([key], self.store_timeout)
        except RuntimeError as e:
            raise RecoveryError(f"rank {self.rank}: {what}: no {key!r} in the store within "
                                f"{self.store_timeout.total_seconds():g} s ({e})") from e
        return self.store().get(key).decode()

    def _next_generation(self, generation, error=None):
        """Waits until a generation after `generation` has begun; returns the latest one."""
        cause = f"after {type(error).__name__}: {error}; " if error is not None else ""
        self._wait(_gen_key(generation + 1, "begun"), f"{cause}waiting for ptrun's next generation")
        return int(self._wait(GENERATION_KEY, "reading the latest generation"))

    def join(self, generation):
        """Joins `generation` (the protocol's join): counts this worker in, waits until all
        WORLD_SIZE joined; follows 'superseded' to the latest generation; returns the one joined.
        Blocks (store WAIT) up to store_timeout per generation; raises RecoveryError."""
        store = self.store()
        while True:
            ready = _gen_key(generation, "ready")
            if store.add(_gen_key(generation, "joined"), 1) == self.world_size:
                store.compare_set(ready, "", "joined")
            state = self._wait(ready, f"joining generation {generation}")
            if state != "superseded":
                return generation
            generation = self._next_generation(generation)

    # -- the process group ------------------------------------------------------------------------
    def init_process_group(self, backend="gloo", timeout=datetime.timedelta(seconds=30)):
        """torch.distributed.init_process_group for this worker: under --restart-policy failed on
        the generation's own store prefix (a replacement joins its generation first), else
        env://. `timeout` (seconds or timedelta) is the group's, for every collective."""
        import torch.distributed as dist
        self._backend, self._pg_timeout = backend, _seconds(timeout)
        if not self.enabled:
            dist.init_process_group(backend, timeout=self._pg_timeout)
            return
        if self.generation > 0:
            self.generation = self.join(self.generation)
        self._init_generation()

    def _init_generation(self):
        import torch.distributed as dist
        store = dist.PrefixStore(_gen_key(self.generation, "pg"), self.store())
        dist.init_process_group(self._backend, store=store, rank=self.rank,
                                world_size=self.world_size, timeout=self._pg_timeout)

    # -- recovery ---------------------------------------------------------------------------------
    def recover(self, error, model, optimizer, position):
        """After `error` from a collective (a peer died): tears the group down, waits for the next
        generation, joins it, builds the group again and takes the most advanced rank's state;
        returns the agreed position. Re-raises `error` unless --restart-policy failed."""
        if not self.enabled:
            raise error
        import torch.distributed as dist
        # Peers blocked on this rank see 'connection closed' only once the old gloo group is
        # freed: its last references are the caller's DDP wrapper (dropped by the caller) and the
        # error's frames (cleared here); else they wait out the group's timeout.
        traceback.clear_frames(error.__traceback__)
        dist.destroy_process_group()
        self.generation = self.join(self._next_generation(self.generation, error))
        self._init_generation()
        have_state, self._behind = not self._behind, False
        return self._exchange(model, optimizer, position, have_state)

    def resync(self, model, optimizer, position):
        """At start: a replacement receives the model, optimizer state and position of the most
        advanced rank (collective with the survivors' recover()); others return `position`."""
        if not self._behind:
            return position
        self._behind = False
        return self._exchange(model, optimizer, position, have_state=False)

    def _exchange(self, model, optimizer, position, have_state):
        from . import _resync
        source, agreed = _resync.agree(position, have_state, self.world_size)
        if source is None:
            raise RecoveryError(f"generation {self.generation}: no rank has state to resume from")
        _resync.broadcast_module(model, source)
        _resync.broadcast_optimizer(optimizer, source, self.rank)
        self.last_source = source
        return agreed
