"""One store connection per agent (issue 40): an agent's join, its watch of the running round and
its heartbeats share one connection to the c10d store host, so the store host holds one
descriptor per node (and one for its coordinator), not three per node."""
import signal

from harness import AgentsTestCase, start_ptrun, tcp_sockets

FAST = "join_timeout=30,last_call_timeout=0.2,heartbeat=0.2,close_timeout=5"


def tcp_connections(pid, port):
    """(to `port`, from `port`): how many established TCP sockets of `pid` are connected to
    `port` (its clients' side) and how many are accepted on it (the server's side)."""
    established = [(local, remote) for _, local, remote, state in tcp_sockets(pid)
                   if state == "01"]  # 01: ESTABLISHED
    return (sum(remote == port for _, remote in established),
            sum(local == port for local, _ in established))


class RdzvConnections(AgentsTestCase):
    def test_each_agent_holds_one_store_connection_through_beats_and_a_round(self):
        args = ["--nnodes", "2", "--nproc-per-node", "1", "--rdzv-endpoint",
                f"127.0.0.1:{self.port}", "--rdzv-id", "conns", "--rdzv-conf", FAST,
                *self.worker("--notify", self.notifier.path, "--hang")]
        self.procs = [start_ptrun(args) for _ in range(2)]
        self.notifier.wait_lines(2)  # both admitted, their workers running, both watching
        # Beats every 0.2 s since each agent started have cut its join's and watch's waits short
        # on the same connection.
        counts = [tcp_connections(p.pid, self.port) for p in self.procs]
        host = max(range(2), key=lambda i: counts[i][1])  # the one accepting on the port
        other = 1 - host
        self.assertEqual(counts[other], (1, 0), counts)  # its session's one connection
        # The store host: its own session's and its coordinator's connections, and the three
        # it accepted (both sessions and the coordinator).
        self.assertEqual(counts[host], (2, 3), counts)
        for p in self.procs:
            p.send_signal(signal.SIGTERM)
        for p in self.procs:
            p.communicate(timeout=30)
