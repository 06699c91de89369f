package rmq.it;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

/**
 * What a test saw, normalized, for the oracle comparison: {@code run.sh --oracle} runs the suite against the Java
 * broker, then the classes that wrote files here against rmq, and diffs
 * {@code target/oracle-outputs/java-<version>/} with {@code target/oracle-outputs/rmq/} (one file per test and run,
 * {@code <client>-<headers>/<Class>.<name>.txt}). A difference fails the run.
 *
 * <p>A test records only what is the broker's answer and must be the same on both brokers: stock mqadmin output
 * and admin-API answers, passed through {@link #mask}. The volatile parts, masked here and nowhere else:
 * <ul>
 *   <li>the unique suffix of topic, group and instance names ({@code name_JSON_<run>_<seq>} → {@code name_*}), which
 *       differs between runs and with the order the tests ran in;</li>
 *   <li>paths of the tests' temporary directories ({@code Files.createTempDirectory("rmq-it-acl")}: a random number
 *       per run) → {@code TMPDIR}, e.g. the ACL file path clusterAclConfigVersion prints;</li>
 *   <li>ip:port addresses → {@code ADDR} (random ports, client ports), bare IPv4 addresses → {@code IP};</li>
 *   <li>client ids ({@code ip@pid#nanos} or {@code ip@instance}) → {@code CLIENTID};</li>
 *   <li>Object.toString identity hashes ({@code org.apache.rocketmq.common.PlainAccessConfig@6731787b}, which
 *       mqadmin updateAclConfig prints) → {@code <class>@HASH};</li>
 *   <li>message ids (32 hex digits: unique keys carry the client's pid, offset ids the broker's address and
 *       commitlog offset) → {@code MSGID};</li>
 *   <li>dates and times ({@code yyyy-MM-dd HH:mm:ss[,.SSS]}, {@code yyyy-MM-dd}, {@code HH:mm:ss}) → {@code DATE},
 *       {@code DAY}, {@code TIME}; millisecond timestamps (12–13 digits, or 17 as yyyyMMddHHmmssSSS) → {@code TS};</li>
 *   <li>decimal numbers ({@code 1.23}, rates and averages that depend on when the broker sampled) → {@code D};</li>
 *   <li>runs of spaces → one space (column widths follow the masked names' lengths).</li>
 * </ul>
 * Counts that legitimately differ (broker-wide totals that include other tests' traffic, commitlog offsets) are
 * not written at all: a test writes the relation it asserted ({@code >= N: true}) instead.
 */
final class OracleOutput {
    private static final List<Object[]> RULES = new ArrayList<>();

    static {
        rule("(/[^\\s/]+)*/rmq-it-[A-Za-z-]+\\d+", "TMPDIR");
        rule("([A-Za-z%]+)_(JSON|ROCKETMQ)_[0-9a-z]+_\\d+", "$1_*");
        rule("\\b\\d{1,3}(\\.\\d{1,3}){3}@[^\\s,;\\]}\"']+", "CLIENTID");
        rule("\\b([A-Za-z_$][\\w$]*(\\.[A-Za-z_$][\\w$]*)+)@[0-9a-f]{1,8}\\b", "$1@HASH");
        rule("\\b\\d{1,3}(\\.\\d{1,3}){3}:\\d+", "ADDR");
        rule("\\b\\d{1,3}(\\.\\d{1,3}){3}\\b", "IP");
        rule("\\b[0-9A-F]{32}\\b", "MSGID");
        rule("\\d{4}-\\d\\d-\\d\\d[ T]\\d\\d:\\d\\d:\\d\\d([,.]\\d{1,3})?", "DATE");
        rule("\\d{4}-\\d\\d-\\d\\d", "DAY");
        rule("\\b\\d\\d:\\d\\d:\\d\\d\\b", "TIME");
        rule("\\b\\d{12,13}\\b|\\b\\d{17}\\b", "TS");
        rule("\\b\\d+\\.\\d+(E-?\\d+)?\\b", "D");
        rule("[ \\t]+", " ");
    }

    private OracleOutput() {
    }

    private static void rule(String regex, String replacement) {
        RULES.add(new Object[] {Pattern.compile(regex), replacement});
    }

    /** Applies the masks above, line by line, and strips trailing spaces. */
    static String mask(String text) {
        StringBuilder out = new StringBuilder();
        for (String line : text.split("\\R")) {
            String l = line;
            for (Object[] r : RULES) {
                l = ((Pattern) r[0]).matcher(l).replaceAll((String) r[1]);
            }
            out.append(l.strip()).append('\n');
        }
        return out.toString();
    }

    /** The lines of an mqadmin print-out that contain every one of parts (after nothing: raw lines). */
    static List<String> linesWith(MQAdmin.Output out, String... parts) {
        List<String> lines = new ArrayList<>();
        for (String l : out.lines()) {
            if (List.of(parts).stream().allMatch(l::contains)) {
                lines.add(l);
            }
        }
        return lines;
    }

    /**
     * Writes a test's record (masked) for this run, under the run's profile (client4: mqadmin 4.9.8 against the 4.x
     * oracle; admin5: mqadmin 5.3.3 against the 5.3.3 oracle), the profile the comparison runs again against rmq.
     */
    static void write(Class<?> testClass, String test, String text) {
        Path dir = Path.of(System.getProperty("rmq.oracleOutputs", "target/oracle-outputs"), Clients.brokerKind(),
            System.getProperty("rmq.client", "client4") + "-" + Clients.serializeType());
        try {
            Files.createDirectories(dir);
            Files.writeString(dir.resolve(testClass.getSimpleName() + "." + test + ".txt"), mask(text),
                StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
