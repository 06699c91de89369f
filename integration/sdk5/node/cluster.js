'use strict';
// The Node.js 5.x SDK against a cluster of two rmq brokers, one of which the test kills.
//
// Run by integration/sdk5_cluster_test.go (TestSDK5NodeCluster...), which starts a name server and two brokers
// (their gRPC endpoints on one port, on 127.0.0.2 and 127.0.0.3), creates the topic on both and kills a broker
// between phases. Environment: RMQ_ENDPOINT (the endpoints the SDK is given), SDK5_RUN (a prefix for keys),
// SDK5_TOPIC, SDK5_GROUP (the SimpleConsumer's group), SDK5_COUNT (messages a phase).
//
// Each line read from stdin names a phase: the producer sends SDK5_COUNT messages, each sent again after a
// failure until PHASE_DEADLINE_MS (an application's retry: a send the SDK routed to a killed broker fails until
// its route refresh drops that broker), then the SimpleConsumer receives and acks until it has had every message
// of the phase (a receive from a killed broker's endpoint fails; the loop goes on). One JSON object a line on
// stdout reports each step: {scenario: "sent", key, id, endpoint} (the broker endpoint of the send receipt's
// queue), {scenario: "received", key, id, attempt} for every message received (of any phase, so the test sees
// duplicates), and {scenario: "done", key: phase, send_failures, receive_failures}. The program exits 0 at the
// end of stdin, 1 when a phase missed its deadline.

const readline = require('node:readline');
const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

const PHASE_DEADLINE_MS = 50000;
const INVISIBLE_MS = 10000;
// The long-polling wait of a receive: short, as an empty receive from a broker whose messages were taken costs it
// (the test lowers the brokers' grpcClientConsumerMinLongPollingTimeoutMillis, 5 s by default, below it).
const AWAIT_MS = 1000;

function emit(fields) {
  process.stdout.write(JSON.stringify(fields) + '\n');
}

const pause = ms => new Promise(resolve => setTimeout(resolve, ms));

async function phase(producer, consumer, topic, run, name, count) {
  const deadline = Date.now() + PHASE_DEADLINE_MS;
  let sendFailures = 0;
  let receiveFailures = 0;
  const keys = new Set();
  for (let i = 0; i < count; i++) {
    const key = `${run}-${name}-${i}`;
    let r;
    for (;;) {
      try {
        r = await producer.send({ topic, keys: [ key ], properties: new Map([[ 'itid', key ]]), body: Buffer.from(key) });
        break;
      } catch (e) {
        sendFailures++;
        process.stderr.write(`send ${key}: ${e && e.message}\n`);
        if (Date.now() > deadline) {
          throw new Error(`send ${key}: ${e && e.message}`);
        }
        await pause(200);
      }
    }
    keys.add(key);
    emit({ scenario: 'sent', key, id: r.messageId, endpoint: r.endpoints.toString() });
  }

  while (keys.size > 0) {
    if (Date.now() > deadline) {
      throw new Error(`phase ${name}: ${[ ...keys ]} not received within ${PHASE_DEADLINE_MS / 1000}s`);
    }
    let got;
    try {
      got = await consumer.receive(32, INVISIBLE_MS);
    } catch (e) {
      receiveFailures++;
      process.stderr.write(`receive: ${e && e.message}\n`);
      await pause(200);
      continue;
    }
    for (const m of got) {
      const key = m.properties.get('itid');
      emit({ scenario: 'received', key, id: m.messageId, attempt: m.deliveryAttempt });
      await consumer.ack(m);
      keys.delete(key);
    }
  }
  emit({ scenario: 'done', key: name, send_failures: sendFailures, receive_failures: receiveFailures });
}

async function main() {
  const env = process.env;
  const topic = env.SDK5_TOPIC;
  const producer = new Producer({ endpoints: env.RMQ_ENDPOINT, topic, requestTimeout: 3000 });
  await producer.startup();
  const consumer = new SimpleConsumer({
    endpoints: env.RMQ_ENDPOINT,
    consumerGroup: env.SDK5_GROUP,
    subscriptions: new Map([[ topic, '*' ]]),
    awaitDuration: AWAIT_MS,
    requestTimeout: 3000,
  });
  await consumer.startup();
  try {
    const lines = readline.createInterface({ input: process.stdin });
    for await (const line of lines) {
      const name = line.trim();
      if (name) {
        await phase(producer, consumer, topic, env.SDK5_RUN, name, Number(env.SDK5_COUNT));
      }
    }
  } finally {
    // shutdown (1.0.8) tells every endpoint of its cached routes that the client ends
    // (NotifyClientTermination) and rejects when one fails, as it does for a killed broker the SDK's routes
    // still list (its route refresh is every 30 s): the client has shut down all the same, so that is
    // reported, not failed on. Each prints "log stream had been closed" on stderr (1.0.8 logs once more after
    // closing its logger): harmless.
    for (const client of [ consumer, producer ]) {
      try {
        await client.shutdown();
      } catch (e) {
        process.stderr.write(`shutdown: ${e && e.message}\n`);
      }
    }
  }
}

main().then(() => process.exit(0), err => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
