package rmq.it;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Predicate;
import java.util.stream.Collectors;

import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.message.MessageExt;

/** A concurrent listener that acknowledges and keeps every delivery, duplicates included, in arrival order. */
final class Inbox implements MessageListenerConcurrently {
    private final ConcurrentLinkedQueue<MessageExt> received = new ConcurrentLinkedQueue<>();

    @Override
    public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext context) {
        received.addAll(msgs);
        return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
    }

    List<MessageExt> all() {
        return new ArrayList<>(received);
    }

    Optional<MessageExt> first(Predicate<MessageExt> match) {
        return received.stream().filter(match).findFirst();
    }

    boolean has(Predicate<MessageExt> match) {
        return first(match).isPresent();
    }

    /** One line per delivery, for timeout messages. */
    String describe() {
        return received.size() + " received " + received.stream()
            .map(m -> "[q" + m.getQueueId() + "@" + m.getQueueOffset() + " tags=" + m.getTags() + " keys="
                + m.getKeys() + " body=" + new String(m.getBody(), StandardCharsets.UTF_8) + "]")
            .collect(Collectors.joining(", "));
    }
}
