package alerts.bloom;

import com.dynatrace.hash4j.hashing.Hasher64;
import com.dynatrace.hash4j.hashing.Hashing;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Client encoder of the alerts PostgreSQL extension's bloom bitmaps (hash
 * format version 1): byte-identical to the server's {@code alerts_bloom},
 * {@code alerts_mask} and {@code alerts_ulid_floor}, for databases where the
 * extension cannot be installed (managed PostgreSQL) or for applications that
 * compute bitmaps before they insert.
 *
 * <p>{@link #bloom} and {@link #mask} return the bitmap as the text
 * PostgreSQL prints for a {@code bit(n)} value ("0101..."), to pass as a
 * parameter cast to {@code bit(n)}. Attributes and filters may be JSON text
 * ({@code String}, UTF-8 {@code byte[]}) or parsed ({@code Map<String, ?>},
 * {@code Collection}, {@code String}, {@code Boolean}, null, {@link
 * Json.Number}, {@code Integer}, {@code Long}, {@code BigInteger}, {@code
 * BigDecimal}, {@code Double}). Give JSON text where numbers must keep every
 * digit: a double cannot hold 12345678901234567890.5 or 1e400.
 */
public final class AlertsBloom {
    private AlertsBloom() {}

    /** The hash format this encoder writes: {@code alerts_format_version()} on the server. */
    public static final int FORMAT_VERSION = 1;
    /** The bitmap widths a column may have: the 512-bit bitmap, or folded. */
    public static final List<Integer> WIDTHS = List.of(512, 256, 128);

    private static final int HASHES = 7;
    private static final int BYTES = 64;
    private static final String ULID_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    private static final long ULID_MAX_MS = (1L << 48) - 1;
    private static final Hasher64 XXH3 = Hashing.xxh3_64();
    private static final SecureRandom RANDOM = new SecureRandom();


    /**
     * The canonical decimal text of a JSON number, as the server's
     * {@code numeric_normalize}: no exponent, no leading zeros, no trailing
     * zeros after the point, "0" for any zero. 1.50 -> 1.5, 1e2 -> 100, -0 -> 0.
     */
    public static String canonicalNumber(String text) {
        return Values.canonicalNumber(text);
    }

    private static void set(byte[] bitmap, byte[] element) {
        long h = XXH3.hashBytesToLong(element);
        for (int i = 0; i < HASHES; i++) {
            int p = (int) ((h >>> (9 * i)) & 511);
            bitmap[p >> 3] |= (byte) (0x80 >> (p & 7));
        }
    }

    private static void checkWidth(int bits) {
        if (!WIDTHS.contains(bits)) {
            throw new AlertsBloomException("the bitmap width must be 512, 256 or 128, got " + bits);
        }
    }

    private static String text(byte[] bitmap, int bits) {
        int width = bits / 8;
        byte[] folded = new byte[width];
        for (int start = 0; start < BYTES; start += width) {
            for (int i = 0; i < width; i++) folded[i] |= bitmap[start + i];
        }
        StringBuilder out = new StringBuilder(bits);
        for (byte b : folded) {
            for (int bit = 7; bit >= 0; bit--) out.append(((b >> bit) & 1) == 1 ? '1' : '0');
        }
        return out.toString();
    }


    /**
     * The bitmap of an alert's attributes (a JSON object), as the text of a
     * {@code bit(bits)} value: what the server's trigger and {@code
     * alerts_bloom(attrs, bits)} store. A string or number is one element, an
     * array one per item (null items none), null none, a nested object or
     * array one opaque value.
     */
    public static String bloom(Object attrs, int bits) {
        checkWidth(bits);
        byte[] bitmap = new byte[BYTES];
        for (byte[] el : Values.elements(attrs)) set(bitmap, el);
        return text(bitmap, bits);
    }

    /** {@link #bloom(Object, int)} at 512 bits. */
    public static String bloom(Object attrs) {
        return bloom(attrs, 512);
    }

    /**
     * The mask of a filter whose every attribute has one value (an AND of
     * single values), as the text of a {@code bit(bits)} value: a row may
     * match when {@code bitmap & mask = mask}; what the server's {@code
     * alerts_mask(filter, bits)} returns. One-of arrays and nulls are refused,
     * as there.
     */
    public static String mask(Object filter, int bits) {
        checkWidth(bits);
        Object f = Values.input(filter, "the filter");
        if (f instanceof Map<?, ?> && Values.depthOf(f) > Values.MAX_DEPTH) {
            throw new AlertsBloomException("a nested value is too deep to index; values nested more than 127 "
                    + "levels deep are not supported");
        }
        Map<?, ?> m = Values.object(f, "the filter", "write filters as {\"<attribute>\": \"<value>\"}; {} matches every row");
        for (Map.Entry<?, ?> e : m.entrySet()) {
            Values.key(e.getKey());
            String k = (String) e.getKey();
            String shortKey = k.length() > 60 ? k.substring(0, 60) : k;
            if (Values.isArray(e.getValue())) {
                throw new AlertsBloomException("the value of \"" + shortKey + "\" is a one-of array, which one mask "
                        + "cannot express: build one mask per value and OR the tests");
            }
            if (e.getValue() == null) {
                throw new AlertsBloomException("the filter value for \"" + shortKey
                        + "\" is null: drop the key to not filter on it");
            }
        }
        byte[] bitmap = new byte[BYTES];
        for (Map.Entry<?, ?> e : m.entrySet()) set(bitmap, Values.element(e.getKey(), Values.encode(e.getValue())));
        return text(bitmap, bits);
    }

    /** {@link #mask(Object, int)} at 512 bits. */
    public static String mask(Object filter) {
        return mask(filter, 512);
    }

    private static final long WEEK_MS = 7L * 24 * 3600 * 1000;
    /** The bucket of ids that do not start with an uppercase ULID time (u64 max). */
    private static final long NO_WEEK = -1L;

    /** The week bucket of an id: its first 10 characters as a ULID time when all uppercase Crockford base32. */
    private static long week(byte[] id) {
        if (id.length < 10) return NO_WEEK;
        long ms = 0;
        for (int i = 0; i < 10; i++) {
            int d = ULID_ALPHABET.indexOf(id[i] & 0xff);
            if (d < 0) return NO_WEEK;
            ms = ms * 32 + d;
        }
        return ms / WEEK_MS;
    }

    /**
     * The tenant keys of a row, as the server's {@code alerts_keys(organisation_id,
     * id, attrs)} computes them: each element of the attributes hashed with
     * the tenant and the week of the row's ULID, as signed 64-bit integers,
     * sorted and without duplicates. Store them in a {@code bigint[]} column
     * with a GIN index to find a tenant's rare values without the extension
     * (docs/managed-postgres.md). {@code attrs} is as for {@link #bloom}.
     */
    public static long[] keys(String organisationId, String id, Object attrs) {
        if (organisationId == null || id == null) {
            throw new AlertsBloomException("organisation_id and id must be strings (text), got null");
        }
        byte[] tenant = Values.stringBytes(organisationId);
        byte[] head = ByteBuffer.allocate(4 + tenant.length + 8)
                .putInt(tenant.length).put(tenant).putLong(week(Values.stringBytes(id))).array();
        List<byte[]> els = Values.elements(attrs);
        long[] out = new long[els.size()];
        for (int i = 0; i < out.length; i++) {
            byte[] el = els.get(i);
            byte[] buf = Arrays.copyOf(head, head.length + el.length);
            System.arraycopy(el, 0, buf, head.length, el.length);
            out[i] = XXH3.hashBytesToLong(buf);
        }
        return Arrays.stream(out).sorted().distinct().toArray();
    }

    private static String ulidText(long ms, byte[] random) {
        BigInteger v = BigInteger.valueOf(ms).shiftLeft(80).or(new BigInteger(1, random));
        char[] out = new char[26];
        for (int i = 25; i >= 0; i--) {
            out[i] = ULID_ALPHABET.charAt(v.intValue() & 31);
            v = v.shiftRight(5);
        }
        return new String(out);
    }

    /**
     * The smallest ULID of Unix millisecond {@code ms}: {@code
     * alerts_ulid_floor}, the window's lower bound. Times before 1970 give all
     * zeros.
     */
    public static String ulidFloor(long ms) {
        if (ms > ULID_MAX_MS) {
            throw new AlertsBloomException("the time is after the last time a ULID can hold "
                    + "(10889-08-02 05:31:50.655 UTC): pass an earlier one");
        }
        return ulidText(Math.max(ms, 0), new byte[0]);
    }

    /** {@link #ulidFloor(long)} of the millisecond of {@code t}. */
    public static String ulidFloor(Instant t) {
        return ulidFloor(t.getEpochSecond() * 1000 + t.getNano() / 1_000_000);
    }

    /** A new ULID (48-bit milliseconds, 80 random bits) of the time {@code t}, as {@code alerts_ulid(t)}. */
    public static String ulid(Instant t) {
        long ms = t.getEpochSecond() * 1000 + t.getNano() / 1_000_000;
        if (ms < 0 || ms > ULID_MAX_MS) {
            throw new AlertsBloomException("a ULID holds times from 1970 to 10889-08-02");
        }
        byte[] random = new byte[10];
        RANDOM.nextBytes(random);
        return ulidText(ms, random);
    }

    /** A new ULID of now. */
    public static String ulid() {
        return ulid(Instant.now());
    }
}
