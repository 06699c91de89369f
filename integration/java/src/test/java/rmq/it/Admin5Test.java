package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeSet;
import java.util.stream.Collectors;

import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.protocol.body.TopicList;
import org.apache.rocketmq.remoting.protocol.heartbeat.SubscriptionData;
import org.apache.rocketmq.remoting.protocol.subscription.GroupForbidden;
import org.apache.rocketmq.remoting.protocol.subscription.SubscriptionGroupConfig;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * mqadmin 5.3.3 (rocketmq-tools 5.3.3, profile admin5) against the broker under test, rmq or the Java 5.3.3 broker
 * (make java-oracle): the 5.x batch and group codes (UPDATE_AND_CREATE_TOPIC_LIST 18 by {@code updateTopicList},
 * UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST 225 by {@code updateSubGroupList}, and the DefaultMQAdminExt calls no
 * subcommand makes: QUERY_TOPICS_BY_CONSUMER 343, QUERY_SUBSCRIPTION_BY_CONSUMER 345, UPDATE_AND_GET_GROUP_FORBIDDEN
 * 353), and ACL 2.0 (codes 3001-3010) through every auth subcommand on a second broker with authenticationEnabled and
 * authorizationEnabled, plus the 5.3.3 remoting client's AclClientRPCHook sends its users are allowed and denied.
 * Every answer is written for the oracle comparison ({@link OracleOutput}); run.sh diffs the two brokers' records.
 */
class Admin5Test {
    private static final String SUPER = "rocketmq5su";
    private static final String SUPER_PW = "rocketmq5supw";
    private static DefaultMQAdminExt admin;

    @BeforeAll
    static void startAdmin() throws Exception {
        admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(Clients.namesrv());
        admin.setInstanceName(Clients.unique("admin5"));
        admin.start();
    }

    @AfterAll
    static void stopAdmin() {
        admin.shutdown();
    }

    private static String masterOf(String topic) throws Exception {
        String[] addr = new String[1];
        Await.until("the route of " + topic, Clients.DEADLINE, () -> {
            try {
                addr[0] = admin.examineTopicRouteInfo(topic).getBrokerDatas().get(0).getBrokerAddrs().get(0L);
                return addr[0] != null;
            } catch (Exception e) {
                return false;
            }
        }, () -> "");
        return addr[0];
    }

    /** The lines of a failed mqadmin command that carry the broker's answer (MQBrokerException: CODE, DESC). */
    private static String brokerError(MQAdmin.Output out) {
        List<String> lines = (out.out() + "\n" + out.err()).lines().filter(l -> l.contains("CODE:"))
            .map(l -> l.substring(l.indexOf("CODE:")).strip()).distinct().collect(Collectors.toList());
        assertFalse(lines.isEmpty(), () -> "no broker error in:\n" + out);
        return String.join("\n", lines);
    }

    private static String topicConfig(String addr, String topic) {
        try {
            TopicConfig tc = admin.examineTopicConfig(addr, topic);
            if (tc == null) {
                return topic + ": none";
            }
            return topic + ": read=" + tc.getReadQueueNums() + " write=" + tc.getWriteQueueNums() + " perm=" + tc.getPerm()
                + " filter=" + tc.getTopicFilterType() + " attributes=" + tc.getAttributes();
        } catch (MQBrokerException e) {
            return topic + ": code " + e.getResponseCode();
        } catch (Exception e) {
            return topic + ": " + e.getClass().getSimpleName();
        }
    }

