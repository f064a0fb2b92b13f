"""A real consumer of a broker destination, for the integration tests.

  consume.py nats-stream URL STREAM SUBJECT   make (or make anew) a JetStream stream
  consume.py redis URL STREAM SECRET N        read N entries of a Redis stream
  consume.py nats URL STREAM SECRET N         read N messages of a JetStream stream
  consume.py amqp-queue URL QUEUE              declare a durable queue
  consume.py amqp URL QUEUE SECRET N          read N messages of a RabbitMQ queue
  consume.py mqtt PORT TOPIC SECRET N [USER PASSWORD]
                                              subscribe (then print {"ready": true}) and
                                              read N messages published to TOPIC

Each message read is verified with the Posthorn Python SDK's `verify` (the headers as the
broker carried them, the body as published) and printed as one JSON line: its headers
and its parsed body. Waits up to 20 s for N messages.
"""
import asyncio, json, sys, time

from posthorn.webhooks import verify


def emit(headers, body, secret):
    parsed = verify(body, headers, secret)
    print(json.dumps({"headers": headers, "body": parsed}), flush=True)


def read_redis(url, stream, secret, n):
    import redis

    r = redis.Redis.from_url(url)
    deadline = time.time() + 20
    while r.xlen(stream) < n and time.time() < deadline:
        time.sleep(0.05)
    for _id, fields in r.xrange(stream, count=n):
        fields = {k.decode(): v for k, v in fields.items()}
        body = fields.pop("body")
        emit({k: v.decode() for k, v in fields.items()}, body, secret)


async def nats_main(argv):
    import nats

    nc = await nats.connect(argv[1])
    js = nc.jetstream()
    if argv[0] == "nats-stream":
        try:
            await js.delete_stream(argv[2])
        except Exception:
            pass
        await js.add_stream(name=argv[2], subjects=[argv[3]])
        print("created", flush=True)
    else:
        stream, secret, n = argv[2], argv[3], int(argv[4])
        deadline = time.time() + 20
        while (await js.stream_info(stream)).state.messages < n and time.time() < deadline:
            await asyncio.sleep(0.05)
        for seq in range(1, n + 1):
            msg = await js.get_msg(stream, seq)
            emit(dict(msg.headers or {}), msg.data, secret)
    await nc.close()


def read_mqtt(port, topic, secret, n, user=None, password=None):
    import threading

    import paho.mqtt.client as mqtt

    got, done, ready = [], threading.Event(), threading.Event()
    client = mqtt.Client(callback_api_version=mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
    if user:
        client.username_pw_set(user, password)
    client.on_connect = lambda c, *_: c.subscribe(topic, qos=1)
    client.on_subscribe = lambda *_: ready.set()

    def on_message(_c, _u, msg):
        got.append(msg)
        if len(got) >= n:
            done.set()

    client.on_message = on_message
    client.connect("127.0.0.1", port)
    client.loop_start()
    if not ready.wait(20):
        sys.exit("no SUBACK")
    print(json.dumps({"ready": True}), flush=True)
    done.wait(20)
    client.loop_stop()
    for msg in got:
        headers = dict(msg.properties.UserProperty or [])
        emit(headers, msg.payload, secret)


def amqp(argv):
    import pika

    conn = pika.BlockingConnection(pika.URLParameters(argv[1]))
    channel = conn.channel()
    if argv[0] == "amqp-queue":
        channel.queue_declare(argv[2], durable=True)
        print(json.dumps({"declared": argv[2]}), flush=True)
    else:
        queue, secret, n = argv[2], argv[3], int(argv[4])
        deadline, got = time.time() + 20, 0
        while got < n and time.time() < deadline:
            method, props, body = channel.basic_get(queue, auto_ack=True)
            if method is None:
                time.sleep(0.05)
                continue
            got += 1
            headers = {k: v.decode() if isinstance(v, bytes) else v for k, v in (props.headers or {}).items()}
            headers["message-id"] = props.message_id
            emit(headers, body, secret)
    conn.close()


if __name__ == "__main__":
    kind, rest = sys.argv[1], sys.argv[2:]
    if kind.startswith("amqp"):
        amqp([kind] + rest)
    elif kind == "mqtt":
        read_mqtt(int(rest[0]), rest[1], rest[2], int(rest[3]), *rest[4:6])
    elif kind == "redis":
        read_redis(rest[0], rest[1], rest[2], int(rest[3]))
    else:
        asyncio.run(nats_main([kind] + rest))
