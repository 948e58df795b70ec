package alerts.bloom;

import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The elements of attributes and filters as the server encodes them: the
 * input read (JSON text or parsed values), each value's tag and bytes
 * (numbers canonical, nested values canonical JSON), and an element's
 * bytes, which the bitmap and the tenant keys both hash.
 */
final class Values {
    private Values() {}

    /** The deepest nesting the server's parser takes: 128 containers are refused. */
    static final int MAX_DEPTH = 127;
    /** The widest number a jsonb numeric can hold, as canonical text. */
    private static final long MAX_NUMBER_CHARS = 131072 + 16383 + 2;
    private static final String TOO_DEEP = "a nested value is too deep to index; values nested more than 127 "
            + "levels deep are not supported; flatten the attribute";
    private static final Pattern CANONICAL =
            Pattern.compile("(-?)([0-9]+)(?:\\.([0-9]+))?(?:[eE]([+-]?)([0-9]+))?");

    static Object input(Object x, String what) {
        if (x instanceof String s) {
            return Json.parse(s, what);
        }
        if (x instanceof byte[] b) {
            try {
                String s = StandardCharsets.UTF_8.newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)
                        .decode(ByteBuffer.wrap(b)).toString();
                return Json.parse(s, what);
            } catch (CharacterCodingException e) {
                throw new AlertsBloomException(what + " is not valid UTF-8");
            }
        }
        return x;
    }

    static boolean isNumber(Object v) {
        return v instanceof Json.Number || v instanceof Integer || v instanceof Long || v instanceof Short
                || v instanceof Byte || v instanceof BigInteger || v instanceof BigDecimal || v instanceof Double
                || v instanceof Float;
    }

    static boolean isArray(Object v) {
        return v instanceof Collection<?> || v instanceof Object[];
    }

    static List<?> items(Object v) {
        return v instanceof Object[] a ? Arrays.asList(a) : new ArrayList<>((Collection<?>) v);
    }

    static String typeName(Object v) {
        if (v == null) return "null";
        if (v instanceof Boolean) return "boolean";
        if (isNumber(v)) return "number";
        if (v instanceof String) return "string";
        if (isArray(v)) return "array";
        if (v instanceof Map<?, ?>) return "object";
        return v.getClass().getSimpleName();
    }

    static String numberText(Object v) {
        if (v instanceof Double || v instanceof Float) {
            double d = ((java.lang.Number) v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                throw new AlertsBloomException(v + " is not a JSON number: JSON has no NaN or Infinity; store it as a string");
            }
        }
        return v.toString();
    }

    /**
     * The canonical decimal text of a JSON number, as the server's
     * {@code numeric_normalize}: no exponent, no leading zeros, no trailing
     * zeros after the point, "0" for any zero. 1.50 -> 1.5, 1e2 -> 100, -0 -> 0.
     */
    static String canonicalNumber(String text) {
        Matcher m = CANONICAL.matcher(text);
        String shortText = text.length() > 40 ? text.substring(0, 40) : text;
        if (!m.matches()) {
            throw new AlertsBloomException("\"" + shortText + "\" is not a JSON number");
        }
        String neg = m.group(1), intDigits = m.group(2), frac = m.group(3) == null ? "" : m.group(3);
        long exp = 0;
        if (m.group(5) != null) {
            String e = m.group(5);
            exp = e.length() > 15 ? 1L << 40 : Math.min(Long.parseLong(e), 1L << 40);
            if ("-".equals(m.group(4))) exp = -exp;
        }
        String digits = intDigits + frac;
        long point = intDigits.length() + exp;
        int lead = 0;
        while (lead < digits.length() && digits.charAt(lead) == '0') lead++;
        if (lead == digits.length()) return "0";
        int end = digits.length();
        while (digits.charAt(end - 1) == '0') end--;
        String sig = digits.substring(lead, end);
        point -= lead;
        long n = sig.length();
        long width = point <= 0 ? 2 - point + n : Math.max(point, n) + 1;
        if (width > MAX_NUMBER_CHARS) {
            throw new AlertsBloomException("number " + shortText
                    + " is out of the range Postgres jsonb can store; store it as a string");
        }
        String sign = neg.isEmpty() ? "" : "-";
        if (point <= 0) return sign + "0." + "0".repeat((int) -point) + sig;
        if (point >= n) return sign + sig + "0".repeat((int) (point - n));
        return sign + sig.substring(0, (int) point) + "." + sig.substring((int) point);
    }

    static byte[] stringBytes(String s) {
        if (s.indexOf('\0') >= 0) {
            throw new AlertsBloomException("a string holds \\u0000, which jsonb cannot store");
        }
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                throw new AlertsBloomException("a string holds a lone surrogate (an unpaired \\ud800-\\udfff), "
                        + "which is not Unicode text and which jsonb refuses");
            }
        }
        return s.getBytes(StandardCharsets.UTF_8);
    }

    static byte[] key(Object k) {
        if (!(k instanceof String s)) {
            throw new AlertsBloomException("object keys must be strings, got " + typeName(k));
        }
        return stringBytes(s);
    }

    /** {@code s} as serde_json writes it: only ", \ and control characters escaped. */
    static void quote(StringBuilder out, String s) {
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> out.append("\\\"");
                case '\\' -> out.append("\\\\");
                case '\b' -> out.append("\\b");
                case '\f' -> out.append("\\f");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                case '\t' -> out.append("\\t");
                default -> {
                    if (c < 0x20) out.append(String.format("\\u%04x", (int) c));
                    else out.append(c);
                }
            }
        }
        out.append('"');
    }

    /** {@code v} at nesting {@code depth} (the containers around it, itself included when it is one). */
    static void canonicalJson(Object v, int depth, StringBuilder out) {
        if ((isArray(v) || v instanceof Map<?, ?>) && depth > MAX_DEPTH) {
            throw new AlertsBloomException(TOO_DEEP);
        }
        if (v == null) {
            out.append("null");
        } else if (v instanceof Boolean b) {
            out.append(b ? "true" : "false");
        } else if (isNumber(v)) {
            out.append(canonicalNumber(numberText(v)));
        } else if (v instanceof String s) {
            stringBytes(s);
            quote(out, s);
        } else if (isArray(v)) {
            out.append('[');
            boolean first = true;
            for (Object item : items(v)) {
                if (!first) out.append(',');
                first = false;
                canonicalJson(item, depth + 1, out);
            }
            out.append(']');
        } else if (v instanceof Map<?, ?> map) {
            List<Map.Entry<?, ?>> es = new ArrayList<>(map.entrySet());
            List<byte[]> keys = new ArrayList<>();
            for (Map.Entry<?, ?> e : es) keys.add(key(e.getKey()));
            Integer[] order = new Integer[es.size()];
            for (int i = 0; i < order.length; i++) order[i] = i;
            Arrays.sort(order, (a, b) -> Arrays.compareUnsigned(keys.get(a), keys.get(b)));
            out.append('{');
            for (int i = 0; i < order.length; i++) {
                if (i > 0) out.append(',');
                Map.Entry<?, ?> e = es.get(order[i]);
                quote(out, (String) e.getKey());
                out.append(':');
                canonicalJson(e.getValue(), depth + 1, out);
            }
            out.append('}');
        } else {
            throw new AlertsBloomException("a " + v.getClass().getSimpleName() + " is not a JSON value");
        }
    }

    static int depthOf(Object v) {
        int d = 0;
        if (isArray(v)) {
            for (Object x : items(v)) d = Math.max(d, depthOf(x));
            return 1 + d;
        }
        if (v instanceof Map<?, ?> map) {
            for (Object x : map.values()) d = Math.max(d, depthOf(x));
            return 1 + d;
        }
        return 0;
    }

    /** The tag and value bytes of one attribute value; null for null. */
    static byte[] encode(Object v) {
        if (v == null) return null;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] value;
        if (v instanceof Boolean b) {
            out.write('b');
            value = (b ? "true" : "false").getBytes(StandardCharsets.US_ASCII);
        } else if (isNumber(v)) {
            out.write('n');
            value = canonicalNumber(numberText(v)).getBytes(StandardCharsets.US_ASCII);
        } else if (v instanceof String s) {
            out.write('s');
            value = stringBytes(s);
        } else if (isArray(v) || v instanceof Map<?, ?>) {
            StringBuilder sb = new StringBuilder();
            canonicalJson(v, 1, sb);
            out.write('j');
            value = sb.toString().getBytes(StandardCharsets.UTF_8);
        } else {
            throw new AlertsBloomException("a " + v.getClass().getSimpleName() + " is not a JSON value");
        }
        out.writeBytes(value);
        return out.toByteArray();
    }

    static Map<?, ?> object(Object v, String what, String fix) {
        if (!(v instanceof Map<?, ?> m)) {
            throw new AlertsBloomException(what + " must be a JSON object, got a JSON " + typeName(v) + "; " + fix);
        }
        return m;
    }

    /** One element's bytes: tag, the key's length (u32 BE), key, value ({@code encoded}: tag then value). */
    static byte[] element(Object k, byte[] encoded) {
        byte[] kb = key(k);
        ByteBuffer buf = ByteBuffer.allocate(5 + kb.length + encoded.length - 1);
        buf.put(encoded[0]).putInt(kb.length).put(kb).put(encoded, 1, encoded.length - 1);
        return buf.array();
    }

    /**
     * The elements of an attributes object: a string or number one, an array
     * one per item (null items none), null none, a nested object or array one
     * opaque value.
     */
    static List<byte[]> elements(Object attrs) {
        Map<?, ?> m = object(input(attrs, "the attributes"), "alert attributes",
                "store attributes as {\"<attribute>\": \"<value>\" or [\"<value>\", ...]}; use {} for none");
        List<byte[]> out = new ArrayList<>();
        for (Map.Entry<?, ?> e : m.entrySet()) {
            key(e.getKey());
            Object v = e.getValue();
            List<?> items = isArray(v) ? items(v) : Collections.singletonList(v);
            for (Object item : items) {
                if ((isArray(item) || item instanceof Map<?, ?>) && depthOf(item) > MAX_DEPTH) {
                    throw new AlertsBloomException(TOO_DEEP);
                }
                byte[] enc = encode(item);
                if (enc != null) out.add(element(e.getKey(), enc));
            }
        }
        return out;
    }
}
