#!/usr/bin/env python3
"""Eight clients sending one read back to back to one `wasmtime serve` host, for a number of
seconds: how the data file's lock shares the host among waiters (docs/edge.md, "Many requests,
no file locks"). Prints the answers by status, the answers per second and the latency
percentiles. Nothing is written to the table.

Usage: scripts/lock_contention.py [--path PATH] [--cold] COMPONENT DATA_DIR SECONDS
                                  [NAME=VALUE ...]
  --path PATH  the request, a GET (default /count_users)
  --cold       a fresh instance per request (wasmtime serve's default); without it instances
               are reused
  NAME=VALUE   the component's environment
  e.g. scripts/lock_contention.py target/edge/userstore-sqlite-file.wasm \
         target/edge-bench/sqlite_delete 90 \
         USERSTORE_SQLITE_JOURNAL_MODE=delete USERSTORE_SQLITE_SYNCHRONOUS=full
(the 1,000,000-row SQLite table that `scripts/bench.sh --edge` leaves in target/edge-bench).
"""
import http.client
import subprocess
import sys
import threading
import time

CLIENTS = 8
PORT = 18181


def main():
    args = sys.argv[1:]
    path, cold = "/count_users", False
    while args and args[0].startswith("--"):
        flag = args.pop(0)
        if flag == "--path" and args:
            path = args.pop(0)
        elif flag == "--cold":
            cold = True
        else:
            sys.exit(__doc__)
    if len(args) < 3:
        sys.exit(__doc__)
    component, data_dir, seconds = args[0], args[1], float(args[2])
    command = ["wasmtime", "serve", "-S", "cli", "--dir", f"{data_dir}::/data",
               "--addr", f"127.0.0.1:{PORT}",
               "--env", f"USERSTORE_HOST_EPOCH={time.time_ns()}"]
    if not cold:
        command += ["--max-instance-reuse-count", "1000000"]
    for assignment in args[3:]:
        command += ["--env", assignment]
    host = subprocess.Popen(command + [component], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_for_host()
        started = time.time()
        latencies, statuses = load(path, seconds)
        elapsed = time.time() - started
    finally:
        host.kill()
        host.wait()
    latencies.sort()

    def at(fraction):
        return latencies[min(len(latencies) - 1, int(fraction * len(latencies)))] * 1000

    print(f"{len(latencies)} requests, by status {statuses}, {len(latencies) / elapsed:.0f} a second; "
          f"p50 {at(0.5):.0f} ms, p99 {at(0.99):.0f} ms, max {latencies[-1] * 1000:.0f} ms")


def wait_for_host():
    for _ in range(300):
        try:
            connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=5)
            connection.request("GET", "/ping")
            connection.getresponse().read()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit("the host did not answer")


def load(path, seconds):
    end = time.time() + seconds
    latencies, statuses, guard = [], {}, threading.Lock()

    def client():
        connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
        while time.time() < end:
            start = time.time()
            try:
                connection.request("GET", path)
                response = connection.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException) as error:
                status = type(error).__name__
                connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
            with guard:
                latencies.append(time.time() - start)
                statuses[status] = statuses.get(status, 0) + 1

    threads = [threading.Thread(target=client) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, statuses


if __name__ == "__main__":
    main()
