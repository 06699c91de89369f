package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.junit.jupiter.api.Test;

/** A "TagA || TagC" subscription gets exactly the TagA and TagC messages of a queue. */
class TagFilterTest {

    @Test
    void tagExpressionDeliversOnlyMatchingTags() throws Exception {
        String topic = Clients.unique("tags");
        // null = a message without tags. Everything goes to one queue and the consumer runs one consume
        // thread, so deliveries happen in queue order: once the last message (a TagC) has arrived, every
        // earlier message has either been delivered or filtered out.
        String[] tags = {"TagA", "TagB", null, "TagC", "TagD", "TagA", "TagB", "TagAB", "TagC", "TagB", "TagC"};
        Set<String> wanted = new TreeSet<>();
        List<String> sentSummary = new ArrayList<>();

        DefaultMQProducer producer = Clients.startProducer();
        try {
            for (int i = 0; i < tags.length; i++) {
                String key = "tag-" + i;
                Message m = new Message(topic, tags[i], key, ("tagged " + i).getBytes(StandardCharsets.UTF_8));
                SendResult r = producer.send(m, (mqs, msg, arg) -> mqs.get(0), null);
                assertEquals(SendStatus.SEND_OK, r.getSendStatus(), () -> "send result " + r);
                sentSummary.add(key + "=" + tags[i] + "@q" + r.getMessageQueue().getQueueId() + "/" + r.getQueueOffset());
                if ("TagA".equals(tags[i]) || "TagC".equals(tags[i])) {
                    wanted.add(key);
                }
            }
        } finally {
            producer.shutdown();
        }
        String lastKey = "tag-" + (tags.length - 1);

        Inbox inbox = new Inbox();
        DefaultMQPushConsumer consumer = Clients.pushConsumer(topic, "TagA || TagC", 1);
        consumer.registerMessageListener(inbox);
        consumer.start();
        try {
            Await.until("the last TagC message", Clients.DEADLINE,
                () -> inbox.has(m -> lastKey.equals(m.getKeys())),
                () -> "sent " + sentSummary + "; " + inbox.describe());
        } finally {
            consumer.shutdown();
        }

        Set<String> gotKeys = inbox.all().stream().map(MessageExt::getKeys).collect(Collectors.toCollection(TreeSet::new));
        Set<String> gotTags = inbox.all().stream().map(MessageExt::getTags).collect(Collectors.toCollection(TreeSet::new));
        assertEquals(wanted, gotKeys, () -> "delivered keys; sent " + sentSummary + "; " + inbox.describe());
        assertEquals(Set.of("TagA", "TagC"), gotTags, () -> "delivered tags; " + inbox.describe());
    }
}
