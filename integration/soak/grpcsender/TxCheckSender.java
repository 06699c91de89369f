import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionChecker;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * The check-back probe of integration/soak/proxytx_test.go: a 5.x SDK producer (publishing the topics it is given,
 * with setTopics) sends to each topic in turn transactional messages whose local transaction stays UNKNOWN
 * (neither commit nor rollback is called), so only the broker's check-back, relayed by the endpoint, can settle
 * them; the checker answers COMMIT. One line per event on stdout:
 *
 * <pre>
 *   READY
 *   HALF  id messageId
 *   FAIL  id reason
 *   CHECK id COMMIT
 * </pre>
 *
 * An id is "topic#n". Arguments: endpoint, topics (comma-separated), count per topic. The producer stays up (its
 * checker answering) until stdin ends.
 */
public final class TxCheckSender {
    private static final Object OUT = new Object();

    private static void emit(String line) {
        synchronized (OUT) {
            System.out.println(line);
            System.out.flush();
        }
    }

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        String[] topics = args[1].split(",");
        int count = Integer.parseInt(args[2]);
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        ClientConfiguration cc = ClientConfiguration.newBuilder().setEndpoints(endpoint)
            .setRequestTimeout(Duration.ofSeconds(5)).build();
        TransactionChecker checker = view -> {
            emit("CHECK " + view.getProperties().getOrDefault("soakid", "") + " COMMIT");
            return TransactionResolution.COMMIT;
        };
        Producer p = null;
        while (p == null) {
            try {
                p = provider.newProducerBuilder().setClientConfiguration(cc).setTopics(topics)
                    .setTransactionChecker(checker).build();
            } catch (Exception e) {
                // The endpoint may not have the topics' routes yet (a broker that boots slowly).
                emit("NOTE producer start: " + String.valueOf(e).replace('\n', ' '));
                Thread.sleep(500);
            }
        }
        emit("READY");
        for (int n = 0; n < count * topics.length; n++) {
            String topic = topics[n % topics.length];
            String id = topic + "#" + n / topics.length;
            Message m = provider.newMessageBuilder().setTopic(topic).setKeys(id).addProperty("soakid", id)
                .setBody(("txcheck " + id).getBytes(StandardCharsets.UTF_8)).build();
            try {
                Transaction tx = p.beginTransaction();
                SendReceipt r = p.send(m, tx);
                // Neither tx.commit() nor tx.rollback(): the local transaction is UNKNOWN.
                emit("HALF " + id + " " + r.getMessageId());
            } catch (Exception e) {
                emit("FAIL " + id + " " + String.valueOf(e).replace('\n', ' '));
            }
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (in.readLine() != null) {
            // Wait for the end of input; the checker answers meanwhile.
        }
        p.close();
        System.exit(0);
    }
}
