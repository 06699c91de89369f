package rmq.it;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.junit.jupiter.api.Test;

/** Guards the two-run setup: the client really encodes headers the way run.sh asked for. */
class SerializeTypeTest {

    @Test
    void clientUsesRequestedHeaderSerialization() {
        assertEquals(Clients.serializeType(), RemotingCommand.getSerializeTypeConfigInThisServer().name());
    }
}