    @Test
    void batchAndGroupCodes() throws Exception {
        assumeTrue(!Clients.againstJava4Broker(), "the 4.x Java broker has no 5.x codes");
        String t1 = Clients.unique("lt");
        String t2 = Clients.unique("lt");
        String t3 = Clients.unique("lt");
        String group = Clients.unique("lg");
        String group2 = Clients.unique("lg");
        String retry = "%RETRY%" + group;
        StringBuilder rec = new StringBuilder();
        Path dir = Files.createTempDirectory("rmq-it-admin");
        try {
            String addr = masterOf("TBW102");
            Path topics = dir.resolve("topics.json");
            Files.writeString(topics, "[{\"topicName\":\"" + t1 + "\",\"readQueueNums\":2,\"writeQueueNums\":2,\"perm\":6},"
                + "{\"topicName\":\"" + t2 + "\",\"attributes\":{\"+message.type\":\"FIFO\"}},"
                + "{\"topicName\":\"" + retry + "\",\"readQueueNums\":1,\"writeQueueNums\":1}]");
            rec.append("updateTopicList:\n").append(MQAdmin.run("updateTopicList", "-b", addr, "-f", topics.toString()).assertOk().out());
            for (String t : List.of(t1, t2, retry)) {
                rec.append(topicConfig(addr, t)).append('\n');
            }
            // An unchanged config answers at once: t3, after it, is not created (stock's shortcut).
            Files.writeString(topics, "[{\"topicName\":\"" + t1 + "\",\"readQueueNums\":2,\"writeQueueNums\":2,\"perm\":6},{\"topicName\":\"" + t3 + "\"}]");
            rec.append("unchanged first:\n").append(MQAdmin.run("updateTopicList", "-b", addr, "-f", topics.toString()).assertOk().out());
            rec.append(topicConfig(addr, t3)).append('\n');
            for (String bad : List.of("bad/name", "SCHEDULE_TOPIC_XXXX")) {
                Files.writeString(topics, "[{\"topicName\":\"" + t3 + "\"},{\"topicName\":\"" + bad + "\"}]");
                MQAdmin.Output o = MQAdmin.run("updateTopicList", "-b", addr, "-f", topics.toString());
                assertFalse(o.ok(), () -> "updateTopicList of " + bad + " succeeded:\n" + o);
                rec.append("topic ").append(bad).append(": ").append(brokerError(o)).append('\n');
            }
            Files.writeString(topics, "[{\"topicName\":\"" + t3 + "\",\"attributes\":{\"+message.type\":\"MIXED\"}}]");
            MQAdmin.Output mixed = MQAdmin.run("updateTopicList", "-b", addr, "-f", topics.toString());
            rec.append("MIXED: ").append(brokerError(mixed)).append('\n');
            rec.append(topicConfig(addr, t3)).append('\n');

            Path groups = dir.resolve("groups.json");
            Files.writeString(groups, "[{\"groupName\":\"" + group + "\",\"retryMaxTimes\":3},{\"groupName\":\"" + group2 + "\",\"consumeEnable\":false}]");
            rec.append("updateSubGroupList:\n").append(MQAdmin.run("updateSubGroupList", "-b", addr, "-f", groups.toString()).assertOk().out());
            for (String g : List.of(group, group2)) {
                SubscriptionGroupConfig c = admin.examineSubscriptionGroupConfig(addr, g);
                assertNotNull(c, g);
                rec.append(g).append(": retryMaxTimes=").append(c.getRetryMaxTimes()).append(" retryQueueNums=").append(c.getRetryQueueNums())
                    .append(" consumeEnable=").append(c.isConsumeEnable()).append(" consumeBroadcastEnable=").append(c.isConsumeBroadcastEnable())
                    .append(" consumeFromMinEnable=").append(c.isConsumeFromMinEnable()).append('\n');
            }

            DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
            consumer.setNamesrvAddr(Clients.namesrv());
            consumer.setInstanceName(Clients.unique("admin5-consumer"));
            consumer.setPersistConsumerOffsetInterval(1000);
            consumer.subscribe(t1, "TagA || TagB");
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
            consumer.start();
            try {
                SubscriptionData[] sd = new SubscriptionData[1];
                Await.until("the subscription of " + group, Clients.DEADLINE, () -> {
                    try {
                        sd[0] = admin.querySubscription(group, t1);
                        return sd[0] != null;
                    } catch (Exception e) {
                        return false;
                    }
                }, () -> "");
                rec.append("querySubscription: topic=").append(sd[0].getTopic()).append(" subString=").append(sd[0].getSubString())
                    .append(" tags=").append(new TreeSet<>(sd[0].getTagsSet())).append(" type=").append(sd[0].getExpressionType()).append('\n');
                rec.append("querySubscription of another topic: ").append(admin.querySubscription(group, t2)).append('\n');

                // The consumer commits offsets of t1 and of its retry topic once its first pulls come back.
                List<String> mine = List.of(t1, t2, t3, retry);
                TreeSet<String> seen = new TreeSet<>();
                Await.until("the offsets of " + group, Clients.DEADLINE, () -> {
                    try {
                        TopicList tl = admin.queryTopicsByConsumer(group);
                        seen.clear();
                        tl.getTopicList().stream().filter(mine::contains).forEach(seen::add);
                        return seen.contains(t1) && seen.contains(retry);
                    } catch (Exception e) {
                        return false;
                    }
                }, () -> "topics of " + group + ": " + seen);
                rec.append("queryTopicsByConsumer: ").append(seen).append('\n');
                rec.append("queryTopicsByConsumer of an unknown group: ");
                try {
                    rec.append(admin.queryTopicsByConsumer(Clients.unique("nobody")).getTopicList()).append('\n');
                } catch (Exception e) {
                    rec.append(e.getClass().getSimpleName()).append('\n');
                }

                for (Boolean readable : new Boolean[] {null, false, null, true, null}) {
                    GroupForbidden gf = admin.updateAndGetGroupReadForbidden(addr, group, t1, readable);
                    rec.append("readable=").append(readable).append(" -> group=").append(gf.getGroup()).append(" topic=")
                        .append(gf.getTopic()).append(" readable=").append(gf.getReadable()).append('\n');
                }
            } finally {
                consumer.shutdown();
            }
            OracleOutput.write(Admin5Test.class, "batchAndGroupCodes", rec.toString());
        } finally {
            BrokerProcess.deleteTree(dir);
        }
    }

