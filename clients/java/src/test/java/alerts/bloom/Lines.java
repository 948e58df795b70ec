package alerts.bloom;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * Reads one JSON case a line, {"kind": "bloom" or "mask", "text": JSON
 * text}, and writes for each the JSON array of its bitmaps at 512, 256 and
 * 128 bits, "ERROR" where the encoder refuses it; for {"kind": "keys",
 * "org", "id", "text"}, the array of one string, the row's tenant keys
 * joined by commas: the Java client's side of tests/shell/clients_diff.py.
 */
public final class Lines {
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            @SuppressWarnings("unchecked")
            Map<String, Object> c = (Map<String, Object>) Json.parse(line, "a case");
            String text = (String) c.get("text");
            if ("keys".equals(c.get("kind"))) {
                String s;
                try {
                    long[] keys = AlertsBloom.keys((String) c.get("org"), (String) c.get("id"), text);
                    s = java.util.Arrays.stream(keys).mapToObj(Long::toString)
                            .collect(java.util.stream.Collectors.joining(","));
                } catch (AlertsBloomException e) {
                    s = "ERROR";
                }
                out.write("[\"" + s + "\"]\n");
                continue;
            }
            boolean bloom = "bloom".equals(c.get("kind"));
            out.write('[');
            for (int i = 0; i < AlertsBloom.WIDTHS.size(); i++) {
                int bits = AlertsBloom.WIDTHS.get(i);
                String s;
                try {
                    s = bloom ? AlertsBloom.bloom(text, bits) : AlertsBloom.mask(text, bits);
                } catch (AlertsBloomException e) {
                    s = "ERROR";
                }
                if (i > 0) out.write(',');
                out.write('"');
                out.write(s);
                out.write('"');
            }
            out.write("]\n");
        }
        out.flush();
    }
}
