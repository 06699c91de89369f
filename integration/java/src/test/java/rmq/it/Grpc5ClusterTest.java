package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.junit.jupiter.api.Test;

/**
 * The stock 5.x Java SDK against a cluster of two rmq brokers (on 127.0.0.2 and 127.0.0.3, their gRPC endpoints on
 * one port, as the stock proxy's routes assume), given the first broker's endpoint only: the routes list both
 * brokers, the producer's messages land on both and the push consumer receives them all; when the second broker
 * stops (it unregisters) or is killed with SIGKILL (the name server drops it as its connection closes), producer and
 * consumer go on with the first.
 */
class Grpc5ClusterTest {
    private static final ClientServiceProvider PROVIDER = ClientServiceProvider.loadService();

    /** A port free on both addresses. */
    private static int freePortOnBoth(String a, String b) throws IOException {
        for (int attempt = 0; attempt < 200; attempt++) {
            int p = 12000 + (int) (Math.random() * 20000);
            try (ServerSocket s1 = new ServerSocket(p, 1, InetAddress.getByName(a));
                 ServerSocket s2 = new ServerSocket(p, 1, InetAddress.getByName(b))) {
                return p;
            } catch (IOException e) {
                // taken on one of them: try another
            }
        }
        throw new IOException("no port free on " + a + " and " + b);
    }

    private static BrokerProcess broker(String name, String cluster, Path dir, String ip, int grpcPort) throws Exception {
        BrokerProcess b = new BrokerProcess(name, cluster, dir.resolve(name));
        b.env.put("RMQ_BROKER_EXTRA_CONF", String.join("\n", "brokerIP1=" + ip, "bindAddress=" + ip,
            "grpcServerPort=" + grpcPort, "enableTopicMessageTypeCheck=false"));
        b.start();
        return b;
    }

    private static long stored(MQClientAPIImpl api, BrokerProcess b, String addr, String topic) throws Exception {
        long n = 0;
        for (int q = 0; q < 4; q++) {
            n += api.getMaxOffset(addr, new MessageQueue(topic, b.name, q), 3000);
        }
        return n;
    }

    @Test
    void producerAndConsumerUseBothBrokers() throws Exception {
        run(false);
    }

    /**
     * B is killed with SIGKILL (it neither unregisters nor flushes): the name server drops it as its connection
     * closes, well before the 120 s expiry, and the producer and push consumer go on with A.
     */
    @Test
    void producerAndConsumerGoOnAfterBrokerKilled() throws Exception {
        run(true);
    }

    private void run(boolean kill) throws Exception {
        String cluster = Clients.unique("G5Cluster");
        String topic = Clients.unique("g5cluster");
        Path dir = Files.createTempDirectory("rmq-g5cluster");
        int grpcPort = freePortOnBoth("127.0.0.2", "127.0.0.3");
        BrokerProcess a = null, b = null;
        DefaultMQProducer admin = Clients.startProducer();
        try {
            a = broker(Clients.unique("g5a"), cluster, dir, "127.0.0.2", grpcPort);
            b = broker(Clients.unique("g5b"), cluster, dir, "127.0.0.3", grpcPort);
            String addrA = "127.0.0.2:" + a.port, addrB = "127.0.0.3:" + b.port;
            MQClientAPIImpl api = admin.getDefaultMQProducerImpl().getmQClientFactory().getMQClientAPIImpl();
            for (String addr : List.of(addrA, addrB)) {
                api.createTopic(addr, "TBW102", new TopicConfig(topic, 4, 4, 6), 3000);
            }
            Await.until("both brokers routed", Clients.DEADLINE, () -> {
                try {
                    TopicRouteData rd = api.getTopicRouteInfoFromNameServer(topic, 3000);
                    return rd.getQueueDatas().size() == 2;
                } catch (Exception e) {
                    return false;
                }
            }, () -> "route of " + topic);

            ClientConfiguration config = ClientConfiguration.newBuilder().setEndpoints("127.0.0.2:" + grpcPort)
                .setRequestTimeout(Duration.ofSeconds(5)).build();
            Set<String> received = ConcurrentHashMap.newKeySet();
            try (Producer producer = PROVIDER.newProducerBuilder().setClientConfiguration(config).setTopics(topic).build();
                 PushConsumer consumer = PROVIDER.newPushConsumerBuilder().setClientConfiguration(config)
                     .setConsumerGroup(Clients.unique("g5cg")).setSubscriptionExpressions(Map.of(topic, FilterExpression.SUB_ALL))
                     .setMessageListener(mv -> {
                         received.add(StandardCharsets.UTF_8.decode(mv.getBody()).toString());
                         return ConsumeResult.SUCCESS;
                     }).build()) {
                List<String> before = new ArrayList<>();
                for (int i = 0; i < 20; i++) {
                    String body = "before-" + i;
                    producer.send(Grpc5ProducerTest.message(topic, body, body));
                    before.add(body);
                }
                long onA = stored(api, a, addrA, topic), onB = stored(api, b, addrB, topic);
                assertEquals(20, onA + onB);
                assertTrue(onA > 0 && onB > 0, () -> "stored on A " + onA + ", on B " + onB + ": want both");
                Await.until("every message received", Clients.DEADLINE, () -> received.containsAll(before),
                    () -> "received " + received);

                // B stops and unregisters, or is killed: the producer (its own retries, then its route refresh)
                // and the push consumer go on with A.
                if (kill) {
                    long killed = System.nanoTime();
                    b.kill();
                    Await.until("the name server dropped the killed broker", Duration.ofSeconds(10), () -> {
                        try {
                            return api.getTopicRouteInfoFromNameServer(topic, 3000).getQueueDatas().size() == 1;
                        } catch (Exception e) {
                            return false;
                        }
                    }, () -> "route of " + topic);
                    System.out.printf("Grpc5ClusterTest: %s dropped from the route of %s %d ms after its SIGKILL%n", b.name, topic,
                        (System.nanoTime() - killed) / 1_000_000);
                } else {
                    b.stop();
                }
                List<String> after = new ArrayList<>();
                for (int i = 0; i < 20; i++) {
                    String body = "after-" + i;
                    long end = System.nanoTime() + Clients.DEADLINE.toNanos();
                    while (true) {
                        try {
                            producer.send(Grpc5ProducerTest.message(topic, body, body));
                            break;
                        } catch (Exception e) {
                            if (System.nanoTime() - end > 0) {
                                throw e;
                            }
                        }
                    }
                    after.add(body);
                }
                long onAAfter = stored(api, a, addrA, topic);
                assertTrue(onAAfter - onA >= 20, () -> "stored on A " + onA + " before, " + onAAfter + " after: want the 20 sends");
                Await.until("every message after B " + (kill ? "was killed" : "stopped") + " received", Duration.ofSeconds(120),
                    () -> received.containsAll(after), () -> "received " + received);
            }
        } finally {
            admin.shutdown();
            for (BrokerProcess p : new BrokerProcess[] {b, a}) {
                if (p != null) {
                    p.stop();
                }
            }
            BrokerProcess.deleteTree(dir);
        }
    }
}
