package rmq.it;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@code RECONSUME_LATER} with the stock levels and a retry budget of one ({@code setMaxReconsumeTimes(1)}):
 *
 * <pre>
 * topic ──▶ listener: RECONSUME_LATER ──send back──▶ %RETRY%G, level 3 (10 s)
 *       ──▶ listener (reconsumeTimes 1): RECONSUME_LATER ──send back──▶ %DLQ%G (budget spent)
 * </pre>
 *
 * A budget of one keeps the whole chain at one level-3 wait on the shared broker; the Go suite covers a
 * longer chain with shortened levels on a broker of its own.
 */
// Under the first header type only (run.sh): it waits for delay level 3 (10 s) before each redelivery; the
// send-back header goes through the same codec as every other request's.
@Tag("one-header-type")
class RetryDlqTest {

    static final String RETRY_PREFIX = "%RETRY%";
    static final String DLQ_PREFIX = "%DLQ%";
    static final long LEVEL3_MILLIS = 10_000;
    /** PERM_READ | PERM_WRITE: 4.9.8 creates dead-letter topics readable. */
    static final int DLQ_PERM = 6;

    static DefaultMQPushConsumer pushConsumer(String group, String topic) throws MQClientException {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(Clients.namesrv());
        consumer.setInstanceName(Clients.unique("consumer"));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeThreadMin(2);
        consumer.setConsumeThreadMax(2);
        consumer.subscribe(topic, "*");
        return consumer;
    }

    /**
     * Brings %RETRY%group into the name server's routes before the measured consumer starts. A starting
     * client looks its routes up before its first heartbeat (which creates the retry topic) and then only
     * every 30 s, so a brand-new group would pull its retry queue late. A first consumer's heartbeat creates
     * the topic; it is shut down once the topic is routed, as if the group had been online before.
     */
    static void prewarmRetryTopic(DefaultMQProducer producer, String group, String topic) throws Exception {
        DefaultMQPushConsumer first = pushConsumer(group, topic);
        first.registerMessageListener(new DelayTest.Recorder(a -> ConsumeConcurrentlyStatus.CONSUME_SUCCESS));
        first.start();
        try {
            Await.until("a route for " + RETRY_PREFIX + group, Clients.DEADLINE,
                () -> DelayTest.routed(producer, RETRY_PREFIX + group), () -> "no route");
        } finally {
            first.shutdown();
        }
    }

    /** Pulls queue 0 of a dead-letter topic from offset 0; null until the topic is routed and non-empty. */
    static List<MessageExt> pullDeadLetters(DefaultMQPullConsumer reader, String dlq, AtomicReference<Object> last) {
        try {
            Set<MessageQueue> mqs = reader.fetchSubscribeMessageQueues(dlq);
            MessageQueue mq = mqs.stream().filter(q -> q.getQueueId() == 0).findFirst().orElse(null);
            if (mq == null) {
                last.set(mqs);
                return null;
            }
            PullResult r = reader.pull(mq, "*", 0, 32);
            last.set(r);
            return r.getPullStatus() == PullStatus.FOUND ? r.getMsgFoundList() : null;
        } catch (Exception e) {
            last.set(e);
            return null;
        }
    }

