package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;
import org.junit.jupiter.api.Test;

/**
 * The 4.9.8 client's AclClientRPCHook against ACL 2.0 users (a second broker with authenticationEnabled and
 * authorizationEnabled; users and policies made over codes 3001/3002/3006 by {@link Auth2Admin}): right, wrong and
 * missing credentials, a Deny policy, a policy limited to other source IPs,
 * a user disabled at run time refused on its next send, and a push consumer allowed Sub on its topic and group.
 * The remarks are the 5.3.3 broker's (Admin5Test compares them with the Java 5.3.3 broker); a 4.x Java oracle has
 * no ACL 2.0, so this runs against rmq only.
 */
class Auth2ClientTest {
    private static final String SUPER = "javasu4";
    private static final String SUPER_PW = "javasu4pw";

    private static RPCHook hook(String ak, String sk) {
        return new AclClientRPCHook(new SessionCredentials(ak, sk));
    }

    /** SEND_OK, or the broker's code and remark. */
    private static String send(RPCHook hook, String topic, String body) throws Exception {
        DefaultMQProducer p = hook == null ? new DefaultMQProducer(Clients.unique("j4pg")) : new DefaultMQProducer(Clients.unique("j4pg"), hook);
        p.setNamesrvAddr(Clients.namesrv());
        p.setInstanceName(Clients.unique("auth2-producer"));
        p.setSendMsgTimeout(10_000);
        p.setRetryTimesWhenSendFailed(0);
        p.start();
        try {
            SendResult r = p.send(new Message(topic, "TagA", body.getBytes(StandardCharsets.UTF_8)));
            return r.getSendStatus().toString();
        } catch (Exception e) {
            Throwable t = e;
            while (t != null && !(t instanceof MQBrokerException)) {
                t = t.getCause();
            }
            assertNotNull(t, () -> "send to " + topic + ": no MQBrokerException in " + e);
            MQBrokerException be = (MQBrokerException) t;
            return "code " + be.getResponseCode() + ": " + be.getErrorMessage();
        } finally {
            p.shutdown();
        }
    }

    @Test
    void aclClientRPCHookAgainstAuth2Users() throws Exception {
        assumeTrue(BrokerProcess.launcher() != null, "rmq.brokerLauncher is not set (run.sh sets it)");
        assumeTrue(!Clients.againstJavaBroker(), "the 4.x Java oracle has no ACL 2.0 (Admin5Test covers Java 5.3.3)");
        String topic = Clients.unique("j4a");
        String denied = Clients.unique("j4deny");
        String group = Clients.unique("j4cg");
        Path dir = Files.createTempDirectory("rmq-it-auth2");
        BrokerProcess b = new BrokerProcess(Clients.unique("auth2_b"), Clients.unique("Auth2Cluster"), dir.resolve("store"));
        b.env.put("RMQ_BROKER_EXTRA_CONF", Auth2Admin.brokerConf(SUPER, SUPER_PW));
        b.start();
        try (Auth2Admin admin = new Auth2Admin(b.addr(), SUPER, SUPER_PW)) {
            admin.createTopic(topic, 2);
            admin.createTopic(denied, 1);
            admin.createUser("j4prod", "j4prodpw");
            admin.createUser("j4cons", "j4conspw");
            admin.createUser("j4ip", "j4ippw");
            // A Deny entry refuses; overlapping Allow and Deny entries, whose order follows stock's entry sort, are
            // compared with Java 5.3.3 by Admin5Test.
            admin.createAcl("User:j4prod", List.of("Topic:j4a*"), List.of("Pub"), List.of(), "Allow");
            admin.createAcl("User:j4prod", List.of("Topic:j4deny*"), List.of("Pub"), List.of(), "Deny");
            admin.createAcl("User:j4cons", List.of("Topic:j4a*", "Group:j4cg*"), List.of("Sub", "Get"), List.of(), "Allow");
            admin.createAcl("User:j4ip", List.of("Topic:j4a*"), List.of("Pub"), List.of("10.0.0.0/8"), "Allow");
            DefaultMQAdminExt routes = new DefaultMQAdminExt();
            routes.setNamesrvAddr(Clients.namesrv());
            routes.setInstanceName(Clients.unique("auth2-admin"));
            routes.start();
            try {
                for (String t : List.of(topic, denied)) {
                    Await.until("the route of " + t, Clients.DEADLINE, () -> {
                        try {
                            return !routes.examineTopicRouteInfo(t).getBrokerDatas().isEmpty();
                        } catch (Exception e) {
                            return false;
                        }
                    }, () -> "");
                }
            } finally {
                routes.shutdown();
            }

            for (int i = 0; i < 3; i++) {
                assertEquals("SEND_OK", send(hook("j4prod", "j4prodpw"), topic, "auth2-" + i));
            }
            assertEquals("code 16: User:j4prod has no permission to access Topic:" + denied + " from 127.0.0.1, the decision is deny.",
                send(hook("j4prod", "j4prodpw"), denied, "x"));
            assertEquals("code 16: check signature failed.", send(hook("j4prod", "wrong"), topic, "x"));
            assertEquals("code 16: username cannot be null.", send(null, topic, "x"));
            assertEquals("code 16: User:j4ip has no permission to access Topic:" + topic + " from 127.0.0.1, no matched policies.",
                send(hook("j4ip", "j4ippw"), topic, "x"));

            Inbox inbox = new Inbox();
            DefaultMQPushConsumer c = new DefaultMQPushConsumer(group, hook("j4cons", "j4conspw"),
                new org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely());
            c.setNamesrvAddr(Clients.namesrv());
            c.setInstanceName(Clients.unique("auth2-consumer"));
            c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            c.subscribe(topic, "*");
            c.registerMessageListener(inbox);
            c.start();
            try {
                Await.until("the three messages", Clients.DEADLINE,
                    () -> inbox.all().stream().filter(m -> new String(m.getBody(), StandardCharsets.UTF_8).startsWith("auth2-")).count() >= 3, inbox::describe);
            } finally {
                c.shutdown();
            }

            // Disabled at run time: the next request is refused.
            admin.setUserStatus("j4prod", "disable");
            assertEquals("code 16: User:j4prod is disabled.", send(hook("j4prod", "j4prodpw"), topic, "x"));
        } finally {
            b.stop();
            BrokerProcess.deleteTree(dir);
        }
    }
}
