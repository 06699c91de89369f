package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Test;

/**
 * The producer's retry-on-error path: a topic spread over two brokers keeps taking sends when one broker dies
 * (SIGKILL: the name server still routes to it, so sends to its queues fail to connect and are retried on the other
 * broker), and the restarted broker takes sends again with what it stored before the crash intact.
 */
class ProducerRetryTest {

    @Test
    void sendsSurviveABrokerCrashAndReachItAgainAfterRestart() throws Exception {
        assumeTrue(BrokerProcess.launcher() != null, "rmq.brokerLauncher is not set (run.sh sets it)");
        String topic = Clients.unique("retry");
        Path dir = Files.createTempDirectory("rmq-it-broker-b");
        BrokerProcess b = new BrokerProcess(Clients.unique("retry_b"), Clients.unique("RetryCluster"), dir.resolve("store"));
        b.start();
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(Clients.namesrv());
        admin.setInstanceName(Clients.unique("retry-admin"));
        admin.start();
        DefaultMQProducer producer = null;
        try {
            ClusterInfo ci = admin.examineBrokerClusterInfo();
            String brokerA = ci.getClusterAddrTable().get("DefaultCluster").stream().sorted().findFirst().orElseThrow();
            String addrA = ci.getBrokerAddrTable().get(brokerA).getBrokerAddrs().get(MixAll.MASTER_ID);
            TopicConfig tc = new TopicConfig(topic, 2, 2, 6);
            admin.createAndUpdateTopicConfig(addrA, tc);
            admin.createAndUpdateTopicConfig(b.addr(), tc);

            producer = new DefaultMQProducer(Clients.unique("retrypg"));
            producer.setNamesrvAddr(Clients.namesrv());
            producer.setInstanceName(Clients.unique("retry-producer"));
            producer.setSendMsgTimeout(10_000);
            producer.setRetryTimesWhenSendFailed(2);
            producer.setPollNameServerInterval(1000);
            producer.start();
            DefaultMQProducer p = producer;
            AtomicReference<Object> route = new AtomicReference<>();
            Await.until("a route to both brokers", Clients.DEADLINE, () -> brokersOf(p, topic, route).size() == 2, () -> String.valueOf(route.get()));

            Map<String, Integer> before = sendAll(producer, topic, 8, "before");
            assertEquals(Set.of(brokerA, b.name), before.keySet(), "round robin reaches both brokers: " + before);

            b.kill();
            Map<String, Integer> during = sendAll(producer, topic, 8, "during");
            assertEquals(Map.of(brokerA, 8), during, "with " + b.name + " down every send is retried on " + brokerA);

            b.start();
            AtomicReference<Object> last = new AtomicReference<>();
            Await.until("a send to reach the restarted " + b.name, Clients.DEADLINE, () -> {
                try {
                    SendResult r = p.send(new Message(topic, "TagR", "after".getBytes(StandardCharsets.UTF_8)));
                    last.set(r);
                    return r.getSendStatus() == SendStatus.SEND_OK && r.getMessageQueue().getBrokerName().equals(b.name);
                } catch (Exception e) {
                    last.set(e);
                    return false;
                }
            }, () -> "last send: " + last.get());

            long stored = 0;
            for (MessageQueue mq : producer.fetchPublishMessageQueues(topic)) {
                if (mq.getBrokerName().equals(b.name)) {
                    stored += producer.maxOffset(mq);
                }
            }
            long storedOnB = stored;
            assertTrue(storedOnB >= before.get(b.name) + 1, () -> b.name + " holds " + (before.get(b.name) + 1)
                + " messages (before the crash + the one after), max offsets say " + storedOnB);
        } finally {
            if (producer != null) {
                producer.shutdown();
            }
            admin.shutdown();
            b.stop();
            BrokerProcess.deleteTree(dir);
        }
    }

    private static Set<String> brokersOf(DefaultMQProducer p, String topic, AtomicReference<Object> route) {
        try {
            List<MessageQueue> mqs = p.fetchPublishMessageQueues(topic);
            route.set(mqs);
            return mqs.stream().map(MessageQueue::getBrokerName).collect(Collectors.toSet());
        } catch (Exception e) {
            route.set(e);
            return Set.of();
        }
    }

    /** Sends n messages with the default queue selection; counts them per broker. */
    private static Map<String, Integer> sendAll(DefaultMQProducer p, String topic, int n, String what) throws Exception {
        Map<String, Integer> perBroker = new TreeMap<>();
        for (int i = 0; i < n; i++) {
            SendResult r = p.send(new Message(topic, "TagR", (what + " " + i).getBytes(StandardCharsets.UTF_8)));
            assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r::toString);
            perBroker.merge(r.getMessageQueue().getBrokerName(), 1, Integer::sum);
        }
        return perBroker;
    }
}
