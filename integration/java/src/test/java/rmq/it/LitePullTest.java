package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.junit.jupiter.api.Test;

/**
 * DefaultLitePullConsumer in both modes: subscribe (rebalanced queues, auto commit) and assign (explicit queues,
 * seek, commitSync). Committed offsets are read back from the broker (QUERY_CONSUMER_OFFSET).
 */
class LitePullTest {
    private static final int PER_QUEUE = 4;

    /** Sends PER_QUEUE messages to each of queues 0 and 1 of a fresh topic. */
    private static List<SendResult> fill(String topic) throws Exception {
        List<SendResult> out = new ArrayList<>();
        DefaultMQProducer producer = Clients.startProducer();
        try {
            for (int i = 0; i < 2 * PER_QUEUE; i++) {
                SendResult r = producer.send(new Message(topic, "TagL", "lp-" + i, ("lite " + i).getBytes(StandardCharsets.UTF_8)),
                    (mqs, msg, arg) -> mqs.get((Integer) arg % 2), i);
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r::toString);
                out.add(r);
            }
        } finally {
            producer.shutdown();
        }
        return out;
    }

    private static DefaultLitePullConsumer consumer(String group) {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        c.setNamesrvAddr(Clients.namesrv());
        c.setInstanceName(Clients.unique("lite"));
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollTimeoutMillis(500);
        c.setAutoCommitIntervalMillis(1000);
        c.setPersistConsumerOffsetInterval(1000);
        return c;
    }

    /** queue id -> queue offsets polled so far. */
    private static void record(Map<Integer, TreeSet<Long>> seen, List<MessageExt> msgs) {
        for (MessageExt m : msgs) {
            seen.computeIfAbsent(m.getQueueId(), q -> new TreeSet<>()).add(m.getQueueOffset());
        }
    }

    private static MessageQueue queue(Collection<MessageQueue> mqs, int id) {
        return mqs.stream().filter(q -> q.getQueueId() == id).findFirst().orElseThrow();
    }

    private static Long committed(DefaultLitePullConsumer c, MessageQueue mq) {
        try {
            return c.committed(mq);
        } catch (MQClientException e) {
            return null;
        }
    }

    @Test
    void subscribeModePollsEverythingAndAutoCommits() throws Exception {
        String topic = Clients.unique("litesub");
        fill(topic);
        DefaultLitePullConsumer c = consumer(Clients.unique("litesubcg"));
        c.subscribe(topic, "*");
        c.setAutoCommit(true);
        c.start();
        try {
            Map<Integer, TreeSet<Long>> seen = new ConcurrentHashMap<>();
            Await.until("all messages polled", Clients.DEADLINE, () -> {
                record(seen, c.poll());
                return seen.values().stream().mapToInt(TreeSet::size).sum() >= 2 * PER_QUEUE;
            }, seen::toString);
            assertEquals(new TreeMap<>(Map.of(0, range(0, PER_QUEUE), 1, range(0, PER_QUEUE))), new TreeMap<>(seen));
            Collection<MessageQueue> mqs = c.fetchMessageQueues(topic);
            for (int q : new int[] {0, 1}) {
                MessageQueue mq = queue(mqs, q);
                // The next poll commits what the last one returned; the offset reaches the broker with the next persist.
                Await.until("auto commit of queue " + q, Clients.DEADLINE, () -> {
                    c.poll(100);
                    Long off = committed(c, mq);
                    return off != null && off == PER_QUEUE;
                }, () -> "committed " + committed(c, mq));
            }
        } finally {
            c.shutdown();
        }
    }

    @Test
    void assignModeSeeksAndCommitsSync() throws Exception {
        String topic = Clients.unique("liteassign");
        fill(topic);
        DefaultLitePullConsumer c = consumer(Clients.unique("liteassigncg"));
        c.setAutoCommit(false);
        c.start();
        try {
            Collection<MessageQueue> mqs = c.fetchMessageQueues(topic);
            assertEquals(4, mqs.size(), mqs::toString);
            c.assign(mqs);
            MessageQueue q0 = queue(mqs, 0);
            // Everything first, then seek(2). A seek while the first pull of queue 0 is still in flight races inside
            // the stock client (4.9.8 DefaultLitePullConsumerImpl: PullTaskImpl.run checks isCancelled() after its
            // pull and then takes the queue lock, where it keeps the result unless a seek offset is pending; seek()
            // cancels it and schedules a new task that may consume the seek offset first), so the old pull's
            // offsets 0 and 1 can be kept as well; the broker has no part in it. Once all is polled, queue 0's
            // task waits in a long-polling pull at offset 4, which seek() interrupts and which finds nothing.
            Map<Integer, TreeSet<Long>> seen = new ConcurrentHashMap<>();
            Await.until("all of queues 0 and 1", Clients.DEADLINE, () -> {
                record(seen, c.poll());
                return seen.getOrDefault(0, new TreeSet<>()).size() >= PER_QUEUE
                    && seen.getOrDefault(1, new TreeSet<>()).size() >= PER_QUEUE;
            }, seen::toString);
            assertEquals(range(0, PER_QUEUE), seen.get(0), "queue 0");
            assertEquals(range(0, PER_QUEUE), seen.get(1), "queue 1");

            c.seek(q0, 2);
            TreeSet<Long> fromTwo = new TreeSet<>();
            Await.until("queue 0 from offset 2 after seek(2)", Clients.DEADLINE, () -> {
                for (MessageExt m : c.poll()) {
                    assertEquals(0, m.getQueueId(), "only queue 0 has anything left to poll");
                    fromTwo.add(m.getQueueOffset());
                }
                return fromTwo.size() >= PER_QUEUE - 2;
            }, fromTwo::toString);
            assertEquals(range(2, PER_QUEUE), fromTwo, "queue 0 after seek(2)");

            c.commitSync();
            Await.until("commitSync of queue 0 to reach the broker", Clients.DEADLINE, () -> {
                Long off = committed(c, q0);
                return off != null && off == PER_QUEUE;
            }, () -> "committed " + committed(c, q0));

            c.seek(q0, 0);
            TreeSet<Long> again = new TreeSet<>();
            Await.until("queue 0 again from 0 after seek(0)", Clients.DEADLINE, () -> {
                for (MessageExt m : c.poll()) {
                    assertEquals(0, m.getQueueId(), "only queue 0 has anything left to poll");
                    again.add(m.getQueueOffset());
                }
                return again.size() >= PER_QUEUE;
            }, again::toString);
            assertTrue(again.containsAll(range(0, PER_QUEUE)), again::toString);
        } finally {
            c.shutdown();
        }
    }

    private static TreeSet<Long> range(long from, long to) {
        TreeSet<Long> s = new TreeSet<>();
        for (long i = from; i < to; i++) {
            s.add(i);
        }
        return s;
    }
}
