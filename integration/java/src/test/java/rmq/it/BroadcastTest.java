package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;
import org.junit.jupiter.api.Test;

/** Two broadcasting push consumers of one group each get every message (clustering would split them). */
class BroadcastTest {

    @Test
    void everyMemberOfABroadcastingGroupGetsEveryMessage() throws Exception {
        String topic = Clients.unique("broadcast");
        String group = Clients.unique("bcg");
        int n = 12;
        Set<String> sent = new TreeSet<>();
        DefaultMQProducer producer = Clients.startProducer();
        try {
            for (int i = 0; i < n; i++) {
                SendResult r = producer.send(new Message(topic, "TagB", "bc-" + i, ("bc " + i).getBytes(StandardCharsets.UTF_8)));
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), r::toString);
                sent.add(r.getMsgId());
            }
        } finally {
            producer.shutdown();
        }

        Inbox first = new Inbox();
        Inbox second = new Inbox();
        DefaultMQPushConsumer a = broadcaster(topic, group, first);
        DefaultMQPushConsumer b = broadcaster(topic, group, second);
        try {
            Await.until("both members to get all " + n + " messages", Clients.DEADLINE,
                () -> ids(first).containsAll(sent) && ids(second).containsAll(sent),
                () -> "first: " + first.describe() + "; second: " + second.describe());
        } finally {
            a.shutdown();
            b.shutdown();
        }
        assertEquals(sent, ids(first), first::describe);
        assertEquals(sent, ids(second), second::describe);
    }

    private static Set<String> ids(Inbox inbox) {
        return inbox.all().stream().map(MessageExt::getMsgId).collect(Collectors.toCollection(TreeSet::new));
    }

    private static DefaultMQPushConsumer broadcaster(String topic, String group, Inbox inbox) throws Exception {
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(Clients.namesrv());
        c.setInstanceName(Clients.unique("bc"));
        c.setMessageModel(MessageModel.BROADCASTING);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.subscribe(topic, "*");
        c.registerMessageListener(inbox);
        c.start();
        return c;
    }
}
