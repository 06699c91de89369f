'use strict';
// Scenarios of the Node.js 5.x SDK (rocketmq-client-nodejs) against rmq's gRPC endpoint.
//
// Run by integration/sdk5_test.go (TestSDK5Node), which creates the topics, consumes what the producer sends
// with a 4.x client and checks it. The SDK connects without TLS unless sslEnabled is set, as its README shows.
// Environment: RMQ_ENDPOINT (host:port of grpcServerPort), SDK5_RUN (a prefix for keys), SDK5_TOPIC_NORMAL,
// SDK5_TOPIC_FIFO, SDK5_TOPIC_DELAY, SDK5_TOPIC_TX (one queue), SDK5_TOPIC_SIMPLE, SDK5_GROUP (the simple
// consumer's group), SDK5_DELAY_MS.
//
// Producer: normal, FIFO, delay, transaction commit, rollback and check-back. SimpleConsumer: receive and ack,
// a change of invisible duration and the redelivery after it, and no acked message coming back.
//
// Every message carries its key in the user property "itid". One JSON object a line on stdout reports each
// step: a send ({scenario, key, id}, plus deliver for a delay message), the check-back ({scenario: "checked",
// key}), a receive ({scenario: "received"/"redelivered", key, id, attempt}) and the end of the consumer's
// checks ({scenario: "consumed"}). The program exits 0 only when every step succeeded.

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');
const { TransactionResolution } = require('rocketmq-client-nodejs/proto/apache/rocketmq/v2/definition_pb');

const CHECK_DEADLINE_MS = 90000;
const RECEIVE_DEADLINE_MS = 60000;
// The receive's invisible duration (the proxy's minimum), and the shorter one set by a change.
const INVISIBLE_MS = 10000;
const CHANGED_INVISIBLE_MS = 2000;

function emit(fields) {
  process.stdout.write(JSON.stringify(fields) + '\n');
}

function message(topic, key, body) {
  return {
    topic,
    tag: 'sdk5',
    keys: [ key ],
    properties: new Map([[ 'itid', key ]]),
    body: Buffer.from(body),
  };
}

// simpleConsumer receives and acks, changes the invisible duration of one message and takes its redelivery.
async function simpleConsumer(env, producer, topic, group, run) {
  const consumer = new SimpleConsumer({
    endpoints: env.RMQ_ENDPOINT,
    consumerGroup: group,
    subscriptions: new Map([[ topic, '*' ]]),
    awaitDuration: 2000,
    requestTimeout: 10000,
  });
  await consumer.startup();
  try {
    const keys = [ 0, 1, 2 ].map(i => `${run}-simple-${i}`);
    const ids = new Map();
    for (const key of keys) {
      ids.set(key, (await producer.send(message(topic, key, `simple ${key}`))).messageId);
    }

    const got = new Map();
    let firstReceive;
    const deadline = Date.now() + RECEIVE_DEADLINE_MS;
    while (got.size < keys.length) {
      if (Date.now() > deadline) {
        throw new Error(`received ${[ ...got.keys() ]} of ${keys} within ${RECEIVE_DEADLINE_MS / 1000}s`);
      }
      for (const m of await consumer.receive(16, INVISIBLE_MS)) {
        firstReceive = firstReceive || performance.now();
        const key = m.properties.get('itid');
        if (!ids.has(key) || got.has(key) || m.messageId !== ids.get(key) || m.deliveryAttempt !== 1) {
          throw new Error(`unexpected receive: key ${key} id ${m.messageId} attempt ${m.deliveryAttempt}`);
        }
        got.set(key, m);
        emit({ scenario: 'received', key, id: m.messageId, attempt: m.deliveryAttempt });
      }
    }
    for (const key of keys.slice(0, 2)) {
      await consumer.ack(got.get(key));
    }
    const changedAt = performance.now();
    await consumer.changeInvisibleDuration(got.get(keys[2]), CHANGED_INVISIBLE_MS);

    let redelivered = false;
    while (!redelivered) {
      if (Date.now() > deadline + CHANGED_INVISIBLE_MS) {
        throw new Error(`${keys[2]} not redelivered after its invisible duration changed to ${CHANGED_INVISIBLE_MS}ms`);
      }
      for (const m of await consumer.receive(16, INVISIBLE_MS)) {
        const key = m.properties.get('itid');
        const after = performance.now() - changedAt;
        if (key !== keys[2] || m.deliveryAttempt !== 2 || after < CHANGED_INVISIBLE_MS) {
          throw new Error(`unexpected receive: key ${key} attempt ${m.deliveryAttempt} ${after}ms after the change`);
        }
        await consumer.ack(m);
        redelivered = true;
        emit({ scenario: 'redelivered', key, id: m.messageId, attempt: m.deliveryAttempt });
      }
    }

    // The acked messages would be back INVISIBLE_MS after their receive; nothing may come until a while after.
    while (performance.now() < firstReceive + INVISIBLE_MS + 2000) {
      for (const m of await consumer.receive(16, INVISIBLE_MS)) {
        throw new Error(`acked message came back: key ${m.properties.get('itid')} attempt ${m.deliveryAttempt}`);
      }
    }
    emit({ scenario: 'consumed', key: run });
  } finally {
    await consumer.shutdown();
  }
}

