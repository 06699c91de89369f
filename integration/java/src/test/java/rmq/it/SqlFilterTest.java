package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.protocol.ResponseCode;
import org.junit.jupiter.api.Test;

/**
 * SQL92 filters ({@code MessageSelector.bySql}) with the 4.9.8 client. run.sh starts the broker with
 * enablePropertyFilter=true and filterSupportRetry=true: push and lite-pull consumers get exactly the messages
 * whose properties (TAGS and KEYS included) make the expression TRUE; messages on the group's retry topic are
 * filtered by the expression of their original topic (RETRY_TOPIC); an expression that does not compile fails the
 * consumer's start with SUBSCRIPTION_PARSE_FAILED (CHECK_CLIENT_CONFIG).
 *
 * <p>Every message goes to queue 0 and is read in queue order, so once the last message (which matches) has
 * arrived every earlier one has either been delivered or filtered out.
 */
class SqlFilterTest {
    private static final String EXPR = "(region IN ('eu', 'us') AND price > 10 AND (TAGS IS NULL OR TAGS <> 'skip'))"
        + " OR KEYS = 'always'";
    private static final String BAD_EXPR = "price > 10 AND region IN (1)";

    /** One test message: key, tag (or null), region (or null), price (or null). */
    private record Spec(String key, String tag, String region, Integer price) {
        boolean matches() {
            return "always".equals(key)
                || (("eu".equals(region) || "us".equals(region)) && price != null && price > 10 && !"skip".equals(tag));
        }

        Message message(String topic) {
            Message m = new Message(topic, tag, key, (key + " payload").getBytes(StandardCharsets.UTF_8));
            if (region != null) {
                m.putUserProperty("region", region);
            }
            if (price != null) {
                m.putUserProperty("price", price.toString());
            }
            return m;
        }
    }

    /** Twenty messages of every kind, then "last", which matches. */
    private static List<Spec> specs(String prefix) {
        List<Spec> out = new ArrayList<>();
        String[] regions = {"eu", "us", "ap", null};
        for (int i = 0; i < 20; i++) {
            out.add(new Spec(prefix + i, i % 7 == 6 ? "skip" : (i % 2 == 0 ? "TagA" : null), regions[i % 4],
                i % 5 == 4 ? null : i * 3));
        }
        out.add(new Spec("always", "TagA", null, null));
        out.add(new Spec(prefix + "last", null, "us", 99));
        return out;
    }

    private static Set<String> wanted(List<Spec> specs) {
        return specs.stream().filter(Spec::matches).map(Spec::key).collect(Collectors.toCollection(TreeSet::new));
    }