    private static RPCHook hook(String ak, String sk) {
        return new AclClientRPCHook(new SessionCredentials(ak, sk));
    }

    /** An mqadmin auth subcommand signed as the super user; its print-out, which must show no exception. */
    private static String su(StringBuilder rec, String... args) {
        MQAdmin.Output o = MQAdmin.runHook(hook(SUPER, SUPER_PW), args).assertOk();
        rec.append("$ ").append(args[0]).append('\n').append(o.out());
        return o.out();
    }

    /** An mqadmin subcommand the broker refuses: its code and remark. */
    private static void refused(StringBuilder rec, String what, RPCHook hook, String... args) {
        MQAdmin.Output o = MQAdmin.runHook(hook, args);
        assertFalse(o.ok(), () -> what + " succeeded:\n" + o);
        rec.append(what).append(": ").append(brokerError(o)).append('\n');
    }

    /** A send's outcome: SEND_OK, or the broker's code and remark. */
    private static String send(RPCHook hook, String topic) throws Exception {
        DefaultMQProducer p = new DefaultMQProducer(Clients.unique("auth5pg"), hook);
        p.setNamesrvAddr(Clients.namesrv());
        p.setInstanceName(Clients.unique("auth5-producer"));
        p.setSendMsgTimeout(10_000);
        p.setRetryTimesWhenSendFailed(0);
        p.start();
        try {
            SendResult r = p.send(new Message(topic, "auth5".getBytes(StandardCharsets.UTF_8)));
            return r.getSendStatus().toString();
        } catch (Exception e) {
            Throwable t = e;
            while (t != null && !(t instanceof MQBrokerException)) {
                t = t.getCause();
            }
            if (t == null) {
                return fail("send to " + topic + ": no MQBrokerException in " + e, e);
            }
            MQBrokerException be = (MQBrokerException) t;
            return "code " + be.getResponseCode() + ": " + be.getErrorMessage();
        } finally {
            p.shutdown();
        }
    }

