package rmq.it.container;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;
import org.testcontainers.containers.Container.ExecResult;
import org.testcontainers.utility.DockerImageName;

/**
 * Clock control from a Java test: the rmq image started by the Testcontainers recipe with the broker key
 * clockControlEnable=true, a message sent with delayTimeLevel 16 (30 min) through the mapped ports, and the
 * broker's message clock moved ahead with {@code execInContainer("./mqadmin", "fastForward", ...)}: the
 * message is not there after 29 minutes of broker time and is received within seconds after 31, with a store
 * time 30 min after the send on the broker's clock. No test time is spent on the 30 minutes.
 */
class ClockControlContainerTest {
    private static final long DEADLINE_MS = 30_000;

    /** The recipe's container, its broker started with a config that turns clock control on. */
    static RecipeContainer clockControlled(DockerImageName image) {
        return new RecipeContainer(image) {
            @Override
            protected void configure() {
                withCommand("sh", "-c", "#!/bin/bash\n"
                        + "printf 'brokerClusterName=DefaultCluster\\nbrokerName=broker-a\\nclockControlEnable=true\\n'"
                        + " >/tmp/broker.conf\n"
                        + "./mqnamesrv &\n"
                        + "./mqbroker -n localhost:" + NAMESRV_PORT + " -c /tmp/broker.conf");
            }
        };
    }

    /**
     * mqadmin fastForward in the container. The recipe makes the broker advertise the host's address and
     * mapped port, which do not lead to it from inside the container, so the broker is named by its own
     * port there (-b); a container that keeps its own address takes -c DefaultCluster as well.
     */
    private static String fastForward(RecipeContainer rmq, String duration) throws Exception {
        ExecResult r = rmq.execInContainer("./mqadmin", "fastForward", "-n", "localhost:" + RecipeContainer.NAMESRV_PORT,
                "-b", "localhost:" + RecipeContainer.BROKER_PORT, "-d", duration);
        assertEquals(0, r.getExitCode(), r.toString());
        return r.getStdout();
    }

    private static List<MessageExt> pollFor(DefaultLitePullConsumer consumer, long ms, int want) {
        List<MessageExt> got = new ArrayList<>();
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (got.size() < want && System.nanoTime() < end) {
            got.addAll(consumer.poll(200));
        }
        return got;
    }

    @Test
    void delayLevel16IsDeliveredAfterFastForward() throws Exception {
        String image = System.getProperty("rmq.image", "rmq:latest");
        try (RecipeContainer rmq = clockControlled(DockerImageName.parse(image))) {
            rmq.start();
            String namesrv = rmq.getNamesrvAddr();
            String topic = "ClockControlTopic";

            DefaultLitePullConsumer consumer = new DefaultLitePullConsumer("clock_consumer");
            consumer.setNamesrvAddr(namesrv);
            consumer.setInstanceName("clock-consumer");
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            DefaultMQProducer producer = new DefaultMQProducer("clock_producer");
            producer.setNamesrvAddr(namesrv);
            producer.setInstanceName("clock-producer");
            producer.start();
            try {
                Message m = new Message(topic, "tag", "in-30-min".getBytes(StandardCharsets.UTF_8));
                m.setDelayTimeLevel(16);
                SendResult sent = producer.send(m);
                assertEquals(SendStatus.SEND_OK, sent.getSendStatus(), sent.toString());
                consumer.subscribe(topic, "*");
                consumer.start();

                String out = fastForward(rmq, "29m");
                assertTrue(out.contains("fast-forwarded 29m0s"), out);
                // fastForward answers once everything due is stored: nothing is, 29 minutes in.
                assertEquals(List.of(), pollFor(consumer, 1000, 1), "delivered before its 30 minutes");

                fastForward(rmq, "120000"); // 2 min, in milliseconds
                List<MessageExt> got = pollFor(consumer, DEADLINE_MS, 1);
                assertEquals(1, got.size(), "messages received after the fast-forward");
                MessageExt ext = got.get(0);
                assertEquals("in-30-min", new String(ext.getBody(), StandardCharsets.UTF_8));
                // Stored by the delivery 30 min after the send on the broker's clock (the client's born time is
                // its own, real, clock): never early.
                long late = ext.getStoreTimestamp() - ext.getBornTimestamp();
                assertTrue(late >= TimeUnit.MINUTES.toMillis(30) && late < TimeUnit.MINUTES.toMillis(31),
                        "store time " + late + " ms after the born time");
            } finally {
                producer.shutdown();
                consumer.shutdown();
            }
        }
    }
}
