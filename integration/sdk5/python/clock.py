"""Clock control from a Python test: a 2-hour timer message through rmq's gRPC endpoint, received within
seconds once the broker's clock is fast-forwarded.

Run by integration/sdk5_clock_test.go (TestSDK5PythonClock) against a broker started with
clockControlEnable=true. Environment: RMQ_ENDPOINT (host:port of grpcServerPort), RMQ_NAMESRV (the name
server), RMQ_BIN (the rmq binary), SDK5_TOPIC, SDK5_GROUP, SDK5_RUN (a prefix for keys).

The recipe for any language: send as usual, then run `rmq admin fastForward -n <namesrv> -c <cluster> -d
<duration>` (in the image: `docker exec <container> ./mqadmin fastForward ...`); it returns once everything
due within the jump is stored, so the consumer gets it on its next receive.

One JSON object a line on stdout reports each step: {"scenario": "sent", "key", "id", "deliver"},
{"scenario": "fastforward", "output"}, {"scenario": "received", "key", "id", "seconds"} (real seconds from
the end of the fast-forward to the receive). The program exits 0 only when every step succeeded.
"""

import json
import os
import subprocess
import sys
import time

from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer

DELAY_S = 2 * 3600
RECEIVE_DEADLINE_S = 30
INVISIBLE_S = 10


class Failure(Exception):
    pass


def emit(**fields):
    print(json.dumps(fields), flush=True)


def fast_forward(namesrv, duration):
    """`rmq admin fastForward`: every master of the cluster moves its message clock ahead by duration."""
    cmd = [os.environ["RMQ_BIN"], "admin", "fastForward", "-n", namesrv, "-c", "DefaultCluster", "-d", duration]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise Failure(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout.strip()


def main():
    env = os.environ
    topic, group, run = env["SDK5_TOPIC"], env["SDK5_GROUP"], env["SDK5_RUN"]
    config = ClientConfiguration(env["RMQ_ENDPOINT"], Credentials(), request_timeout=10)
    consumer = SimpleConsumer(config, group, {topic: FilterExpression("*")}, await_duration=2)
    consumer.startup()
    producer = Producer(config, (topic,))
    producer.startup()
    try:
        key = f"{run}-timer-2h"
        m = Message()
        m.topic, m.body, m.tag, m.keys = topic, ("timer " + key).encode(), "sdk5", key
        m.add_property("itid", key)
        # Epoch seconds: the SDK (5.1.2) puts delivery_timestamp into the Timestamp's seconds as is.
        deliver_s = int(time.time()) + DELAY_S
        m.delivery_timestamp = deliver_s
        sent = producer.send(m)
        emit(scenario="sent", key=key, id=sent.message_id, deliver=deliver_s * 1000)

        # Two hours short of its time: nothing to receive.
        for early in consumer.receive(16, INVISIBLE_S):
            raise Failure(f"received {early.properties.get('itid')} before its delivery time")

        emit(scenario="fastforward", output=fast_forward(env["RMQ_NAMESRV"], "2h1m"))
        done = time.monotonic()
        while True:
            if time.monotonic() - done > RECEIVE_DEADLINE_S:
                raise Failure(f"{key} not received within {RECEIVE_DEADLINE_S}s of the fast-forward")
            got = consumer.receive(16, INVISIBLE_S)
            if not got:
                continue
            r = got[0]
            if len(got) != 1 or r.properties.get("itid") != key or r.message_id != sent.message_id:
                raise Failure(f"unexpected receive: {[g.properties.get('itid') for g in got]}")
            consumer.ack(r)
            emit(scenario="received", key=key, id=r.message_id, seconds=round(time.monotonic() - done, 3))
            return 0
    finally:
        producer.shutdown()
        consumer.shutdown()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
