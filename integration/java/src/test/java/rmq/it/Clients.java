package rmq.it;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;

/**
 * Builds stock clients pointed at the broker under test. Every client gets its own instance name, so
 * each one owns a separate MQClientInstance (own connections, own heartbeats) as separate processes would.
 */
final class Clients {
    /** Upper bound for anything that crosses a rebalance (a new push consumer settles within ~20 s). */
    static final Duration DEADLINE = Duration.ofSeconds(60);

    private static final AtomicInteger SEQ = new AtomicInteger();
    private static final String RUN = Long.toString(System.currentTimeMillis(), 36);

    private Clients() {
    }

    static String namesrv() {
        String addr = System.getProperty("rmq.namesrv");
        if (addr == null || addr.isBlank()) {
            throw new IllegalStateException("system property rmq.namesrv (host:port of the name server) is not set");
        }
        return addr;
    }

    /** The header serialization this JVM was started with: JSON unless run.sh asked for ROCKETMQ. */
    static String serializeType() {
        return System.getProperty("rmq.serializeType", "JSON");
    }

    /**
     * A topic, group or instance name no other test (nor the other header run against the same broker)
     * uses. Only characters the client's topic/group validators accept.
     */
    static String unique(String what) {
        return what + "_" + serializeType() + "_" + RUN + "_" + SEQ.incrementAndGet();
    }

    /** "rmq", or "java-VERSION" when run.sh runs the suite against the stock Java broker (the oracle). */
    static String brokerKind() {
        return System.getProperty("rmq.brokerKind", "rmq");
    }

    static boolean againstJavaBroker() {
        return brokerKind().startsWith("java");
    }

    /** The oracle is a 4.x Java broker, which knows no 5.x request codes. */
    static boolean againstJava4Broker() {
        return brokerKind().startsWith("java-4.");
    }

    static DefaultMQProducer startProducer() throws MQClientException {
        return startProducer(unique("pg"));
    }

    static DefaultMQProducer startProducer(String group) throws MQClientException {
        DefaultMQProducer producer = new DefaultMQProducer(group);
        producer.setNamesrvAddr(namesrv());
        producer.setInstanceName(unique("producer"));
        // The first send also pays for the route lookups and the connection; a cold JVM on a shared
        // 2-core machine can need more than the 3 s default for that.
        producer.setSendMsgTimeout(10_000);
        producer.start();
        return producer;
    }

    /** A push consumer that has subscribed but is not started, so the caller can register a listener. */
    static DefaultMQPushConsumer pushConsumer(String topic, String subExpression, int consumeThreads)
        throws MQClientException {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(unique("cg"));
        consumer.setNamesrvAddr(namesrv());
        consumer.setInstanceName(unique("consumer"));
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setConsumeThreadMin(consumeThreads);
        consumer.setConsumeThreadMax(consumeThreads);
        // Offsets committed every second instead of every 5 s: tests that wait for the broker to hold them wait less.
        consumer.setPersistConsumerOffsetInterval(1000);
        consumer.subscribe(topic, subExpression);
        return consumer;
    }
}
