"""A real etcd cluster (Debian's etcd-server) with one member per namespaced host, for the tests of
the etcd rendezvous backend. Members are started and stopped by the test; nothing is left behind:
stop() kills every member still running and removes their data directories."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from test_netns_hosts import ENV, argv, harness

ETCD = "/usr/bin/etcd"
CLIENT_PORT = 2379
PEER_PORT = 2380


class EtcdCluster:
    def __init__(self, hosts):
        self.hosts = list(hosts)
        self.ips = {h: harness("ip", h).stdout.strip() for h in self.hosts}
        self.dir = tempfile.mkdtemp(prefix="ptrun-etcd-")
        self.procs = {}
        self.logs = {}

    def endpoints(self):
        """--rdzv-endpoint for ptrun: every member."""
        return ",".join(f"{self.ips[h]}:{CLIENT_PORT}" for h in self.hosts)

    def start(self, deadline=30):
        cluster = ",".join(f"e{h}=http://{self.ips[h]}:{PEER_PORT}" for h in self.hosts)
        for h in self.hosts:
            ip = self.ips[h]
            log = open(os.path.join(self.dir, f"e{h}.log"), "w")
            self.logs[h] = log
            cmd = [ETCD, "--name", f"e{h}", "--data-dir", os.path.join(self.dir, f"e{h}"),
                   "--listen-client-urls", f"http://{ip}:{CLIENT_PORT}",
                   "--advertise-client-urls", f"http://{ip}:{CLIENT_PORT}",
                   "--listen-peer-urls", f"http://{ip}:{PEER_PORT}",
                   "--initial-advertise-peer-urls", f"http://{ip}:{PEER_PORT}",
                   "--initial-cluster", cluster, "--initial-cluster-state", "new",
                   "--initial-cluster-token", os.path.basename(self.dir)]
            self.procs[h] = subprocess.Popen(argv("exec", h, *cmd), env=ENV, stdout=log,
                                             stderr=subprocess.STDOUT)
        end = time.monotonic() + deadline
        for h in self.hosts:
            while not self.healthy(h):
                if time.monotonic() > end:
                    raise AssertionError(f"etcd member e{h} not healthy within {deadline}s:\n"
                                         + self.log_text(h))
                if self.procs[h].poll() is not None:
                    raise AssertionError(f"etcd member e{h} exited:\n" + self.log_text(h))
                time.sleep(0.1)  # etcd has no readiness event; bounded by the deadline above

    def healthy(self, h):
        """True once member h answers /health with a leader (it runs in its host's namespace)."""
        res = subprocess.run(argv("nsexec", h, "/usr/bin/python3", "-c",
                                  "import urllib.request,sys;"
                                  f"r=urllib.request.urlopen('http://{self.ips[h]}:{CLIENT_PORT}/health',timeout=1);"
                                  "sys.exit(0 if b'true' in r.read() else 1)"),
                             env=ENV, capture_output=True, timeout=10)
        return res.returncode == 0

    def status(self, h):
        """`etcdctl endpoint status` of member h: its member ID and the leader's (hex, as etcdctl
        move-leader takes them)."""
        res = subprocess.run(argv("nsexec", h, "/usr/bin/etcdctl", "--endpoints",
                                  f"http://{self.ips[h]}:{CLIENT_PORT}", "endpoint", "status",
                                  "-w", "json"),
                             env=ENV, capture_output=True, text=True, timeout=10)
        if res.returncode != 0:
            raise AssertionError(f"etcdctl endpoint status on e{h}: {res.stderr}")
        [status] = json.loads(res.stdout)
        header = status["Status"]["header"]
        return {"member": f"{header['member_id']:x}", "leader": f"{status['Status']['leader']:x}"}

    def make_leader(self, h, deadline=30):
        """Moves the raft leadership to member h (etcdctl move-leader) and waits until every
        member names it leader."""
        target = self.status(h)["member"]
        end = time.monotonic() + deadline
        while True:
            statuses = {m: self.status(m) for m in self.hosts}
            leaders = {s["leader"] for s in statuses.values()}
            if leaders == {target}:
                return
            if time.monotonic() > end:
                raise AssertionError(f"e{h} ({target}) not the leader within {deadline}s: {leaders}")
            current = next(m for m, s in statuses.items() if s["member"] in leaders)
            subprocess.run(argv("nsexec", current, "/usr/bin/etcdctl", "--endpoints",
                                f"http://{self.ips[current]}:{CLIENT_PORT}", "move-leader", target),
                           env=ENV, capture_output=True, text=True, timeout=10)
            time.sleep(0.1)  # an election has no event to wait on; bounded by the deadline

    def kill(self, h, sig=signal.SIGKILL):
        """kill -9 (or `sig`) member h and reaps it."""
        p = self.procs[h]
        if p.poll() is None:
            p.send_signal(sig)
        p.wait(timeout=30)

    def log_text(self, h):
        self.logs[h].flush()
        with open(os.path.join(self.dir, f"e{h}.log")) as f:
            return f.read()[-4000:]

    def stop(self):
        for h, p in self.procs.items():
            if p.poll() is None:
                p.kill()
            p.wait(timeout=30)
        for log in self.logs.values():
            log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
