"""Producer scenarios of the Python 5.x SDK (rocketmq-python-client) against rmq's gRPC endpoint.

Run by integration/sdk5_test.go (TestSDK5Python), which creates the topics, consumes what this program
sends with a 4.x client and checks it. The SDK connects without TLS by default (Producer tls_enable=False),
as its docs show. Environment: RMQ_ENDPOINT (host:port of grpcServerPort), SDK5_RUN (a prefix for keys),
SDK5_TOPIC_NORMAL, SDK5_TOPIC_FIFO, SDK5_TOPIC_DELAY, SDK5_TOPIC_TX (one queue), SDK5_DELAY_MS.

Every message carries its key in the user property "itid". One JSON object a line on stdout reports each
send ({"scenario", "key", "id"}, plus "deliver" for a delay message) and the check-back
({"scenario": "checked", "key"}); the program exits 0 only when every step succeeded.
"""

import json
import os
import sys
import threading
import time

from rocketmq import (ClientConfiguration, Credentials, Message, Producer,
                      TransactionChecker, TransactionResolution)

CHECK_DEADLINE_S = 90


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


def main():
    env = os.environ
    run = env["SDK5_RUN"]
    normal, fifo, delay, tx = (env["SDK5_TOPIC_NORMAL"], env["SDK5_TOPIC_FIFO"],
                               env["SDK5_TOPIC_DELAY"], env["SDK5_TOPIC_TX"])
    delay_ms = int(env.get("SDK5_DELAY_MS", "3000"))
    config = ClientConfiguration(env["RMQ_ENDPOINT"], Credentials(), request_timeout=10)
    checker = Checker(run)
    producer = Producer(config, (normal, fifo, delay, tx), checker)
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
    sys.exit(main())
