package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
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

/**
 * A 4.9.8 client has no timer API, but it may set the 5.x property TIMER_DELIVER_MS itself: the broker's timer must
 * hold the message until then (to its 1 s precision) while a plain message sent alongside arrives at once.
 */
@Tag("timer")
class TimerMessageTest {
    /** The timer rounds the deliver time down to its precision (1 s by default). */
    static final long PRECISION_MS = 1000;

    @Test
    void timerDeliverMsPropertyDelaysDelivery() throws Exception {
        String topic = Clients.unique("timer4");
        Map<String, Long> arrivals = new ConcurrentHashMap<>();
        DefaultMQProducer producer = Clients.startProducer();
        DefaultMQPushConsumer consumer = null;
        try {
            // A plain message creates the topic; once it arrives the consumer is surely pulling.
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

            long deliverAt = System.currentTimeMillis() + 4000;
            Message timed = new Message(topic, "TagT", "timed", "timed".getBytes(StandardCharsets.UTF_8));
            timed.putUserProperty("TIMER_DELIVER_MS", Long.toString(deliverAt));
            SendResult r = producer.send(timed);
            assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r::toString);
            assertEquals(SendStatus.SEND_OK, producer.send(new Message(topic, "TagT", "plain", "p".getBytes(StandardCharsets.UTF_8))).getSendStatus());

            Await.until("the timer message", Clients.DEADLINE, () -> arrivals.containsKey("timed"), arrivals::toString);
            long got = arrivals.get("timed");
            assertTrue(got >= deliverAt - PRECISION_MS, () -> "delivered " + (deliverAt - got) + " ms before TIMER_DELIVER_MS");
            assertTrue(arrivals.containsKey("plain") && arrivals.get("plain") < got,
                () -> "the plain message must arrive first: " + arrivals);
        } finally {
            producer.shutdown();
            if (consumer != null) {
                consumer.shutdown();
            }
        }
    }
}
