package rmq.it;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/**
 * Messages routed to a queue by key and consumed by an orderly listener arrive in send order per key.
 * The orderly consumer only consumes a queue after the broker grants it the queue lock (LOCK_BATCH_MQ).
 */
class OrderlyTest {

    /** One delivery as the listener saw it. */
    private record Delivery(int seq, int queueId, long queueOffset) {
    }

    @Test
    void orderlyConsumerKeepsPerKeyOrder() throws Exception {
        String topic = Clients.unique("orderly");
        List<String> keys = List.of("order-a", "order-b", "order-c", "order-d", "order-e");
        int perKey = 10;
        MessageQueueSelector byKey = (mqs, msg, arg) -> mqs.get(Math.floorMod(arg.hashCode(), mqs.size()));
        Map<String, Integer> queueOfKey = new ConcurrentHashMap<>();

        DefaultMQProducer producer = Clients.startProducer();
        try {
            for (int seq = 0; seq < perKey; seq++) {
                for (String key : keys) {
                    Message m = new Message(topic, "TagOrder", key, Integer.toString(seq).getBytes(StandardCharsets.UTF_8));
                    SendResult r = producer.send(m, byKey, key);
                    assertEquals(SendStatus.SEND_OK, r.getSendStatus(), () -> "send result " + r);
                    queueOfKey.putIfAbsent(key, r.getMessageQueue().getQueueId());
                    assertEquals(queueOfKey.get(key), r.getMessageQueue().getQueueId(), "queue chosen for " + key);
                }
            }
        } finally {
            producer.shutdown();
        }

        Map<String, List<Delivery>> byKeyReceived = new ConcurrentHashMap<>();
        AtomicInteger total = new AtomicInteger();
        DefaultMQPushConsumer consumer = Clients.pushConsumer(topic, "*", 2);
        consumer.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                int seq = Integer.parseInt(new String(m.getBody(), StandardCharsets.UTF_8));
                byKeyReceived.computeIfAbsent(m.getKeys(), k -> Collections.synchronizedList(new ArrayList<>()))
                    .add(new Delivery(seq, m.getQueueId(), m.getQueueOffset()));
                total.incrementAndGet();
            }
            return ConsumeOrderlyStatus.SUCCESS;
        });
        consumer.start();
        int expected = keys.size() * perKey;
        try {
            Await.until(expected + " orderly messages", Clients.DEADLINE, () -> total.get() >= expected,
                () -> total.get() + " received: " + byKeyReceived);
        } finally {
            consumer.shutdown();
        }

        List<Integer> inOrder = IntStream.range(0, perKey).boxed().collect(Collectors.toList());
        for (String key : keys) {
            List<Delivery> got = new ArrayList<>(byKeyReceived.getOrDefault(key, List.of()));
            assertAll("key " + key,
                () -> assertEquals(inOrder, got.stream().map(Delivery::seq).collect(Collectors.toList()),
                    "sequence as consumed: " + got),
                () -> assertTrue(got.stream().allMatch(d -> d.queueId() == queueOfKey.get(key)),
                    "all from queue " + queueOfKey.get(key) + ": " + got),
                () -> assertTrue(IntStream.range(1, got.size())
                        .allMatch(i -> got.get(i).queueOffset() > got.get(i - 1).queueOffset()),
                    "queue offsets increase: " + got));
        }
    }
}
