"""Scenarios of the Python 5.x SDK (rocketmq-python-client) against rmq's gRPC endpoint.

Run by integration/sdk5_test.go (TestSDK5Python), which creates the topics, consumes what the producer
sends with a 4.x client and checks it. The SDK connects without TLS by default (tls_enable=False), as its
docs show. Environment: RMQ_ENDPOINT (host:port of grpcServerPort), SDK5_RUN (a prefix for keys),
SDK5_TOPIC_NORMAL, SDK5_TOPIC_FIFO, SDK5_TOPIC_DELAY, SDK5_TOPIC_TX (one queue), SDK5_TOPIC_SIMPLE,
SDK5_GROUP (the simple consumer's group), SDK5_DELAY_MS.

Producer: normal, FIFO, delay, transaction commit, rollback and check-back. SimpleConsumer: receive and ack,
a change of invisible duration and the redelivery after it, and no acked message coming back.

Every message carries its key in the user property "itid". One JSON object a line on stdout reports each
step: a send ({"scenario", "key", "id"}, plus "deliver" for a delay message), the check-back
({"scenario": "checked", "key"}), a receive ({"scenario": "received"/"redelivered", "key", "id",
"attempt"}) and the end of the consumer's checks ({"scenario": "consumed"}). The program exits 0 only when
every step succeeded.
"""

import json
import os
import sys
import threading
import time

from rocketmq import (ClientConfiguration, Credentials, FilterExpression,
                      Message, Producer, SimpleConsumer, TransactionChecker,
                      TransactionResolution)

CHECK_DEADLINE_S = 90
RECEIVE_DEADLINE_S = 60
# The receive's invisible duration (the proxy's minimum), and the shorter one set by a change.
INVISIBLE_S = 10
CHANGED_INVISIBLE_S = 2


def emit(**fields):
    print(json.dumps(fields), flush=True)


def message(topic, key, body):
    m = Message()
    m.topic = topic
    m.body = body.encode()
    m.tag = "sdk5"
    m.keys = key
    m.add_property("itid", key)
    return m


class Checker(TransactionChecker):
    """Commits the half message left undecided on purpose; anything else it is asked about rolls back."""

    def __init__(self, run):
        self.key = run + "-tx-checkback"
        self.checked = threading.Event()

    def check(self, msg):
        if msg.properties.get("itid") == self.key:
            emit(scenario="checked", key=self.key)
            self.checked.set()
            return TransactionResolution.COMMIT
        return TransactionResolution.ROLLBACK


class Failure(Exception):
    pass


def simple_consumer(config, producer, topic, group, run):
    """Receive and ack; change the invisible duration of one message and take its redelivery."""
    consumer = SimpleConsumer(config, group, {topic: FilterExpression("*")}, await_duration=2)
    consumer.startup()
    try:
        keys = [f"{run}-simple-{i}" for i in range(3)]
        ids = {}
        for key in keys:
            ids[key] = producer.send(message(topic, key, "simple " + key)).message_id

        got = {}
        first_receive = None
        deadline = time.monotonic() + RECEIVE_DEADLINE_S
        while len(got) < len(keys):
            if time.monotonic() > deadline:
                raise Failure(f"received {sorted(got)} of {keys} within {RECEIVE_DEADLINE_S}s")
            for m in consumer.receive(16, INVISIBLE_S):
                first_receive = first_receive or time.monotonic()
                key = m.properties.get("itid")
                if key not in ids or key in got or m.message_id != ids[key] or m.delivery_attempt != 1:
                    raise Failure(f"unexpected receive: key {key} id {m.message_id} attempt {m.delivery_attempt}")
                got[key] = m
                emit(scenario="received", key=key, id=m.message_id, attempt=m.delivery_attempt)
        for key in keys[:2]:
            consumer.ack(got[key])
        changed_at = time.monotonic()
        consumer.change_invisible_duration(got[keys[2]], CHANGED_INVISIBLE_S)

        redelivered = None
        while redelivered is None:
            if time.monotonic() > deadline + CHANGED_INVISIBLE_S:
                raise Failure(f"{keys[2]} not redelivered after its invisible duration changed to {CHANGED_INVISIBLE_S}s")
            for m in consumer.receive(16, INVISIBLE_S):
                key = m.properties.get("itid")
                after = time.monotonic() - changed_at
                if key != keys[2] or m.delivery_attempt != 2 or after < CHANGED_INVISIBLE_S:
                    raise Failure(f"unexpected receive: key {key} attempt {m.delivery_attempt} {after:.3f}s after the change")
                consumer.ack(m)
                redelivered = m
                emit(scenario="redelivered", key=key, id=m.message_id, attempt=m.delivery_attempt)

        # The acked messages would be back INVISIBLE_S after their receive; nothing may come until a while after.
        while time.monotonic() < first_receive + INVISIBLE_S + 2:
            for m in consumer.receive(16, INVISIBLE_S):
                raise Failure(f"acked message came back: key {m.properties.get('itid')} attempt {m.delivery_attempt}")
        emit(scenario="consumed", key=run)
    finally:
        consumer.shutdown()


