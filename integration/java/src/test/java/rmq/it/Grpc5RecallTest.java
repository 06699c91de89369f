package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.apis.ClientException;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.RecallReceipt;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Recall of a delayed message with the stock 5.x Java SDK (rocketmq-client-java 5.0.8, TLS on) through rmq's
 * gRPC endpoint: a send with a delivery timestamp answers a recall handle, Producer.recallMessage with it
 * cancels the message, and a SimpleConsumer gets the control message sent with a later timestamp but never the
 * recalled one. A recall after delivery is refused.
 */
class Grpc5RecallTest {
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();

    static Message delayed(String topic, String body, long deliverAt) {
        return PROVIDER.newMessageBuilder().setTopic(topic).setTag("g5").setKeys(body)
            .setDeliveryTimestamp(deliverAt).setBody(body.getBytes(StandardCharsets.UTF_8)).build();
    }

    @Test
    @Tag("timer")
    void recalledDelayMessageIsNeverDelivered() throws Exception {
        String topic = Clients.unique("grpc5recall");
        Grpc5ConsumerTest.createTopic(topic);
        try (Producer producer = Grpc5ConsumerTest.producer(topic);
             SimpleConsumer consumer = Grpc5ConsumerTest.simpleConsumer(Clients.unique("grecall"), topic)) {
            long now = System.currentTimeMillis();
            SendReceipt recalled = producer.send(delayed(topic, "recalled", now + 2000));
            long controlAt = now + 3000;
            SendReceipt control = producer.send(delayed(topic, "control", controlAt));
            assertFalse(recalled.getRecallHandle() == null || recalled.getRecallHandle().isEmpty(), "no recall handle");
            assertFalse(control.getRecallHandle() == null || control.getRecallHandle().isEmpty(), "no recall handle");

            RecallReceipt receipt = producer.recallMessage(topic, recalled.getRecallHandle());
            assertEquals(recalled.getMessageId().toString(), receipt.getMessageId().toString());

            // The control message is due a second after the recalled one: once it is here, the recalled one
            // would have been delivered before it. One more long poll shows nothing else comes.
            List<MessageView> got = new ArrayList<>();
            long deadline = System.nanoTime() + Clients.DEADLINE.toNanos();
            while (got.stream().noneMatch(mv -> "control".equals(Grpc5ConsumerTest.body(mv))) && System.nanoTime() < deadline) {
                got.addAll(consumer.receive(16, Duration.ofSeconds(30)));
            }
            long arrived = System.currentTimeMillis();
            got.addAll(consumer.receive(16, Duration.ofSeconds(30)));
            List<String> bodies = got.stream().map(Grpc5ConsumerTest::body).collect(Collectors.toList());
            assertEquals(List.of("control"), bodies);
            assertTrue(arrived >= controlAt, () -> "control delivered " + (controlAt - arrived) + " ms early");
            consumer.ack(got.get(0));

            // Delivered already: the recall is refused (INTERNAL_SERVER_ERROR, as the stock proxy answers).
            assertThrows(ClientException.class, () -> producer.recallMessage(topic, control.getRecallHandle()));
            // A handle that does not decode.
            assertThrows(ClientException.class, () -> producer.recallMessage(topic, "not-a-handle"));
        }
    }
}
