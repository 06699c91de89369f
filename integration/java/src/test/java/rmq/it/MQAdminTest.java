package rmq.it;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Every mqadmin subcommand the ops scripts use, run through the stock tool against the broker under test: one topic
 * goes through create, route, send, status, consume, query and delete; a live producer and push consumer group make
 * the connection and progress commands meaningful. Assertions pin the columns and values the stock broker gives.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class MQAdminTest {
    private static final String CLUSTER = "DefaultCluster";
    private static final int MESSAGES = 6;

    private static final String TOPIC = Clients.unique("admin");
    private static final String GROUP = Clients.unique("admincg");
    private static final String PRODUCER_GROUP = Clients.unique("adminpg");

    private static String brokerName;
    private static String brokerAddr;
    private static DefaultMQProducer producer;
    private static DefaultMQPushConsumer consumer;
    private static final Inbox INBOX = new Inbox();
    private static final List<SendResult> SENT = new ArrayList<>();

    /**
     * Where the stock queryMsgById and queryMsgByUniqueKey write message bodies: a fixed path
     * (QueryMsgByIdSubCommand, QueryMsgByUniqueKeySubCommand), not java.io.tmpdir. Removed after the class
     * unless it was there before.
     */
    private static final Path BODY_ROOT = Path.of("/tmp/rocketmq");
    private static boolean bodyRootExisted;

    @BeforeAll
    static void findBroker() throws Exception {
        bodyRootExisted = Files.exists(BODY_ROOT);
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(Clients.namesrv());
        admin.setInstanceName(Clients.unique("admin-lookup"));
        admin.start();
        try {
            ClusterInfo ci = admin.examineBrokerClusterInfo();
            Set<String> names = ci.getClusterAddrTable().get(CLUSTER);
            assertNotNull(names, () -> "no cluster " + CLUSTER + " in " + ci.getClusterAddrTable());
            brokerName = names.stream().sorted().findFirst().orElseThrow();
            BrokerData bd = ci.getBrokerAddrTable().get(brokerName);
            brokerAddr = bd.getBrokerAddrs().get(MixAll.MASTER_ID);
            assertNotNull(brokerAddr, () -> "no master address for " + brokerName);
        } finally {
            admin.shutdown();
        }
    }

    @AfterAll
    static void stopClients() throws IOException {
        if (consumer != null) {
            consumer.shutdown();
        }
        if (producer != null) {
            producer.shutdown();
        }
        if (!bodyRootExisted && Files.exists(BODY_ROOT)) {
            try (var paths = Files.walk(BODY_ROOT)) {
                for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
    }

    /** The first line of out that contains every part, or fails. */
    private static String lineWith(MQAdmin.Output out, String... parts) {
        return out.lines().stream().filter(l -> List.of(parts).stream().allMatch(l::contains)).findFirst()
            .orElseThrow(() -> new AssertionError("no line with " + List.of(parts) + " in\n" + out));
    }

    /** The whitespace-separated columns of a table row. */
    private static String[] columns(String line) {
        return line.trim().split("\\s+");
    }

    @Test
    @Order(1)
    void clusterList() {
        MQAdmin.Output out = MQAdmin.run("clusterList").assertOk();
        String header = lineWith(out, "#Cluster Name");
        for (String col : List.of("#Cluster Name", "#Broker Name", "#BID", "#Addr", "#Version", "#InTPS(LOAD)",
            "#OutTPS(LOAD)", "#PCWait(ms)", "#Hour", "#SPACE")) {
            assertTrue(header.contains(col), () -> "header lacks " + col + ": " + header);
        }
        String[] row = columns(lineWith(out, CLUSTER, brokerName, brokerAddr));
        assertAll(
            () -> assertEquals("0", row[2], "BID"),
            () -> assertTrue(row[4].startsWith("V4_"), "version " + row[4]),
            () -> assertTrue(row[5].matches("\\d+\\.\\d\\d\\(\\d+,\\d+ms\\)"), "InTPS(LOAD) " + row[5]),
            () -> assertTrue(row[6].matches("\\d+\\.\\d\\d\\(\\d+,\\d+ms\\)"), "OutTPS(LOAD) " + row[6]),
            () -> assertTrue(Double.parseDouble(row[9]) >= 0 && Double.parseDouble(row[9]) <= 1, "SPACE " + row[9]));
    }

    @Test
    @Order(2)
    void updateTopic() {
        MQAdmin.Output out = MQAdmin.run("updateTopic", "-c", CLUSTER, "-t", TOPIC, "-r", "4", "-w", "4").assertOk();
        assertTrue(out.out().contains("create topic to " + brokerAddr + " success."), out::toString);
        assertTrue(out.out().contains("topicName=" + TOPIC) && out.out().contains("readQueueNums=4")
            && out.out().contains("writeQueueNums=4"), out::toString);
    }

    @Test
    @Order(3)
    void topicList() throws Exception {
        // The broker registers the new topic with the name server asynchronously.
        Await.until(TOPIC + " in topicList", Clients.DEADLINE,
            () -> MQAdmin.run("topicList").assertOk().lines().contains(TOPIC), () -> "");
        MQAdmin.Output withCluster = MQAdmin.run("topicList", "-c").assertOk();
        lineWith(withCluster, "#Cluster Name", "#Topic", "#Consumer Group");
        String[] row = columns(lineWith(withCluster, TOPIC));
        assertEquals(CLUSTER, row[0], withCluster::toString);
    }

    @Test
    @Order(4)
    void topicRoute() {
        MQAdmin.Output out = MQAdmin.run("topicRoute", "-t", TOPIC).assertOk();
        String json = out.out().replaceAll("\\s", "");
        assertAll(
            () -> assertTrue(json.contains("\"brokerName\":\"" + brokerName + "\""), json),
            () -> assertTrue(json.contains("\"readQueueNums\":4"), json),
            () -> assertTrue(json.contains("\"writeQueueNums\":4"), json),
            () -> assertTrue(json.contains("\"perm\":6"), json),
            () -> assertTrue(json.contains(brokerAddr), json));
        MQAdmin.Output list = MQAdmin.run("topicRoute", "-t", TOPIC, "-l").assertOk();
        String[] row = columns(lineWith(list, brokerName));
        assertEquals(CLUSTER, row[0], list::toString);
        String[] total = columns(lineWith(list, "Total:"));
        assertEquals(List.of("Total:", "1", "4", "4"), List.of(total), list::toString);
    }

    @Test
    @Order(5)
    void sendMessage() throws Exception {
        MQAdmin.Output out = MQAdmin.run("sendMessage", "-t", TOPIC, "-p", "from mqadmin", "-k", "admin-key-0", "-c", "TagAdmin")
            .assertOk();
        lineWith(out, "#Broker Name", "#QID", "#Send Result", "#MsgId");
        String[] row = columns(lineWith(out, "SEND_OK"));
        assertEquals(brokerName, row[0], out::toString);
        // The client id (UNIQ_KEY) embeds the client's address: 32 hex digits for IPv4, 56 for IPv6.
        assertTrue(row[3].matches("[0-9A-F]{32}|[0-9A-F]{56}"), () -> "msgId " + row[3]);

        // The rest comes from a long-lived producer, so producerConnection has a connection to list.
        producer = Clients.startProducer(PRODUCER_GROUP);
        for (int i = 1; i < MESSAGES; i++) {
            Message m = new Message(TOPIC, i % 2 == 0 ? "TagA" : "TagB", "admin-key-" + i,
                ("admin body " + i).getBytes(StandardCharsets.UTF_8));
            SendResult r = producer.send(m);
            assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r::toString);
            SENT.add(r);
        }
    }

    @Test
    @Order(6)
    void topicStatus() throws Exception {
        // A broker indexes a stored message asynchronously (Java's ReputMessageService, rmq's dispatcher), so the
        // queues' max offsets may trail a send that was just acknowledged: poll until all six are counted.
        MQAdmin.Output[] last = new MQAdmin.Output[1];
        Await.until("max offsets of " + TOPIC + " summing to " + MESSAGES, Clients.DEADLINE, () -> {
            last[0] = MQAdmin.run("topicStatus", "-t", TOPIC).assertOk();
            return last[0].lines().stream().filter(l -> l.startsWith(brokerName + " ")).map(MQAdminTest::columns)
                .mapToLong(r -> Long.parseLong(r[3])).sum() >= MESSAGES;
        }, () -> String.valueOf(last[0]));
        MQAdmin.Output out = last[0];
        String header = lineWith(out, "#Broker Name");
        assertTrue(header.contains("#Broker Name") && header.contains("#QID") && header.contains("#Min Offset")
            && header.contains("#Max Offset") && header.contains("#Last Updated"), out::toString);
        List<String[]> rows = out.lines().stream().filter(l -> l.startsWith(brokerName + " ")).map(MQAdminTest::columns)
            .collect(Collectors.toList());
        assertEquals(4, rows.size(), out::toString);
        long total = 0;
        for (String[] r : rows) {
            assertEquals(brokerName, r[0], out::toString);
            assertEquals("0", r[2], () -> "min offset; " + out);
            total += Long.parseLong(r[3]);
            if (Long.parseLong(r[3]) > 0) {
                assertTrue(r.length >= 5 && r[4].matches("\\d{4}-\\d\\d-\\d\\d"), () -> "last updated; " + out);
            }
        }
        assertEquals(MESSAGES, total, () -> "sum of max offsets; " + out);
    }

    @Test
    @Order(7)
    void updateSubGroup() {
        MQAdmin.Output out = MQAdmin.run("updateSubGroup", "-c", CLUSTER, "-g", GROUP, "-r", "3").assertOk();
        assertTrue(out.out().contains("create subscription group to " + brokerAddr + " success."), out::toString);
        assertTrue(out.out().contains("groupName=" + GROUP) && out.out().contains("retryMaxTimes=3"), out::toString);
    }

    @Test
    @Order(8)
    void brokerStatus() {
        MQAdmin.Output out = MQAdmin.run("brokerStatus", "-b", brokerAddr).assertOk();
        Map<String, String> kv = out.lines().stream().filter(l -> l.contains(": "))
            .collect(Collectors.toMap(l -> l.substring(0, l.indexOf(':')).trim(), l -> l.substring(l.indexOf(':') + 1).trim(),
                (a, b) -> a));
        for (String key : List.of("brokerVersionDesc", "putTps", "getTransferedTps", "msgPutTotalTodayNow",
            "msgGetTotalTodayNow", "commitLogDiskRatio", "commitLogMaxOffset", "commitLogMinOffset", "earliestMessageTimeStamp",
            "dispatchBehindBytes", "runtime")) {
            assertTrue(kv.containsKey(key), () -> "brokerStatus lacks " + key + "\n" + out);
        }
        assertTrue(Long.parseLong(kv.get("commitLogMaxOffset")) > 0, out::toString);
        assertTrue(Long.parseLong(kv.get("msgPutTotalTodayNow")) >= MESSAGES, out::toString);
    }

    @Test
    @Order(9)
    void startConsumerGroup() throws Exception {
        consumer = new DefaultMQPushConsumer(GROUP);
        consumer.setNamesrvAddr(Clients.namesrv());
        consumer.setInstanceName(Clients.unique("admin-consumer"));
        consumer.setConsumeFromWhere(org.apache.rocketmq.common.consumer.ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(TOPIC, "*");
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.registerMessageListener(INBOX);
        consumer.start();
        Await.until("all " + MESSAGES + " messages consumed", Clients.DEADLINE,
            () -> INBOX.all().stream().map(m -> m.getMsgId()).distinct().count() >= MESSAGES, INBOX::describe);
    }

    @Test
    @Order(10)
    void consumerConnection() {
        MQAdmin.Output out = MQAdmin.run("consumerConnection", "-g", GROUP).assertOk();
        lineWith(out, "#ClientId", "#ClientAddr", "#Language", "#Version");
        String[] row = columns(lineWith(out, "JAVA"));
        assertAll(
            () -> assertTrue(row[0].contains("@"), () -> "clientId " + row[0]),
            () -> assertTrue(row[1].startsWith("127.0.0.1:"), () -> "clientAddr " + row[1]),
            () -> assertEquals("JAVA", row[2], () -> "language " + row[2]),
            () -> assertTrue(row[3].startsWith("V4_"), () -> "version " + row[3]),
            () -> assertTrue(out.out().contains("Below is subscription:"), out::toString),
            () -> assertEquals(List.of(TOPIC, "*"), List.of(columns(lineWith(out, TOPIC))), out::toString),
            () -> assertTrue(out.out().contains("ConsumeType: CONSUME_PASSIVELY"), out::toString),
            () -> assertTrue(out.out().contains("MessageModel: CLUSTERING"), out::toString),
            () -> assertTrue(out.out().contains("ConsumeFromWhere: CONSUME_FROM_FIRST_OFFSET"), out::toString));
    }

    @Test
    @Order(11)
    void consumerProgress() throws Exception {
        // Offsets reach the broker with the consumer's next commit (every second here).
        Pattern diffTotal = Pattern.compile("Diff Total: (\\d+)");
        MQAdmin.runUntil(Clients.DEADLINE, o -> {
            Matcher m = diffTotal.matcher(o.out());
            return m.find() && m.group(1).equals("0");
        }, "consumerProgress", "-g", GROUP);
        MQAdmin.Output out = MQAdmin.runUntil(Clients.DEADLINE, o -> o.out().contains("#Topic"), "consumerProgress", "-g", GROUP,
            "-s", "true");
        String header = lineWith(out, "#Topic");
        for (String col : List.of("#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Client IP", "#Diff",
            "#LastTime")) {
            assertTrue(header.contains(col), () -> "header lacks " + col + ": " + out);
        }
        List<String[]> rows = out.lines().stream().filter(l -> l.startsWith(TOPIC)).map(MQAdminTest::columns)
            .collect(Collectors.toList());
        assertEquals(4, rows.size(), out::toString);
        long consumed = 0;
        for (String[] r : rows) {
            assertAll(
                () -> assertEquals(brokerName, r[1], out::toString),
                () -> assertEquals(r[3], r[4], () -> "broker offset = consumer offset; " + out),
                () -> assertTrue(r[5].matches("\\d+\\.\\d+\\.\\d+\\.\\d+"), () -> "client ip (from the consumer's running info); " + out),
                () -> assertEquals("0", r[6], () -> "diff; " + out));
            consumed += Long.parseLong(r[4]);
        }
        assertEquals(MESSAGES, consumed, out::toString);
        assertTrue(out.out().contains("Consume TPS:"), out::toString);

        MQAdmin.Output all = MQAdmin.runUntil(Clients.DEADLINE, o -> o.out().contains(GROUP), "consumerProgress");
        lineWith(all, "#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total");
        String[] row = columns(lineWith(all, GROUP));
        assertAll(
            () -> assertEquals("1", row[1], () -> "client count; " + all),
            () -> assertEquals("PUSH", row[3], () -> "type; " + all),
            () -> assertEquals("CLUSTERING", row[4], () -> "model; " + all),
            () -> assertEquals("0", row[row.length - 1], () -> "diff total; " + all));
    }

    @Test
    @Order(12)
    void producerConnection() throws InterruptedException {
        MQAdmin.Output out = MQAdmin.runUntil(Clients.DEADLINE, o -> o.out().contains("0001"), "producerConnection", "-g",
            PRODUCER_GROUP, "-t", TOPIC);
        String row = lineWith(out, "0001");
        String[] cols = columns(row);
        assertAll(
            () -> assertTrue(cols[1].contains("@"), () -> "clientId; " + out),
            () -> assertTrue(cols[2].startsWith("127.0.0.1:"), () -> "address; " + out),
            () -> assertEquals("JAVA", cols[3], out::toString),
            () -> assertTrue(cols[4].startsWith("V4_"), out::toString));
    }

    /** The "Key: value" lines of a queryMsgById / queryMsgByUniqueKey print-out. */
    private static Map<String, String> messageFields(MQAdmin.Output out) {
        return out.lines().stream().filter(l -> l.matches("^[A-Z][A-Za-z ]+:\\s.*"))
            .collect(Collectors.toMap(l -> l.substring(0, l.indexOf(':')), l -> l.substring(l.indexOf(':') + 1).trim(),
                (a, b) -> a));
    }

    @Test
    @Order(13)
    void queryMsgById() throws InterruptedException {
        SendResult sent = SENT.get(1);
        MQAdmin.Output out = MQAdmin.runUntil(Clients.DEADLINE, o -> o.out().contains("CONSUMED") && o.out().contains(GROUP),
            "queryMsgById", "-i", sent.getOffsetMsgId());
        Map<String, String> f = messageFields(out);
        assertAll(
            () -> assertEquals(TOPIC, f.get("Topic"), out::toString),
            () -> assertEquals("[TagA]", f.get("Tags"), out::toString),
            () -> assertEquals("[admin-key-2]", f.get("Keys"), out::toString),
            () -> assertEquals(String.valueOf(sent.getMessageQueue().getQueueId()), f.get("Queue ID"), out::toString),
            () -> assertEquals(String.valueOf(sent.getQueueOffset()), f.get("Queue Offset"), out::toString),
            () -> assertEquals(brokerAddr, f.get("Store Host"), out::toString),
            () -> assertTrue(out.out().contains("CONSUMED") && out.out().contains(GROUP),
                () -> "message track of " + GROUP + "; " + out));
    }

    @Test
    @Order(14)
    void queryMsgByKey() {
        MQAdmin.Output out = MQAdmin.run("queryMsgByKey", "-t", TOPIC, "-k", "admin-key-3").assertOk();
        lineWith(out, "#Message ID", "#QID", "#Offset");
        SendResult sent = SENT.get(2);
        String[] row = columns(lineWith(out, sent.getMsgId()));
        assertEquals(List.of(sent.getMsgId(), String.valueOf(sent.getMessageQueue().getQueueId()),
            String.valueOf(sent.getQueueOffset())), List.of(row), out::toString);
        assertEquals(1, out.lines().stream().filter(l -> l.matches("^[0-9A-F]{32,56}\\s.*")).count(), () -> "exactly one match; " + out);
    }

    @Test
    @Order(15)
    void queryMsgByUniqueKey() {
        SendResult sent = SENT.get(3);
        MQAdmin.Output out = MQAdmin.run("queryMsgByUniqueKey", "-t", TOPIC, "-i", sent.getMsgId()).assertOk();
        Map<String, String> f = messageFields(out);
        assertAll(
            () -> assertEquals(TOPIC, f.get("Topic"), out::toString),
            () -> assertEquals("[admin-key-4]", f.get("Keys"), out::toString),
            () -> assertEquals(String.valueOf(sent.getQueueOffset()), f.get("Queue Offset"), out::toString),
            () -> assertTrue(f.get("Properties").contains("UNIQ_KEY=" + sent.getMsgId()), out::toString));
    }

    @Test
    @Order(16)
    void consumeMessage() {
        MQAdmin.Output out = MQAdmin.run("consumeMessage", "-t", TOPIC, "-c", "64").assertOk();
        for (int i = 1; i < MESSAGES; i++) {
            String body = "admin body " + i;
            assertTrue(out.out().contains(body), () -> "missing " + body + "; " + out);
        }
        assertTrue(out.out().contains("from mqadmin"), out::toString);
        assertTrue(out.out().contains("Consume ok"), out::toString);
    }

    @Test
    @Order(17)
    void printMsg() {
        MQAdmin.Output out = MQAdmin.run("printMsg", "-t", TOPIC, "-d", "true").assertOk();
        assertEquals(4, out.lines().stream().filter(l -> l.startsWith("minOffset=0, maxOffset=")).count(), out::toString);
        for (SendResult r : SENT) {
            assertTrue(out.out().contains("MSGID: " + r.getMsgId()), () -> "missing " + r.getMsgId() + "; " + out);
        }
        assertTrue(out.out().contains("BODY: admin body 1"), out::toString);
    }

    @Test
    @Order(18)
    void getAndUpdateBrokerConfig() {
        MQAdmin.Output before = MQAdmin.run("getBrokerConfig", "-b", brokerAddr).assertOk();
        assertTrue(before.out().contains("============" + brokerAddr + "============"), before::toString);
        Map<String, String> cfg = before.lines().stream().filter(l -> l.contains("=  "))
            .collect(Collectors.toMap(l -> l.substring(0, l.indexOf("=  ")).trim(), l -> l.substring(l.indexOf("=  ") + 3),
                (a, b) -> a));
        assertAll(
            () -> assertEquals(brokerName, cfg.get("brokerName"), before::toString),
            () -> assertEquals(CLUSTER, cfg.get("brokerClusterName"), before::toString),
            () -> assertEquals(brokerAddr.substring(brokerAddr.indexOf(':') + 1), cfg.get("listenPort"), before::toString),
            () -> assertTrue(cfg.get("messageDelayLevel").startsWith("1s 5s 10s"), before::toString));

        String key = "maxTransferCountOnMessageInMemory";
        String old = cfg.get(key);
        assertNotNull(old, before::toString);
        String changed = String.valueOf(Integer.parseInt(old) + 1);
        MQAdmin.Output upd = MQAdmin.run("updateBrokerConfig", "-b", brokerAddr, "-k", key, "-v", changed).assertOk();
        assertTrue(upd.out().contains("update broker config success, " + brokerAddr), upd::toString);
        assertTrue(MQAdmin.run("getBrokerConfig", "-c", CLUSTER).assertOk().out().contains(key + " ".repeat(50 - key.length()) + "=  " + changed));
        MQAdmin.run("updateBrokerConfig", "-c", CLUSTER, "-k", key, "-v", old).assertOk();
        assertTrue(MQAdmin.run("getBrokerConfig", "-b", brokerAddr).assertOk().out().contains(key + " ".repeat(50 - key.length()) + "=  " + old));
    }

    @Test
    @Order(19)
    void updateBrokerConfigAcceptsStockKeysButTheBlackList() {
        // As the Java broker: any key but the black list is kept and reported
        // (this one, a thread-pool size, acts on nothing in rmq).
        String key = "adminBrokerThreadPoolNums";
        MQAdmin.run("updateBrokerConfig", "-b", brokerAddr, "-k", key, "-v", "17").assertOk();
        assertTrue(MQAdmin.run("getBrokerConfig", "-b", brokerAddr).assertOk().out().contains(key + " ".repeat(50 - key.length()) + "=  17"));
        MQAdmin.run("updateBrokerConfig", "-b", brokerAddr, "-k", key, "-v", "16").assertOk();
        // The black list came with 4.9.8 (AdminBrokerProcessor.configBlackList); the 4.9.7 broker run.sh falls back
        // on when Central has no 4.9.8 broker updates brokerConfigPath like any other key.
        if (Clients.brokerKind().equals("java-4.9.7")) {
            return;
        }
        MQAdmin.Output out = MQAdmin.run("updateBrokerConfig", "-b", brokerAddr, "-k", "brokerConfigPath", "-v", "/tmp/x");
        assertTrue(out.err().contains("Can not update config in black list."), out::toString);
    }

    @Test
    @Order(20)
    void deleteTopic() throws Exception {
        MQAdmin.Output out = MQAdmin.run("deleteTopic", "-c", CLUSTER, "-t", TOPIC).assertOk();
        assertTrue(out.out().contains("delete topic [" + TOPIC + "] from cluster [" + CLUSTER + "] success."), out::toString);
        assertTrue(out.out().contains("delete topic [" + TOPIC + "] from NameServer success."), out::toString);
        assertFalse(MQAdmin.run("topicList").assertOk().lines().contains(TOPIC), "topicList still lists " + TOPIC);
    }

    @Test
    @Order(21)
    void toolExitsZeroAsItsOwnProcess() throws Exception {
        MQAdmin.Output out = MQAdmin.runProcess("clusterList").assertOk();
        lineWith(out, CLUSTER, brokerName, brokerAddr);
    }
}