def main():
    env = os.environ
    run = env["SDK5_RUN"]
    normal, fifo, delay, tx = (env["SDK5_TOPIC_NORMAL"], env["SDK5_TOPIC_FIFO"],
                               env["SDK5_TOPIC_DELAY"], env["SDK5_TOPIC_TX"])
    delay_ms = int(env.get("SDK5_DELAY_MS", "3000"))
    simple, group = env["SDK5_TOPIC_SIMPLE"], env["SDK5_GROUP"]
    config = ClientConfiguration(env["RMQ_ENDPOINT"], Credentials(), request_timeout=10)
    checker = Checker(run)
    producer = Producer(config, (normal, fifo, delay, tx, simple), checker)
    producer.startup()
    try:
        for i in range(3):
            key = f"{run}-normal-{i}"
            r = producer.send(message(normal, key, "normal " + key))
            emit(scenario="normal", key=key, id=r.message_id)

        for i in range(5):
            key = f"{run}-fifo-{i}"
            m = message(fifo, key, "fifo " + key)
            m.message_group = "sdk5-group"
            r = producer.send(m)
            emit(scenario="fifo", key=key, id=r.message_id)

        key = f"{run}-delay-0"
        m = message(delay, key, "delay " + key)
        # The SDK (5.1.2) copies delivery_timestamp into the protobuf Timestamp's seconds unchanged, so in
        # practice it is epoch seconds (its docstring says milliseconds; a millisecond value is refused as
        # more than a day ahead, by the stock proxy as by rmq).
        deliver_s = int(time.time()) + (delay_ms + 999) // 1000
        m.delivery_timestamp = deliver_s
        r = producer.send(m)
        emit(scenario="delay", key=key, id=r.message_id, deliver=deliver_s * 1000)

        # Rollback before commit on the one-queue topic: once the committed message is consumed, the
        # rolled-back one would have been stored before it.
        for scenario in ("rollback", "commit"):
            key = f"{run}-tx-{scenario}"
            t = producer.begin_transaction()
            r = producer.send(message(tx, key, scenario + " " + key), t)
            if scenario == "commit":
                t.commit()
            else:
                t.rollback()
            emit(scenario=scenario, key=key, id=r.message_id)

        # Left undecided: the broker's check-back (Telemetry RecoverOrphanedTransactionCommand) asks Checker.
        t = producer.begin_transaction()
        r = producer.send(message(tx, checker.key, "checkback " + checker.key), t)
        emit(scenario="checkback", key=checker.key, id=r.message_id)

        # While the broker gets round to the check-back.
        simple_consumer(config, producer, simple, group, run)

        if not checker.checked.wait(CHECK_DEADLINE_S):
            print(f"no transaction check-back within {CHECK_DEADLINE_S}s", file=sys.stderr)
            return 1
        # The checker's answer goes out on another thread after check() returns; the test waits for the
        # committed message before this producer is shut down.
        sys.stdin.read()
    finally:
        producer.shutdown()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
