package rmq.it;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * {@code Message.setDelayTimeLevel} with the stock levels (1 s, 5 s, 10 s, 30 s for levels 1-4).
 *
 * <p>The broker parks a delayed message on {@code SCHEDULE_TOPIC_XXXX} (queue level-1, stored at S) and
 * re-stores it on the real topic and queue once S + delay has passed. The born time is set before S, so a
 * message received at R is never early when R >= born + delay; lateness R - (born + delay) includes the
 * send and pull legs. S itself is read back with {@code viewMessage(offsetMsgId)}, which checks the same
 * rule on the broker's clock: delivered storeTimestamp >= S + delay.
 */
// Under the first header type only (run.sh): it waits for the stock levels up to 30 s; the delay property is in the properties text, not a header field.
@Tag("one-header-type")
class DelayTest {

    static final String SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX";
    static final String ID = "itid";
    static final long[] STOCK_DELAY_MILLIS = {0, 1_000, 5_000, 10_000, 30_000};
    /** Millisecond truncation of born and store timestamps. */
    static final long EARLY_TOLERANCE_MILLIS = 5;
    /** Generous bound for a shared, noisy machine; the measured values are printed. */
    static final long LATE_LIMIT_MILLIS = 2_000;

    /** One delivery as the listener saw it. */
    record Arrival(MessageExt msg, long receivedMillis, String pulledFrom) {
    }

    /** Records every delivery by the {@code itid} property and answers with {@code answer}. */
    static final class Recorder implements MessageListenerConcurrently {
        final Map<String, List<Arrival>> byId = new ConcurrentHashMap<>();
        final Function<Arrival, ConsumeConcurrentlyStatus> answer;

        Recorder(Function<Arrival, ConsumeConcurrentlyStatus> answer) {
            this.answer = answer;
        }

