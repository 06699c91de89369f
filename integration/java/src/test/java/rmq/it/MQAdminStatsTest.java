package rmq.it;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The stock stats subcommands (statsAll, brokerConsumeStats, producer) against the broker under test, after a
 * producer sent {@link #MESSAGES} messages and a push consumer consumed them all. The broker samples its stats every
 * 10 s, as the stock one does, so the commands are re-run until the sample that counts the traffic is taken.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MQAdminStatsTest {
    private static final String CLUSTER = "DefaultCluster";
    private static final int MESSAGES = 8;

    private static final String TOPIC = Clients.unique("stats");
    private static final String GROUP = Clients.unique("statscg");
    private static final String PRODUCER_GROUP = Clients.unique("statspg");

    private static String brokerName;
    private static String brokerAddr;
    private static DefaultMQProducer producer;
    private static DefaultMQPushConsumer consumer;
    private static final Inbox INBOX = new Inbox();

    @BeforeAll
    static void produceAndConsume() throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(Clients.namesrv());
        admin.setInstanceName(Clients.unique("stats-lookup"));
        admin.start();
        try {
            ClusterInfo ci = admin.examineBrokerClusterInfo();
            Set<String> names = ci.getClusterAddrTable().get(CLUSTER);
            assertNotNull(names, () -> "no cluster " + CLUSTER);
            brokerName = names.stream().sorted().findFirst().orElseThrow();
            brokerAddr = ci.getBrokerAddrTable().get(brokerName).getBrokerAddrs().get(MixAll.MASTER_ID);
        } finally {
            admin.shutdown();
        }
        MQAdmin.run("updateTopic", "-c", CLUSTER, "-t", TOPIC, "-r", "2", "-w", "2").assertOk();
        Await.until(TOPIC + " routed", Clients.DEADLINE, () -> MQAdmin.run("topicRoute", "-t", TOPIC).out().contains(brokerName),
            () -> "no route");
        producer = Clients.startProducer(PRODUCER_GROUP);
        for (int i = 0; i < MESSAGES; i++) {
            SendResult r = producer.send(new Message(TOPIC, "TagS", ("stats " + i).getBytes(StandardCharsets.UTF_8)));
            assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r::toString);
        }
        consumer = new DefaultMQPushConsumer(GROUP);
        consumer.setNamesrvAddr(Clients.namesrv());
        consumer.setInstanceName(Clients.unique("stats-consumer"));
        consumer.setConsumeFromWhere(org.apache.rocketmq.common.consumer.ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(TOPIC, "*");
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.registerMessageListener(INBOX);
        consumer.start();
        Await.until("all " + MESSAGES + " messages consumed", Clients.DEADLINE,
            () -> INBOX.all().stream().map(m -> m.getMsgId()).distinct().count() >= MESSAGES, INBOX::describe);
    }

    @AfterAll
    static void stopClients() {
        if (consumer != null) {
            consumer.shutdown();
        }
        if (producer != null) {
            producer.shutdown();
        }
    }

    private static List<String[]> rowsWith(MQAdmin.Output out, String... parts) {
        return out.lines().stream().filter(l -> List.of(parts).stream().allMatch(l::contains))
            .map(l -> l.trim().split("\\s+")).collect(Collectors.toList());
    }

    @Test
    @Order(1)
    void statsAll() throws Exception {
        // #Topic #Consumer Group #Accumulation #InTPS #OutTPS #InMsg24Hour #OutMsg24Hour
        MQAdmin.Output out = MQAdmin.runUntil(Clients.DEADLINE, o -> {
            List<String[]> rows = rowsWith(o, TOPIC, GROUP);
            return rows.size() == 1 && rows.get(0).length == 7 && rows.get(0)[2].equals("0")
                && rows.get(0)[5].equals(Integer.toString(MESSAGES)) && rows.get(0)[6].equals(Integer.toString(MESSAGES));
        }, "statsAll", "-t", TOPIC);
        assertTrue(out.out().contains("#InMsg24Hour"), out::toString);
        String[] row = rowsWith(out, TOPIC, GROUP).get(0);
        assertAll(
            () -> assertEquals(Integer.toString(MESSAGES), row[5], () -> "in 24h; " + out),
            () -> assertEquals(Integer.toString(MESSAGES), row[6], () -> "out 24h; " + out),
            () -> assertTrue(row[3].matches("\\d+\\.\\d\\d"), () -> "in TPS; " + out),
            () -> assertTrue(row[4].matches("\\d+\\.\\d\\d"), () -> "out TPS; " + out));
        OracleOutput.write(getClass(), "statsAll",
            String.join("\n", OracleOutput.linesWith(out, "#Topic")) + "\n" + String.join("\n", OracleOutput.linesWith(out, TOPIC)));
    }

    @Test
    @Order(2)
    void brokerConsumeStats() throws Exception {
        Pattern diffTotal = Pattern.compile("Diff Total: (\\d+)");
        MQAdmin.Output out = MQAdmin.runUntil(Clients.DEADLINE, o -> {
            Matcher m = diffTotal.matcher(o.out());
            long consumed = rowsWith(o, TOPIC, GROUP).stream().mapToLong(r -> Long.parseLong(r[5])).sum();
            return m.find() && consumed == MESSAGES;
        }, "brokerConsumeStats", "-b", brokerAddr);
        assertTrue(out.out().contains("#Consumer Offset"), out::toString);
        for (String[] r : rowsWith(out, TOPIC, GROUP)) {
            assertAll(
                () -> assertEquals(brokerName, r[2], out::toString),
                () -> assertEquals(r[4], r[5], () -> "broker offset = consumer offset; " + out),
                () -> assertEquals("0", r[6], () -> "diff; " + out),
                () -> assertTrue(r[7].matches("\\d{4}-\\d\\d-\\d\\d"), () -> "last time; " + out));
        }
        // Only this test's rows (the broker has every other test's groups too), sorted: the tool prints a hash map.
        OracleOutput.write(getClass(), "brokerConsumeStats", String.join("\n", OracleOutput.linesWith(out, "#Topic"))
            + "\n" + OracleOutput.linesWith(out, TOPIC, GROUP).stream().sorted().collect(Collectors.joining("\n")));
    }

    @Test
    @Order(3)
    void producer() throws Exception {
        String prefix = "producer group (" + PRODUCER_GROUP + ") instance : clientId=";
        MQAdmin.Output out = MQAdmin.runUntil(Clients.DEADLINE, o -> o.out().contains(prefix), "producer", "-b", brokerAddr);
        String line = out.lines().stream().filter(l -> l.startsWith(prefix)).findFirst().orElseThrow();
        assertTrue(line.contains("language=JAVA") && line.matches(".*remoteIP=/127\\.0\\.0\\.1:\\d+,.*")
            && line.matches(".*lastUpdateTimestamp=\\d{13}$"), () -> "producer line: " + line);
        OracleOutput.write(getClass(), "producer", line);
    }
}
