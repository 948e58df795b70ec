package alerts.bloom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class AlertsBloomTest {
    /** The golden vectors the server computed (tests/vectors/v1.jsonl, or ALERTS_VECTORS). */
    private static List<String> vectors() throws IOException {
        String env = System.getenv("ALERTS_VECTORS");
        Path p = env != null ? Path.of(env) : Path.of("..", "..", "tests", "vectors", "v1.jsonl");
        return Files.readAllLines(p, StandardCharsets.UTF_8);
    }

    private static String hexOf(String bits) {
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < bits.length(); i += 4) {
            out.append(Integer.toHexString(Integer.parseInt(bits.substring(i, i + 4), 2)));
        }
        return out.toString();
    }

    @Test
    void everyGoldenVector() throws IOException {
        List<String> lines = vectors();
        assertTrue(lines.size() > 200);
        for (String line : lines) {
            if (line.isBlank()) continue;
            @SuppressWarnings("unchecked")
            Map<String, Object> r = (Map<String, Object>) Json.parse(line, "a vector");
            String fn = (String) r.get("fn");
            String in = (String) r.get("input");
            String what = fn + "(" + (in.length() > 80 ? in.substring(0, 80) : in) + ", " + r.get("bits") + ")";
            if (fn.equals("bloom") || fn.equals("mask")) {
                int bits = Integer.parseInt(r.get("bits").toString());
                if (r.containsKey("error")) {
                    assertThrows(AlertsBloomException.class,
                            () -> {
                                if (fn.equals("bloom")) AlertsBloom.bloom(in, bits);
                                else AlertsBloom.mask(in, bits);
                            }, what);
                } else {
                    String got = fn.equals("bloom") ? AlertsBloom.bloom(in, bits) : AlertsBloom.mask(in, bits);
                    assertEquals(r.get("output"), hexOf(got), what);
                }
            } else {
                long ms = Long.parseLong(r.get("ms").toString());
                if (r.containsKey("error")) {
                    assertThrows(AlertsBloomException.class, () -> AlertsBloom.ulidFloor(ms), what);
                } else {
                    assertEquals(r.get("output"), AlertsBloom.ulidFloor(ms), what);
                    assertEquals(r.get("output"), AlertsBloom.ulidFloor(Instant.ofEpochMilli(ms)), what);
                }
            }
        }
    }

    private static Map<String, Object> map(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }

    @Test
    void parsedEqualsText() {
        Object[][] cases = {
            {map("team", "t1", "feature", List.of("alerts", "billing"), "sev", 2),
                "{\"team\": \"t1\", \"feature\": [\"alerts\", \"billing\"], \"sev\": 2}"},
            {map("n", 1.5), "{\"n\": 1.50}"},
            {map("n", 100L), "{\"n\": 1e2}"},
            {map("n", -0.0), "{\"n\": 0}"},
            {map("n", new BigInteger("12345678901234567890")), "{\"n\": 12345678901234567890}"},
            {map("n", new BigDecimal("12345678901234567890.5")), "{\"n\": 12345678901234567890.5}"},
            {map("n", new Json.Number("1e400")), "{\"n\": 1e400}"},
            {map("o", map("b", 1, "a", Arrays.asList(2, null))), "{\"o\": {\"a\": [2, null], \"b\": 1}}"},
            {map("s", "é\n\"x\"\u2028\uD83D\uDE00"), "{\"s\": \"é\\n\\\"x\\\"\\u2028\\ud83d\\ude00\"}"},
            {map("\uFF21", 1, "\uD83D\uDE00", 2), "{\"\\ud83d\\ude00\": 2, \"\uFF21\": 1}"},
        };
        for (Object[] c : cases) {
            for (int bits : AlertsBloom.WIDTHS) {
                assertEquals(AlertsBloom.bloom(c[1], bits), AlertsBloom.bloom(c[0], bits), (String) c[1]);
            }
        }
        // nested objects sort their keys by UTF-8 bytes, as the server does
        assertEquals(AlertsBloom.bloom("{\"o\": {\"\uFF21\": 1, \"\uD83D\uDE00\": 2}}"),
                AlertsBloom.bloom(map("o", map("\uD83D\uDE00", 2, "\uFF21", 1))));
        assertEquals(AlertsBloom.bloom("{\"a\": 1}".getBytes(StandardCharsets.UTF_8)), AlertsBloom.bloom("{\"a\": 1}"));
        assertEquals(AlertsBloom.mask(map("team", "t1")), AlertsBloom.mask("{\"team\": \"t1\"}"));
        assertEquals(AlertsBloom.bloom("{\"a\": 1, \"a\": 2}"), AlertsBloom.bloom("{\"a\": 2}"));
        // a double cannot hold these digits; the text form keeps them
        assertNotEquals(AlertsBloom.bloom("{\"n\": 12345678901234567890.5}"), AlertsBloom.bloom(map("n", 12345678901234567890.5)));
    }

    @Test
    void refused() {
        List<Runnable> cases = List.of(
                () -> AlertsBloom.bloom(map("n", Double.NaN)),
                () -> AlertsBloom.bloom(map("n", Double.POSITIVE_INFINITY)),
                () -> AlertsBloom.bloom("[]"),
                () -> AlertsBloom.bloom("\"x\""),
                () -> AlertsBloom.bloom("null"),
                () -> AlertsBloom.mask(map("team", List.of("a", "b"))),
                () -> AlertsBloom.mask(map("team", null)),
                () -> AlertsBloom.bloom("{}", 64),
                () -> AlertsBloom.bloom("{bad"),
                () -> AlertsBloom.bloom("{\"s\": \"\\ud800\"}"),
                () -> AlertsBloom.bloom(map("s", "\uD800")),
                () -> AlertsBloom.bloom("{\"s\": \"\\u0000\"}"),
                () -> AlertsBloom.bloom(new byte[] {'{', '"', (byte) 0xff, '"', ':', '1', '}'}),
                () -> AlertsBloom.bloom("{\"s\": \"\\u00g0\"}"));
        for (Runnable c : cases) assertThrows(AlertsBloomException.class, c::run);
    }

    /** alerts_keys(organisation_id, id, attrs) as the server computed them. */
    @Test
    void keysEqualTheServers() {
        Object[][] cases = {
            {"org1", "01JTGTJE40F5F8590CD58A54E9", "{\"team\":\"t1\",\"sev\":[1,2,null]}",
                new long[] {-1386791580509716685L, 1522092769654227239L, 6757988607651709813L}},
            {"org1", "01jtgtje40f5f8590cd58a54e9", "{\"team\":\"t1\",\"sev\":[1,2,null]}",
                new long[] {-7262823970784910525L, -5492375520806901456L, 5173735072742916389L}},
            {"\u00e9", "01JTGTJE40F5F8590CD58A54E9", "{\"n\":{\"b\":1,\"a\":[1.50]}}",
                new long[] {-3103350319466388079L}},
            {"org1", "01JTGTJE40F5F8590CD58A54E9", "{}", new long[] {}},
        };
        for (Object[] c : cases) {
            long[] got = AlertsBloom.keys((String) c[0], (String) c[1], c[2]);
            assertEquals(Arrays.toString((long[]) c[3]), Arrays.toString(got), (String) c[2]);
        }
        Map<String, Object> parsed = new LinkedHashMap<>();
        parsed.put("team", "t1");
        parsed.put("sev", Arrays.asList(1, 2, null));
        assertEquals(Arrays.toString((long[]) cases[0][3]),
            Arrays.toString(AlertsBloom.keys("org1", "01JTGTJE40F5F8590CD58A54E9", parsed)));
        assertThrows(AlertsBloomException.class, () -> AlertsBloom.keys(null, "01JTGTJE40F5F8590CD58A54E9", "{}"));
    }

    @Test
    void ulid() {
        assertEquals(1, AlertsBloom.FORMAT_VERSION);
        Instant t = Instant.parse("2026-11-26T01:02:03.456Z");
        String u = AlertsBloom.ulid(t);
        assertEquals(26, u.length());
        assertTrue(AlertsBloom.ulidFloor(t).compareTo(u) <= 0 && u.compareTo(AlertsBloom.ulidFloor(t.plusMillis(1))) < 0);
        assertNotEquals(AlertsBloom.ulid(t), AlertsBloom.ulid(t));
        assertEquals("0".repeat(26), AlertsBloom.ulidFloor(Instant.parse("1960-01-01T00:00:00Z")));
        assertEquals(26, AlertsBloom.ulid().length());
    }
}
