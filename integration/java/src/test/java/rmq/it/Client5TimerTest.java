package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** 5.x timer messages through the 5.x client's own API: setDeliverTimeMs, setDelayTimeSec, recallMessage. */
@Tag("timer")
class Client5TimerTest {
    private static final long PRECISION_MS = 1000;

    @Test
    void deliverTimeDelayTimeAndRecall() throws Exception {
        String topic = Clients.unique("timer5");
        Map<String, Long> arrivals = new ConcurrentHashMap<>();
        DefaultMQProducer producer = Clients.startProducer();
        DefaultMQPushConsumer consumer = null;
        try {
            assertEquals(SendStatus.SEND_OK, producer.send(new Message(topic, "TagT", "warm-up", "w".getBytes(StandardCharsets.UTF_8))).getSendStatus());
            consumer = Clients.pushConsumer(topic, "*", 2);
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                for (MessageExt m : msgs) {
                    arrivals.putIfAbsent(m.getKeys(), System.currentTimeMillis());
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();
            Await.until("the warm-up message", Clients.DEADLINE, () -> arrivals.containsKey("warm-up"), arrivals::toString);

            long sentAt = System.currentTimeMillis();
            Message byTime = new Message(topic, "TagT", "deliver-time", "a".getBytes(StandardCharsets.UTF_8));
            byTime.setDeliverTimeMs(sentAt + 3000);
            Message byDelay = new Message(topic, "TagT", "delay-sec", "b".getBytes(StandardCharsets.UTF_8));
            byDelay.setDelayTimeSec(4);
            Message recalled = new Message(topic, "TagT", "recalled", "c".getBytes(StandardCharsets.UTF_8));
            recalled.setDelayTimeSec(3);
            for (Message m : new Message[] {byTime, byDelay}) {
                SendResult r = producer.send(m);
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r::toString);
            }
            SendResult toRecall = producer.send(recalled);
            assertEquals(SendStatus.SEND_OK, toRecall.getSendStatus(), toRecall::toString);
            assertNotNull(toRecall.getRecallHandle(), () -> "a timer send returns a recall handle: " + toRecall);
            producer.recallMessage(topic, toRecall.getRecallHandle());

            Await.until("both timer messages", Clients.DEADLINE,
                () -> arrivals.containsKey("deliver-time") && arrivals.containsKey("delay-sec"), arrivals::toString);
            assertTrue(arrivals.get("deliver-time") >= sentAt + 3000 - PRECISION_MS, arrivals::toString);
            assertTrue(arrivals.get("delay-sec") >= sentAt + 4000 - PRECISION_MS, arrivals::toString);
            // The recalled message was due before delay-sec; give it one more second to show up if it were going to.
            long end = System.currentTimeMillis() + 1000;
            while (System.currentTimeMillis() < end && !arrivals.containsKey("recalled")) {
                Thread.sleep(50);
            }
            assertFalse(arrivals.containsKey("recalled"), () -> "a recalled message was delivered: " + arrivals);
        } finally {
            producer.shutdown();
            if (consumer != null) {
                consumer.shutdown();
            }
        }
    }
}