    @Test
    void authSubcommandsAndSignedClients() throws Exception {
        assumeTrue(BrokerProcess.launcher() != null, "rmq.brokerLauncher is not set (run.sh sets it)");
        assumeTrue(!Clients.againstJava4Broker(), "the 4.x Java broker has no ACL 2.0");
        String cluster = Clients.unique("Auth5Cluster");
        String u1 = "auth5u1";
        String u2 = "auth5u2";
        String allowed = Clients.unique("auth5t");
        String denied = Clients.unique("auth5deny");
        String both = Clients.unique("auth5tdeny");
        Path dir = Files.createTempDirectory("rmq-it-auth5");
        BrokerProcess b = new BrokerProcess(Clients.unique("auth5_b"), cluster, dir.resolve("store"));
        b.env.put("RMQ_BROKER_EXTRA_CONF", String.join("\n",
            "authenticationEnabled=true", "authorizationEnabled=true", "autoCreateTopicEnable=false",
            "authenticationMetadataProvider=org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
            "authorizationMetadataProvider=org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
            "initAuthenticationUser={\"username\":\"" + SUPER + "\",\"password\":\"" + SUPER_PW + "\"}",
            "innerClientAuthenticationCredentials={\"accessKey\":\"" + SUPER + "\",\"secretKey\":\"" + SUPER_PW + "\"}"));
        b.env.put("RMQ_BROKER_JVM_PROPS", "-Drocketmq.home.dir=" + dir);
        b.start();
        StringBuilder rec = new StringBuilder();
        try {
            String a = b.addr();
            // The -c subcommands look the cluster up on the name server, which the Java broker registers with
            // only after its boot line.
            Await.until("the cluster " + cluster + " on the name server", Clients.DEADLINE, () -> {
                try {
                    return admin.examineBrokerClusterInfo().getClusterAddrTable().containsKey(cluster);
                } catch (Exception e) {
                    return false;
                }
            }, () -> "");
            su(rec, "createUser", "-b", a, "-u", u1, "-p", "auth5u1pw");
            su(rec, "createUser", "-c", cluster, "-u", u2, "-p", u2 + "pw", "-t", "Super");
            refused(rec, "createUser of an existing user", hook(SUPER, SUPER_PW), "createUser", "-b", a, "-u", u1, "-p", "x");
            su(rec, "updateUser", "-b", a, "-u", u1, "-s", "disable");
            su(rec, "getUser", "-b", a, "-u", u1);
            refused(rec, "a disabled user's request", hook(u1, "auth5u1pw"), "getUser", "-b", a, "-u", u1);
            su(rec, "updateUser", "-c", cluster, "-u", u1, "-s", "enable");
            su(rec, "updateUser", "-b", a, "-u", u1, "-p", u1 + "pw2");
            su(rec, "getUser", "-c", cluster, "-u", u1);
            su(rec, "listUser", "-b", a);
            su(rec, "listUser", "-b", a, "-f", "auth5");
            su(rec, "createAcl", "-b", a, "-s", "User:" + u1, "-r", "Topic:auth5t*,Group:auth5pg*", "-a", "Pub,Sub", "-d", "Allow", "-i", "127.0.0.1");
            su(rec, "updateAcl", "-c", cluster, "-s", "User:" + u1, "-r", "Topic:auth5deny*", "-a", "Pub", "-d", "Deny");
            // Topic:auth5tdeny_* is matched by the Allow of Topic:auth5t* and by this Deny: stock's entry order decides.
            su(rec, "updateAcl", "-b", a, "-s", "User:" + u1, "-r", "Topic:auth5tdeny*", "-a", "Pub", "-d", "Deny");
            su(rec, "getAcl", "-b", a, "-s", "User:" + u1);
            su(rec, "listAcl", "-b", a);
            su(rec, "listAcl", "-b", a, "-s", "User:" + u1, "-r", "Topic");
            su(rec, "copyUser", "-f", a, "-t", a, "-u", u1);
            su(rec, "copyAcl", "-f", a, "-t", a, "-s", "User:" + u1);
            refused(rec, "createUser unsigned", null, "createUser", "-b", a, "-u", "auth5x", "-p", "x");
            refused(rec, "createUser with a wrong password", hook(SUPER, "wrong"), "createUser", "-b", a, "-u", "auth5x", "-p", "x");
            refused(rec, "createUser of a super user by a normal user", hook(u1, u1 + "pw2"), "createUser", "-b", a, "-u", "auth5x", "-p", "x", "-t", "Super");

            // The 5.3.3 remoting client's AclClientRPCHook: allowed and denied sends.
            su(rec, "updateTopic", "-b", a, "-t", allowed, "-r", "1", "-w", "1");
            su(rec, "updateTopic", "-b", a, "-t", denied, "-r", "1", "-w", "1");
            su(rec, "updateTopic", "-b", a, "-t", both, "-r", "1", "-w", "1");
            masterOf(allowed);
            masterOf(denied);
            masterOf(both);
            String ok = send(hook(u1, u1 + "pw2"), allowed);
            assertEquals("SEND_OK", ok);
            rec.append("send allowed: ").append(ok).append('\n');
            rec.append("send to a denied topic: ").append(send(hook(u1, u1 + "pw2"), denied)).append('\n');
            rec.append("send to a topic of an Allow and a Deny entry: ").append(send(hook(u1, u1 + "pw2"), both)).append('\n');
            rec.append("send with a wrong password: ").append(send(hook(u1, "wrong"), allowed)).append('\n');
            rec.append("send unsigned: ").append(send(null, allowed)).append('\n');
            rec.append("send as the super user: ").append(send(hook(SUPER, SUPER_PW), denied)).append('\n');

            su(rec, "deleteAcl", "-b", a, "-s", "User:" + u1, "-r", "Topic:auth5deny*");
            su(rec, "getAcl", "-b", a, "-s", "User:" + u1);
            su(rec, "deleteUser", "-c", cluster, "-u", u2);
            su(rec, "listUser", "-b", a, "-f", "auth5");
            su(rec, "deleteAcl", "-b", a, "-s", "User:" + u1);
            su(rec, "deleteUser", "-b", a, "-u", u1);
            su(rec, "listUser", "-b", a, "-f", "auth5");
            su(rec, "listAcl", "-b", a);
            OracleOutput.write(Admin5Test.class, "authSubcommandsAndSignedClients", rec.toString());
        } finally {
            b.stop();
            BrokerProcess.deleteTree(dir);
        }
    }
}
