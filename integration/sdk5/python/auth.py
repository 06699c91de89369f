"""ACL 2.0 with the Python 5.x SDK (rocketmq-python-client) against rmq's gRPC endpoint.

Run by integration/sdk5_auth_test.go (TestSDK5PythonAuth), which starts rmq with authenticationEnabled and
authorizationEnabled, makes the users and their policies and creates the topics. Environment: RMQ_ENDPOINT,
SDK5_TOPIC_ALLOWED (the producer user may publish to it, the consumer user subscribe), SDK5_TOPIC_DENIED (a Deny
policy of the producer user), SDK5_GROUP (the consumer user's group), SDK5_PRODUCER / SDK5_PRODUCER_SECRET,
SDK5_CONSUMER / SDK5_CONSUMER_SECRET.

One JSON object a line on stdout for each case: {"case", "ok", "error"}: "allowed" (a signed send),
"denied" (a send to the denied topic), "wrong" (a wrong secret), "none" (no credentials), "received" (the
consumer user receives and acks the allowed message), "deny_over_allow" and "tie_allow" (SDK5_DOVER to the
denied and the allowed topic), "ip_out" and "ip_in" (SDK5_IPOUT, SDK5_IPIN: policies whose source IPs exclude and
include 127.0.0.1), "before_disable" and "disabled" (two sends of one SDK5_DISABLE producer; between them the
program reads a line from stdin, written once the test has disabled the user). Every user has X and X_SECRET.
The Go test judges them.
"""

import json
import os
import sys
import time

from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer

RECEIVE_DEADLINE_S = 60


def emit(case, ok, error=""):
    print(json.dumps({"case": case, "ok": ok, "error": error}), flush=True)


def send(env, case, creds, topic):
    producer = None
    try:
        producer = Producer(ClientConfiguration(env["RMQ_ENDPOINT"], creds, request_timeout=10), (topic,))
        producer.startup()
        m = Message()
        m.topic = topic
        m.body = b"auth"
        m.keys = "sdk5auth"
        producer.send(m)
        emit(case, True)
    except Exception as e:  # the SDK's ClientException and its subclasses
        emit(case, False, repr(e) + " " + str(e))
    finally:
        if producer is not None:
            try:
                producer.shutdown()
            except Exception:
                pass


def send_disabled(env):
    producer = None
    topic = env["SDK5_TOPIC_ALLOWED"]
    case = "before_disable"
    try:
        producer = Producer(ClientConfiguration(env["RMQ_ENDPOINT"], Credentials(env["SDK5_DISABLE"], env["SDK5_DISABLE_SECRET"]),
                                                request_timeout=10), (topic,))
        producer.startup()
        for case in ("before_disable", "disabled"):
            if case == "disabled":
                sys.stdin.readline()
            m = Message()
            m.topic = topic
            m.body = b"auth"
            try:
                producer.send(m)
                emit(case, True)
            except Exception as e:
                emit(case, False, repr(e) + " " + str(e))
    except Exception as e:
        emit(case, False, repr(e) + " " + str(e))
    finally:
        if producer is not None:
            try:
                producer.shutdown()
            except Exception:
                pass


def receive(env):
    consumer = SimpleConsumer(ClientConfiguration(env["RMQ_ENDPOINT"], Credentials(env["SDK5_CONSUMER"], env["SDK5_CONSUMER_SECRET"]),
                                                  request_timeout=10),
                              env["SDK5_GROUP"], {env["SDK5_TOPIC_ALLOWED"]: FilterExpression()}, await_duration=2)
    try:
        consumer.startup()
        deadline = time.time() + RECEIVE_DEADLINE_S
        while time.time() < deadline:
            for m in consumer.receive(16, 15) or []:
                consumer.ack(m)
                if "sdk5auth" in (m.keys or []) or m.keys == "sdk5auth":
                    emit("received", True)
                    return
        emit("received", False, "not received within %ds" % RECEIVE_DEADLINE_S)
    except Exception as e:
        emit("received", False, repr(e) + " " + str(e))
    finally:
        try:
            consumer.shutdown()
        except Exception:
            pass


def main():
    env = os.environ
    prod = Credentials(env["SDK5_PRODUCER"], env["SDK5_PRODUCER_SECRET"])
    send(env, "allowed", prod, env["SDK5_TOPIC_ALLOWED"])
    send(env, "denied", prod, env["SDK5_TOPIC_DENIED"])
    send(env, "wrong", Credentials(env["SDK5_PRODUCER"], "not-the-secret"), env["SDK5_TOPIC_ALLOWED"])
    send(env, "none", Credentials(), env["SDK5_TOPIC_ALLOWED"])
    receive(env)
    dover = Credentials(env["SDK5_DOVER"], env["SDK5_DOVER_SECRET"])
    send(env, "deny_over_allow", dover, env["SDK5_TOPIC_DENIED"])
    send(env, "tie_allow", dover, env["SDK5_TOPIC_ALLOWED"])
    send(env, "ip_out", Credentials(env["SDK5_IPOUT"], env["SDK5_IPOUT_SECRET"]), env["SDK5_TOPIC_ALLOWED"])
    send(env, "ip_in", Credentials(env["SDK5_IPIN"], env["SDK5_IPIN_SECRET"]), env["SDK5_TOPIC_ALLOWED"])
    send_disabled(env)


if __name__ == "__main__":
    main()