    private static void sendToQueue0(DefaultMQProducer producer, Message m) throws Exception {
        SendResult r = producer.send(m, (mqs, msg, arg) -> mqs.get(0), null);
        assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r::toString);
    }

    /** A message put straight on the group's retry topic, as if sent back from originalTopic. */
    private static Message retryMessage(String group, String originalTopic, Spec spec) {
        Message m = spec.message(MixAll.getRetryTopic(group));
        MessageAccessor.putProperty(m, MessageConst.PROPERTY_RETRY_TOPIC, originalTopic);
        return m;
    }

    private static DefaultMQPushConsumer pushConsumer(String group, String topic, String expr) throws MQClientException {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(Clients.namesrv());
        c.setInstanceName(Clients.unique("consumer"));
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setConsumeThreadMin(1);
        c.setConsumeThreadMax(1);
        // The retry topic appears with the first heartbeat, after the start-up route lookup.
        c.setPollNameServerInterval(1000);
        c.subscribe(topic, MessageSelector.bySql(expr));
        return c;
    }

    private static DefaultLitePullConsumer litePullConsumer(String group) {
        DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
        c.setNamesrvAddr(Clients.namesrv());
        c.setInstanceName(Clients.unique("lite"));
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPollTimeoutMillis(500);
        c.setPollNameServerInterval(1000);
        return c;
    }

    @Test
    void pushConsumerGetsMatchingSubsetAndFilteredRetries() throws Exception {
        String topic = Clients.unique("sql");
        String group = Clients.unique("cg");
        List<Spec> specs = specs("push-");
        Spec retryMe = new Spec("retry-me", null, "eu", 50);
        Spec retryMatch = new Spec("retry-match", null, "us", 40);
        Spec retryNoMatch = new Spec("retry-nomatch", null, "ap", 40);

        DefaultMQProducer producer = Clients.startProducer();
        ConcurrentLinkedQueue<MessageExt> got = new ConcurrentLinkedQueue<>();
        AtomicBoolean failedOnce = new AtomicBoolean();
        DefaultMQPushConsumer consumer = null;
        try {
            sendToQueue0(producer, new Message(topic, "create".getBytes(StandardCharsets.UTF_8)));
            consumer = pushConsumer(group, topic, EXPR);
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                got.addAll(msgs);
                for (MessageExt m : msgs) {
                    if (retryMe.key().equals(m.getKeys()) && failedOnce.compareAndSet(false, true)) {
                        ctx.setDelayLevelWhenNextConsume(1);
                        return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            });
            consumer.start();

            for (Spec s : specs) {
                sendToQueue0(producer, s.message(topic));
            }
            sendToQueue0(producer, retryMe.message(topic));
            // On the retry topic the non-matching message comes first: once retry-match is in, it was skipped.
            sendToQueue0(producer, retryMessage(group, topic, retryNoMatch));
            sendToQueue0(producer, retryMessage(group, topic, retryMatch));

            String last = specs.get(specs.size() - 1).key();
            Await.until("the last message, both deliveries of retry-me and retry-match", Clients.DEADLINE,
                () -> keys(got).contains(last) && keys(got).contains(retryMatch.key())
                    && got.stream().filter(m -> retryMe.key().equals(m.getKeys())).count() == 2,
                () -> describe(got));
        } finally {
            if (consumer != null) {
                consumer.shutdown();
            }
            producer.shutdown();
        }

        Set<String> want = wanted(specs);
        want.add(retryMe.key());
        want.add(retryMatch.key());
        assertEquals(want, new TreeSet<>(keys(got)), () -> describe(got));
        MessageExt redelivered = got.stream().filter(m -> retryMe.key().equals(m.getKeys()) && m.getReconsumeTimes() == 1)
            .findFirst().orElseThrow();
        assertEquals(topic, redelivered.getTopic(), "redelivered message's topic (restored from RETRY_TOPIC)");
    }

    @Test
    void pushConsumerWithBadExpressionFailsToStart() throws Exception {
        String topic = Clients.unique("sqlbad");
        DefaultMQProducer producer = Clients.startProducer();
        try {
            sendToQueue0(producer, new Message(topic, "create".getBytes(StandardCharsets.UTF_8)));
            // The client checks a SQL92 expression with a broker only when it knows the topic's route
            // (MQClientInstance.checkClientInBroker skips a topic without a broker address), so start() fails only
            // once the auto-created topic is on the name server; the Java broker registers it asynchronously.
            Await.until("a name-server route for " + topic, Clients.DEADLINE, () -> DelayTest.routed(producer, topic),
                () -> "no route");
        } finally {
            producer.shutdown();
        }
        DefaultMQPushConsumer consumer = pushConsumer(Clients.unique("cg"), topic, BAD_EXPR);
        consumer.registerMessageListener(new Inbox());
        try {
            MQClientException e = assertThrows(MQClientException.class, consumer::start);
            assertEquals(ResponseCode.SUBSCRIPTION_PARSE_FAILED, e.getResponseCode(), e::toString);
            assertTrue(e.getErrorMessage() != null && !e.getErrorMessage().isEmpty(), e::toString);
        } finally {
            consumer.shutdown();
        }
    }

    @Test
    void litePullConsumerGetsMatchingSubsetAndFilteredRetries() throws Exception {
        String topic = Clients.unique("sqllite");
        String group = Clients.unique("cg");
        List<Spec> specs = specs("lite-");
        Spec retryMatch = new Spec("retry-match", null, "eu", 40);
        Spec retryNoMatch = new Spec("retry-nomatch", "TagA", "us", 5);

        DefaultMQProducer producer = Clients.startProducer();
        List<MessageExt> got = new ArrayList<>();
        DefaultLitePullConsumer consumer = litePullConsumer(group);
        try {
            for (Spec s : specs) {
                sendToQueue0(producer, s.message(topic));
            }
            sendToQueue0(producer, retryMessage(group, topic, retryNoMatch));
            sendToQueue0(producer, retryMessage(group, topic, retryMatch));

            consumer.subscribe(topic, MessageSelector.bySql(EXPR));
            consumer.start();
            // Subscribing while running heartbeats first, so the broker holds the group's filter of topic
            // before the retry topic is pulled.
            consumer.subscribe(MixAll.getRetryTopic(group), "*");
            String last = specs.get(specs.size() - 1).key();
            Await.until("the last message and retry-match", Clients.DEADLINE, () -> {
                got.addAll(consumer.poll(200));
                return keys(got).contains(last) && keys(got).contains(retryMatch.key());
            }, () -> describe(got));
        } finally {
            consumer.shutdown();
            producer.shutdown();
        }

        Set<String> want = wanted(specs);
        want.add(retryMatch.key());
        assertEquals(want, new TreeSet<>(keys(got)), () -> describe(got));
    }

    @Test
    void litePullConsumerWithBadExpressionFailsToStart() throws Exception {
        String topic = Clients.unique("sqllitebad");
        DefaultMQProducer producer = Clients.startProducer();
        try {
            sendToQueue0(producer, new Message(topic, "create".getBytes(StandardCharsets.UTF_8)));
        } finally {
            producer.shutdown();
        }
        DefaultLitePullConsumer consumer = litePullConsumer(Clients.unique("cg"));
        try {
            consumer.subscribe(topic, MessageSelector.bySql(BAD_EXPR));
            MQClientException e = assertThrows(MQClientException.class, consumer::start);
            assertEquals(ResponseCode.SUBSCRIPTION_PARSE_FAILED, e.getResponseCode(), e::toString);
        } finally {
            consumer.shutdown();
        }
    }

    private static List<String> keys(java.util.Collection<MessageExt> msgs) {
        return msgs.stream().map(MessageExt::getKeys).collect(Collectors.toList());
    }

    private static String describe(java.util.Collection<MessageExt> msgs) {
        return msgs.size() + " received " + msgs.stream()
            .map(m -> "[" + m.getTopic() + " q" + m.getQueueId() + "@" + m.getQueueOffset() + " keys=" + m.getKeys()
                + " tags=" + m.getTags() + " region=" + m.getUserProperty("region") + " price="
                + m.getUserProperty("price") + " reconsume=" + m.getReconsumeTimes() + "]")
            .collect(Collectors.joining(", "));
    }
}
