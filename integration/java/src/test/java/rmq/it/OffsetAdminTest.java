package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.admin.ConsumeStats;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.body.Connection;
import org.apache.rocketmq.common.protocol.body.ConsumerConnection;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The offset and config subcommands of the stock mqadmin against a live push consumer: resetOffsetByTime
 * (INVOKE_BROKER_TO_RESET_OFFSET; the client re-consumes), the consumer status through the broker, consumerStatus, cloneGroupOffset,
 * queryCq, and getNamesrvConfig / updateNamesrvConfig on the name server.
 */
// Under the first header type only (run.sh): the stock client pauses 10 s in every resetOffset, and the header
// fields of the offset commands go through the same codec as every other request's.
@Tag("one-header-type")
class OffsetAdminTest {
    private static final int MESSAGES = 4;

    @Test
    void offsetCommands() throws Exception {
        String topic = Clients.unique("offsets");
        MQAdmin.run("updateTopic", "-c", "DefaultCluster", "-t", topic, "-r", "2", "-w", "2").assertOk();
        DefaultMQProducer producer = Clients.startProducer();
        DefaultMQPushConsumer consumer = Clients.pushConsumer(topic, "*", 2);
        String group = consumer.getConsumerGroup();
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(Clients.namesrv());
        admin.setInstanceName(Clients.unique("offsets-admin"));
        Inbox inbox = new Inbox();
        try {
            Await.until("the route of " + topic, Clients.DEADLINE,
                () -> MQAdmin.run("topicRoute", "-t", topic).ok(), () -> "");
            long before = System.currentTimeMillis() - 60_000;
            List<SendResult> sent = new ArrayList<>();
            for (int i = 0; i < MESSAGES; i++) {
                sent.add(producer.send(new Message(topic, ("m" + i).getBytes(StandardCharsets.UTF_8))));
            }
            consumer.registerMessageListener(inbox);
            consumer.start();
            admin.start();
            Await.until("every message consumed", Clients.DEADLINE, () -> inbox.all().size() >= MESSAGES, inbox::describe);
            // The consumer commits its offsets every second (Clients.pushConsumer); wait until the broker holds them all.
            Await.until("the offsets committed", Clients.DEADLINE, () -> {
                try {
                    ConsumeStats cs = admin.examineConsumeStats(group);
                    return cs.computeTotalDiff() == 0
                        && cs.getOffsetTable().keySet().stream().filter(mq -> mq.getTopic().equals(topic)).count() == 2;
                } catch (Exception e) {
                    return false;
                }
            }, () -> {
                try {
                    return admin.examineConsumeStats(group).getOffsetTable().toString();
                } catch (Exception e) {
                    return e.toString();
                }
            });

            // resetOffsetByTime to before the first message: the broker pushes the offsets to the client, which
            // consumes everything again.
            MQAdmin.Output reset = MQAdmin.run("resetOffsetByTime", "-g", group, "-t", topic, "-s", Long.toString(before))
                .assertOk();
            assertTrue(reset.out().contains("rollback consumer offset by specified group[" + group + "]"), reset::toString);
            assertTrue(reset.out().contains("#brokerName") && reset.out().contains("#offset"), reset::toString);
            OracleOutput.write(getClass(), "resetOffsetByTime", sorted(reset));
            Await.until("every message consumed twice", Clients.DEADLINE,
                () -> inbox.all().size() >= 2 * MESSAGES, inbox::describe);

            // INVOKE_BROKER_TO_GET_CONSUMER_STATUS asks the client through the broker (mqadmin 4.9.8 does not
            // register its getConsumerStatus command; the admin API it would call is used directly).
            ConsumerConnection cc = admin.examineConsumerConnectionInfo(group);
            String clientId = cc.getConnectionSet().stream().map(Connection::getClientId).findFirst().orElseThrow();
            Map<String, Map<MessageQueue, Long>> status = admin.getConsumeStatus(topic, group, "");
            assertEquals(Set.of(clientId), status.keySet(), status::toString);
            assertEquals(2, status.get(clientId).size(), status::toString);

            // consumerStatus -i shows the client's running info.
            MQAdmin.Output running = MQAdmin.run("consumerStatus", "-g", group, "-i", clientId).assertOk();
            assertTrue(running.out().contains(topic), running::toString);
            // The running info is the client's (the broker relays it): the section headers and the subscriptions.
            OracleOutput.write(getClass(), "consumerStatus", running.lines().stream()
                .filter(l -> l.startsWith("#") || l.contains(topic)).collect(Collectors.joining("\n")));

            // cloneGroupOffset gives another group the same offsets.
            String clone = Clients.unique("clonecg");
            MQAdmin.Output cloned = MQAdmin.run("cloneGroupOffset", "-s", group, "-d", clone, "-t", topic, "-o", "true").assertOk();
            assertTrue(cloned.out().contains("clone group offset success."), cloned::toString);
            OracleOutput.write(getClass(), "cloneGroupOffset", cloned.out());

            // queryCq lists the consume-queue units of queue 0.
            MQAdmin.Output cq = MQAdmin.run("queryCq", "-t", topic, "-q", Integer.toString(sent.get(0).getMessageQueue().getQueueId()),
                "-i", "0", "-c", "1").assertOk();
            assertTrue(cq.out().contains("Queue data:") && cq.out().contains("physicOffset="), cq::toString);
            // The commitlog position and the record size (it holds the topic name) differ with other traffic.
            OracleOutput.write(getClass(), "queryCq", cq.out().replaceAll("physicOffset=\\d+", "physicOffset=N")
                .replaceAll("physicSize=\\d+", "physicSize=N"));

            // Offline: resetOffsetByTime falls back on rewriting the broker's offsets.
            consumer.shutdown();
            consumer = null;
            Await.until(group + " offline", Clients.DEADLINE, () -> {
                try {
                    return admin.examineConsumerConnectionInfo(group).getConnectionSet().isEmpty();
                } catch (Exception e) {
                    return true;
                }
            }, () -> "");
            MQAdmin.Output offline = MQAdmin.run("resetOffsetByTime", "-g", group, "-t", topic, "-s", Long.toString(before))
                .assertOk();
            OracleOutput.write(getClass(), "resetOffsetByTimeOffline", sorted(offline));
            ConsumeStats after = admin.examineConsumeStats(group);
            assertEquals(MESSAGES, after.computeTotalDiff(), () -> "offsets after the offline reset: " + after.getOffsetTable());
        } finally {
            if (consumer != null) {
                consumer.shutdown();
            }
            producer.shutdown();
            admin.shutdown();
        }
    }

