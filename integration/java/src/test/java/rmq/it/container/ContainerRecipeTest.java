package rmq.it.container;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageId;
import org.junit.jupiter.api.Test;
import org.testcontainers.utility.DockerImageName;

/**
 * The rmq image started by the Testcontainers recipe, unchanged, and used from the host through the mapped
 * ports with the stock 4.9.8 client: send, consume, and look a message up by its offsetMsgId. run.sh runs
 * this class (profile "container") only when a Docker daemon answers; the image is built locally
 * (make image) and nothing is pulled.
 */
class ContainerRecipeTest {
    private static final int COUNT = 20;
    private static final long DEADLINE_MS = 60_000;

    @Test
    void recipeStartsAndClientsWorkThroughMappedPorts() throws Exception {
        String image = System.getProperty("rmq.image", "rmq:latest");
        try (RecipeContainer rmq = new RecipeContainer(DockerImageName.parse(image))) {
            rmq.start();
            String namesrv = rmq.getNamesrvAddr();
            String brokerAddr = rmq.getHost() + ":" + rmq.getMappedPort(RecipeContainer.BROKER_PORT);
            String topic = "ContainerTopic";

            DefaultMQProducer producer = new DefaultMQProducer("container_producer");
            producer.setNamesrvAddr(namesrv);
            producer.setInstanceName("container-producer");
            producer.start();
            List<SendResult> sent = new ArrayList<>();
            Set<String> bodies = new HashSet<>();
            try {
                for (int i = 0; i < COUNT; i++) {
                    String body = "container-" + i;
                    SendResult r = producer.send(new Message(topic, "tag", body.getBytes(StandardCharsets.UTF_8)));
                    assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r.toString());
                    sent.add(r);
                    bodies.add(body);
                }

                // The offsetMsgId carries the advertised address (host:mapped port), so a lookup by id from
                // the host reaches the broker (stock 4.9.8 would encode the container's own address).
                SendResult first = sent.get(0);
                MessageId id = MessageDecoder.decodeMessageId(first.getOffsetMsgId());
                assertEquals(rmq.getMappedPort(RecipeContainer.BROKER_PORT),
                        ((java.net.InetSocketAddress) id.getAddress()).getPort(), "port in the offsetMsgId");
                MessageExt viewed = producer.viewMessage(first.getOffsetMsgId());
                assertNotNull(viewed);
                assertEquals(first.getMsgId(), viewed.getMsgId());
                assertEquals("container-0", new String(viewed.getBody(), StandardCharsets.UTF_8));
                assertEquals(brokerAddr, producer.getDefaultMQProducerImpl().getmQClientFactory()
                        .getMQClientAPIImpl().getTopicRouteInfoFromNameServer(topic, 3000)
                        .getBrokerDatas().get(0).selectBrokerAddr(), "broker address the name server hands out");
            } finally {
                producer.shutdown();
            }

            DefaultLitePullConsumer consumer = new DefaultLitePullConsumer("container_consumer");
            consumer.setNamesrvAddr(namesrv);
            consumer.setInstanceName("container-consumer");
            consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
            consumer.subscribe(topic, "*");
            consumer.start();
            Set<String> received = new HashSet<>();
            try {
                long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(DEADLINE_MS);
                while (received.size() < COUNT && System.nanoTime() < end) {
                    for (MessageExt m : consumer.poll(1000)) {
                        received.add(new String(m.getBody(), StandardCharsets.UTF_8));
                    }
                }
            } finally {
                consumer.shutdown();
            }
            assertEquals(bodies, received, "messages consumed through the mapped ports");
            assertTrue(rmq.isRunning());
        }
    }
}
