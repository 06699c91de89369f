package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The 4.9.8 client with {@code setUseTLS(true)} (the {@code -Dtls.enable=true} switch): it trusts any server
 * certificate by default ({@code tls.test.mode.enable=true}), so the self-signed certificate the broker makes at start
 * is enough. The broker of run.sh runs in the stock default mode, permissive: TLS and plaintext clients share its
 * port. A second broker in enforcing mode refuses plaintext clients.
 */
class TlsTest {

    private static DefaultMQProducer producer(boolean tls) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(Clients.unique("tlspg"));
        p.setNamesrvAddr(Clients.namesrv());
        p.setInstanceName(Clients.unique("tls-producer"));
        p.setUseTLS(tls);
        p.setSendMsgTimeout(10_000);
        p.start();
        return p;
    }

    @Test
    void tlsAndPlaintextClientsShareThePermissivePort() throws Exception {
        String topic = Clients.unique("tls");
        DefaultMQProducer secure = producer(true);
        DefaultMQProducer plain = producer(false);
        Set<String> sent = new HashSet<>();
        try {
            for (int i = 0; i < 20; i++) {
                DefaultMQProducer p = i % 2 == 0 ? secure : plain;
                SendResult r = p.send(new Message(topic, "T", ("tls " + i).getBytes(StandardCharsets.UTF_8)));
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), () -> "send result " + r);
                sent.add(r.getMsgId());
            }
        } finally {
            secure.shutdown();
            plain.shutdown();
        }
        Inbox inbox = new Inbox();
        DefaultMQPushConsumer consumer = Clients.pushConsumer(topic, "*", 2);
        consumer.setUseTLS(true);
        consumer.registerMessageListener(inbox);
        consumer.start();
        try {
            Await.until("20 messages over TLS", Clients.DEADLINE,
                () -> sent.stream().allMatch(id -> inbox.has(m -> id.equals(m.getMsgId()))), inbox::describe);
        } finally {
            consumer.shutdown();
        }
    }

    // Under the first header type only (run.sh): the plaintext client waits out its send timeouts; TLS does not
    // depend on the header type.
    @Test
    @Tag("one-header-type")
    void enforcingBrokerRefusesPlaintextClients() throws Exception {
        assumeTrue(BrokerProcess.launcher() != null, "rmq.brokerLauncher is not set (run.sh sets it)");
        String topic = Clients.unique("tlsenf");
        Path dir = Files.createTempDirectory("rmq-it-broker-tls");
        BrokerProcess b = new BrokerProcess(Clients.unique("tls_b"), Clients.unique("TlsCluster"), dir.resolve("store"));
        // rmq reads the mode from the broker's config file, the Java broker from a system property.
        b.env.put("RMQ_BROKER_EXTRA_CONF", "tls.server.mode=enforcing");
        b.env.put("RMQ_BROKER_JVM_PROPS", "-Dtls.server.mode=enforcing");
        b.start();
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(Clients.namesrv());
        admin.setInstanceName(Clients.unique("tls-admin"));
        admin.setUseTLS(true);
        admin.start();
        DefaultMQProducer secure = null;
        DefaultMQProducer plain = null;
        try {
            admin.createAndUpdateTopicConfig(b.addr(), new TopicConfig(topic, 2, 2, 6));
            secure = producer(true);
            DefaultMQProducer s = secure;
            AtomicReference<Object> last = new AtomicReference<>();
            Await.until("a TLS send to the enforcing broker", Clients.DEADLINE, () -> {
                try {
                    SendResult r = s.send(new Message(topic, "T", "secure".getBytes(StandardCharsets.UTF_8)));
                    last.set(r);
                    return r.getSendStatus() == SendStatus.SEND_OK && r.getMessageQueue().getBrokerName().equals(b.name);
                } catch (Exception e) {
                    last.set(e);
                    return false;
                }
            }, () -> String.valueOf(last.get()));

            plain = producer(false);
            plain.setSendMsgTimeout(3_000);
            plain.setRetryTimesWhenSendFailed(0);
            DefaultMQProducer p = plain;
            // The route comes from the (permissive) name server; the broker closes the plaintext connection.
            Exception e = assertThrows(Exception.class,
                () -> p.send(new Message(topic, "T", "plain".getBytes(StandardCharsets.UTF_8))));
            assertTrue(b.isAlive(), "the broker survives a plaintext client: " + e);
        } finally {
            if (secure != null) {
                secure.shutdown();
            }
            if (plain != null) {
                plain.shutdown();
            }
            admin.shutdown();
            b.stop();
            BrokerProcess.deleteTree(dir);
        }
    }
}
