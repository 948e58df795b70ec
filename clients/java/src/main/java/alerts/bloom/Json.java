package alerts.bloom;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A strict JSON parser (RFC 8259, as PostgreSQL's jsonb input reads it) that
 * keeps every number as its text ({@link Number}), so that
 * 12345678901234567890 and 1e400 hash as jsonb stores them. Objects are
 * {@code LinkedHashMap<String, Object>}; a repeated key keeps its last value,
 * as jsonb does. Values: null, Boolean, String, {@link Json.Number},
 * {@code List<Object>}, {@code Map<String, Object>}.
 */
public final class Json {
    private Json() {}

    /** A JSON number kept as its text. */
    public record Number(String text) {
        @Override
        public String toString() {
            return text;
        }
    }

    /** Deeper than any value the server can index; bounds the recursion. */
    private static final int MAX_PARSE_DEPTH = 1000;

    private static final Pattern NUMBER =
            Pattern.compile("-?(?:0|[1-9][0-9]*)(?:\\.[0-9]+)?(?:[eE][+-]?[0-9]+)?");

    /** Parses {@code text}; {@code what} names it in the errors. */
    public static Object parse(String text, String what) {
        Parser p = new Parser(text, what);
        Object v = p.value(0);
        p.ws();
        if (p.i != text.length()) {
            throw p.fail("text after the value");
        }
        return v;
    }

    private static final class Parser {
        final String text;
        final String what;
        int i;

        Parser(String text, String what) {
            this.text = text;
            this.what = what;
        }

        AlertsBloomException fail(String msg) {
            return new AlertsBloomException(what + " is not valid JSON: " + msg + " at character " + (i + 1));
        }

        void ws() {
            while (i < text.length()) {
                char c = text.charAt(i);
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                    i++;
                } else {
                    break;
                }
            }
        }

        char peek() {
            return i < text.length() ? text.charAt(i) : '\0';
        }

        int hex4(int at) {
            if (at + 4 > text.length()) {
                return -1;
            }
            int u = 0;
            for (int k = at; k < at + 4; k++) {
                char h = text.charAt(k);
                int d = h >= '0' && h <= '9' ? h - '0'
                        : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                if (d < 0) {
                    return -1;
                }
                u = u * 16 + d;
            }
            return u;
        }

        String str() {
            i++; // the opening quote
            StringBuilder out = new StringBuilder();
            for (;;) {
                if (i >= text.length()) {
                    throw fail("an unterminated string");
                }
                char c = text.charAt(i);
                if (c == '"') {
                    i++;
                    return out.toString();
                }
                if (c < 0x20) {
                    throw fail("a control character inside a string");
                }
                if (c != '\\') {
                    out.append(c);
                    i++;
                    continue;
                }
                char e = i + 1 < text.length() ? text.charAt(i + 1) : '\0';
                i += 2;
                switch (e) {
                    case '"' -> out.append('"');
                    case '\\' -> out.append('\\');
                    case '/' -> out.append('/');
                    case 'b' -> out.append('\b');
                    case 'f' -> out.append('\f');
                    case 'n' -> out.append('\n');
                    case 'r' -> out.append('\r');
                    case 't' -> out.append('\t');
                    case 'u' -> {
                        int u = hex4(i);
                        if (u < 0) {
                            throw fail("a \\u escape without four hex digits");
                        }
                        i += 4;
                        if (u == 0) {
                            throw new AlertsBloomException(what + ": \\u0000 cannot be stored in jsonb");
                        }
                        if (u >= 0xd800 && u <= 0xdbff) {
                            int low = i + 6 <= text.length() && text.charAt(i) == '\\' && text.charAt(i + 1) == 'u'
                                    ? hex4(i + 2) : -1;
                            if (low < 0xdc00 || low > 0xdfff) {
                                throw new AlertsBloomException(
                                        what + ": a Unicode high surrogate must be followed by a low surrogate");
                            }
                            out.append((char) u).append((char) low);
                            i += 6;
                        } else if (u >= 0xdc00 && u <= 0xdfff) {
                            throw new AlertsBloomException(what + ": a Unicode low surrogate must follow a high surrogate");
                        } else {
                            out.append((char) u);
                        }
                    }
                    default -> {
                        i -= 1;
                        throw fail("an unknown escape");
                    }
                }
            }
        }

        Object value(int depth) {
            if (depth > MAX_PARSE_DEPTH) {
                throw new AlertsBloomException(what + ": a nested value is too deep to index; "
                        + "values nested more than 127 levels deep are not supported");
            }
            ws();
            char c = peek();
            if (c == '{') {
                i++;
                Map<String, Object> m = new LinkedHashMap<>();
                ws();
                if (peek() == '}') {
                    i++;
                    return m;
                }
                for (;;) {
                    ws();
                    if (peek() != '"') {
                        throw fail("an object key that is not a string");
                    }
                    String k = str();
                    ws();
                    if (peek() != ':') {
                        throw fail("a missing ':'");
                    }
                    i++;
                    m.put(k, value(depth + 1)); // the last of repeated keys wins
                    ws();
                    if (peek() == ',') {
                        i++;
                        continue;
                    }
                    if (peek() == '}') {
                        i++;
                        return m;
                    }
                    throw fail("a missing ',' or '}'");
                }
            }
            if (c == '[') {
                i++;
                List<Object> a = new ArrayList<>();
                ws();
                if (peek() == ']') {
                    i++;
                    return a;
                }
                for (;;) {
                    a.add(value(depth + 1));
                    ws();
                    if (peek() == ',') {
                        i++;
                        continue;
                    }
                    if (peek() == ']') {
                        i++;
                        return a;
                    }
                    throw fail("a missing ',' or ']'");
                }
            }
            if (c == '"' && i < text.length()) {
                return str();
            }
            if (text.startsWith("true", i)) {
                i += 4;
                return Boolean.TRUE;
            }
            if (text.startsWith("false", i)) {
                i += 5;
                return Boolean.FALSE;
            }
            if (text.startsWith("null", i)) {
                i += 4;
                return null;
            }
            if (c == '-' || (c >= '0' && c <= '9')) {
                Matcher m = NUMBER.matcher(text).region(i, text.length());
                if (!m.lookingAt() || m.group().equals("-") || m.group().isEmpty()) {
                    throw fail("a malformed number");
                }
                i = m.end();
                return new Number(m.group());
            }
            if (i >= text.length()) {
                throw fail("an unexpected end");
            }
            throw fail("an unexpected '" + new String(Character.toChars(text.codePointAt(i))) + "'");
        }
    }
}