async function main() {
  const env = process.env;
  const run = env.SDK5_RUN;
  const normal = env.SDK5_TOPIC_NORMAL;
  const fifo = env.SDK5_TOPIC_FIFO;
  const delay = env.SDK5_TOPIC_DELAY;
  const tx = env.SDK5_TOPIC_TX;
  const simple = env.SDK5_TOPIC_SIMPLE;
  const group = env.SDK5_GROUP;
  const delayMs = Number(env.SDK5_DELAY_MS || '3000');
  const checkKey = `${run}-tx-checkback`;

  let checked;
  const checkedPromise = new Promise(resolve => { checked = resolve; });
  // Commits the half message left undecided on purpose; anything else it is asked about rolls back.
  const checker = {
    async check(view) {
      if (view.properties.get('itid') === checkKey) {
        emit({ scenario: 'checked', key: checkKey });
        checked();
        return TransactionResolution.COMMIT;
      }
      return TransactionResolution.ROLLBACK;
    },
  };
  // One topic up front: with several, startup (1.0.8) fetches their routes one after the other after opening
  // the Telemetry stream and only then waits for the server's Settings reply, and waits forever when the reply
  // came in between (against the stock proxy as against rmq). The other routes are fetched at their first send.
  // It is the transactional topic: the Settings name the topics a producer checks transactions of (the stock
  // proxy's producer group of a gRPC producer is the topic), and the SDK sends them only at startup.
  const producer = new Producer({
    endpoints: env.RMQ_ENDPOINT,
    topic: tx,
    checker,
    requestTimeout: 10000,
  });
  await producer.startup();
  try {
    for (let i = 0; i < 3; i++) {
      const key = `${run}-normal-${i}`;
      const r = await producer.send(message(normal, key, `normal ${key}`));
      emit({ scenario: 'normal', key, id: r.messageId });
    }

    for (let i = 0; i < 5; i++) {
      const key = `${run}-fifo-${i}`;
      const m = message(fifo, key, `fifo ${key}`);
      m.messageGroup = 'sdk5-group';
      const r = await producer.send(m);
      emit({ scenario: 'fifo', key, id: r.messageId });
    }

    {
      const key = `${run}-delay-0`;
      const m = message(delay, key, `delay ${key}`);
      m.deliveryTimestamp = new Date(Date.now() + delayMs);
      const r = await producer.send(m);
      emit({ scenario: 'delay', key, id: r.messageId, deliver: m.deliveryTimestamp.getTime() });
    }

    // Rollback before commit on the one-queue topic: once the committed message is consumed, the rolled-back
    // one would have been stored before it.
    for (const scenario of [ 'rollback', 'commit' ]) {
      const key = `${run}-tx-${scenario}`;
      const t = producer.beginTransaction();
      const r = await producer.send(message(tx, key, `${scenario} ${key}`), t);
      if (scenario === 'commit') {
        await t.commit();
      } else {
        await t.rollback();
      }
      emit({ scenario, key, id: r.messageId });
    }

    // Left undecided: the broker's check-back (Telemetry RecoverOrphanedTransactionCommand) asks the checker.
    const t = producer.beginTransaction();
    const r = await producer.send(message(tx, checkKey, `checkback ${checkKey}`), t);
    emit({ scenario: 'checkback', key: checkKey, id: r.messageId });

    // While the broker gets round to the check-back.
    await simpleConsumer(env, producer, simple, group, run);

    let timer;
    const timedOut = new Promise(resolve => { timer = setTimeout(() => resolve(false), CHECK_DEADLINE_MS); });
    const ok = await Promise.race([ checkedPromise.then(() => true), timedOut ]);
    clearTimeout(timer);
    if (!ok) {
      throw new Error(`no transaction check-back within ${CHECK_DEADLINE_MS / 1000}s`);
    }
    // The checker's answer is sent after check() returns; the test closes stdin once it consumed the
    // committed message, and only then is the producer shut down.
    await new Promise(resolve => {
      process.stdin.on('end', resolve);
      process.stdin.resume();
    });
  } finally {
    // Prints "log stream had been closed" on stderr (1.0.8 logs once more after closing its logger): harmless.
    await producer.shutdown();
  }
}

main().then(() => process.exit(0), err => {
  process.stderr.write(`${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
