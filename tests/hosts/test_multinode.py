#!/usr/bin/python3
"""Multi-node ptrun on real (namespaced) hosts: issue 4's scenarios.

Hosts node1..node3 come from netns-hosts.sh (one network namespace and hostname each); ptrun runs
on each with the c10d rendezvous at node1. Every test waits on events (worker start lines on an
inherited pipe, ptrun's log lines, process exits through pidfds) with bounded deadlines, and
leaves no process or namespace behind. Run as root: /usr/bin/python3 tests/hosts/test_multinode.py -v
Needs PTRUN_BIN and FAKE_WORKER (ctest sets them); skips (exit 77) without root or namespaces.
"""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "integration"))

from test_netns_hosts import ENV, argv, down_and_check, harness, main, skip_unless_possible, up  # noqa: E402

import harness as ptrun_harness  # noqa: E402
from harness import Notifier, read_dumps, wait_gone  # noqa: E402

PTRUN = os.environ.get("PTRUN_BIN", str(HERE.parents[1] / "build/launcher/ptrun"))
FAKE = os.environ.get("FAKE_WORKER", str(HERE.parents[1] / "build/tests/fixtures/fake_worker"))
FAST = "heartbeat=0.5,keep_alive_max_attempt=3,last_call_timeout=1,join_timeout=60,close_timeout=10"
DEADLINE = 60
TRAIN = os.environ.get("TRAIN_BIN", str(HERE.parents[1] / "build/examples/train/train"))
TORCH_PYTHON = "/usr/bin/python3"
TORCH_DDP_SCRIPT = str(HERE.parent / "integration" / "torch_ddp_train.py")
_ports = iter(range(29600, 29700))


