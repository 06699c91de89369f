package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionChecker;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The stock 5.x Java SDK (rocketmq-client-java 5.0.8, gRPC, TLS on as by default) against rmq's gRPC endpoint.
 * Topics are created by a 4.x warm-up send (a gRPC send does not create its topic, as through a stock proxy);
 * deliveries are read back with a 4.x push consumer, since the 5.x consumers need POP.
 */
class Grpc5ProducerTest {
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();

    static String endpoint() {
        String e = System.getProperty("rmq.grpcEndpoint", "");
        if (e.isEmpty()) {
            throw new IllegalStateException("rmq.grpcEndpoint is not set");
        }
        return e;
    }

    static ClientConfiguration config() {
        return ClientConfiguration.newBuilder().setEndpoints(endpoint()).setRequestTimeout(Duration.ofSeconds(10)).build();
    }

    /** Creates topic through a 4.x send (auto-creation from TBW102) and returns a started consumer of it. */
    static DefaultMQPushConsumer topicWithConsumer(String topic, Inbox inbox) throws Exception {
        DefaultMQProducer warm = Clients.startProducer();
        try {
            warm.send(new org.apache.rocketmq.common.message.Message(topic, "warm", "warm-up", "w".getBytes(StandardCharsets.UTF_8)));
        } finally {
            warm.shutdown();
        }
        DefaultMQPushConsumer consumer = Clients.pushConsumer(topic, "*", 2);
        consumer.registerMessageListener(inbox);
        consumer.start();
        Await.until("the warm-up message", Clients.DEADLINE, () -> inbox.has(m -> "warm-up".equals(m.getKeys())), inbox::describe);
        return consumer;
    }

    static Message message(String topic, String key, String body) {
        return PROVIDER.newMessageBuilder().setTopic(topic).setTag("g5").setKeys(key)
            .setBody(body.getBytes(StandardCharsets.UTF_8)).build();
    }

    @Test
    void normalAndFifo() throws Exception {
        String topic = Clients.unique("grpc5");
        Inbox inbox = new Inbox();
        DefaultMQPushConsumer consumer = topicWithConsumer(topic, inbox);
        try (Producer producer = PROVIDER.newProducerBuilder().setClientConfiguration(config()).setTopics(topic).build()) {
            SendReceipt r = producer.send(message(topic, "normal", "n"));
            assertNotNull(r.getMessageId());
            for (int i = 0; i < 5; i++) {
                Message m = PROVIDER.newMessageBuilder().setTopic(topic).setTag("fifo").setKeys("fifo-" + i)
                    .setMessageGroup("group-1").setBody(("f" + i).getBytes(StandardCharsets.UTF_8)).build();
                producer.send(m);
            }
            Await.until("the normal and FIFO messages", Clients.DEADLINE,
                () -> inbox.has(m -> "normal".equals(m.getKeys())) && inbox.all().stream().filter(m -> "fifo".equals(m.getTags())).count() >= 5,
                inbox::describe);
            List<MessageExt> fifo = inbox.all().stream().filter(m -> "fifo".equals(m.getTags()))
                .sorted((a, b) -> Long.compare(a.getQueueOffset(), b.getQueueOffset())).collect(Collectors.toList());
            int queue = fifo.get(0).getQueueId();
            for (int i = 0; i < 5; i++) {
                assertEquals(queue, fifo.get(i).getQueueId(), inbox::describe);
                assertEquals("fifo-" + i, fifo.get(i).getKeys(), inbox::describe);
                assertEquals("group-1", fifo.get(i).getProperty("__SHARDINGKEY"), inbox::describe);
            }
        } finally {
            consumer.shutdown();
        }
    }

    @Test
    @Tag("timer")
    void delay() throws Exception {
        String topic = Clients.unique("grpc5delay");
        Inbox inbox = new Inbox();
        Map<String, Long> arrivals = new ConcurrentHashMap<>();
        DefaultMQPushConsumer consumer = topicWithConsumer(topic, inbox);
        try (Producer producer = PROVIDER.newProducerBuilder().setClientConfiguration(config()).setTopics(topic).build()) {
            long deliverAt = System.currentTimeMillis() + 3000;
            Message m = PROVIDER.newMessageBuilder().setTopic(topic).setTag("g5").setKeys("delayed")
                .setDeliveryTimestamp(deliverAt).setBody("d".getBytes(StandardCharsets.UTF_8)).build();
            producer.send(m);
            Await.until("the delayed message", Clients.DEADLINE, () -> {
                if (inbox.has(x -> "delayed".equals(x.getKeys()))) {
                    arrivals.putIfAbsent("delayed", System.currentTimeMillis());
                    return true;
                }
                return false;
            }, inbox::describe);
            MessageExt got = inbox.first(x -> "delayed".equals(x.getKeys())).get();
            assertEquals(Long.toString(deliverAt), got.getProperty("TIMER_DELIVER_MS"));
            assertTrue(arrivals.get("delayed") >= deliverAt, () -> "delivered " + (deliverAt - arrivals.get("delayed")) + " ms early");
        } finally {
            consumer.shutdown();
        }
    }

    @Test
    void transactionCommitRollbackAndCheck() throws Exception {
        String topic = Clients.unique("grpc5tx");
        Inbox inbox = new Inbox();
        DefaultMQPushConsumer consumer = topicWithConsumer(topic, inbox);
        Map<String, Boolean> checked = new ConcurrentHashMap<>();
        TransactionChecker checker = view -> {
            String body = StandardCharsets.UTF_8.decode(view.getBody()).toString();
            checked.put(body, true);
            return "orphan".equals(body) ? TransactionResolution.COMMIT : TransactionResolution.ROLLBACK;
        };
        try (Producer producer = PROVIDER.newProducerBuilder().setClientConfiguration(config()).setTopics(topic)
            .setTransactionChecker(checker).build()) {
            Transaction tx = producer.beginTransaction();
            producer.send(message(topic, "rolled-back", "rb"), tx);
            tx.rollback();
            tx = producer.beginTransaction();
            producer.send(message(topic, "committed", "c"), tx);
            tx.commit();
            // No decision: the broker's check-back reaches the checker through Telemetry, which commits.
            producer.send(message(topic, "orphan", "orphan"), producer.beginTransaction());
            Await.until("the committed and the checked transactions", Clients.DEADLINE,
                () -> inbox.has(m -> "committed".equals(m.getKeys())) && inbox.has(m -> "orphan".equals(m.getKeys())),
                () -> inbox.describe() + " checked=" + checked);
            assertTrue(checked.containsKey("orphan"), checked::toString);
            assertFalse(inbox.has(m -> "rolled-back".equals(m.getKeys())), inbox::describe);
        } finally {
            consumer.shutdown();
        }
    }
}
