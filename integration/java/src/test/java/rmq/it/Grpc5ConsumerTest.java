package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.FilterExpressionType;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.protocol.RequestCode;
import org.apache.rocketmq.common.protocol.ResponseCode;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.junit.jupiter.api.Test;

/**
 * 5.x consumption through rmq's gRPC endpoint with the stock Java SDK (rocketmq-client-java 5.0.8, TLS on):
 * SimpleConsumer receive/ack/changeInvisibleDuration and redelivery after the invisible time, PushConsumer
 * concurrently and FIFO. Topics are created by a 4.x warm-up send (tag "warm"); the 5.x consumers
 * subscribe to tag "g5" only.
 */
class Grpc5ConsumerTest {
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();
    private static final FilterExpression G5 = new FilterExpression("g5", FilterExpressionType.TAG);

    /** Creates topic through a 4.x send (auto-creation from TBW102). */
    static void createTopic(String topic) throws Exception {
        DefaultMQProducer warm = Clients.startProducer();
        try {
            warm.send(new org.apache.rocketmq.common.message.Message(topic, "warm", "warm-up", "w".getBytes(StandardCharsets.UTF_8)));
        } finally {
            warm.shutdown();
        }
    }

    /**
     * Creates a consumer group with consumeMessageOrderly (a 5.x field the 4.9.8 admin classes lack): the
     * UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body as a 5.x mqadmin updateSubGroup -o true sends it.
     */
    static void createOrderlyGroup(String group) throws Exception {
        DefaultMQProducer p = Clients.startProducer();
        try {
            MQClientInstance f = p.getDefaultMQProducerImpl().getmQClientFactory();
            ClusterInfo cluster = f.getMQClientAPIImpl().getBrokerClusterInfo(5000);
            BrokerData broker = cluster.getBrokerAddrTable().values().iterator().next();
            RemotingCommand req = RemotingCommand.createRequestCommand(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, null);
            req.setBody(("{\"groupName\":\"" + group + "\",\"consumeMessageOrderly\":true}").getBytes(StandardCharsets.UTF_8));
            RemotingCommand resp = f.getMQClientAPIImpl().getRemotingClient().invokeSync(broker.selectBrokerAddr(), req, 5000);
            assertEquals(ResponseCode.SUCCESS, resp.getCode(), resp::getRemark);
        } finally {
            p.shutdown();
        }
    }

    static Producer producer(String topic) throws Exception {
        return PROVIDER.newProducerBuilder().setClientConfiguration(Grpc5ProducerTest.config()).setTopics(topic).build();
    }

    static SimpleConsumer simpleConsumer(String group, String topic) throws Exception {
        return PROVIDER.newSimpleConsumerBuilder().setClientConfiguration(Grpc5ProducerTest.config())
            .setConsumerGroup(group).setAwaitDuration(Duration.ofSeconds(5))
            .setSubscriptionExpressions(Map.of(topic, G5)).build();
    }

    static String body(MessageView mv) {
        return StandardCharsets.UTF_8.decode(mv.getBody()).toString();
    }

    /** Receives until n messages arrived (none acked). */
    static List<MessageView> receive(SimpleConsumer c, int n, Duration invisible) throws Exception {
        List<MessageView> got = new ArrayList<>();
        long deadline = System.nanoTime() + Clients.DEADLINE.toNanos();
        while (got.size() < n && System.nanoTime() < deadline) {
            got.addAll(c.receive(16, invisible));
        }
        assertEquals(n, got.size(), () -> "received " + got.stream().map(Grpc5ConsumerTest::body).collect(Collectors.toList()));
        return got;
    }

    @Test
    void simpleConsumerReceiveAckAndChangeInvisibleDuration() throws Exception {
        String topic = Clients.unique("grpc5sc");
        createTopic(topic);
        try (Producer producer = producer(topic); SimpleConsumer consumer = simpleConsumer(Clients.unique("gsc"), topic)) {
            for (String b : List.of("a", "b", "c")) {
                producer.send(Grpc5ProducerTest.message(topic, "k-" + b, b));
            }
            List<MessageView> got = receive(consumer, 3, Duration.ofSeconds(30));
            got.sort((x, y) -> body(x).compareTo(body(y)));
            assertEquals(List.of("a", "b", "c"), got.stream().map(Grpc5ConsumerTest::body).collect(Collectors.toList()));
            for (MessageView mv : got) {
                assertEquals(1, mv.getDeliveryAttempt());
                assertEquals("g5", mv.getTag().orElse(null));
                assertEquals(topic, mv.getTopic());
                assertTrue(mv.getKeys().contains("k-" + body(mv)), mv.getKeys()::toString);
            }
            consumer.ack(got.get(0));
            // b: a longer invisible time, then acked through the handle the change answered.
            consumer.changeInvisibleDuration(got.get(1), Duration.ofSeconds(60));
            consumer.ack(got.get(1));
            // c: a shorter one; it comes back after about a second, attempt 2.
            consumer.changeInvisibleDuration(got.get(2), Duration.ofSeconds(1));
            List<MessageView> back = receive(consumer, 1, Duration.ofSeconds(30));
            assertEquals("c", body(back.get(0)));
            assertEquals(2, back.get(0).getDeliveryAttempt());
            assertEquals(got.get(2).getMessageId(), back.get(0).getMessageId());
            consumer.ack(back.get(0));
            // Everything acked: nothing more (one empty long poll).
            assertTrue(consumer.receive(16, Duration.ofSeconds(30)).isEmpty());
        }
    }

