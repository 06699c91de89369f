package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * POP consumption with the 5.3.3 remoting client: the group is switched to POP mode on the broker (what
 * {@code mqadmin setConsumeMode -m POP -q 8} sends), the push consumer with client rebalance off asks the broker for its
 * assignment (QUERY_ASSIGNMENT) and pops; CONSUME_SUCCESS acks, RECONSUME_LATER changes the invisible time and the
 * message comes back through the POP retry topic with its reconsume count raised. Needs the timer store.
 */
@Tag("timer")
class Client5PopTest {
    @Test
    void popAckAndRedelivery() throws Exception {
        // The ROCKETMQ header codec writes the request code as a short (RocketMQSerializable): 200050 and the other
        // POP codes do not survive it, so POP works with JSON headers only, against stock brokers too.
        assumeTrue("JSON".equals(Clients.serializeType()), "POP request codes need JSON headers");
        String topic = Clients.unique("pop5");
        String group = Clients.unique("pop5cg");
        Map<String, List<Integer>> deliveries = new ConcurrentHashMap<>();
        DefaultMQProducer producer = Clients.startProducer();
        DefaultMQPushConsumer consumer = null;
        try {
            SendResult first = producer.send(new Message(topic, "TagP", "k0", "p0".getBytes(StandardCharsets.UTF_8)));
            assertEquals(SendStatus.SEND_OK, first.getSendStatus(), first::toString);
            MQClientAPIImpl api = producer.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl();
            TopicRouteData route = api.getTopicRouteInfoFromNameServer(topic, 3000);
            String brokerAddr = route.getBrokerDatas().get(0).selectBrokerAddr();
            api.setMessageRequestMode(brokerAddr, topic, group, MessageRequestMode.POP, 8, 3000);

            consumer = new DefaultMQPushConsumer(group);
            consumer.setNamesrvAddr(Clients.namesrv());
            consumer.setClientRebalance(false);
            consumer.setPopInvisibleTime(20000);
            consumer.subscribe(topic, "*");
            consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
                ConsumeConcurrentlyStatus status = ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
                for (MessageExt m : msgs) {
                    List<Integer> seen = deliveries.computeIfAbsent(m.getKeys(), k -> new CopyOnWriteArrayList<>());
                    seen.add(m.getReconsumeTimes());
                    if ("later".equals(m.getKeys()) && seen.size() == 1) {
                        status = ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    }
                }
                return status;
            });
            consumer.start();
            for (int i = 1; i <= 5; i++) {
                SendResult r = producer.send(new Message(topic, "TagP", "k" + i, ("p" + i).getBytes(StandardCharsets.UTF_8)));
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r::toString);
            }
            SendResult later = producer.send(new Message(topic, "TagP", "later", "again".getBytes(StandardCharsets.UTF_8)));
            assertEquals(SendStatus.SEND_OK, later.getSendStatus(), later::toString);

            Await.until("every message once and the failed one again", Clients.DEADLINE, () -> {
                for (int i = 0; i <= 5; i++) {
                    if (!deliveries.containsKey("k" + i)) {
                        return false;
                    }
                }
                List<Integer> l = deliveries.get("later");
                return l != null && l.size() >= 2;
            }, deliveries::toString);
            // Acked messages stay acked: nothing else arrives within another pop round.
            Thread.sleep(3000);
            for (int i = 0; i <= 5; i++) {
                assertEquals(List.of(0), deliveries.get("k" + i), deliveries::toString);
            }
            List<Integer> l = deliveries.get("later");
            assertEquals(2, l.size(), deliveries::toString);
            assertEquals(0, l.get(0), deliveries::toString);
            assertTrue(l.get(1) >= 1, deliveries::toString);
        } finally {
            producer.shutdown();
            if (consumer != null) {
                consumer.shutdown();
            }
        }
    }
}
