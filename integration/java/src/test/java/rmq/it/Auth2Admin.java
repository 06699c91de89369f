package rmq.it;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.stream.Collectors;

import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.common.protocol.header.CreateTopicRequestHeader;
import org.apache.rocketmq.remoting.CommandCustomHeader;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * ACL 2.0 set-up for the 4.x-client suites (client4, grpc5), which have no 5.x mqadmin: the request codes
 * AUTH_CREATE_USER (3001), AUTH_UPDATE_USER (3002) and AUTH_CREATE_ACL (3006) with the 5.3.3 headers and bodies, and
 * UPDATE_AND_CREATE_TOPIC (17), sent by the 4.9.8 remoting client and signed by its AclClientRPCHook as the broker's
 * super user. The 5.3.3 subcommands themselves are tested by Admin5Test (profile admin5), against rmq and Java 5.3.3.
 */
final class Auth2Admin implements AutoCloseable {
    private static final int AUTH_CREATE_USER = 3001;
    private static final int AUTH_UPDATE_USER = 3002;
    private static final int AUTH_CREATE_ACL = 3006;
    private static final int UPDATE_AND_CREATE_TOPIC = 17;

    /** The broker config lines that turn ACL 2.0 on with superUser/superPassword as initAuthenticationUser. */
    static String brokerConf(String superUser, String superPassword) {
        return String.join("\n",
            "authenticationEnabled=true", "authorizationEnabled=true", "autoCreateTopicEnable=false",
            "authenticationMetadataProvider=org.apache.rocketmq.auth.authentication.provider.LocalAuthenticationMetadataProvider",
            "authorizationMetadataProvider=org.apache.rocketmq.auth.authorization.provider.LocalAuthorizationMetadataProvider",
            "initAuthenticationUser={\"username\":\"" + superUser + "\",\"password\":\"" + superPassword + "\"}",
            "innerClientAuthenticationCredentials={\"accessKey\":\"" + superUser + "\",\"secretKey\":\"" + superPassword + "\"}");
    }

    /** UserRequestHeader: the username. */
    static final class UserHeader implements CommandCustomHeader {
        private String username;

        UserHeader(String username) {
            this.username = username;
        }

        @Override
        public void checkFields() {
        }
    }

    /** AclRequestHeader: the subject. */
    static final class AclHeader implements CommandCustomHeader {
        private String subject;

        AclHeader(String subject) {
            this.subject = subject;
        }

        @Override
        public void checkFields() {
        }
    }

    private final NettyRemotingClient client;
    private final String addr;

    Auth2Admin(String addr, String superUser, String superPassword) {
        this.addr = addr;
        this.client = new NettyRemotingClient(new NettyClientConfig());
        client.registerRPCHook(new AclClientRPCHook(new SessionCredentials(superUser, superPassword)));
        client.start();
    }

    private void call(int code, CommandCustomHeader header, String body) throws Exception {
        RemotingCommand req = RemotingCommand.createRequestCommand(code, header);
        if (body != null) {
            req.setBody(body.getBytes(StandardCharsets.UTF_8));
        }
        RemotingCommand resp = client.invokeSync(addr, req, 10_000);
        if (resp.getCode() != 0) {
            throw new AssertionError("request " + code + " to " + addr + ": code " + resp.getCode() + " " + resp.getRemark());
        }
    }

    private static String list(List<String> items) {
        return items.stream().map(s -> "\"" + s + "\"").collect(Collectors.joining(",", "[", "]"));
    }

    void createUser(String username, String password) throws Exception {
        call(AUTH_CREATE_USER, new UserHeader(username),
            "{\"username\":\"" + username + "\",\"password\":\"" + password + "\",\"userType\":\"Normal\"}");
    }

    /** Sets the user's status: "enable" or "disable". */
    void setUserStatus(String username, String status) throws Exception {
        call(AUTH_UPDATE_USER, new UserHeader(username), "{\"username\":\"" + username + "\",\"userStatus\":\"" + status + "\"}");
    }

    /** One policy of the subject ("User:name"), an entry per resource; sourceIps may be empty. */
    void createAcl(String subject, List<String> resources, List<String> actions, List<String> sourceIps, String decision)
        throws Exception {
        String entries = resources.stream().map(r -> "{\"resource\":\"" + r + "\",\"actions\":" + list(actions)
            + ",\"sourceIps\":" + list(sourceIps) + ",\"decision\":\"" + decision + "\"}").collect(Collectors.joining(","));
        call(AUTH_CREATE_ACL, new AclHeader(subject),
            "{\"subject\":\"" + subject + "\",\"policies\":[{\"policyType\":\"Custom\",\"entries\":[" + entries + "]}]}");
    }

    void createTopic(String topic, int queues) throws Exception {
        CreateTopicRequestHeader h = new CreateTopicRequestHeader();
        h.setTopic(topic);
        h.setDefaultTopic("TBW102");
        h.setReadQueueNums(queues);
        h.setWriteQueueNums(queues);
        h.setPerm(6);
        h.setTopicFilterType("SINGLE_TAG");
        h.setTopicSysFlag(0);
        h.setOrder(false);
        call(UPDATE_AND_CREATE_TOPIC, h, null);
    }

    @Override
    public void close() {
        client.shutdown();
    }
}
