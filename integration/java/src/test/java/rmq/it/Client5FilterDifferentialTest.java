package rmq.it;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.alibaba.fastjson2.JSON;
import com.alibaba.fastjson2.JSONArray;
import com.alibaba.fastjson2.JSONObject;
import org.apache.rocketmq.common.filter.ExpressionType;
import org.apache.rocketmq.filter.FilterFactory;
import org.apache.rocketmq.filter.expression.EvaluationContext;
import org.apache.rocketmq.filter.expression.Expression;
import org.apache.rocketmq.filter.expression.MQFilterException;
import org.junit.jupiter.api.Test;

/**
 * Holds the Java broker's SQL92 filter (rocketmq-filter) to the table that rmq's Go filter package is tested
 * against: filter/testdata/cases.json (path in -Drmq.filterCases, set by pom.xml). No broker is involved.
 *
 * Each row compiles an expression the way the broker does (FilterFactory, SQL92) and either expects a compile
 * error, or evaluates it against property sets the way ExpressionMessageFilter.isMatchedByCommitLog does: a
 * MessageEvaluationContext over the properties map, an exception caught and counted as "not matched". The
 * expected result is TRUE, FALSE, NULL (the evaluation returned null) or FAILED (it threw); only TRUE delivers.
 *
 * Rows with "since": "5" use the 5.x string operators; they are skipped when the filter on the class path has
 * no CONTAINS (4.9.x), so the same class can be run against 4.9.8's filter.
 */
class Client5FilterDifferentialTest {

    /** ExpressionMessageFilter's context: a lookup in the message's properties map. */
    private static final class PropertiesContext implements EvaluationContext {
        private final Map<String, String> properties;

        PropertiesContext(Map<String, String> properties) {
            this.properties = properties;
        }

        @Override
        public Object get(String name) {
            return properties.get(name);
        }

        @Override
        public Map<String, Object> keyValues() {
            return new HashMap<>(properties);
        }
    }

    private static boolean hasStringOperators() {
        try {
            Class.forName("org.apache.rocketmq.filter.expression.ComparisonExpression")
                .getMethod("createContains", Expression.class, String.class);
            return true;
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }

    private static String evaluate(Expression e, Map<String, String> props) {
        Object r;
        try {
            r = e.evaluate(new PropertiesContext(props));
        } catch (Throwable t) {
            return "FAILED";
        }
        if (r == null) {
            return "NULL";
        }
        if (!(r instanceof Boolean)) {
            return "NOT A BOOLEAN: " + r;
        }
        return (Boolean) r ? "TRUE" : "FALSE";
    }

    @Test
    void javaFilterAgreesWithTheTable() throws Exception {
        String path = System.getProperty("rmq.filterCases");
        assertTrue(path != null && !path.isEmpty(), "-Drmq.filterCases is not set");
        JSONArray cases = JSON.parseArray(Files.readString(Path.of(path), StandardCharsets.UTF_8));
        boolean v5 = hasStringOperators();
        List<String> disagreements = new ArrayList<>();
        int rows = 0;
        for (int i = 0; i < cases.size(); i++) {
            JSONObject c = cases.getJSONObject(i);
            String expr = c.getString("expr");
            if ("5".equals(c.getString("since")) && !v5) {
                continue;
            }
            Expression compiled = null;
            Throwable compileError = null;
            try {
                compiled = FilterFactory.INSTANCE.get(ExpressionType.SQL92).compile(expr);
            } catch (MQFilterException e) {
                compileError = e.getCause() != null ? e.getCause() : e;
            }
            if (c.getBooleanValue("error")) {
                rows++;
                if (compileError == null) {
                    disagreements.add(JSON.toJSONString(expr) + ": compiled, the table wants a compile error");
                }
                continue;
            }
            if (compileError != null) {
                disagreements.add(JSON.toJSONString(expr) + ": compile error " + compileError);
                continue;
            }
            JSONArray checks = c.getJSONArray("checks");
            for (int j = 0; j < checks.size(); j++) {
                rows++;
                JSONObject check = checks.getJSONObject(j);
                Map<String, String> props = new HashMap<>();
                JSONObject p = check.getJSONObject("props");
                for (String k : p.keySet()) {
                    props.put(k, p.getString(k));
                }
                String want = check.getString("want");
                String got = evaluate(compiled, props);
                if (!got.equals(want)) {
                    disagreements.add(JSON.toJSONString(expr) + " on " + JSON.toJSONString(props) + ": Java gives "
                        + got + ", the table wants " + want);
                }
            }
        }
        System.out.printf("filter cases: %d rows checked against rocketmq-filter (%s), %d disagreements%n", rows,
            v5 ? "5.x" : "4.x", disagreements.size());
        assertTrue(rows >= 150, "only " + rows + " rows checked");
        assertTrue(disagreements.isEmpty(), () -> disagreements.size() + " disagreements:\n"
            + String.join("\n", disagreements));
    }
}
