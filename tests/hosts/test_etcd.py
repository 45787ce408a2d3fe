#!/usr/bin/python3
"""The etcd rendezvous backend on real (namespaced) hosts with a real 3-member etcd cluster (issue 27).

Hosts node1..node4 come from netns-hosts.sh; etcd members run on node1..node3 (etcd_cluster.py) and
ptrun agents on node1..node4 with --rdzv-backend etcd-v2. Every test waits on events (worker lines on
a FIFO, ptrun's log lines, process exits) with bounded deadlines, and leaves no process,
data directory or namespace behind. Run as root; needs PTRUN_BIN and FAKE_WORKER (ctest sets them);
skips (exit 77) without root or namespaces.
"""
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

from etcd_cluster import EtcdCluster  # noqa: E402
from test_multinode import FAKE, PTRUN, TORCH_PYTHON, Agent  # noqa: E402
from test_netns_hosts import ENV, argv, down_and_check, main, skip_unless_possible, up  # noqa: E402

import harness as ptrun_harness  # noqa: E402
from harness import Notifier, read_dumps, wait_gone  # noqa: E402

FAST = "heartbeat=0.5,keep_alive_max_attempt=3,last_call_timeout=1,join_timeout=60,close_timeout=10"
DEADLINE = 90
CKPT_SCRIPT = str(HERE / "torch_ddp_ckpt.py")


