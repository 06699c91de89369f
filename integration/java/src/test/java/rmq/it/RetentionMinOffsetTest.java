package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.KVTable;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Consuming from below a queue's minimum offset after retention deleted the old commitlog files: the stock offset
 * correction. A broker of its own (1 MiB commitlog files) takes about four files of messages; DELETE_EXPIRED_COMMITLOG
 * (code 329) with the forced-cleanup ratio below the disk's use deletes every file but the newest (rmq:
 * diskSpaceCleanForciblyRatio=1, a percent as in 5.x; Java 4.9.8: the JVM property
 * rocketmq.broker.diskSpaceCleanForciblyRatio=0.01, DefaultMessageStore.CleanCommitLogService), and each queue's
 * minimum moves up. Then:
 * <ul>
 * <li>a pull from offset 0 gets OFFSET_ILLEGAL with nextBeginOffset = the queue's minimum (Java 4.9.8
 * DefaultMessageStore.getMessage: OFFSET_TOO_SMALL, nextOffsetCorrection; PullMessageProcessor: PULL_OFFSET_MOVED;
 * MQClientAPIImpl.processPullResponse: OFFSET_ILLEGAL), and pulling on from there returns every message up to the
 * maximum in a bounded number of pulls;</li>
 * <li>a push consumer whose group committed offset 0 pulls there, is corrected the same way
 * (DefaultMQPushConsumerImpl.pullMessage, case OFFSET_ILLEGAL: the offset is set to nextBeginOffset, the process
 * queue dropped and re-created by the next rebalance) and receives every message from the minimum on, none below.</li>
 * </ul>
 */
// Under the first header type only (run.sh): it runs its own broker and waits for retention rounds.
@Tag("one-header-type")
class RetentionMinOffsetTest {
    private static final int FILE_SIZE = 1 << 20;
    private static final int MESSAGES = 3200;
    private static final int BATCH = 32;