class Agent:
    """ptrun on one namespaced host; its stderr is read as it comes (log lines are events)."""

    def __init__(self, host, args, notifier=None, env=None, prefix=()):
        env = dict(ENV, TMPDIR=ptrun_harness.SCRATCH, **(env or {}))
        self.host = host
        self.proc = subprocess.Popen(argv("exec", host, *prefix, PTRUN, *args), env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.err = ""

    def wait_log(self, text, timeout=DEADLINE):
        self.err += ptrun_harness.wait_output(self.proc.stderr, text, timeout)
        return self.err

    def finish(self, timeout=DEADLINE):
        """Waits for the exit; returns (code, stderr)."""
        try:
            _, rest = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, rest = self.proc.communicate()
            self.err += rest  # everything it printed, so that a hang can be diagnosed
            raise AssertionError(f"ptrun on node{self.host} still running after {timeout}s:\n{self.err}")
        self.err += rest
        return self.proc.returncode, self.err


class MultiNode(unittest.TestCase):
    """Three hosts for the whole class; each test uses its own port and run id."""

    @classmethod
    def setUpClass(cls):
        skip_unless_possible()
        up(3)

    @classmethod
    def tearDownClass(cls):
        down_and_check()

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ptrun-mn-")
        self.dir = self.tmp.name
        self.notifier = Notifier()
        self.agents = []
        self.port = next(_ports)

    def tearDown(self):
        for a in self.agents:
            if a.proc.poll() is None:
                a.proc.kill()
            a.proc.communicate()
        self.notifier.close()
        self.tmp.cleanup()

    def start(self, hosts, nnodes, worker, extra=(), rdzv_host=1, rdzv_id=None, conf=FAST):
        endpoint = f"{harness('name', rdzv_host).stdout.strip()}:{self.port}"
        for h in hosts:
            args = ["--nnodes", nnodes, "--nproc-per-node", "2", "--rdzv-endpoint", endpoint,
                    "--rdzv-id", rdzv_id or self.id(), "--rdzv-conf", conf, *extra, *worker]
            self.agents.append(Agent(h, args, self.notifier))
        return self.agents[-len(hosts):]

    def fake(self, *args):
        return [FAKE, "--notify", self.notifier.path, "--dump", self.dir, *args]

    def finish_all(self, agents, timeout=DEADLINE):
        return [a.finish(timeout) for a in agents]

    def assert_no_workers(self):
        # This test's workers only (its dump dir): other tests' run beside it under ctest -j.
        mine = re.escape(FAKE) + ".*" + re.escape(self.dir)
        pids = [int(p) for p in subprocess.run(["pgrep", "-f", mine], capture_output=True, text=True).stdout.split()]
        self.assertEqual(wait_gone(pids, 10), [], "workers left running")

    # ---- scenarios ----

    def test_clean_run_two_hosts(self):
        agents = self.start([1, 2], "2", self.fake())
        for code, err in self.finish_all(agents):
            self.assertEqual(code, 0, err)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(r for r, _ in dumps), [0, 1, 2, 3])
        for (rank, _), dump in dumps.items():
            env = dump["env"]
            self.assertEqual(env["WORLD_SIZE"], "4")
            self.assertEqual(env["GROUP_WORLD_SIZE"], "2")
            self.assertEqual(env["GROUP_RANK"], str(rank // 2))
            self.assertEqual(env["LOCAL_RANK"], str(rank % 2))
            self.assertEqual(env["MASTER_ADDR"], "node1")
            self.assertEqual(env["MASTER_PORT"], str(self.port))
            self.assertEqual(env["TORCHELASTIC_USE_AGENT_STORE"], "True")
        self.assertIn("round 0: group rank 0 of 2", agents[0].err)  # the store host comes first

    def test_clean_run_three_hosts_ipv6_endpoint(self):
        v6 = harness("ip6", 1).stdout.strip()
        for h in (1, 2, 3):
            args = ["--nnodes", "3", "--nproc-per-node", "2", "--rdzv-endpoint", f"[{v6}]:{self.port}",
                    "--rdzv-id", "v6", "--rdzv-conf", FAST, *self.fake()]
            self.agents.append(Agent(h, args, self.notifier))
        for code, err in self.finish_all(self.agents):
            self.assertEqual(code, 0, err)
        self.assertEqual(sorted(r for r, _ in read_dumps(self.dir)), list(range(6)))

    def test_explicit_node_ranks_are_kept(self):
        endpoint = f"node1:{self.port}"
        for h, rank in ((1, 1), (2, 0)):
            args = ["--nnodes", "2", "--nproc-per-node", "2", "--node-rank", str(rank), "--rdzv-endpoint", endpoint,
                    "--rdzv-id", "ranks", "--rdzv-conf", FAST, *self.fake()]
            self.agents.append(Agent(h, args, self.notifier))
        for code, err in self.finish_all(self.agents):
            self.assertEqual(code, 0, err)
        self.assertEqual(sorted(read_dumps(self.dir)), [(r, 0) for r in range(4)])
        self.assertIn("round 0: group rank 1 of 2", self.agents[0].err)  # node1 asked for node rank 1

    def test_store_listens_on_the_endpoint_address_only(self):
        # Issue 13: the store host listened on 0.0.0.0 whatever the endpoint said.
        agents = self.start([1, 2], "2", self.fake("--hang", "--usr1-exit", "0"))
        self.notifier.wait_lines(4)
        listening = set()
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for line in harness("nsexec", 1, "cat", table).stdout.splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                addr, port = local.split(":")
                if state == "0A" and int(port, 16) == self.port:  # LISTEN
                    listening.add(addr)
        ip = harness("ip", 1).stdout.strip()
        self.assertEqual(listening, {"%08X" % int.from_bytes(bytes(map(int, ip.split("."))), "little")},
                         f"the store on node1 must listen on {ip}:{self.port} only")
        for a in agents:
            a.proc.send_signal(signal.SIGUSR1)  # the workers exit 0
        for code, err in self.finish_all(agents):
            self.assertEqual(code, 0, err)

    def write_key(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, 0o600)
        return path

    def test_a_shared_rendezvous_key_authenticates_and_a_wrong_one_is_rejected(self):
        key = self.write_key("key", "the job's shared secret, 32 bytes\n")
        agents = self.start([1, 2], "2", self.fake(), conf=f"{FAST},key_file={key}")
        for code, err in self.finish_all(agents):
            self.assertEqual(code, 0, err)
            self.assertIn("rendezvous values are authenticated with the key in", err)
        # node2 holds another key: node1's coordinator rejects its join, and it never gets in.
        self.port = next(_ports)
        other = self.write_key("other", "another secret of at least 16 bytes\n")
        first = self.start([1], "1:2", self.fake("--hang", "--usr1-exit", "0"),
                           conf=f"{FAST},last_call_timeout=0.2,key_file={key}", rdzv_id="keys")
        self.notifier.wait_lines(2)
        second = self.start([2], "1:2", self.fake(), conf=f"{FAST},join_timeout=5,key_file={other}", rdzv_id="keys")
        code, err = second[0].finish()
        self.assertNotEqual(code, 0, err)
        self.assertIn("rendezvous timed out", err)
        log = first[0].wait_log("MAC does not match")
        self.assertIn("rejected the rendezvous value of '/ptrun/rdzv/keys/events'", log)
        first[0].proc.send_signal(signal.SIGUSR1)
        code, err = first[0].finish()
        self.assertEqual(code, 0, err)

    def test_static_backend(self):
        for h, rank in ((1, 0), (2, 1)):
            args = ["--nnodes", "2", "--nproc-per-node", "2", "--node-rank", str(rank), "--master-addr", "node1",
                    "--master-port", str(self.port), "--rdzv-conf", FAST, *self.fake()]
            self.agents.append(Agent(h, args, self.notifier))
        for code, err in self.finish_all(self.agents):
            self.assertEqual(code, 0, err)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(r, 0) for r in range(4)])
        self.assertEqual(dumps[(2, 0)]["env"]["GROUP_RANK"], "1")

    def assert_ranks_tile(self, dumps, sizes, attempts=(0,)):
        """Every attempt's ranks are 0..sum(sizes)-1, group g holding sizes[g] of them in order."""
        world = sum(sizes)
        self.assertEqual(sorted(dumps), [(r, a) for r in range(world) for a in attempts])
        for (rank, attempt), dump in dumps.items():
            env = dump["env"]
            group = int(env["GROUP_RANK"])
            base = sum(sizes[:group])
            self.assertEqual(env["WORLD_SIZE"], str(world), f"rank {rank}")
            self.assertEqual(env["LOCAL_WORLD_SIZE"], str(sizes[group]), f"rank {rank}")
            self.assertEqual(env["LOCAL_RANK"], str(rank - base), f"rank {rank}")
            self.assertEqual(env["GROUP_WORLD_SIZE"], str(len(sizes)))

    def test_nodes_of_different_sizes_static(self):
        # Node rank 0 (node1, the store's host) runs one worker, node rank 1 three: ranks 0 | 1-3,
        # also after a restart.
        for h, rank, nproc in ((1, 0, 1), (2, 1, 3)):
            args = ["--nnodes", "2", "--nproc-per-node", str(nproc), "--node-rank", str(rank),
                    "--master-addr", "node1", "--master-port", str(self.port), "--rdzv-conf", FAST,
                    "--max-restarts", "1",
                    *self.fake("--fail-rank", "2", "--fail-attempts", "1", "--exit", "3")]
            self.agents.append(Agent(h, args, self.notifier))
        for code, err in self.finish_all(self.agents):
            self.assertEqual(code, 0, err)
        self.assert_ranks_tile(read_dumps(self.dir), [1, 3], attempts=(0, 1))
        self.assertIn("ranks 1..3 of world size 4", self.agents[1].err)

    def test_nodes_of_different_sizes_elastic(self):
        # c10d: 3, 1 and 2 workers; the store host first, then by hostname: 0-2 | 3 | 4-5.
        endpoint = f"node1:{self.port}"
        for h, nproc in ((1, 3), (2, 1), (3, 2)):
            args = ["--nnodes", "3", "--nproc-per-node", str(nproc), "--rdzv-endpoint", endpoint,
                    "--rdzv-id", "sizes", "--rdzv-conf", FAST, *self.fake()]
            self.agents.append(Agent(h, args, self.notifier))
        for code, err in self.finish_all(self.agents):
            self.assertEqual(code, 0, err)
        self.assert_ranks_tile(read_dumps(self.dir), [3, 1, 2])
        self.assertIn("ranks 4..5 of world size 6", self.agents[2].err)

    def test_worker_crash_restarts_every_node(self):
        agents = self.start([1, 2], "2", self.fake("--fail-rank", "3", "--fail-attempts", "1", "--exit", "3"),
                            ["--max-restarts", "1"])
        for code, err in self.finish_all(agents):
            self.assertEqual(code, 0, err)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(dumps), [(r, a) for r in range(4) for a in (0, 1)])
        self.assertEqual(dumps[(0, 1)]["env"]["TORCHELASTIC_RESTART_COUNT"], "1")
        self.assertIn("worker rank 3 (local rank 1) on node2 failed: exit code 3", agents[0].err)

    def test_restarts_exhausted_every_node_exits_with_the_code(self):
        agents = self.start([1, 2], "2", self.fake("--fail-rank", "1", "--exit", "7"))
        results = self.finish_all(agents)
        for code, err in results:
            self.assertEqual(code, 7, err)
        self.assertIn("rank 1", results[1][1])
        self.assertIn("node1", results[1][1])   # the other node's summary names the failing host
        self.assert_no_workers()

    def test_agent_killed_survivors_continue_at_min(self):
        # Round 0: six workers hang; node3's agent is SIGKILLed; node1 and node2 re-form at MIN=2
        # (restart 1), where the workers succeed.
        agents = self.start([1, 2, 3], "2:3", self.fake("--hang", "--fail-attempts", "1"), ["--max-restarts", "1"])
        starts = self.notifier.wait_lines(6)
        node3 = agents[2].proc.pid
        os.kill(node3, signal.SIGKILL)
        t0 = time.monotonic()
        for code, err in self.finish_all(agents[:2]):
            self.assertEqual(code, 0, err)
        self.assertLess(time.monotonic() - t0, 20)
        self.assertIn("node3", agents[0].err)
        node3_workers = [int(w[3]) for w in starts if int(w[1]) >= 4]
        self.assertEqual(wait_gone(node3_workers, 10), [])   # PDEATHSIG: no orphans
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(r for r, a in dumps if a == 1), [0, 1, 2, 3])

    def test_failure_after_a_node_loss_names_the_lost_node(self):
        # node3's agent is SIGKILLed (its workers die with it); then rank 0's worker fails, as a
        # real one does when its collectives lose their peers. The round ends by that failure;
        # the next round forms without node3 and says that node3 was lost first and that the
        # failure likely followed it (issue 23, item 10). The workers succeed at restart 1.
        conf = FAST.replace("keep_alive_max_attempt=3", "keep_alive_max_attempt=6")
        agents = self.start([1, 2, 3], "2:3",
                            self.fake("--hang", "--usr1-exit", "1", "--fail-attempts", "1"),
                            ["--max-restarts", "1"], conf=conf)
        starts = {int(w[1]): int(w[3]) for w in self.notifier.wait_lines(6)}
        os.kill(agents[2].proc.pid, signal.SIGKILL)
        self.assertEqual(wait_gone([starts[4], starts[5]], 10), [])  # PDEATHSIG
        os.kill(starts[0], signal.SIGUSR1)
        for code, err in self.finish_all(agents[:2]):
            self.assertEqual(code, 0, err)
        for a in agents[:2]:
            self.assertIn("round 0 ended: worker rank 0", a.err)
            note = [line for line in a.err.splitlines() if "round 1: node node3" in line]
            self.assertEqual(len(note), 1, a.err)
            self.assertIn("heartbeats stopped", note[0])
            self.assertIn("worker rank 0", note[0])
            self.assertIn("that failure likely followed the loss of node3", note[0])
        self.assert_no_workers()

    def test_a_spare_takes_a_lost_nodes_place_without_the_last_call(self):
        # --nnodes 2 and a third node: it waits as a spare (says so, starts no worker). node2's
        # agent is SIGKILLed: node1 and the spare form the next round as soon as node1 is back,
        # not after the last call (30 s here), and the job then ends 0 on both.
        conf = FAST.replace("last_call_timeout=1", "last_call_timeout=30")
        worker = self.fake("--hang", "--usr1-exit", "0")
        health = next(_ports)
        extra = ["--max-restarts", "1", "--health-port", str(health)]
        agents = self.start([1, 2], "2", worker, extra, conf=conf)
        first = self.notifier.wait_lines(4)
        [spare] = self.start([3], "2", worker, extra, conf=conf)
        spare.wait_log("this node waits as a spare")
        # The store host lists it: /status, /metrics and `ptrun status`.
        self.status_until(health, lambda d: d["spares"] == ["node3"], "node3 as a spare")
        res = subprocess.run(argv("exec", 1, PTRUN, "status", f"127.0.0.1:{health}"), env=ENV,
                             capture_output=True, text=True, timeout=30)
        self.assertIn("spares       : 1 waiting: node3\n", res.stdout)
        lost = time.monotonic()
        os.kill(agents[1].proc.pid, signal.SIGKILL)
        later = self.notifier.wait_lines(4)
        took = time.monotonic() - lost
        self.assertEqual(sorted((int(w[1]), int(w[2])) for w in later), [(r, 1) for r in range(4)])
        self.assertLess(took, 15, "the round waited for the last call")
        print(f"\nspare: {took:.2f} s from the kill to the new round's 4 workers running", file=sys.stderr)
        for a in (agents[0], spare):
            a.proc.send_signal(signal.SIGUSR1)
        for code, err in self.finish_all([agents[0], spare]):
            self.assertEqual(code, 0, err)
        self.assertNotIn("waits as a spare", agents[0].err)
        self.assertEqual(len(first), 4)
        self.assert_no_workers()

    def test_a_spare_the_job_never_needed_exits_0(self):
        worker = self.fake("--hang", "--usr1-exit", "0")
        agents = self.start([1, 2], "2", worker)
        self.notifier.wait_lines(4)
        [spare] = self.start([3], "2", worker)
        spare.wait_log("this node waits as a spare")
        for a in agents:
            a.proc.send_signal(signal.SIGUSR1)
        for code, err in self.finish_all([*agents, spare]):
            self.assertEqual(code, 0, err)
        self.assertIn("the job ended while this node waited as a spare", spare.err)
        self.assertNotIn("error", spare.err)

    def test_cut_link_detected_in_bounded_time(self):
        agents = self.start([1, 2, 3], "2:3", self.fake("--hang", "--fail-attempts", "1"), ["--max-restarts", "1"])
        self.notifier.wait_lines(6)
        harness("cut", 3)
        try:
            t0 = time.monotonic()
            code3, err3 = agents[2].finish(30)
            self.assertNotEqual(code3, 0, err3)
            self.assertIn("stopped answering", err3)
            for code, err in self.finish_all(agents[:2], 30):
                self.assertEqual(code, 0, err)
            self.assertLess(time.monotonic() - t0, 20)
        finally:
            harness("heal", 3)
        self.assert_no_workers()

    def test_host_added_mid_run_is_admitted(self):
        script = Path(self.dir) / "world.sh"
        script.write_text("#!/bin/sh\n"
                          f"echo start $RANK $WORLD_SIZE $$ > {self.notifier.path}\n"
                          '[ "$WORLD_SIZE" = 6 ] && exit 0\n'
                          "exec sleep 100\n")
        script.chmod(0o755)
        agents = self.start([1, 2], "2:3", [str(script)])
        first = self.notifier.wait_lines(4)
        self.assertEqual({w[2] for w in first}, {"4"})
        agents += self.start([3], "2:3", [str(script)])
        for code, err in self.finish_all(agents):
            self.assertEqual(code, 0, err)
        later = self.notifier.wait_lines(6)
        self.assertEqual({w[2] for w in later}, {"6"})
        self.assertIn("restart 0", agents[0].err.split("round 1:")[1])  # scale-up is not a restart

    @unittest.skipUnless(os.path.exists(TORCH_PYTHON) and os.path.exists("/usr/bin/torchrun"),
                         "Debian's python3-torch is not installed")
    def test_torch_ddp_gloo_across_two_hosts(self):
        # The same seeded DDP script: 2 hosts x 2 workers must give the losses of 4 workers on one host.
        env = {"PYTHON_EXEC": TORCH_PYTHON, "GLOO_SOCKET_IFNAME": "eth0"}
        across = os.path.join(self.dir, "across.json")
        for h in (1, 2):
            args = ["--nnodes", "2", "--nproc-per-node", "2", "--rdzv-endpoint", f"node1:{self.port}",
                    "--rdzv-id", "ddp", "--rdzv-conf", FAST, TORCH_DDP_SCRIPT, across]
            self.agents.append(Agent(h, args, env=env))
        for code, err in self.finish_all(self.agents, 240):
            self.assertEqual(code, 0, err)
        alone = os.path.join(self.dir, "alone.json")
        res = ptrun_harness.run_ptrun(["--standalone", "--nproc-per-node", "4", TORCH_DDP_SCRIPT, alone],
                                      env={"PYTHON_EXEC": TORCH_PYTHON, "GLOO_SOCKET_IFNAME": "lo"}, timeout=240)
        self.assertEqual(res.returncode, 0, res.stderr)
        ours, reference = (json.loads(Path(p).read_text()) for p in (across, alone))
        self.assertEqual(ours["world"], 4)
        self.assertEqual(ours["agent_store"], "True")
        for a, b in zip(ours["losses"], reference["losses"]):
            self.assertAlmostEqual(a, b, places=6)

    @unittest.skipUnless(os.path.exists(TORCH_PYTHON) and os.path.exists("/usr/bin/torchrun"),
                         "Debian's python3-torch is not installed")
    def torch_job_with_node2_ahead(self, rdzv_id, script, *extra):
        """SCRIPT OUT on 2 hosts x 2 workers (gloo over eth0), --log-dir logs1 and logs2, node2's ptrun
        in a time namespace whose CLOCK_MONOTONIC is 1000 s ahead; both must exit 0. Returns
        ([(code, stderr)] per host, the wall time in seconds)."""
        env = {"PYTHON_EXEC": TORCH_PYTHON, "GLOO_SOCKET_IFNAME": "eth0"}
        started = time.monotonic()
        for h in (1, 2):
            args = ["--nnodes", "2", "--nproc-per-node", "2", "--rdzv-endpoint", f"node1:{self.port}",
                    "--rdzv-id", rdzv_id, "--rdzv-conf", FAST, *extra, "--log-dir",
                    os.path.join(self.dir, f"logs{h}"), script, os.path.join(self.dir, "out.json")]
            prefix = ("unshare", "-T", "--monotonic", "1000") if h == 2 else ()
            self.agents.append(Agent(h, args, env=env, prefix=prefix))
        results = self.finish_all(self.agents, 240)
        wall = time.monotonic() - started
        for code, err in results:
            self.assertEqual(code, 0, err)
        return results, wall

    def test_startup_timeline_across_two_hosts(self):
        """2 hosts x 2 workers of a real gloo DDP job, node2's CLOCK_MONOTONIC 1000 s ahead (its ptrun
        in a time namespace): the store host says one ready line for the 4 ranks on 2 nodes and
        writes one trace.json with every rank's phases from both nodes, node2's measured offset
        applied; node2 says no ready line of its own."""
        results, wall = self.torch_job_with_node2_ahead("timeline", TORCH_DDP_SCRIPT)
        ready = re.findall(r"(\d+) ranks on (\d+) nodes ready (\S+ m?s) after start: rendezvous \S+ m?s, "
                           r"spawn \S+ m?s, python\+imports \S+ m?s \(slowest: rank \d on node[12], \S+ m?s\), "
                           r"process group \S+ m?s, first step \+\S+ m?s", results[0][1])
        self.assertEqual([(r[0], r[1]) for r in ready], [("4", "2")], results[0][1])
        self.assertNotIn(" ready ", results[1][1])
        [path] = glob.glob(os.path.join(self.dir, "logs1", "*_*", "trace.json"))
        trace = json.loads(Path(path).read_text())
        nodes = {n["node"]: n for n in trace["otherData"]["nodes"]}
        self.assertEqual(set(nodes), {"node1", "node2"})
        self.assertEqual(nodes["node1"]["offset_ns"], 0)
        self.assertAlmostEqual(nodes["node2"]["offset_ns"] / 1e9, -1000, delta=1)
        spans = {}
        for e in trace["traceEvents"]:
            if e["ph"] == "X":
                self.assertGreaterEqual(e["ts"], 0)
                self.assertLess(e["ts"] + e["dur"], wall * 1e6, "every span within the run: offsets applied")
                spans.setdefault(e["tid"] - 1, []).append(e["name"])
        self.assertEqual(sorted(spans), [0, 1, 2, 3])
        for rank, names in spans.items():
            self.assertEqual(names, ["spawn", "python start", "python+imports", "process group", "until first step",
                                     "running"], rank)

    def test_a_restart_across_two_hosts_keeps_the_attempts_apart(self):
        """2 hosts x 2 workers of the real gloo DDP job, rank 3 (node2) failing in attempt 0 after
        init_process_group: node1 says one ready line, attempt 1's; its trace.json has both
        attempts of every rank, back to back, never overlapping, node2's offset applied; its
        ptrun.log names the restart's cause and ends with the exit code."""
        script = os.path.join(self.dir, "rank3_fails_once.py")
        with open(script, "w") as f:
            f.write(f"""import os, sys
if os.environ['TORCHELASTIC_RESTART_COUNT'] == '0' and os.environ['RANK'] == '3':
    import datetime, torch.distributed as dist
    dist.init_process_group('gloo', timeout=datetime.timedelta(seconds=60))
    sys.exit(3)
sys.argv = [{TORCH_DDP_SCRIPT!r}, sys.argv[1]]
exec(compile(open({TORCH_DDP_SCRIPT!r}).read(), {TORCH_DDP_SCRIPT!r}, 'exec'))
""")
        results, wall = self.torch_job_with_node2_ahead("restart", script, "--max-restarts", "1")
        ready = re.findall(r"(attempt \d+: )?(\d+) ranks on (\d+) nodes ready \S+ m?s after (start|the restart)",
                           results[0][1])
        self.assertEqual(ready, [("attempt 1: ", "4", "2", "the restart")], results[0][1])
        [path] = glob.glob(os.path.join(self.dir, "logs1", "*_*", "trace.json"))
        trace = json.loads(Path(path).read_text())
        spans = {}
        for e in trace["traceEvents"]:
            if e["ph"] == "X":
                self.assertGreaterEqual(e["ts"], 0)
                self.assertLess(e["ts"] + e["dur"], wall * 1e6, "every span within the run: offsets applied")
                spans.setdefault((e["tid"] - 1, e["args"]["attempt"]), []).append((e["name"], e["ts"], e["dur"]))
        self.assertEqual(sorted(spans), [(r, a) for r in range(4) for a in (0, 1)])
        for rank in range(4):
            first, second = sorted(spans[(rank, 0)], key=lambda s: s[1]), sorted(spans[(rank, 1)], key=lambda s: s[1])
            self.assertLessEqual(first[-1][1] + first[-1][2], second[0][1] + 1, f"rank {rank}: attempts overlap")
            self.assertEqual([n for n, _, _ in second], ["spawn", "python start", "python+imports", "process group",
                                                          "until first step", "running"], rank)
            for a, b in zip(second, second[1:]):
                self.assertLessEqual(a[1] + a[2], b[1] + 1, f"rank {rank}: {a[0]} then {b[0]} out of order")
        [log] = glob.glob(os.path.join(self.dir, "logs1", "*_*", "ptrun.log"))
        text = Path(log).read_text()
        self.assertRegex(text, r"rank 3 .*exit code 3", text)
        self.assertTrue(text.rstrip().endswith("ptrun exits with code 0"), text[-500:])

    def test_the_store_host_names_a_rank_of_another_node_that_never_steps(self):
        """PTRUN_READY_DEADLINE=3: ranks 0-2 step, rank 3 (node2) never does; node1 names it in the
        job's one not-ready line, from node2's timeline sent at node2's first step."""
        script = os.path.join(self.dir, "all_but_3.py")
        gate = os.path.join(self.dir, "gate")
        # Ranks 0-2 step together, once every rank has imported torch: the deadline runs from the
        # first step, and under CI's load four imports of torch end seconds apart (a CI run: rank
        # 1 stepped, rank 0 had not 1 s later).
        imported = os.path.join(self.dir, "imported_")
        with open(script, "w") as f:
            f.write(f"""import glob, os, time, torch
opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
open({imported!r} + os.environ['RANK'], 'w').close()
end = time.monotonic() + 60
while len(glob.glob({imported!r} + '*')) < 4 and time.monotonic() < end:
    time.sleep(0.05)
if os.environ['RANK'] != '3':
    opt.step()
while not os.path.exists({gate!r}) and time.monotonic() < end:
    time.sleep(0.05)
""")
        env = {"PYTHON_EXEC": TORCH_PYTHON, "PTRUN_READY_DEADLINE": "3"}
        for h in (1, 2):
            args = ["--nnodes", "2", "--nproc-per-node", "2", "--rdzv-endpoint", f"node1:{self.port}",
                    "--rdzv-id", "deadline", "--rdzv-conf", FAST, script]
            self.agents.append(Agent(h, args, env=env))
        try:
            said = self.agents[0].wait_log(" not ready ", 120)
            self.assertRegex(said, r"4 ranks on 2 nodes not ready \S+ m?s after start: no progress yet from rank 3 "
                                   r"on node2\n")
        finally:
            Path(gate).touch()
        for code, err in self.finish_all(self.agents, 120):
            self.assertEqual(code, 0, err)
            self.assertNotIn(" ready ", err.replace(" not ready ", ""))

    def status_on(self, host, health_port):
        """node HOST's /status document (its health endpoint listens on its own loopback)."""
        code = ("import urllib.request,sys;"
                f"sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:{health_port}/status',"
                "timeout=5).read().decode())")
        res = subprocess.run(argv("exec", host, TORCH_PYTHON, "-c", code), env=ENV, capture_output=True,
                             text=True, timeout=30)
        self.assertEqual(res.returncode, 0, res.stderr)
        return json.loads(res.stdout)

    def status_until(self, health_port, predicate, what):
        end = time.monotonic() + DEADLINE
        while True:
            doc = self.status_on(1, health_port)
            if predicate(doc):
                return doc
            self.assertLess(time.monotonic(), end, f"node1's /status never showed {what}: {doc}")
            time.sleep(0.1)

    def test_the_store_hosts_status_covers_every_node(self):
        """2 hosts x 2 workers, --health-port on both: node1 (the store host) shows all 4 ranks with
        their hosts in /status, /metrics and `ptrun status`; a worker stopped on node2 makes the
        job unhealthy there within a few seconds, naming node2."""
        health = next(_ports)
        agents = self.start([1, 2], "2", self.fake("--hang", "--usr1-exit", "0"),
                            ["--health-port", str(health)])
        self.notifier.wait_lines(4)
        doc = self.status_until(health, lambda d: len(d["workers"]) == 4,
                                "the 4 workers of both nodes")
        self.assertEqual([w["rank"] for w in doc["workers"]], [0, 1, 2, 3])
        self.assertEqual([w["host"] for w in doc["workers"]], ["node1", "node1", "node2", "node2"])
        self.assertEqual([(n["host"], n["node_rank"]) for n in doc["node_states"]], [("node1", 0), ("node2", 1)])
        self.assertTrue(doc["healthy"], doc)
        self.assertLess(doc["node_states"][1]["age_seconds"], 10)
        res = subprocess.run(argv("exec", 1, PTRUN, "status", f"127.0.0.1:{health}"), env=ENV,
                             capture_output=True, text=True, timeout=30)
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertIn("workers      : 2 here, 4 in the job on 2 node(s)\n", res.stdout)
        self.assertRegex(res.stdout, r"\n1 +node2 +running +2 ")
        self.assertRegex(res.stdout, r"\nnode2 +3 +1 +\d+ +\w+ ")
        # node2's own endpoint shows node2 alone.
        self.assertEqual([w["host"] for w in self.status_on(2, health)["workers"]], ["node2", "node2"])
        # A worker of node2 stopped: node2 publishes the change, node1's /status names it.
        pid = doc["workers"][3]["pid"]
        os.kill(pid, signal.SIGSTOP)
        try:
            doc = self.status_until(health, lambda d: not d["healthy"], "the stopped worker on node2")
            self.assertRegex(doc["reason"], rf"^rank 3 \(local rank 1, pid {pid} on node2\) stopped")
            res = subprocess.run(argv("exec", 1, PTRUN, "status", f"127.0.0.1:{health}"), env=ENV,
                                 capture_output=True, text=True, timeout=30)
            self.assertEqual(res.returncode, 1, res.stdout + res.stderr)
            self.assertIn("UNHEALTHY: rank 3 (local rank 1, pid", res.stdout)
        finally:
            os.kill(pid, signal.SIGCONT)
        for a in agents:
            a.proc.send_signal(signal.SIGUSR1)  # the workers exit 0
        for code, err in self.finish_all(agents):
            self.assertEqual(code, 0, err)

    @unittest.skipUnless(os.path.exists(TRAIN), "the train example is not built")
    def test_train_across_two_hosts_matches_one_process_and_resumes(self):
        # ptrun ddp's `train` over 2 hosts x 2 workers (shared memory within a host, TCP between):
        # same final parameters as one process; rank 3 on node2 killed mid-run: every node restarts
        # and training resumes from the checkpoint to the same parameters.
        import test_train as tt
        single = os.path.join(self.dir, "single.txt")
        res = subprocess.run([TRAIN, *tt.ARGS, "--final-params", single], capture_output=True, text=True,
                             timeout=120)
        self.assertEqual(res.returncode, 0, res.stderr)
        for name, extra in (("clean", []), ("crash", ["--crash-at-step", "40", "--crash-rank", "3"])):
            out = os.path.join(self.dir, f"{name}.txt")
            agents = self.start([1, 2], "2", [TRAIN, *tt.ARGS, "--final-params", out, "--checkpoint-dir",
                                              os.path.join(self.dir, f"ckpt-{name}"), *extra],
                                ["--max-restarts", "1"], rdzv_id=f"train-{name}")
            results = self.finish_all(agents, 120)
            for code, err in results:
                self.assertEqual(code, 0, err)
            self.assertLess(tt.max_difference(tt.read_params(single), tt.read_params(out)), tt.TOLERANCE)
            if extra:
                self.assertIn("restart 1", results[0][1])

    def test_store_host_killed_others_exit_nonzero(self):
        agents = self.start([1, 2, 3], "3", self.fake("--hang"))
        self.notifier.wait_lines(6)
        os.kill(agents[0].proc.pid, signal.SIGKILL)
        t0 = time.monotonic()
        for code, err in self.finish_all(agents[1:], 30):
            self.assertNotEqual(code, 0, err)
            self.assertIn("rendezvous store", err)
        self.assertLess(time.monotonic() - t0, 10)
        self.assert_no_workers()


if __name__ == "__main__":
    main()
