"""Posts N events to Posthorn's public API on a rate-limited key, the way a careful client
would: requests + urllib3's Retry honouring Retry-After. Prints a JSON summary and exits
non-zero if an event was lost or a request went out before its Retry-After.

usage: post_events.py BASE_URL API_KEY N
"""
import json
import sys
import time

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry


class RecordingRetry(Retry):
    """Retry that notes when each 429 arrived, what it asked for, and when we went again."""

    waits = []

    def sleep(self, response=None):
        asked = self.get_retry_after(response) if response is not None else None
        got_at = time.monotonic()
        super().sleep(response)
        RecordingRetry.waits.append({"asked": asked, "waited": time.monotonic() - got_at})


def main():
    base, key, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    retry = RecordingRetry(
        total=50,
        status_forcelist=[429],
        allowed_methods=None,  # POST too: the idempotency key makes a retry safe
        respect_retry_after_header=True,
        backoff_factor=0,
    )
    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=retry))
    session.headers["Authorization"] = f"Bearer {key}"
    accepted = set()
    for i in range(n):
        r = session.post(
            f"{base}/public/v1/events",
            json={"event": "order.created", "data": {"n": i}},
            headers={"Idempotency-Key": f"order-{i}"},
            timeout=120,
        )
        r.raise_for_status()
        accepted.add(r.json()["id"])
    early = [w for w in RecordingRetry.waits if w["asked"] is not None and w["waited"] + 0.05 < w["asked"]]
    summary = {"accepted": len(accepted), "rate_limited": len(RecordingRetry.waits), "early": len(early)}
    print(json.dumps(summary))
    sys.exit(0 if len(accepted) == n and not early else 1)


if __name__ == "__main__":
    main()
