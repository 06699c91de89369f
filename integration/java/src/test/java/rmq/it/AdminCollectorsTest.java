package rmq.it;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.admin.ConsumeStats;
import org.apache.rocketmq.common.admin.OffsetWrapper;
import org.apache.rocketmq.common.admin.TopicOffset;
import org.apache.rocketmq.common.admin.TopicStatsTable;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.common.protocol.ResponseCode;
import org.apache.rocketmq.common.protocol.body.BrokerStatsData;
import org.apache.rocketmq.common.protocol.body.ClusterInfo;
import org.apache.rocketmq.common.protocol.body.Connection;
import org.apache.rocketmq.common.protocol.body.ConsumerConnection;
import org.apache.rocketmq.common.protocol.body.ConsumerRunningInfo;
import org.apache.rocketmq.common.protocol.body.GroupList;
import org.apache.rocketmq.common.protocol.body.KVTable;
import org.apache.rocketmq.common.protocol.body.ProducerInfo;
import org.apache.rocketmq.common.protocol.body.ProducerTableInfo;
import org.apache.rocketmq.common.protocol.body.SubscriptionGroupWrapper;
import org.apache.rocketmq.common.protocol.body.TopicList;
import org.apache.rocketmq.common.protocol.heartbeat.ConsumeType;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;
import org.apache.rocketmq.common.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.common.protocol.route.BrokerData;
import org.apache.rocketmq.common.protocol.route.QueueData;
import org.apache.rocketmq.common.protocol.route.TopicRouteData;
import org.apache.rocketmq.common.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Every {@link DefaultMQAdminExt} method that the collectors of rocketmq-dashboard and rocketmq-exporter call, against
 * the broker under test, after traffic that makes each answer non-empty: a topic with two queues, a producer that
 * sent {@link #MESSAGES} messages, a push consumer online that consumed them all and sent one back
 * (RECONSUME_LATER) that it consumed again from its retry topic, and the 10-second stats sample taken.
 *
 * <p>The methods, with where each collector calls them (rocketmq-dashboard at 770822b, which builds on 5.3.3
 * rocketmq-tools; rocketmq-exporter at e1ab2dd, on 4.9.4):
 * <pre>
 * examineBrokerClusterInfo()                 dashboard task/DashboardCollectTask.collectBroker (and through
 *                                            ClusterInfoService.get in ConsumerServiceImpl.makeGroupListCache);
 *                                            exporter task/MetricsCollectTask.collectTopicOffset, collectProducer,
 *                                            collectBrokerStatsTopic, collectBrokerStats, collectBrokerRuntimeStats
 * getNameServerAddressList()                 exporter MetricsCollectTask (every error message)
 * fetchAllTopicList()                        dashboard DashboardCollectTask.collectTopic; exporter MetricsCollectTask
 *                                            .collectTopicOffset, collectConsumerOffset, collectBrokerStatsTopic
 * examineTopicRouteInfo(topic)               dashboard task/CollectTaskRunnble.run; exporter collectBrokerStatsTopic
 * queryTopicConsumeByWho(topic)              dashboard CollectTaskRunnble.run; exporter collectConsumerOffset,
 *                                            collectBrokerStatsTopic
 * viewBrokerStatsData(addr, name, key)       dashboard CollectTaskRunnble.run (TOPIC_PUT_NUMS, GROUP_GET_NUMS);
 *                                            exporter collectBrokerStatsTopic (TOPIC_PUT_NUMS, TOPIC_PUT_SIZE,
 *                                            GROUP_GET_NUMS, GROUP_GET_SIZE, SNDBCK_PUT_NUMS) and collectBrokerStats
 *                                            (BROKER_PUT_NUMS, BROKER_GET_NUMS); both treat SYSTEM_ERROR as "no item"
 * fetchBrokerRuntimeStats(addr)              dashboard DashboardCollectTask.fetchBrokerRuntimeStats; exporter
 *                                            collectBrokerRuntimeStats (model/BrokerRuntimeStats reads its keys)
 * getAllSubscriptionGroup(addr, timeout)     dashboard DashboardCollectTask.collectTopic → ConsumerServiceImpl
 *                                            .queryGroupList → makeGroupListCache
 * examineSubscriptionGroupConfig(addr, g)    dashboard ConsumerServiceImpl.makeGroupListCache (group missing from the table)
 * examineConsumeStats(group)                 dashboard ConsumerServiceImpl.queryGroup (from makeGroupListCache and
 *                                            task/MonitorTask.scanProblemConsumeGroup)
 * examineConsumerConnectionInfo(group)       dashboard ConsumerServiceImpl.queryGroup; exporter collectConsumerOffset
 * examineTopicStats(topic)                   exporter collectTopicOffset
 * examineConsumeStats(group, topic)          exporter collectConsumerOffset
 * getAllProducerInfo(brokerAddr)             exporter collectProducer
 * getConsumerRunningInfo(group, id, jstack)  exporter task/ClientMetricTaskRunnable.run
 * </pre>
 * Each answer's broker-side facts are also written for the oracle comparison ({@link OracleOutput}).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class AdminCollectorsTest {
    private static final String CLUSTER = "DefaultCluster";
    // Stats names of 4.9.8 store/stats/BrokerStatsManager (rocketmq-store is not on the client's class path).
    private static final String TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS";
    private static final String TOPIC_PUT_SIZE = "TOPIC_PUT_SIZE";
    private static final String GROUP_GET_NUMS = "GROUP_GET_NUMS";
    private static final String GROUP_GET_SIZE = "GROUP_GET_SIZE";
    private static final String SNDBCK_PUT_NUMS = "SNDBCK_PUT_NUMS";
    private static final String BROKER_PUT_NUMS = "BROKER_PUT_NUMS";
    private static final String BROKER_GET_NUMS = "BROKER_GET_NUMS";
    private static final int MESSAGES = 6;

    private static final String TOPIC = Clients.unique("collect");
    private static final String GROUP = Clients.unique("collectcg");
    private static final String RETRY_TOPIC = MixAll.getRetryTopic(GROUP);
    private static final String PRODUCER_GROUP = Clients.unique("collectpg");

    private static DefaultMQAdminExt admin;
    private static DefaultMQProducer producer;
    private static DefaultMQPushConsumer consumer;
    private static String brokerName;
    private static String brokerAddr;
    private static String consumerClientId;
    private static long startedAt;
    private static final List<SendResult> SENT = new ArrayList<>();
    /** Deliveries as "body/reconsumeTimes". */
    private static final ConcurrentLinkedQueue<String> DELIVERIES = new ConcurrentLinkedQueue<>();
    /** Store sizes of the first deliveries, for the *_SIZE items. */
    private static long storedBytes;

    @BeforeAll
    static void traffic() throws Exception {
        startedAt = System.currentTimeMillis();
        admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(Clients.namesrv());
        admin.setInstanceName(Clients.unique("collect-admin"));
        admin.start();
        ClusterInfo ci = admin.examineBrokerClusterInfo();
        brokerName = ci.getClusterAddrTable().get(CLUSTER).stream().sorted().findFirst().orElseThrow();
        brokerAddr = ci.getBrokerAddrTable().get(brokerName).getBrokerAddrs().get(MixAll.MASTER_ID);
        MQAdmin.run("updateTopic", "-c", CLUSTER, "-t", TOPIC, "-r", "2", "-w", "2").assertOk();
        Await.until(TOPIC + " routed", Clients.DEADLINE, () -> routed(TOPIC), () -> "no route");

        consumer = new DefaultMQPushConsumer(GROUP);
        consumer.setNamesrvAddr(Clients.namesrv());
        consumer.setInstanceName(Clients.unique("collect-consumer"));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.subscribe(TOPIC, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                DELIVERIES.add(body + "/" + m.getReconsumeTimes());
                if (body.equals("m0") && m.getReconsumeTimes() == 0) {
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        consumerClientId = consumer.buildMQClientId();
        // Sent once the consumer owns both queues, so that puts and gets fall in one minute window.
        Await.until(GROUP + " rebalanced", Clients.DEADLINE, () -> {
            try {
                return admin.getConsumerRunningInfo(GROUP, consumerClientId, false).getMqTable().keySet().stream()
                    .filter(mq -> mq.getTopic().equals(TOPIC)).count() == 2;
            } catch (Exception e) {
                return false;
            }
        }, () -> "");

        producer = Clients.startProducer(PRODUCER_GROUP);
        for (int i = 0; i < MESSAGES; i++) {
            SendResult r = producer.send(new Message(TOPIC, "TagC", "key" + i, ("m" + i).getBytes(StandardCharsets.UTF_8)));
            assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r::toString);
            SENT.add(r);
        }
        // m0 is sent back once (delay level 3, 10 s) and consumed again from the retry topic.
        Await.until("every message consumed and m0 again", Clients.DEADLINE,
            () -> DELIVERIES.contains("m0/1") && DELIVERIES.stream().filter(d -> d.endsWith("/0")).distinct().count() == MESSAGES,
            DELIVERIES::toString);
        Await.until("the offsets committed", Clients.DEADLINE, () -> {
            try {
                ConsumeStats cs = admin.examineConsumeStats(GROUP);
                return cs.computeTotalDiff() == 0 && cs.getOffsetTable().keySet().stream()
                    .filter(mq -> mq.getTopic().equals(TOPIC) || mq.getTopic().equals(RETRY_TOPIC)).count() == 3;
            } catch (Exception e) {
                return false;
            }
        }, () -> "");
        for (SendResult r : SENT) {
            storedBytes += admin.viewMessage(r.getOffsetMsgId()).getStoreSize();
        }
    }

    private static boolean routed(String topic) {
        try {
            return !admin.examineTopicRouteInfo(topic).getQueueDatas().isEmpty();
        } catch (Exception e) {
            return false;
        }
    }

    @AfterAll
    static void stop() {
        if (consumer != null) {
            consumer.shutdown();
        }
        if (producer != null) {
            producer.shutdown();
        }
        if (admin != null) {
            admin.shutdown();
        }
    }

    /** The minute window, or the response code of the refusal. */
    private static String stats(String name, String key) throws Exception {
        try {
            BrokerStatsData d = admin.viewBrokerStatsData(brokerAddr, name, key);
            return "sum=" + d.getStatsMinute().getSum();
        } catch (MQClientException e) {
            return "code=" + e.getResponseCode();
        }
    }

    @Test
    @Order(1)
    void viewBrokerStatsData() throws Exception {
        String topicGroup = TOPIC + "@" + GROUP;
        String retryGroup = RETRY_TOPIC + "@" + GROUP;
        // The item exists from the first put; the 10-second sample that counts all of it may still be due.
        Map<String, String> want = new TreeMap<>(Map.of(
            TOPIC_PUT_NUMS + " " + TOPIC, "sum=" + MESSAGES,
            TOPIC_PUT_SIZE + " " + TOPIC, "sum=" + storedBytes,
            GROUP_GET_NUMS + " " + topicGroup, "sum=" + MESSAGES,
            GROUP_GET_SIZE + " " + topicGroup, "sum=" + storedBytes,
            SNDBCK_PUT_NUMS + " " + topicGroup, "sum=1",
            GROUP_GET_NUMS + " " + retryGroup, "sum=1",
            // The retry message stored on the retry topic when its delay fell due (J4 ScheduleMessageService).
            TOPIC_PUT_NUMS + " " + RETRY_TOPIC, "sum=1"));
        Map<String, String> got = new TreeMap<>();
        Await.until("the stats sampled", Clients.DEADLINE, () -> {
            try {
                for (String k : want.keySet()) {
                    String[] p = k.split(" ", 2);
                    got.put(k, stats(p[0], p[1]));
                }
                return got.equals(want);
            } catch (Exception e) {
                return false;
            }
        }, got::toString);
        // No item: SYSTEM_ERROR, which both collectors take as "nothing to report".
        String missing = stats(TOPIC_PUT_NUMS, Clients.unique("nosuchtopic"));
        assertEquals("code=" + ResponseCode.SYSTEM_ERROR, missing);
        // Broker-wide items (key: the cluster name) count every test's traffic of the last minute.
        BrokerStatsData put = admin.viewBrokerStatsData(brokerAddr, BROKER_PUT_NUMS, CLUSTER);
        BrokerStatsData get = admin.viewBrokerStatsData(brokerAddr, BROKER_GET_NUMS, CLUSTER);
        assertTrue(put.getStatsMinute().getSum() >= MESSAGES, () -> "BROKER_PUT_NUMS " + put.getStatsMinute().getSum());
        assertTrue(get.getStatsMinute().getSum() >= MESSAGES, () -> "BROKER_GET_NUMS " + get.getStatsMinute().getSum());
        assertTrue(put.getStatsMinute().getTps() > 0, "BROKER_PUT_NUMS tps");
        StringBuilder rec = new StringBuilder();
        // Sizes depend on the topic name's length: written as the relation asserted.
        got.forEach((k, v) -> rec.append(k).append(' ')
            .append(v.equals("sum=" + storedBytes) ? "sum=<store sizes of the messages>" : v).append('\n'));
        rec.append("TOPIC_PUT_NUMS <missing> ").append(missing).append('\n');
        // m0's send-back and its delivery when due (other tests' delayed messages may add to these).
        String schedPut = stats(TOPIC_PUT_NUMS, "SCHEDULE_TOPIC_XXXX");
        String schedGet = stats(GROUP_GET_NUMS, "SCHEDULE_TOPIC_XXXX@SCHEDULE_CONSUMER");
        rec.append("TOPIC_PUT_NUMS SCHEDULE_TOPIC_XXXX ")
            .append(schedPut.startsWith("sum=") ? "sum >= 1: " + (Long.parseLong(schedPut.substring(4)) >= 1) : schedPut)
            .append('\n');
        rec.append("GROUP_GET_NUMS SCHEDULE_TOPIC_XXXX@SCHEDULE_CONSUMER ")
            .append(schedGet.startsWith("sum=") ? "sum >= 1: " + (Long.parseLong(schedGet.substring(4)) >= 1) : schedGet)
            .append('\n');
        rec.append("BROKER_PUT_NUMS minute sum >= ").append(MESSAGES).append(": true\n");
        rec.append("BROKER_GET_NUMS minute sum >= ").append(MESSAGES).append(": true\n");
        OracleOutput.write(getClass(), "viewBrokerStatsData", rec.toString());
    }

    @Test
    @Order(2)
    void examineBrokerClusterInfo() throws Exception {
        ClusterInfo ci = admin.examineBrokerClusterInfo();
        assertTrue(ci.getClusterAddrTable().get(CLUSTER).contains(brokerName), ci::toString);
        BrokerData bd = ci.getBrokerAddrTable().get(brokerName);
        assertEquals(CLUSTER, bd.getCluster());
        assertTrue(brokerAddr.matches("127\\.0\\.0\\.1:\\d+"), brokerAddr);
        assertEquals(Set.of(MixAll.MASTER_ID), bd.getBrokerAddrs().keySet(), bd::toString);
        OracleOutput.write(getClass(), "examineBrokerClusterInfo",
            "cluster " + CLUSTER + " has " + brokerName + ": true\nbrokerAddrs " + bd.getBrokerAddrs() + "\n");
    }

    @Test
    @Order(3)
    void getNameServerAddressList() {
        assertEquals(List.of(Clients.namesrv()), admin.getNameServerAddressList());
    }

    @Test
    @Order(4)
    void fetchAllTopicList() throws Exception {
        TopicList tl = admin.fetchAllTopicList();
        assertTrue(tl.getTopicList().contains(TOPIC), () -> "no " + TOPIC);
        assertTrue(tl.getTopicList().contains(RETRY_TOPIC), () -> "no " + RETRY_TOPIC);
        OracleOutput.write(getClass(), "fetchAllTopicList", "has topic: true\nhas retry topic: true\n");
    }

    @Test
    @Order(5)
    void examineTopicRouteInfo() throws Exception {
        TopicRouteData route = admin.examineTopicRouteInfo(TOPIC);
        assertEquals(1, route.getBrokerDatas().size(), route::toString);
        assertEquals(brokerAddr, route.getBrokerDatas().get(0).getBrokerAddrs().get(MixAll.MASTER_ID));
        QueueData qd = route.getQueueDatas().get(0);
        assertAll(() -> assertEquals(brokerName, qd.getBrokerName()),
            () -> assertEquals(2, qd.getReadQueueNums()), () -> assertEquals(2, qd.getWriteQueueNums()),
            () -> assertEquals(6, qd.getPerm()));
        OracleOutput.write(getClass(), "examineTopicRouteInfo", "queueDatas " + route.getQueueDatas() + "\n");
    }

    @Test
    @Order(6)
    void queryTopicConsumeByWho() throws Exception {
        GroupList byTopic = admin.queryTopicConsumeByWho(TOPIC);
        GroupList byRetry = admin.queryTopicConsumeByWho(RETRY_TOPIC);
        assertEquals(Set.of(GROUP), byTopic.getGroupList());
        assertEquals(Set.of(GROUP), byRetry.getGroupList());
        OracleOutput.write(getClass(), "queryTopicConsumeByWho",
            "topic " + byTopic.getGroupList() + "\nretry topic " + byRetry.getGroupList() + "\n");
    }

    @Test
    @Order(7)
    void fetchBrokerRuntimeStats() throws Exception {
        KVTable kv = admin.fetchBrokerRuntimeStats(brokerAddr);
        Map<String, String> t = kv.getTable();
        // Every key rocketmq-exporter's model/BrokerRuntimeStats parses (a missing one fails its whole broker
        // runtime collection) and the dashboard's getTotalTps. Not putLatency99/999 (read with a default).
        List<String> exporterKeys = List.of("msgPutTotalTodayNow", "putMessageDistributeTime", "putTps", "getMissTps",
            "getTransferedTps", "getTotalTps", "getFoundTps", "commitLogDirCapacity", "sendThreadPoolQueueHeadWaitTimeMills",
            "queryThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueCapacity", "remainHowManyDataToFlush",
            "msgGetTotalTodayNow", "queryThreadPoolQueueSize", "bootTimestamp", "msgGetTotalYesterdayMorning",
            "msgPutTotalYesterdayMorning", "pullThreadPoolQueueHeadWaitTimeMills", "dispatchMaxBuffer", "brokerVersion",
            "consumeQueueDiskRatio", "pageCacheLockTimeMills", "commitLogMaxOffset", "commitLogMinOffset",
            "getMessageEntireTimeMax", "msgPutTotalTodayMorning", "putMessageTimesTotal", "msgGetTotalTodayMorning",
            "brokerVersionDesc", "sendThreadPoolQueueSize", "startAcceptSendRequestTimeStamp", "putMessageEntireTimeMax",
            "earliestMessageTimeStamp", "remainTransientStoreBufferNumbs", "queryThreadPoolQueueCapacity",
            "putMessageAverageSize", "dispatchBehindBytes", "putMessageSizeTotal", "sendThreadPoolQueueCapacity",
            "pullThreadPoolQueueSize", "commitLogDiskRatio", "runtime");
        StringBuilder rec = new StringBuilder();
        for (String k : exporterKeys) {
            assertTrue(t.containsKey(k), () -> "no " + k + " in " + new TreeSet<>(t.keySet()));
        }
        for (String k : new TreeSet<>(exporterKeys)) {
            rec.append(k).append(" present\n");
        }
        Double.parseDouble(t.get("putMessageAverageSize"));
        Double.parseDouble(t.get("remainHowManyDataToFlush").split(" ")[0]);
        // rmq answers as 4.9.8; the Java oracle as the release it is (run.sh may run 4.9.7).
        String release = Clients.againstJavaBroker()
            ? "V" + Clients.brokerKind().substring("java-".length()).replace('.', '_')
            : MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION);
        assertEquals(release, t.get("brokerVersionDesc"));
        assertEquals(release, MQVersion.getVersionDesc(Integer.parseInt(t.get("brokerVersion"))));
        assertTrue(Long.parseLong(t.get("msgPutTotalTodayNow")) >= MESSAGES, t::toString);
        assertTrue(Long.parseLong(t.get("msgGetTotalTodayNow")) >= MESSAGES, t::toString);
        // "10s 60s 600s" rates; Java leaves a window empty while the broker is younger than it (a string split
        // then has fewer fields), rmq reports the rate over the time it has. The exporter's loadTps takes either.
        for (String k : List.of("putTps", "getTotalTps", "getFoundTps", "getMissTps", "getTransferedTps")) {
            String[] f = t.get(k).split(" ");
            assertTrue(f.length >= 1 && f.length <= 3, () -> k + "=" + t.get(k));
            for (String x : f) {
                Double.parseDouble(x);
            }
        }
        assertTrue(Long.parseLong(t.get("bootTimestamp")) <= startedAt, t::toString);
        rec.append("brokerVersion is the broker's release: true\n");
        OracleOutput.write(getClass(), "fetchBrokerRuntimeStats", rec.toString());
    }

    @Test
    @Order(8)
    void getAllSubscriptionGroup() throws Exception {
        SubscriptionGroupWrapper w = admin.getAllSubscriptionGroup(brokerAddr, 30_000L);
        SubscriptionGroupConfig c = w.getSubscriptionGroupTable().get(GROUP);
        assertNotNull(c, () -> "no " + GROUP + " in " + w.getSubscriptionGroupTable().keySet());
        assertAll(() -> assertEquals(GROUP, c.getGroupName()), () -> assertTrue(c.isConsumeEnable()),
            () -> assertEquals(1, c.getRetryQueueNums()), () -> assertEquals(16, c.getRetryMaxTimes()));
        SubscriptionGroupConfig one = admin.examineSubscriptionGroupConfig(brokerAddr, GROUP);
        assertEquals(c, one);
        OracleOutput.write(getClass(), "getAllSubscriptionGroup", "config " + c + "\n");
    }

    @Test
    @Order(9)
    void examineConsumeStats() throws Exception {
        ConsumeStats all = admin.examineConsumeStats(GROUP);
        ConsumeStats one = admin.examineConsumeStats(GROUP, TOPIC);
        assertEquals(0, all.computeTotalDiff());
        assertEquals(Set.of(TOPIC), one.getOffsetTable().keySet().stream().map(MessageQueue::getTopic).collect(Collectors.toSet()));
        assertEquals(2, one.getOffsetTable().size(), one.getOffsetTable()::toString);
        long topicOffsets = 0;
        StringBuilder rec = new StringBuilder();
        for (Map.Entry<MessageQueue, OffsetWrapper> e : new TreeMap<>(all.getOffsetTable()).entrySet()) {
            OffsetWrapper w = e.getValue();
            assertEquals(w.getBrokerOffset(), w.getConsumerOffset(), e::toString);
            assertTrue(w.getLastTimestamp() >= startedAt && w.getLastTimestamp() <= System.currentTimeMillis(), e::toString);
            if (e.getKey().getTopic().equals(TOPIC)) {
                topicOffsets += w.getBrokerOffset();
                assertEquals(w.getBrokerOffset(), one.getOffsetTable().get(e.getKey()).getBrokerOffset());
            }
            rec.append(e.getKey()).append(" broker=").append(w.getBrokerOffset()).append(" consumer=")
                .append(w.getConsumerOffset()).append('\n');
        }
        assertEquals(MESSAGES, topicOffsets);
        assertTrue(all.getConsumeTps() >= 0);
        OracleOutput.write(getClass(), "examineConsumeStats", rec.toString());
    }

    @Test
    @Order(10)
    void examineConsumerConnectionInfo() throws Exception {
        ConsumerConnection cc = admin.examineConsumerConnectionInfo(GROUP);
        assertEquals(1, cc.getConnectionSet().size(), cc::toString);
        Connection c = cc.getConnectionSet().iterator().next();
        assertAll(() -> assertEquals(consumerClientId, c.getClientId()),
            () -> assertEquals(MQVersion.CURRENT_VERSION, c.getVersion()),
            () -> assertEquals("JAVA", c.getLanguage().name()),
            () -> assertTrue(c.getClientAddr().startsWith("127.0.0.1:"), c::getClientAddr),
            () -> assertEquals(ConsumeType.CONSUME_PASSIVELY, cc.getConsumeType()),
            () -> assertEquals(MessageModel.CLUSTERING, cc.getMessageModel()),
            () -> assertEquals(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, cc.getConsumeFromWhere()),
            () -> assertEquals(Set.of(TOPIC, RETRY_TOPIC), cc.getSubscriptionTable().keySet()));
        SubscriptionData sd = cc.getSubscriptionTable().get(TOPIC);
        assertEquals("*", sd.getSubString());
        StringBuilder rec = new StringBuilder("connection " + c.getClientId() + " " + c.getClientAddr() + " "
            + c.getLanguage() + " " + c.getVersion() + "\nconsumeType " + cc.getConsumeType() + " model "
            + cc.getMessageModel() + " from " + cc.getConsumeFromWhere() + "\n");
        new TreeMap<>(cc.getSubscriptionTable()).forEach((topic, s) -> rec.append("subscription ").append(topic)
            .append(" sub=").append(s.getSubString()).append(" type=").append(s.getExpressionType()).append('\n'));
        OracleOutput.write(getClass(), "examineConsumerConnectionInfo", rec.toString());
    }

    @Test
    @Order(11)
    void examineTopicStats() throws Exception {
        TopicStatsTable ts = admin.examineTopicStats(TOPIC);
        assertEquals(2, ts.getOffsetTable().size(), ts.getOffsetTable()::toString);
        long total = 0;
        StringBuilder rec = new StringBuilder();
        for (Map.Entry<MessageQueue, TopicOffset> e : new TreeMap<>(ts.getOffsetTable()).entrySet()) {
            TopicOffset o = e.getValue();
            assertEquals(0, o.getMinOffset(), e::toString);
            assertTrue(o.getLastUpdateTimestamp() >= startedAt && o.getLastUpdateTimestamp() <= System.currentTimeMillis(),
                e::toString);
            total += o.getMaxOffset();
            rec.append(e.getKey()).append(" min=").append(o.getMinOffset()).append(" max=").append(o.getMaxOffset())
                .append('\n');
        }
        assertEquals(MESSAGES, total);
        OracleOutput.write(getClass(), "examineTopicStats", rec.toString());
    }

    @Test
    @Order(12)
    void getAllProducerInfo() throws Exception {
        ProducerTableInfo pt = admin.getAllProducerInfo(brokerAddr);
        List<ProducerInfo> ours = pt.getData().get(PRODUCER_GROUP);
        assertNotNull(ours, () -> "no " + PRODUCER_GROUP + " in " + pt.getData().keySet());
        assertEquals(1, ours.size(), ours::toString);
        ProducerInfo p = ours.get(0);
        assertAll(() -> assertEquals(producer.buildMQClientId(), p.getClientId()),
            () -> assertTrue(p.getRemoteIP().startsWith("/127.0.0.1:"), p::getRemoteIP),
            () -> assertEquals("JAVA", p.getLanguage().name()),
            () -> assertEquals(MQVersion.CURRENT_VERSION, p.getVersion()),
            () -> assertTrue(p.getLastUpdateTimestamp() >= startedAt, p::toString));
        OracleOutput.write(getClass(), "getAllProducerInfo", "producer " + p + "\n");
    }

    @Test
    @Order(13)
    void getConsumerRunningInfo() throws Exception {
        ConsumerRunningInfo ri = admin.getConsumerRunningInfo(GROUP, consumerClientId, false);
        assertNull(ri.getJstack());
        assertEquals(ConsumeType.CONSUME_PASSIVELY.name(), ri.getProperties().getProperty(ConsumerRunningInfo.PROP_CONSUME_TYPE));
        assertEquals(Set.of(TOPIC, RETRY_TOPIC),
            ri.getSubscriptionSet().stream().map(SubscriptionData::getTopic).collect(Collectors.toSet()));
        assertEquals(3, ri.getMqTable().size(), ri.getMqTable()::toString);
        long committed = ri.getMqTable().entrySet().stream().filter(e -> e.getKey().getTopic().equals(TOPIC))
            .mapToLong(e -> e.getValue().getCommitOffset()).sum();
        assertEquals(MESSAGES, committed, ri.getMqTable()::toString);
        OracleOutput.write(getClass(), "getConsumerRunningInfo",
            "mq " + new TreeSet<>(ri.getMqTable().keySet()) + "\ncommitted " + committed + "\n");
    }

    /**
     * A group nobody runs: examineConsumerConnectionInfo looks up the group's retry topic first, which the name
     * server does not know (TOPIC_NOT_EXIST), so both collectors skip the group.
     */
    @Test
    @Order(14)
    void unknownGroup() throws Exception {
        String nobody = Clients.unique("nobodycg");
        Exception e = assertThrows(Exception.class, () -> admin.examineConsumerConnectionInfo(nobody));
        int code = e instanceof MQClientException c ? c.getResponseCode()
            : e instanceof MQBrokerException b ? b.getResponseCode() : -1;
        assertEquals(ResponseCode.TOPIC_NOT_EXIST, code, e::toString);
        OracleOutput.write(getClass(), "unknownGroup", "examineConsumerConnectionInfo " + e.getClass().getSimpleName()
            + " code=" + code + "\n");
    }
}
