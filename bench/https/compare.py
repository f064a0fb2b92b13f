#!/usr/bin/env python3
"""Fan-out through a product's public API to the nginx receiver of nginx.conf.in, the
same way for Posthorn and for Svix: make N endpoints, send events at a fixed rate, and
count what nginx answered (stub_status) and what the machine's CPUs did (/proc/stat).

  compare.py posthorn --base http://127.0.0.1:3900 --key phk_...  --scheme https
  compare.py svix     --base http://127.0.0.1:8071 --key <jwt>    --scheme https-close

Prints one JSON line: deliveries/s (median of the steady 5-s windows, and over the whole
steady part), machine CPU-ms per delivery, and the offered rate.
"""
import argparse, json, statistics, threading, time, urllib.request

RECEIVERS = {
    "http": "http://127.0.0.1:8080",
    "https": "https://localhost:8443",
    "https-close": "https://localhost:8444",
}


def call(base, key, method, path, body):
    req = urllib.request.Request(
        base + path,
        data=json.dumps(body).encode(),
        method=method,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read() or b"null")


class Posthorn:
    def __init__(self, base, key):
        self.base, self.key = base, key

    def endpoint(self, url):
        call(self.base, self.key, "POST", "/public/v1/webhooks", {"url": url, "events": ["*"]})

    def send(self, i):
        call(self.base, self.key, "POST", "/public/v1/events",
             {"event": "order.paid", "data": {"n": i, "amount": 1234, "currency": "EUR"}})


class Svix:
    def __init__(self, base, key):
        self.base, self.key = base, key
        self.app = call(base, key, "POST", "/api/v1/app/", {"name": f"bench-{time.time()}"})["id"]

    def endpoint(self, url):
        call(self.base, self.key, "POST", f"/api/v1/app/{self.app}/endpoint/", {"url": url, "version": 1})

    def send(self, i):
        call(self.base, self.key, "POST", f"/api/v1/app/{self.app}/msg/",
             {"eventType": "order.paid", "payload": {"n": i, "amount": 1234, "currency": "EUR"}})


def answered():
    with urllib.request.urlopen("http://127.0.0.1:8090/status", timeout=5) as r:
        # "Active connections: 1\nserver accepts handled requests\n 1 1 1\n..."
        return int(r.read().decode().splitlines()[2].split()[2])


def busy_jiffies():
    with open("/proc/stat") as f:
        parts = [int(x) for x in f.readline().split()[1:]]
    idle = parts[3] + parts[4]
    return sum(parts[:8]) - idle


def main():
    p = argparse.ArgumentParser()
    p.add_argument("product", choices=["posthorn", "svix"])
    p.add_argument("--base", required=True)
    p.add_argument("--key", required=True)
    p.add_argument("--scheme", choices=list(RECEIVERS), default="https")
    p.add_argument("--endpoints", type=int, default=100)
    p.add_argument("--rate", type=float, default=72, help="events per second offered")
    p.add_argument("--seconds", type=int, default=60)
    p.add_argument("--warmup", type=int, default=10)
    a = p.parse_args()
    product = (Posthorn if a.product == "posthorn" else Svix)(a.base, a.key)
    for i in range(a.endpoints):
        product.endpoint(f"{RECEIVERS[a.scheme]}/e{i}")
    time.sleep(2)  # endpoints cached, workers idle

    stop = time.monotonic() + a.seconds
    errors = []

    def sender(offset, step):
        start = time.monotonic()
        n = offset
        while True:
            due = start + n / a.rate
            if due >= stop:
                return
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                product.send(n)
            except Exception as e:  # a refused send is reported, not retried
                errors.append(str(e))
            n += step

    threads = [threading.Thread(target=sender, args=(k, 8), daemon=True) for k in range(8)]
    samples = []
    t0 = time.monotonic()
    for t in threads:
        t.start()
    while time.monotonic() < stop:
        samples.append((time.monotonic() - t0, answered(), busy_jiffies()))
        time.sleep(1)
    samples.append((time.monotonic() - t0, answered(), busy_jiffies()))
    for t in threads:
        t.join()
    steady = [s for s in samples if s[0] >= a.warmup]
    windows = [
        (steady[i + 5][1] - steady[i][1]) / (steady[i + 5][0] - steady[i][0])
        for i in range(0, len(steady) - 5, 5)
    ]
    first, last = steady[0], steady[-1]
    # Each status read is one request of the count: left out.
    delivered = last[1] - first[1] - (len(steady) - 1)
    hz = 100  # USER_HZ
    cpu_ms = (last[2] - first[2]) * 1000 / hz
    print(json.dumps({
        "product": a.product, "scheme": a.scheme, "endpoints": a.endpoints,
        "offered_per_s": a.rate * a.endpoints,
        "deliveries_per_s_median_5s": round(statistics.median(windows), 1) if windows else None,
        "deliveries_per_s_steady": round(delivered / (last[0] - first[0]), 1),
        "cpu_ms_per_delivery": round(cpu_ms / delivered, 4) if delivered else None,
        "send_errors": len(errors),
    }))


if __name__ == "__main__":
    main()