        @Override
        public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs,
            ConsumeConcurrentlyContext ctx) {
            long now = System.currentTimeMillis();
            ConsumeConcurrentlyStatus status = ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            for (MessageExt m : msgs) {
                Arrival a = new Arrival(m, now, ctx.getMessageQueue().getTopic());
                byId.computeIfAbsent(String.valueOf(m.getUserProperty(ID)), k -> new CopyOnWriteArrayList<>()).add(a);
                if (answer.apply(a) == ConsumeConcurrentlyStatus.RECONSUME_LATER) {
                    status = ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            return status;
        }

        List<Arrival> get(String id) {
            return byId.getOrDefault(id, List.of());
        }

        String describe() {
            return byId.size() + " ids received: " + new TreeMap<>(byId).keySet();
        }
    }

    static Message message(String topic, String id, int level) {
        Message m = new Message(topic, "TagDelay", id, (id + " payload").getBytes(StandardCharsets.UTF_8));
        m.putUserProperty(ID, id);
        if (level > 0) {
            m.setDelayTimeLevel(level);
        }
        return m;
    }

    static SendResult sendOk(DefaultMQProducer producer, Message m) throws Exception {
        SendResult r = producer.send(m);
        assertEquals(SendStatus.SEND_OK, r.getSendStatus(), () -> "send result " + r);
        return r;
    }

    /**
     * Creates the topic with a first message and waits until the name server routes it. The first send is
     * retried while the client finds no route: a broker that has just booted may not have registered its
     * auto-create template (TBW102) yet.
     */
    static void createTopic(DefaultMQProducer producer, String topic) throws Exception {
        AtomicReference<Exception> last = new AtomicReference<>();
        Await.until("a first send to " + topic, Clients.DEADLINE, () -> {
            try {
                sendOk(producer, message(topic, "create", 0));
                return true;
            } catch (MQClientException e) {
                last.set(e);
                return false;
            } catch (Exception e) {
                throw new IllegalStateException("first send to " + topic, e);
            }
        }, () -> "last error: " + last.get());
        Await.until("a name-server route for " + topic, Clients.DEADLINE, () -> routed(producer, topic), () -> "no route");
    }

    static boolean routed(DefaultMQProducer producer, String topic) {
        try {
            return !producer.fetchPublishMessageQueues(topic).isEmpty();
        } catch (MQClientException e) {
            return false;
        }
    }

    /**
     * Starts the consumer and returns once it received a plain warm-up message from every queue of the
     * topic: each queue is then assigned and its pull parked on the broker, so arrival times measure the
     * broker, not the first rebalance. The producer picks queues round-robin; while a queue is still
     * missing, another warm-up goes out every ~0.5 s in case other sends shared the rotation.
     */
    static void startWarm(DefaultMQPushConsumer consumer, Recorder recorder, DefaultMQProducer producer, String topic)
        throws Exception {
        consumer.registerMessageListener(recorder);
        consumer.start();
        String warmId = "warm-" + consumer.getConsumerGroup();
        int queues = producer.fetchPublishMessageQueues(topic).size();
        for (int i = 0; i < queues; i++) {
            sendOk(producer, message(topic, warmId, 0));
        }
        AtomicInteger polls = new AtomicInteger();
        Await.until("warm-up messages from all " + queues + " queues", Clients.DEADLINE, () -> {
            long seen = recorder.get(warmId).stream().map(a -> a.msg().getQueueId()).distinct().count();
            if (seen >= queues) {
                return true;
            }
            if (polls.incrementAndGet() % 10 == 0) {
                try {
                    sendOk(producer, message(topic, warmId, 0));
                } catch (Exception e) {
                    throw new IllegalStateException("warm-up send", e);
                }
            }
            return false;
        }, recorder::describe);
    }

    @Test
    void delayLevelsOneToFourArriveNeverEarlyAndOnTime() throws Exception {
        String topic = Clients.unique("delay");
        DefaultMQProducer producer = Clients.startProducer();
        DefaultMQPushConsumer consumer = null;
        try {
            createTopic(producer, topic);
            Recorder recorder = new Recorder(a -> ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
            consumer = Clients.pushConsumer(topic, "*", 4);
            startWarm(consumer, recorder, producer, topic);

            List<String> ids = new ArrayList<>();
            List<Integer> levels = new ArrayList<>();
            List<SendResult> sent = new ArrayList<>();
            for (int round = 0; round < 3; round++) {
                for (int level = 1; level <= 4; level++) {
                    String id = "d-L" + level + "-" + round;
                    ids.add(id);
                    levels.add(level);
                    sent.add(sendOk(producer, message(topic, id, level)));
                }
            }
            // A level above the 18 stock levels is clamped to 18 (2 h): only its stored record is checked.
            SendResult clamped = sendOk(producer, message(topic, "clamp", 25));
            MessageExt clampedRecord = producer.viewMessage(clamped.getOffsetMsgId());
            assertAll("stored record of a level-25 message",
                () -> assertEquals(SCHEDULE_TOPIC, clampedRecord.getTopic(), "topic"),
                () -> assertEquals(17, clampedRecord.getQueueId(), "queueId"),
                () -> assertEquals("18", clampedRecord.getProperty("DELAY"), "DELAY"),
                () -> assertEquals(topic, clampedRecord.getProperty("REAL_TOPIC"), "REAL_TOPIC"));

            Await.until("all " + ids.size() + " delayed messages", Clients.DEADLINE,
                () -> ids.stream().allMatch(id -> !recorder.get(id).isEmpty()), recorder::describe);

            Map<Integer, List<Long>> lateByLevel = new TreeMap<>();
            for (int i = 0; i < ids.size(); i++) {
                String id = ids.get(i);
                int level = levels.get(i);
                SendResult r = sent.get(i);
                long delay = STOCK_DELAY_MILLIS[level];
                List<Arrival> got = recorder.get(id);
                Arrival a = got.get(0);
                MessageExt m = a.msg();
                MessageExt scheduled = producer.viewMessage(r.getOffsetMsgId());
                long late = a.receivedMillis() - (m.getBornTimestamp() + delay);
                lateByLevel.computeIfAbsent(level, k -> new ArrayList<>()).add(late);
                assertAll(id + " (level " + level + ")",
                    () -> assertEquals(1, got.size(), "deliveries"),
                    () -> assertTrue(late >= -EARLY_TOLERANCE_MILLIS, "received " + (-late) + " ms before born + delay"),
                    () -> assertTrue(late <= LATE_LIMIT_MILLIS, "received " + late + " ms after born + delay"),
                    () -> assertEquals(SCHEDULE_TOPIC, scheduled.getTopic(), "stored topic"),
                    () -> assertEquals(level - 1, scheduled.getQueueId(), "stored schedule queue"),
                    () -> assertTrue(m.getStoreTimestamp() >= scheduled.getStoreTimestamp() + delay,
                        "delivered at store time " + m.getStoreTimestamp() + ", due at " + (scheduled.getStoreTimestamp() + delay)),
                    () -> assertEquals(topic, m.getTopic(), "topic"),
                    () -> assertEquals(r.getMessageQueue().getQueueId(), m.getQueueId(), "queueId chosen by the producer"),
                    () -> assertArrayEquals((id + " payload").getBytes(StandardCharsets.UTF_8), m.getBody(), "body"),
                    () -> assertEquals("TagDelay", m.getTags(), "tags"),
                    () -> assertEquals(id, m.getKeys(), "keys"),
                    () -> assertEquals(r.getMsgId(), m.getMsgId(), "msgId (UNIQ_KEY)"),
                    () -> assertEquals(0, m.getReconsumeTimes(), "reconsumeTimes"),
                    () -> assertEquals(scheduled.getBornTimestamp(), m.getBornTimestamp(), "bornTimestamp"),
                    () -> assertEquals(topic, m.getProperty("REAL_TOPIC"), "REAL_TOPIC"),
                    () -> assertEquals(Integer.toString(r.getMessageQueue().getQueueId()), m.getProperty("REAL_QID"), "REAL_QID"));
            }
            lateByLevel.forEach((level, lates) -> {
                lates.sort(null);
                System.out.printf("[%s] level %d (%d ms): lateness after born + delay, ms: %s%n",
                    Clients.serializeType(), level, STOCK_DELAY_MILLIS[level], lates);
            });
        } finally {
            if (consumer != null) {
                consumer.shutdown();
            }
            producer.shutdown();
        }
    }
}