    @Test
    void simpleConsumerRedeliveryAfterInvisibleTime() throws Exception {
        String topic = Clients.unique("grpc5rd");
        createTopic(topic);
        try (Producer producer = producer(topic); SimpleConsumer consumer = simpleConsumer(Clients.unique("grd"), topic)) {
            producer.send(Grpc5ProducerTest.message(topic, "again", "again"));
            MessageView first = receive(consumer, 1, Duration.ofSeconds(10)).get(0);
            long popped = System.currentTimeMillis();
            // Not acked: back after its 10 s (the proxy's minimum for a receive), not before.
            MessageView second = receive(consumer, 1, Duration.ofSeconds(10)).get(0);
            long waited = System.currentTimeMillis() - popped;
            assertTrue(waited >= 9_000, () -> "redelivered after " + waited + " ms");
            assertEquals(first.getMessageId(), second.getMessageId());
            assertEquals(2, second.getDeliveryAttempt());
            assertEquals("again", body(second));
            consumer.ack(second);
        }
    }

    @Test
    void pushConsumerConcurrently() throws Exception {
        String topic = Clients.unique("grpc5push");
        createTopic(topic);
        Map<String, Integer> attempts = new ConcurrentHashMap<>();
        Set<String> done = ConcurrentHashMap.newKeySet();
        AtomicInteger failedOnce = new AtomicInteger();
        try (Producer producer = producer(topic);
             PushConsumer consumer = PROVIDER.newPushConsumerBuilder().setClientConfiguration(Grpc5ProducerTest.config())
                 .setConsumerGroup(Clients.unique("gpush")).setSubscriptionExpressions(Map.of(topic, G5))
                 .setConsumptionThreadCount(4)
                 .setMessageListener(mv -> {
                     String b = body(mv);
                     attempts.merge(b, 1, Integer::sum);
                     // "fail-me" fails its first delivery: the SDK nacks it, it comes back with attempt 2.
                     if ("fail-me".equals(b) && mv.getDeliveryAttempt() == 1) {
                         failedOnce.incrementAndGet();
                         return ConsumeResult.FAILURE;
                     }
                     done.add(b);
                     return ConsumeResult.SUCCESS;
                 }).build()) {
            List<String> bodies = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                bodies.add("m" + i);
            }
            bodies.add("fail-me");
            for (String b : bodies) {
                producer.send(Grpc5ProducerTest.message(topic, b, b));
            }
            Await.until("every message consumed", Clients.DEADLINE, () -> done.containsAll(bodies),
                () -> "done=" + done + " attempts=" + attempts);
            assertEquals(1, failedOnce.get());
            assertEquals(2, attempts.get("fail-me"), attempts::toString);
            // Each of the others was delivered once (the ack took it out of flight).
            for (int i = 0; i < 20; i++) {
                assertEquals(1, attempts.get("m" + i), attempts::toString);
            }
        }
    }

    @Test
    void pushConsumerFifo() throws Exception {
        String topic = Clients.unique("grpc5fifo");
        String group = Clients.unique("gfifo");
        createTopic(topic);
        createOrderlyGroup(group);
        List<String> consumed = new CopyOnWriteArrayList<>();
        AtomicInteger failures = new AtomicInteger();
        try (Producer producer = producer(topic);
             PushConsumer consumer = PROVIDER.newPushConsumerBuilder().setClientConfiguration(Grpc5ProducerTest.config())
                 .setConsumerGroup(group).setSubscriptionExpressions(Map.of(topic, G5)).setConsumptionThreadCount(4)
                 .setMessageListener(mv -> {
                     String b = body(mv);
                     assertEquals("order-1", mv.getMessageGroup().orElse(null));
                     // f3 fails once: FIFO retries it before anything after it.
                     if ("f3".equals(b) && failures.getAndIncrement() == 0) {
                         return ConsumeResult.FAILURE;
                     }
                     consumed.add(b);
                     return ConsumeResult.SUCCESS;
                 }).build()) {
            List<String> want = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                String b = "f" + i;
                want.add(b);
                Message m = PROVIDER.newMessageBuilder().setTopic(topic).setTag("g5").setKeys(b).setMessageGroup("order-1")
                    .setBody(b.getBytes(StandardCharsets.UTF_8)).build();
                producer.send(m);
            }
            Await.until("the FIFO messages", Clients.DEADLINE, () -> consumed.size() >= want.size(), consumed::toString);
            assertEquals(want, new ArrayList<>(consumed));
            assertTrue(failures.get() >= 2, () -> "f3 consumed " + failures.get() + " times");
        }
    }
}
