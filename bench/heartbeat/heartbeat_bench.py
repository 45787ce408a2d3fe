"""The cost of one heartbeat from Python (python/ptrun/heartbeat.py) against its floors, in ns
per call: heartbeat_bench.py RECORD_PATH [ITERATIONS]. Prints "case ns_per_call" lines, as
bench_heartbeat does. Run with PYTHONPATH=python (the module under test) and the record named in
PTRUN_HEARTBEAT_FILE for the module-level function."""
import os
import sys
import time


def per_call(n, f):
    start = time.perf_counter_ns()
    for _ in range(n):
        f()
    return (time.perf_counter_ns() - start) / n


def main():
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    os.environ["PTRUN_HEARTBEAT_FILE"] = path
    from ptrun import heartbeat

    def noop():
        pass

    hb = heartbeat.Heartbeat(path)
    print(f"py_beat {per_call(n, heartbeat.beat):.2f}")
    print(f"py_beat_object {per_call(n, hb.beat):.2f}")
    print(f"py_floor_call {per_call(n, noop):.2f}")
    print(f"py_floor_clock {per_call(n, time.monotonic_ns):.2f}")
    section = lambda: (hb.enter("checkpoint", 600), hb.leave())  # noqa: E731
    print(f"py_section_enter_leave {per_call(n // 4, section):.2f}")
    hb.close()


if __name__ == "__main__":
    main()
