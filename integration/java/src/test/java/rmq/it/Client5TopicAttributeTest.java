package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.util.HashMap;
import java.util.Map;

import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.attribute.TopicMessageType;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.junit.jupiter.api.Test;

/**
 * The 5.x topic attribute message.type through the 5.3.3 remoting client, as 5.x {@code mqadmin updateTopic -a
 * +message.type=FIFO} sends it (UPDATE_AND_CREATE_TOPIC's attributes) and reads it back (GET_TOPIC_CONFIG).
 */
class Client5TopicAttributeTest {
    private static void create(MQClientAPIImpl api, String addr, String topic, String type) throws Exception {
        TopicConfig tc = new TopicConfig(topic, 2, 2, 6);
        Map<String, String> attributes = new HashMap<>();
        if (type != null) {
            attributes.put("+message.type", type);
        }
        tc.setAttributes(attributes);
        api.createTopic(addr, "TBW102", tc, 3000);
    }

    @Test
    void messageTypeAttribute() throws Exception {
        assumeFalse(Clients.againstJava4Broker(), "a 4.x Java broker has no topic attributes nor GET_TOPIC_CONFIG");
        String topic = Clients.unique("typed5");
        DefaultMQProducer producer = Clients.startProducer();
        try {
            MQClientAPIImpl api = producer.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl();
            String addr = api.getBrokerClusterInfo(3000).getBrokerAddrTable().values().iterator().next().selectBrokerAddr();

            create(api, addr, topic, "FIFO");
            assertEquals(TopicMessageType.FIFO, api.getTopicConfig(addr, topic, 3000).getTopicMessageType());
            // An update without attributes keeps the type.
            create(api, addr, topic, null);
            assertEquals(TopicMessageType.FIFO, api.getTopicConfig(addr, topic, 3000).getTopicMessageType());
            create(api, addr, topic, "TRANSACTION");
            assertEquals(TopicMessageType.TRANSACTION, api.getTopicConfig(addr, topic, 3000).getTopicMessageType());

            MQClientException mixed = assertThrows(MQClientException.class, () -> create(api, addr, topic, "MIXED"));
            assertEquals(ResponseCode.INVALID_PARAMETER, mixed.getResponseCode(), mixed::toString);
            MQClientException bad = assertThrows(MQClientException.class, () -> create(api, addr, topic, "BATCH"));
            assertEquals(ResponseCode.SYSTEM_ERROR, bad.getResponseCode(), bad::toString);
            assertEquals(TopicMessageType.TRANSACTION, api.getTopicConfig(addr, topic, 3000).getTopicMessageType());

            // A topic made without the attribute is NORMAL to 5.x.
            String plain = Clients.unique("plain5");
            create(api, addr, plain, null);
            assertEquals(TopicMessageType.NORMAL, api.getTopicConfig(addr, plain, 3000).getTopicMessageType());
        } finally {
            producer.shutdown();
        }
    }
}
