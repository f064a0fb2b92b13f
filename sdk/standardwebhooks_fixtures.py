"""Writes deliveries signed by the `standardwebhooks` reference package (JSON, to the path
given) for the TypeScript and PHP suites; the Python suite calls the package directly."""

import base64
import datetime as dt
import json
import os
import sys

from standardwebhooks.webhooks import Webhook


def case(body, secrets, rotation=False):
    now = dt.datetime.now(tz=dt.timezone.utc)
    msg_id = "evt_" + os.urandom(12).hex()
    # During a rotation the header lists one signature per valid secret.
    signature = " ".join(Webhook(s).sign(msg_id, now, body) for s in secrets)
    return [
        {
            "secret": secret,
            "body": body,
            "timestamp": int(now.timestamp()),
            "rotation": rotation,
            "headers": {
                "webhook-id": msg_id,
                "webhook-timestamp": str(int(now.timestamp())),
                "webhook-signature": signature,
            },
        }
        for secret in secrets
    ]


def main(path):
    secret = lambda: "whsec_" + base64.b64encode(os.urandom(32)).decode()  # noqa: E731
    cases = []
    for n in range(10):
        body = json.dumps({"event_id": f"evt_{n}", "event": "order.paid", "data": {"n": n, "ü": "ß €"}},
                          ensure_ascii=n % 2 == 0)
        cases += case(body, [secret()])
    cases += case('{"event":"secret.rotated","data":{}}', [secret(), secret()], rotation=True)
    with open(path, "w") as f:
        json.dump(cases, f)


if __name__ == "__main__":
    main(sys.argv[1])