    @Test
    void retryLaterComesBackAfterLevel3ThenLandsInDlq() throws Exception {
        String topic = Clients.unique("retry");
        String group = Clients.unique("cg");
        String id = "always-fails";
        DefaultMQProducer producer = Clients.startProducer();
        DefaultMQPushConsumer consumer = null;
        DefaultMQPullConsumer reader = null;
        try {
            DelayTest.createTopic(producer, topic);
            prewarmRetryTopic(producer, group, topic);

            DelayTest.Recorder recorder = new DelayTest.Recorder(a -> id.equals(a.msg().getUserProperty(DelayTest.ID))
                ? ConsumeConcurrentlyStatus.RECONSUME_LATER : ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
            consumer = pushConsumer(group, topic);
            consumer.setMaxReconsumeTimes(1);
            DelayTest.startWarm(consumer, recorder, producer, topic);
            SendResult sent = DelayTest.sendOk(producer, DelayTest.message(topic, id, 0));

            reader = new DefaultMQPullConsumer(Clients.unique("dlqreader"));
            reader.setNamesrvAddr(Clients.namesrv());
            reader.setInstanceName(Clients.unique("reader"));
            reader.start();
            DefaultMQPullConsumer r = reader;
            String dlq = DLQ_PREFIX + group;
            AtomicReference<Object> last = new AtomicReference<>();
            AtomicReference<List<MessageExt>> dead = new AtomicReference<>();
            Await.until("the dead letter in " + dlq, Clients.DEADLINE,
                () -> {
                    dead.set(pullDeadLetters(r, dlq, last));
                    return dead.get() != null;
                },
                () -> recorder.get(id).size() + " deliveries; last DLQ pull: " + last.get());

            List<DelayTest.Arrival> got = recorder.get(id);
            assertEquals(2, got.size(), "deliveries before the dead-letter queue: " + got);
            MessageExt first = got.get(0).msg();
            MessageExt second = got.get(1).msg();
            long gap = got.get(1).receivedMillis() - got.get(0).receivedMillis();
            System.out.printf("[%s] redelivered with reconsumeTimes %d after %d ms (level 3 = %d ms)%n",
                Clients.serializeType(), second.getReconsumeTimes(), gap, LEVEL3_MILLIS);
            byte[] body = (id + " payload").getBytes(StandardCharsets.UTF_8);
            assertAll("first delivery",
                () -> assertEquals(0, first.getReconsumeTimes(), "reconsumeTimes"),
                () -> assertEquals(topic, got.get(0).pulledFrom(), "pulled from"));
            assertAll("redelivery",
                () -> assertTrue(gap >= LEVEL3_MILLIS - DelayTest.EARLY_TOLERANCE_MILLIS, "came " + gap + " ms after the first delivery"),
                () -> assertTrue(gap <= LEVEL3_MILLIS + DelayTest.LATE_LIMIT_MILLIS, "came " + gap + " ms after the first delivery"),
                () -> assertEquals(1, second.getReconsumeTimes(), "reconsumeTimes"),
                () -> assertEquals(topic, second.getTopic(), "topic (restored from RETRY_TOPIC)"),
                () -> assertEquals(RETRY_PREFIX + group, got.get(1).pulledFrom(), "pulled from"),
                () -> assertArrayEquals(body, second.getBody(), "body"),
                () -> assertEquals(sent.getMsgId(), second.getMsgId(), "msgId (UNIQ_KEY)"),
                () -> assertEquals(first.getBornTimestamp(), second.getBornTimestamp(), "bornTimestamp"),
                () -> assertEquals(topic, second.getProperty("RETRY_TOPIC"), "RETRY_TOPIC"),
                () -> assertEquals(sent.getOffsetMsgId(), second.getProperty("ORIGIN_MESSAGE_ID"), "ORIGIN_MESSAGE_ID"));

            List<MessageExt> letters = dead.get();
            assertEquals(1, letters.size(), "dead letters: " + letters);
            MessageExt d = letters.get(0);
            assertAll("dead letter",
                () -> assertEquals(dlq, d.getTopic(), "topic"),
                () -> assertEquals(0, d.getQueueId(), "queueId"),
                () -> assertEquals(2, d.getReconsumeTimes(), "reconsumeTimes"),
                () -> assertArrayEquals(body, d.getBody(), "body"),
                () -> assertEquals("TagDelay", d.getTags(), "tags"),
                () -> assertEquals(id, d.getKeys(), "keys"),
                () -> assertEquals(sent.getMsgId(), d.getMsgId(), "msgId (UNIQ_KEY)"),
                () -> assertEquals(first.getBornTimestamp(), d.getBornTimestamp(), "bornTimestamp"),
                () -> assertEquals(topic, d.getProperty("RETRY_TOPIC"), "RETRY_TOPIC"),
                () -> assertEquals(sent.getOffsetMsgId(), d.getProperty("ORIGIN_MESSAGE_ID"), "ORIGIN_MESSAGE_ID"));

            TopicRouteData route = producer.getDefaultMQProducerImpl().getmQClientFactory().getMQClientAPIImpl()
                .getTopicRouteInfoFromNameServer(dlq, 3_000);
            QueueData qd = route.getQueueDatas().get(0);
            assertAll("route of " + dlq,
                () -> assertEquals(DLQ_PERM, qd.getPerm(), "perm"),
                () -> assertEquals(1, qd.getReadQueueNums(), "read queues"),
                () -> assertEquals(1, qd.getWriteQueueNums(), "write queues"));
        } finally {
            if (reader != null) {
                reader.shutdown();
            }
            if (consumer != null) {
                consumer.shutdown();
            }
            producer.shutdown();
        }
    }
}