class EtcdBackend(unittest.TestCase):
    """Four hosts for the whole class; a fresh 3-member etcd cluster per test."""

    @classmethod
    def setUpClass(cls):
        skip_unless_possible()
        up(4)

    @classmethod
    def tearDownClass(cls):
        down_and_check()

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="ptrun-etcd-test-")
        self.dir = self.tmp.name
        self.notifier = Notifier()
        self.agents = []
        self.etcd = EtcdCluster([1, 2, 3])
        self.addCleanup(self.etcd.stop)
        self.etcd.start()

    def tearDown(self):
        for a in self.agents:
            if a.proc.poll() is None:
                a.proc.kill()
            a.proc.communicate()
        self.notifier.close()
        self.tmp.cleanup()

    def start(self, hosts, nnodes, worker, extra=(), conf=FAST, env=None, endpoints=None):
        agents = []
        for h in hosts:
            args = ["--nnodes", nnodes, "--nproc-per-node", "2", "--rdzv-backend", "etcd-v2",
                    "--rdzv-endpoint", endpoints or self.etcd.endpoints(), "--rdzv-id", self.id(),
                    "--rdzv-conf", conf, *extra, *worker]
            agents.append(Agent(h, args, self.notifier, env=env))
        self.agents += agents
        return agents

    def fake(self, *args):
        return [FAKE, "--notify", self.notifier.path, "--dump", self.dir, *args]

    def finish_all(self, agents, timeout=DEADLINE):
        return [a.finish(timeout) for a in agents]

    def assert_no_workers(self):
        # This test's workers only (its dump dir): other tests' run beside it under ctest -j.
        mine = re.escape(FAKE) + ".*" + re.escape(self.dir)
        pids = [int(p) for p in subprocess.run(["pgrep", "-f", mine], capture_output=True, text=True).stdout.split()]
        self.assertEqual(wait_gone(pids, 10), [], "workers left running")

    def etcd_keys(self, prefix, host=2):
        """The keys under `prefix` in etcd (read through member `host`)."""
        res = subprocess.run(argv("nsexec", host, "/usr/bin/etcdctl", "--endpoints",
                                  f"http://{self.etcd.ips[host]}:2379", "get", "--prefix", "--keys-only", prefix),
                             env=ENV, capture_output=True, text=True, timeout=10)
        self.assertEqual(res.returncode, 0, res.stderr)
        return [k for k in res.stdout.splitlines() if k]

    def beats(self, host, until=None, deadline=30):
        """The agents' heartbeat counters in etcd (read through member `host`); with `until`, read
        again until it holds of them (bounded)."""
        prefix = f"/ptrun/rdzv/{self.id()}/hb/"
        end = time.monotonic() + deadline
        while True:
            res = subprocess.run(argv("nsexec", host, "/usr/bin/etcdctl", "--endpoints",
                                      f"http://{self.etcd.ips[host]}:2379", "get", "--prefix", prefix),
                                 env=ENV, capture_output=True, text=True, timeout=10)
            lines = res.stdout.splitlines()
            now = {lines[i]: int(lines[i + 1]) for i in range(0, len(lines) - 1, 2)}
            if until is None or until(now):
                return now
            if time.monotonic() > end:
                raise AssertionError(f"heartbeats {now} did not advance within {deadline}s")
            time.sleep(0.2)  # the counters advance every heartbeat; bounded by the deadline

    # ---- scenarios ----

    def test_clean_run_three_hosts(self):
        agents = self.start([1, 2, 3], "3", self.fake())
        for code, err in self.finish_all(agents):
            self.assertEqual(code, 0, err)
        dumps = read_dumps(self.dir)
        self.assertEqual(sorted(r for r, _ in dumps), list(range(6)))
        for (rank, _), dump in dumps.items():
            env = dump["env"]
            self.assertEqual(env["WORLD_SIZE"], "6")
            self.assertEqual(env["GROUP_RANK"], str(rank // 2))
            self.assertEqual(env["MASTER_ADDR"], self.etcd.ips[1])  # group rank 0 (node1) hosts it
            self.assertEqual(env["TORCHELASTIC_USE_AGENT_STORE"], "True")
        leaders = [a for a in agents if "this node now coordinates the rendezvous" in a.err]
        self.assertGreaterEqual(len(leaders), 1)
        self.assertEqual(self.etcd_keys(f"/ptrun/rdzv/{self.id()}/"), [], "the job's keys stay in etcd")
        for _, err in (a.finish() for a in agents):
            self.assertNotIn("starting afresh", err)

    def leader_first(self, nnodes, worker, extra=(), env=None):
        """node1's agent first (it takes the coordinator role, and is group rank 0: hostnames order
        the ranks), then node2 and node3."""
        [first] = self.start([1], nnodes, worker, extra, env=env)
        first.wait_log("this node now coordinates the rendezvous")
        return [first, *self.start([2, 3], nnodes, worker, extra, env=env)]

    def test_the_coordinators_status_covers_every_node(self):
        # Issue 35.4: through the etcd coordinator's health port, `ptrun status` listed its own
        # rank alone (every agent held an inbox, so none published) and no node rows.
        health = 29790
        worker, extra = self.fake("--hang", "--usr1-exit", "0"), ["--health-port", str(health)]
        [first] = self.start([1], "2", worker, extra)
        first.wait_log("this node now coordinates the rendezvous")  # node1 gathers the statuses
        agents = [first, *self.start([2], "2", worker, extra)]
        self.notifier.wait_lines(4)
        end = time.monotonic() + DEADLINE
        while True:
            res = subprocess.run(argv("exec", 1, PTRUN, "status", f"127.0.0.1:{health}"), env=ENV,
                                 capture_output=True, text=True, timeout=30)
            rows = re.findall(r"\nnode\d +\d +\d +\d+ +\w+ ", res.stdout)  # a worker's
            if len(rows) == 4 or time.monotonic() > end:
                break
            time.sleep(0.2)  # node2 publishes 200 ms after its workers start; bounded above
        self.assertEqual(res.returncode, 0, res.stdout + res.stderr)
        self.assertIn("workers      : 2 here, 4 in the job on 2 node(s)\n", res.stdout)
        self.assertRegex(res.stdout, r"\n1 +node2 +running +2 ")
        for rank in range(4):
            self.assertRegex(res.stdout, rf"\nnode{rank // 2 + 1} +{rank} +{rank % 2} +\d+ +\w+ ")
        for a in agents:
            a.proc.send_signal(signal.SIGUSR1)  # the workers exit 0
        for code, err in self.finish_all(agents):
            self.assertEqual(code, 0, err)

    def test_the_leader_killed_the_others_and_the_spare_form_a_new_round_within_the_lease(self):
        # --nnodes 3 and a spare on node4. kill -9 of node1's agent, which leads and hosts the
        # workers' store: node2, node3 and the spare run restart 1 within lease (2 s) + 1 s of
        # worker start-up margin, and all exit 0.
        worker = self.fake("--hang", "--usr1-exit", "0")
        extra = ["--max-restarts", "1"]
        agents = self.leader_first("3", worker, extra)
        self.notifier.wait_lines(6)
        [spare] = self.start([4], "3", worker, extra)
        spare.wait_log("this node waits as a spare")
        killed = time.monotonic()
        os.kill(agents[0].proc.pid, signal.SIGKILL)
        later = self.notifier.wait_lines(6)
        took = time.monotonic() - killed
        self.assertEqual(sorted((int(w[1]), int(w[2])) for w in later), [(r, 1) for r in range(6)])
        print(f"\netcd: {took:.2f} s from kill -9 of the leader to the new round's 6 workers running",
              file=sys.stderr)
        self.assertLess(took, 2 + 1 + 2, "longer than the lease + 1 s (+2 s for the workers' start)")
        for a in (*agents[1:], spare):
            a.proc.send_signal(signal.SIGUSR1)
        for code, err in self.finish_all([*agents[1:], spare]):
            self.assertEqual(code, 0, err)
        self.assertTrue(any("taken over from" in a.err for a in (*agents[1:], spare)))
        self.assert_no_workers()

    def test_a_new_job_under_the_run_id_of_one_killed_with_9_starts_afresh(self):
        # Every agent of the first job is killed with -9: their leases live on for their TTL, and
        # the job's keys stay. node2's lease (10 s) outlives the leader's (node1, 2 s), as a
        # slower renewal would: the new job under the same run id, started at once, gets the
        # role while node2's dead agent still looks alive. It must neither take the dead job's
        # state over nor count its nodes: it runs and exits 0 (issue 35.3).
        [leader] = self.start([1], "2", self.fake("--hang"))
        leader.wait_log("this node now coordinates the rendezvous")
        self.start([2], "2", self.fake("--hang"), conf=FAST.replace("keep_alive_max_attempt=3",
                                                                     "keep_alive_max_attempt=20"))
        self.notifier.wait_lines(4)
        for a in self.agents:
            os.kill(a.proc.pid, signal.SIGKILL)
        for a in self.agents:
            a.proc.communicate(timeout=10)
        second = self.start([1, 2], "2", self.fake())
        for code, err in self.finish_all(second):
            self.assertEqual(code, 0, err)
            self.assertNotIn("has ended", err)
        self.assertEqual(sorted(int(w[1]) for w in self.notifier.wait_lines(4)), [0, 1, 2, 3])
        self.assertEqual(self.etcd_keys(f"/ptrun/rdzv/{self.id()}/"), [], "keys left in etcd")
        self.assert_no_workers()

    def test_the_etcd_leader_killed_changes_nothing(self):
        worker = self.fake("--hang", "--usr1-exit", "0")
        agents = self.start([1, 2, 3], "3", worker, ["--max-restarts", "1"])
        self.notifier.wait_lines(6)
        # The first endpoint every agent lists, and the raft leader: etcd elects another within
        # its election timeout (1-2 s by default), beyond lost_after here; no write goes through
        # meanwhile, a heartbeat neither.
        self.etcd.make_leader(1)
        before = self.beats(2)
        self.etcd.kill(1)
        # Every agent beats 4 more times (2 s: beyond lost_after, 1.5 s) through the other members.
        self.beats(2, until=lambda now: len(now) == 3 and all(now[k] >= before.get(k, 0) + 4 for k in now))
        for a in agents:
            a.proc.send_signal(signal.SIGUSR1)
        for code, err in self.finish_all(agents):
            self.assertEqual(code, 0, err)
            self.assertNotIn("restart 1", err)
        self.assertEqual(sorted(a for _, a in read_dumps(self.dir)), [0] * 6)

    def test_lost_quorum_ends_every_agent_naming_it(self):
        worker = self.fake("--hang")
        agents = self.start([1, 2, 3], "3", worker)
        self.notifier.wait_lines(6)
        self.etcd.kill(2, signal.SIGTERM)
        self.etcd.kill(3, signal.SIGTERM)
        for code, err in self.finish_all(agents, 60):
            self.assertNotEqual(code, 0, err)
            self.assertIn("quorum", err)
        self.assert_no_workers()

    def test_an_unreachable_etcd_is_named_within_the_join_timeout(self):
        dead = f"{self.etcd.ips[1]}:2999,{self.etcd.ips[2]}:2998"
        conf = FAST.replace("join_timeout=60", "join_timeout=3")
        started = time.monotonic()
        [agent] = self.start([1], "2", self.fake(), conf=conf, endpoints=dead)
        code, err = agent.finish(30)
        self.assertNotEqual(code, 0, err)
        self.assertLess(time.monotonic() - started, 15)
        self.assertIn(f"{self.etcd.ips[1]}:2999", err)
        self.assertIn(f"{self.etcd.ips[2]}:2998", err)

    @unittest.skipUnless(os.path.exists(TORCH_PYTHON) and os.path.exists("/usr/bin/torchrun"),
                         "Debian's python3-torch is not installed")
    def test_torch_ddp_resumes_after_the_leader_is_killed(self):
        # 3 etcd members, 4 agents with --nnodes 3:3 (node4 a spare), a gloo DDP job checkpointing
        # each epoch. kill -9 of node1's agent (coordinator and workers' store host) after epoch 2:
        # node2, node3 and node4 form a new round of 3, training resumes from the checkpoint, every
        # agent exits 0 and the final loss equals an uninterrupted run's.
        env = {"PYTHON_EXEC": TORCH_PYTHON, "GLOO_SOCKET_IFNAME": "eth0", "PTRUN_TEST_HOLD_EPOCH": "2"}
        out, ckpt = os.path.join(self.dir, "out.json"), os.path.join(self.dir, "ckpt.pt")
        worker = [CKPT_SCRIPT, out, ckpt, "4", self.notifier.path]
        extra = ["--max-restarts", "1"]
        agents = self.leader_first("3:3", worker, extra, env=env)
        for a in agents:
            a.wait_log("round 0: group rank")  # the round has its 3 nodes: node4 comes as a spare
        [spare] = self.start([4], "3:3", worker, extra, env=env)
        spare.wait_log("this node waits as a spare", timeout=120)
        lines = self.notifier.wait_lines(18, timeout=180)  # 6 starts, 6 "epoch .. 1", 6 "epoch .. 2"
        self.assertEqual(sum(1 for w in lines if w[0] == "epoch" and w[3] == "2"), 6, lines)
        killed = time.monotonic()
        os.kill(agents[0].proc.pid, signal.SIGKILL)
        starts = self.notifier.wait_lines(6, timeout=120)
        took = time.monotonic() - killed
        self.assertEqual(sorted((w[0], int(w[1]), int(w[2])) for w in starts), [("start", r, 1) for r in range(6)])
        print(f"\netcd + torch: {took:.2f} s from kill -9 of the leader to the new round's 6 workers "
              "past init_process_group", file=sys.stderr)
        for code, err in self.finish_all([*agents[1:], spare], 240):
            self.assertEqual(code, 0, err)
        ours = json.loads(Path(out).read_text())
        self.assertEqual(ours["resumed_from"], 2)
        ref_out, ref_ckpt = os.path.join(self.dir, "ref.json"), os.path.join(self.dir, "ref.pt")
        res = ptrun_harness.run_ptrun(["--standalone", "--nproc-per-node", "6", CKPT_SCRIPT, ref_out, ref_ckpt, "4"],
                                      env={"PYTHON_EXEC": TORCH_PYTHON, "GLOO_SOCKET_IFNAME": "lo"}, timeout=240)
        self.assertEqual(res.returncode, 0, res.stderr)
        reference = json.loads(Path(ref_out).read_text())
        self.assertEqual(ours["world"], reference["world"])
        self.assertAlmostEqual(ours["loss"], reference["loss"], places=6)


if __name__ == "__main__":
    main()