    /** A print-out whose lines come from a hash map, sorted. */
    private static String sorted(MQAdmin.Output out) {
        return out.lines().stream().sorted().collect(Collectors.joining("\n"));
    }

    @Test
    void namesrvConfig() {
        MQAdmin.Output get = MQAdmin.run("getNamesrvConfig").assertOk();
        assertTrue(get.out().contains("orderMessageEnable"), get::toString);
        // The stock keys rmq's name server has, with their values (paths and the port masked). rmq reports no
        // rocketmqHome, configStorePath, productEnvName, clusterTest nor Netty thread-pool and buffer keys, and
        // reports its own bindAddress, serverMax* and tls.* keys: a deliberate difference (integration/java/README.md).
        List<String> shared = List.of("kvConfigPath", "listenPort", "orderMessageEnable", "serverChannelMaxIdleTimeSeconds");
        OracleOutput.write(getClass(), "getNamesrvConfig", get.lines().stream()
            .filter(l -> shared.contains(l.replaceAll("\\s*=.*", "").trim()))
            .map(l -> l.matches(".*=\\s*/.*") ? l.replaceAll("=.*", "= <path>") : l)
            .map(l -> l.startsWith("listenPort") ? "listenPort = <port>" : l).sorted()
            .collect(Collectors.joining("\n")));
        // Set to the value it has: the other tests see no change.
        String current = get.lines().stream().filter(l -> l.startsWith("orderMessageEnable")).findFirst().orElseThrow()
            .replaceAll(".*=\\s*", "").trim();
        MQAdmin.Output update = MQAdmin.run("updateNamesrvConfig", "-k", "orderMessageEnable", "-v", current).assertOk();
        assertTrue(update.out().contains("update name server config success!"), update::toString);
    }
}
