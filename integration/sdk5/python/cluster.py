"""The Python 5.x SDK against a cluster of two rmq brokers, one of which the test kills.

Run by integration/sdk5_cluster_test.go (TestSDK5PythonCluster...), which starts a name server and two brokers
(their gRPC endpoints on one port, on 127.0.0.2 and 127.0.0.3), creates the topic on both and kills a broker
between phases. Environment: RMQ_ENDPOINT (the endpoints the SDK is given: "host:port" or "a:port;b:port"),
SDK5_RUN (a prefix for keys), SDK5_TOPIC, SDK5_GROUP (the SimpleConsumer's group), SDK5_COUNT (messages a phase).

Each line read from stdin names a phase, "NAME" or "NAME fresh" (the sends of the phase then go through a
producer started for it, whose startup queries the route afresh through the given endpoints): the producer sends
SDK5_COUNT messages, each sent again after a failure until PHASE_DEADLINE_S (an application's retry: a send the
SDK routed to a killed broker fails until its route refresh drops that broker), then the SimpleConsumer receives
and acks until it has had every message of the phase (a receive from a killed broker's endpoint fails; the loop
goes on). One JSON object a line on stdout reports each step: {"scenario": "sent", "key", "id", "endpoint"} (the
broker endpoint of the send receipt's queue), {"scenario": "received", "key", "id", "attempt"} for every message
received (of any phase, so the test sees duplicates), and {"scenario": "done", "key": phase, "send_failures",
"receive_failures"}. The program exits 0 at the end of stdin, 1 when a phase missed its deadline.
"""

import json
import os
import sys
import time

from rocketmq import (ClientConfiguration, Credentials, FilterExpression,
                      Message, Producer, SimpleConsumer)

PHASE_DEADLINE_S = 50
INVISIBLE_S = 10
# The long-polling wait of a receive: short, as an empty receive from a broker whose messages were taken costs it
# (the test lowers the brokers' grpcClientConsumerMinLongPollingTimeoutMillis, 5 s by default, below it).
AWAIT_S = 1


def emit(**fields):
    print(json.dumps(fields), flush=True)


class Failure(Exception):
    pass


def phase(producer, consumer, topic, run, name, count):
    deadline = time.monotonic() + PHASE_DEADLINE_S
    send_failures = receive_failures = 0
    keys = set()
    for i in range(count):
        key = f"{run}-{name}-{i}"
        m = Message()
        m.topic = topic
        m.body = key.encode()
        m.keys = key
        m.add_property("itid", key)
        while True:
            try:
                r = producer.send(m)
                break
            except Exception as e:
                send_failures += 1
                print(f"send {key}: {e!r}", file=sys.stderr, flush=True)
                if time.monotonic() > deadline:
                    raise Failure(f"send {key}: {e}") from e
                time.sleep(0.2)
        keys.add(key)
        emit(scenario="sent", key=key, id=r.message_id, endpoint=str(r.message_queue.endpoints))

    while keys:
        if time.monotonic() > deadline:
            raise Failure(f"phase {name}: {sorted(keys)} not received within {PHASE_DEADLINE_S}s")
        try:
            got = consumer.receive(32, INVISIBLE_S)
        except Exception as e:
            receive_failures += 1
            print(f"receive: {e!r}", file=sys.stderr, flush=True)
            time.sleep(0.2)
            continue
        for m in got:
            key = m.properties.get("itid")
            emit(scenario="received", key=key, id=m.message_id, attempt=m.delivery_attempt)
            try:
                consumer.ack(m)
            except Exception as e:
                raise Failure(f"ack {key}: {e}") from e
            keys.discard(key)
    emit(scenario="done", key=name, send_failures=send_failures, receive_failures=receive_failures)


def main():
    env = os.environ
    run, topic, group, count = env["SDK5_RUN"], env["SDK5_TOPIC"], env["SDK5_GROUP"], int(env["SDK5_COUNT"])
    config = ClientConfiguration(env["RMQ_ENDPOINT"], Credentials(), request_timeout=3)
    producer = Producer(config, (topic,))
    producer.startup()
    consumer = SimpleConsumer(config, group, {topic: FilterExpression("*")}, await_duration=AWAIT_S)
    consumer.startup()
    try:
        for line in sys.stdin:
            words = line.split()
            if words[1:] == ["fresh"]:
                # A producer started now: its startup queries the route through the access point, whichever
                # of the given endpoints still answers.
                fresh = Producer(config, (topic,))
                fresh.startup()
                try:
                    phase(fresh, consumer, topic, run, words[0], count)
                finally:
                    fresh.shutdown()
            elif words:
                phase(producer, consumer, topic, run, words[0], count)
    finally:
        consumer.shutdown()
        producer.shutdown()


if __name__ == "__main__":
    try:
        main()
    except Failure as e:
        print(e, file=sys.stderr, flush=True)
        sys.exit(1)
