'use strict';
// ACL 2.0 with the Node.js 5.x SDK (rocketmq-client-nodejs) against rmq's gRPC endpoint.
//
// Run by integration/sdk5_auth_test.go (TestSDK5NodeAuth), which starts rmq with authenticationEnabled and
// authorizationEnabled, makes the users and their policies and creates the topics. Environment: RMQ_ENDPOINT,
// SDK5_TOPIC_ALLOWED (the producer user may publish to it, the consumer user subscribe), SDK5_TOPIC_DENIED (a Deny
// policy of the producer user), SDK5_GROUP (the consumer user's group), SDK5_PRODUCER / SDK5_PRODUCER_SECRET,
// SDK5_CONSUMER / SDK5_CONSUMER_SECRET.
//
// One JSON object a line on stdout for each case: {case, ok, error}: "allowed" (a signed send), "denied" (a send
// to the denied topic), "wrong" (a wrong secret), "none" (no credentials), "received" (the consumer user receives
// and acks the allowed message), "deny_over_allow" and "tie_allow" (SDK5_DOVER to the denied and the allowed topic),
// "ip_out" and "ip_in" (SDK5_IPOUT, SDK5_IPIN: policies whose source IPs exclude and include 127.0.0.1),
// "before_disable" and "disabled" (two sends of one SDK5_DISABLE producer; between them the program reads a line
// from stdin, written once the test has disabled the user). Every user has X and X_SECRET. The Go test judges
// them. Each case is bounded (CASE_DEADLINE_MS).

const { Producer, SimpleConsumer } = require('rocketmq-client-nodejs');

const CASE_DEADLINE_MS = 30000;
const RECEIVE_DEADLINE_MS = 60000;

function emit(c, ok, error) {
  process.stdout.write(JSON.stringify({ case: c, ok, error: error || '' }) + '\n');
}

function bounded(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([ promise, timeout ]).finally(() => clearTimeout(timer));
}

function credentials(accessKey, accessSecret) {
  return accessKey ? { accessKey, accessSecret } : undefined;
}

async function send(env, c, creds, topic) {
  const producer = new Producer({ endpoints: env.RMQ_ENDPOINT, sessionCredentials: creds, requestTimeout: 10000 });
  try {
    await bounded((async () => {
      await producer.startup();
      await producer.send({ topic, keys: [ 'sdk5auth' ], body: Buffer.from('auth') });
    })(), CASE_DEADLINE_MS, c);
    emit(c, true);
  } catch (e) {
    emit(c, false, `${e && e.name} ${e && e.code} ${e && e.message}`);
  } finally {
    await producer.shutdown().catch(() => {});
  }
}

function stdinLine() {
  return new Promise(resolve => {
    process.stdin.once('data', () => {
      process.stdin.pause();
      resolve();
    });
    process.stdin.resume();
  });
}

async function sendDisabled(env) {
  const topic = env.SDK5_TOPIC_ALLOWED;
  const producer = new Producer({ endpoints: env.RMQ_ENDPOINT, sessionCredentials: credentials(env.SDK5_DISABLE, env.SDK5_DISABLE_SECRET),
    requestTimeout: 10000 });
  let c = 'before_disable';
  try {
    await bounded(producer.startup(), CASE_DEADLINE_MS, c);
    for (c of [ 'before_disable', 'disabled' ]) {
      if (c === 'disabled') {
        await bounded(stdinLine(), CASE_DEADLINE_MS, 'the test disabling the user');
      }
      try {
        await bounded(producer.send({ topic, body: Buffer.from('auth') }), CASE_DEADLINE_MS, c);
        emit(c, true);
      } catch (e) {
        emit(c, false, `${e && e.name} ${e && e.code} ${e && e.message}`);
      }
    }
  } catch (e) {
    emit(c, false, `${e && e.name} ${e && e.code} ${e && e.message}`);
  } finally {
    await producer.shutdown().catch(() => {});
  }
}

async function receive(env) {
  const consumer = new SimpleConsumer({
    endpoints: env.RMQ_ENDPOINT,
    sessionCredentials: credentials(env.SDK5_CONSUMER, env.SDK5_CONSUMER_SECRET),
    consumerGroup: env.SDK5_GROUP,
    subscriptions: new Map([[ env.SDK5_TOPIC_ALLOWED, '*' ]]),
    awaitDuration: 2000,
    requestTimeout: 10000,
  });
  try {
    await bounded(consumer.startup(), CASE_DEADLINE_MS, 'received');
    const deadline = Date.now() + RECEIVE_DEADLINE_MS;
    while (Date.now() < deadline) {
      for (const m of await consumer.receive(16, 15000)) {
        await consumer.ack(m);
        if ((m.keys || []).includes('sdk5auth')) {
          emit('received', true);
          return;
        }
      }
    }
    emit('received', false, `not received within ${RECEIVE_DEADLINE_MS} ms`);
  } catch (e) {
    emit('received', false, `${e && e.name} ${e && e.code} ${e && e.message}`);
  } finally {
    await consumer.shutdown().catch(() => {});
  }
}

async function main() {
  const env = process.env;
  const prod = credentials(env.SDK5_PRODUCER, env.SDK5_PRODUCER_SECRET);
  await send(env, 'allowed', prod, env.SDK5_TOPIC_ALLOWED);
  await send(env, 'denied', prod, env.SDK5_TOPIC_DENIED);
  await send(env, 'wrong', credentials(env.SDK5_PRODUCER, 'not-the-secret'), env.SDK5_TOPIC_ALLOWED);
  await send(env, 'none', undefined, env.SDK5_TOPIC_ALLOWED);
  await receive(env);
  const dover = credentials(env.SDK5_DOVER, env.SDK5_DOVER_SECRET);
  await send(env, 'deny_over_allow', dover, env.SDK5_TOPIC_DENIED);
  await send(env, 'tie_allow', dover, env.SDK5_TOPIC_ALLOWED);
  await send(env, 'ip_out', credentials(env.SDK5_IPOUT, env.SDK5_IPOUT_SECRET), env.SDK5_TOPIC_ALLOWED);
  await send(env, 'ip_in', credentials(env.SDK5_IPIN, env.SDK5_IPIN_SECRET), env.SDK5_TOPIC_ALLOWED);
  await sendDisabled(env);
}

main().then(() => process.exit(0), e => {
  process.stderr.write(`${e && e.stack}\n`);
  process.exit(1);
});