    @Test
    void consumersBelowTheMinimumAreCorrectedAndGetEverythingFromIt() throws Exception {
        assumeTrue(BrokerProcess.launcher() != null, "rmq.brokerLauncher is not set (run.sh sets it)");
        String topic = Clients.unique("retmin");
        Path dir = Files.createTempDirectory("rmq-it-retention");
        BrokerProcess b = new BrokerProcess(Clients.unique("retmin_b"), Clients.unique("RetMinCluster"), dir.resolve("store"));
        b.env.put("RMQ_BROKER_EXTRA_CONF", String.join("\n", "mappedFileSizeCommitLog=" + FILE_SIZE, "diskSpaceCleanForciblyRatio=1"));
        b.env.put("RMQ_BROKER_JVM_PROPS", "-Drocketmq.broker.diskSpaceCleanForciblyRatio=0.01");
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(Clients.namesrv());
        admin.setInstanceName(Clients.unique("retmin-admin"));
        DefaultMQProducer producer = null;
        DefaultMQPullConsumer puller = null;
        DefaultMQPullConsumer committer = null;
        DefaultMQPushConsumer pusher = null;
        try {
            b.start();
            admin.start();
            admin.createAndUpdateTopicConfig(b.addr(), new TopicConfig(topic, 2, 2, 6));
            puller = new DefaultMQPullConsumer(Clients.unique("retmin_pull"));
            puller.setNamesrvAddr(Clients.namesrv());
            puller.setInstanceName(Clients.unique("retmin-puller"));
            puller.start();
            DefaultMQPullConsumer pc = puller;
            AtomicReference<Object> route = new AtomicReference<>();
            Await.until("the route of " + topic, Clients.DEADLINE, () -> {
                try {
                    Set<MessageQueue> mqs = pc.fetchSubscribeMessageQueues(topic);
                    route.set(mqs);
                    return mqs.size() == 2;
                } catch (Exception e) {
                    route.set(e);
                    return false;
                }
            }, () -> String.valueOf(route.get()));
            List<MessageQueue> queues = new ArrayList<>(new TreeSet<>(puller.fetchSubscribeMessageQueues(topic)));

            producer = Clients.startProducer();
            byte[] pad = new byte[1024];
            java.util.Arrays.fill(pad, (byte) 'r');
            for (int i = 0; i < MESSAGES; i += BATCH) {
                List<Message> batch = new ArrayList<>();
                for (int j = i; j < i + BATCH; j++) {
                    Message m = new Message(topic, "TagR", pad);
                    m.putUserProperty("seq", Integer.toString(j));
                    batch.add(m);
                }
                SendResult r = producer.send(batch);
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r::toString);
            }
            Map<Integer, Long> max = new TreeMap<>();
            for (MessageQueue mq : queues) {
                max.put(mq.getQueueId(), puller.maxOffset(mq));
            }
            KVTable before = admin.fetchBrokerRuntimeStats(b.addr());
            long written = Long.parseLong(before.getTable().get("commitLogMaxOffset"));
            assertTrue(written > 3L * FILE_SIZE, "the messages span more than three commitlog files: " + written + " bytes");

            // DELETE_EXPIRED_COMMITLOG: forced rounds (the disk is over the forced ratio) delete every file but
            // the newest; the Java broker's rounds run every cleanResourceInterval (10 s) once it has been up a
            // minute. Done when one file is left and the queue minimums hold still.
            assertTrue(admin.deleteExpiredCommitLogByAddr(b.addr()), "deleteExpiredCommitLog answered false");
            Map<Integer, Long> min = new TreeMap<>();
            AtomicReference<String> state = new AtomicReference<>();
            Await.until("retention to delete all commitlog files but the newest", Clients.DEADLINE.multipliedBy(2), () -> {
                try {
                    Map<String, String> info = admin.fetchBrokerRuntimeStats(b.addr()).getTable();
                    long lo = Long.parseLong(info.get("commitLogMinOffset"));
                    long hi = Long.parseLong(info.get("commitLogMaxOffset"));
                    Map<Integer, Long> now = new TreeMap<>();
                    for (MessageQueue mq : queues) {
                        now.put(mq.getQueueId(), pc.minOffset(mq));
                    }
                    state.set("commitlog " + lo + ".." + hi + ", queue minimums " + now + ", maximums " + max);
                    boolean settled = hi - lo <= FILE_SIZE && now.values().stream().allMatch(v -> v > 0) && now.equals(min);
                    min.clear();
                    min.putAll(now);
                    return settled;
                } catch (Exception e) {
                    state.set(e.toString());
                    return false;
                }
            }, state::get);

            System.out.printf("retention: %d bytes written, queue minimums %s, maximums %s%n", written, min, max);

            // The pull consumer: OFFSET_ILLEGAL with the minimum, then everything from it.
            for (MessageQueue mq : queues) {
                int q = mq.getQueueId();
                PullResult first = puller.pull(mq, "*", 0, 32);
                assertEquals(PullStatus.OFFSET_ILLEGAL, first.getPullStatus(), () -> "pull below the minimum of queue " + q + ": " + first);
                assertEquals(min.get(q), first.getNextBeginOffset(), () -> "nextBeginOffset of queue " + q);
                Set<Long> got = new TreeSet<>();
                long offset = first.getNextBeginOffset();
                int pulls = 0;
                while (offset < max.get(q)) {
                    assertTrue(++pulls <= (max.get(q) - min.get(q)) / 8 + 4, () -> "too many pulls on queue " + q + " (an error loop?)");
                    PullResult r = puller.pull(mq, "*", offset, 32);
                    assertEquals(PullStatus.FOUND, r.getPullStatus(), () -> "pull at " + q + " after the correction: " + r);
                    for (MessageExt m : r.getMsgFoundList()) {
                        got.add(m.getQueueOffset());
                    }
                    offset = r.getNextBeginOffset();
                }
                assertEquals(range(min.get(q), max.get(q)), got, "pulled offsets of queue " + q);
            }

            // The push consumer, its group's committed offset 0 on both queues.
            String group = Clients.unique("retmin_push");
            committer = new DefaultMQPullConsumer(group);
            committer.setNamesrvAddr(Clients.namesrv());
            committer.setInstanceName(Clients.unique("retmin-committer"));
            committer.start();
            for (MessageQueue mq : queues) {
                committer.getDefaultMQPullConsumerImpl().getOffsetStore().updateConsumeOffsetToBroker(mq, 0, false);
                assertEquals(0, committer.fetchConsumeOffset(mq, true), "committed offset of queue " + mq.getQueueId());
            }
            committer.shutdown();
            committer = null;

            Map<Integer, Set<Long>> pushed = new ConcurrentHashMap<>();
            List<String> below = java.util.Collections.synchronizedList(new ArrayList<>());
            pusher = new DefaultMQPushConsumer(group);
            pusher.setNamesrvAddr(Clients.namesrv());
            pusher.setInstanceName(Clients.unique("retmin-pusher"));
            pusher.subscribe(topic, "*");
            pusher.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    if (m.getQueueOffset() < min.get(m.getQueueId())) {
                        below.add(m.getQueueId() + ":" + m.getQueueOffset());
                    }
                    pushed.computeIfAbsent(m.getQueueId(), k -> ConcurrentHashMap.newKeySet()).add(m.getQueueOffset());
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            pusher.start();
            Map<Integer, Set<Long>> want = new HashMap<>();
            for (MessageQueue mq : queues) {
                want.put(mq.getQueueId(), range(min.get(mq.getQueueId()), max.get(mq.getQueueId())));
            }
            Await.until("the push consumer to receive every message from the minimum on", Clients.DEADLINE.multipliedBy(2),
                () -> want.entrySet().stream().allMatch(e -> pushed.getOrDefault(e.getKey(), Set.of()).containsAll(e.getValue())),
                () -> "received per queue " + counts(pushed) + ", want " + counts(want) + " from minimums " + min);
            assertEquals(List.of(), below, "messages below the minimum");
            for (Map.Entry<Integer, Set<Long>> e : pushed.entrySet()) {
                assertEquals(want.get(e.getKey()), new TreeSet<>(e.getValue()), "pushed offsets of queue " + e.getKey());
            }
        } finally {
            for (AutoCloseable c : new AutoCloseable[] {
                pusher == null ? null : pusher::shutdown, committer == null ? null : committer::shutdown,
                puller == null ? null : puller::shutdown, producer == null ? null : producer::shutdown}) {
                if (c != null) {
                    c.close();
                }
            }
            admin.shutdown();
            b.stop();
            BrokerProcess.deleteTree(dir);
        }
    }

    private static Set<Long> range(long from, long to) {
        Set<Long> s = new TreeSet<>();
        for (long o = from; o < to; o++) {
            s.add(o);
        }
        return s;
    }

    private static Map<Integer, Integer> counts(Map<Integer, Set<Long>> m) {
        Map<Integer, Integer> c = new TreeMap<>();
        m.forEach((k, v) -> c.put(k, v.size()));
        return c;
    }
}
