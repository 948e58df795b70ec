// Package alertsbloom is the client encoder of the alerts PostgreSQL
// extension's bloom bitmaps (hash format version 1): byte-identical to the
// server's alerts_bloom, alerts_mask and alerts_ulid_floor, for databases
// where the extension cannot be installed (managed PostgreSQL) or for
// applications that compute bitmaps before they insert.
//
// Bloom and Mask return the bitmap as the text PostgreSQL prints for a
// bit(n) value ("0101..."), to pass as a parameter cast to bit(n).
// Attributes and filters may be given as JSON text (a string or []byte) or
// parsed (map[string]any, *Object, []any, string, bool, nil, Number,
// json.Number, integers, float64). Give JSON text where numbers must keep
// every digit: a float64 cannot hold 12345678901234567890 or 1e400.
package alertsbloom

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/zeebo/xxh3"
)

// FormatVersion is the hash format this encoder writes:
// alerts_format_version() on the server.
const FormatVersion = 1

// Widths are the bitmap widths a column may have: the 512-bit bitmap, or
// folded.
var Widths = []int{512, 256, 128}

const (
	hashes = 7
	bytes  = 64
	// the deepest nesting the server's parser takes: 128 containers are refused
	maxDepth = 127
	// the widest number a jsonb numeric can hold, as canonical text
	maxNumberChars = 131072 + 16383 + 2
	tooDeep        = "a nested value is too deep to index; values nested more than 127 levels deep are not supported; flatten the attribute"
)

// Error is input the server refuses too: the message names the problem
// and the fix.
type Error struct{ msg string }

func (e *Error) Error() string { return e.msg }

func errorf(format string, args ...any) error {
	return &Error{fmt.Sprintf(format, args...)}
}

func input(x any, what string) (any, error) {
	switch v := x.(type) {
	case string:
		return ParseJSON(v, what)
	case []byte:
		if !utf8.Valid(v) {
			return nil, errorf("%s is not valid UTF-8", what)
		}
		return ParseJSON(string(v), what)
	case json.RawMessage:
		return input([]byte(v), what)
	}
	return x, nil
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case *Object, map[string]any:
		return "object"
	}
	if _, ok := numberText(v); ok {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// entries gives an object's keys and values, or ok false.
func entries(v any) (keys []string, values map[string]any, ok bool) {
	switch o := v.(type) {
	case *Object:
		return o.Keys, o.Values, true
	case map[string]any:
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys, o, true
	}
	return nil, nil, false
}

func isContainer(v any) bool {
	if _, ok := v.([]any); ok {
		return true
	}
	_, _, ok := entries(v)
	return ok
}

// numberText is a number's JSON text; ok false for a value that is no
// number.
func numberText(v any) (string, bool) {
	switch n := v.(type) {
	case Number:
		return string(n), true
	case json.Number:
		return string(n), true
	case float64:
		return strconv.FormatFloat(n, 'g', -1, 64), true
	case float32:
		return strconv.FormatFloat(float64(n), 'g', -1, 32), true
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(r.Int(), 10), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(r.Uint(), 10), true
	}
	return "", false
}

func checkFinite(v any) error {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case float32:
		f = float64(n)
	default:
		return nil
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return errorf("%v is not a JSON number: JSON has no NaN or Infinity; store it as a string", f)
	}
	return nil
}

var canonicalPattern = regexp.MustCompile(`^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?)([0-9]+))?$`)

// CanonicalNumber is the canonical decimal text of a JSON number, as the
// server's numeric_normalize: no exponent, no leading zeros, no trailing
// zeros after the point, "0" for any zero. 1.50 -> 1.5, 1e2 -> 100, -0 -> 0.
func CanonicalNumber(text string) (string, error) {
	m := canonicalPattern.FindStringSubmatch(text)
	short := text
	if len(short) > 40 {
		short = short[:40]
	}
	if m == nil {
		return "", errorf("%q is not a JSON number", short)
	}
	neg, intDigits, frac, eSign, eDigits := m[1], m[2], m[3], m[4], m[5]
	var exp int64
	if eDigits != "" {
		if len(eDigits) > 15 {
			exp = 1 << 40
		} else {
			exp, _ = strconv.ParseInt(eDigits, 10, 64)
			exp = min(exp, 1<<40)
		}
		if eSign == "-" {
			exp = -exp
		}
	}
	digits := intDigits + frac
	point := int64(len(intDigits)) + exp
	stripped := strings.TrimLeft(digits, "0")
	if stripped == "" {
		return "0", nil
	}
	lead := int64(len(digits) - len(stripped))
	sig := strings.TrimRight(stripped, "0")
	point -= lead
	n := int64(len(sig))
	var width int64
	if point <= 0 {
		width = 2 - point + n
	} else {
		width = max(point, n) + 1
	}
	if width > maxNumberChars {
		return "", errorf("number %s is out of the range Postgres jsonb can store; store it as a string", short)
	}
	sign := ""
	if neg != "" {
		sign = "-"
	}
	switch {
	case point <= 0:
		return sign + "0." + strings.Repeat("0", int(-point)) + sig, nil
	case point >= n:
		return sign + sig + strings.Repeat("0", int(point-n)), nil
	}
	return sign + sig[:point] + "." + sig[point:], nil
}

func stringBytes(s string) ([]byte, error) {
	if strings.ContainsRune(s, 0) {
		return nil, errorf(`a string holds \u0000, which jsonb cannot store`)
	}
	if !utf8.ValidString(s) {
		return nil, errorf("a string is not valid UTF-8 (a lone surrogate or stray byte), which jsonb refuses")
	}
	return []byte(s), nil
}

func key(k string) ([]byte, error) { return stringBytes(k) }

// quote writes s as serde_json does: only ", \ and control characters
// escaped.
func quote(out *strings.Builder, s string) {
	out.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			out.WriteString(`\"`)
		case r == '\\':
			out.WriteString(`\\`)
		case r == 8:
			out.WriteString(`\b`)
		case r == 12:
			out.WriteString(`\f`)
		case r == 10:
			out.WriteString(`\n`)
		case r == 13:
			out.WriteString(`\r`)
		case r == 9:
			out.WriteString(`\t`)
		case r < 0x20:
			fmt.Fprintf(out, `\u%04x`, r)
		default:
			out.WriteRune(r)
		}
	}
	out.WriteByte('"')
}

// canonicalJSON writes v at nesting depth (the containers around it,
// itself included when it is one).
func canonicalJSON(v any, depth int, out *strings.Builder) error {
	if isContainer(v) && depth > maxDepth {
		return errorf(tooDeep)
	}
	switch x := v.(type) {
	case nil:
		out.WriteString("null")
		return nil
	case bool:
		out.WriteString(strconv.FormatBool(x))
		return nil
	case string:
		if _, err := stringBytes(x); err != nil {
			return err
		}
		quote(out, x)
		return nil
	case []any:
		out.WriteByte('[')
		for i, item := range x {
			if i > 0 {
				out.WriteByte(',')
			}
			if err := canonicalJSON(item, depth+1, out); err != nil {
				return err
			}
		}
		out.WriteByte(']')
		return nil
	}
	if keys, values, ok := entries(v); ok {
		sorted := append([]string(nil), keys...)
		for _, k := range sorted {
			if _, err := key(k); err != nil {
				return err
			}
		}
		sort.Strings(sorted) // bytewise, as the server sorts
		out.WriteByte('{')
		for i, k := range sorted {
			if i > 0 {
				out.WriteByte(',')
			}
			quote(out, k)
			out.WriteByte(':')
			if err := canonicalJSON(values[k], depth+1, out); err != nil {
				return err
			}
		}
		out.WriteByte('}')
		return nil
	}
	if t, ok := numberText(v); ok {
		if err := checkFinite(v); err != nil {
			return err
		}
		c, err := CanonicalNumber(t)
		if err != nil {
			return err
		}
		out.WriteString(c)
		return nil
	}
	return errorf("a %T is not a JSON value", v)
}

func depthOf(v any) int {
	if a, ok := v.([]any); ok {
		d := 0
		for _, x := range a {
			d = max(d, depthOf(x))
		}
		return 1 + d
	}
	if keys, values, ok := entries(v); ok {
		d := 0
		for _, k := range keys {
			d = max(d, depthOf(values[k]))
		}
		return 1 + d
	}
	return 0
}

// encode is the tag and value bytes of one attribute value; nil for null.
func encode(v any) (byte, []byte, error) {
	switch x := v.(type) {
	case nil:
		return 0, nil, nil
	case bool:
		return 'b', []byte(strconv.FormatBool(x)), nil
	case string:
		b, err := stringBytes(x)
		return 's', b, err
	}
	if isContainer(v) {
		var out strings.Builder
		if err := canonicalJSON(v, 1, &out); err != nil {
			return 0, nil, err
		}
		return 'j', []byte(out.String()), nil
	}
	if t, ok := numberText(v); ok {
		if err := checkFinite(v); err != nil {
			return 0, nil, err
		}
		c, err := CanonicalNumber(t)
		return 'n', []byte(c), err
	}
	return 0, nil, errorf("a %T is not a JSON value", v)
}

func set(bitmap *[bytes]byte, k string, tag byte, value []byte) error {
	kb, err := key(k)
	if err != nil {
		return err
	}
	buf := make([]byte, 0, 5+len(kb)+len(value))
	buf = append(buf, tag)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(kb)))
	buf = append(buf, kb...)
	buf = append(buf, value...)
	h := xxh3.Hash(buf)
	for i := 0; i < hashes; i++ {
		p := (h >> (9 * i)) & 511
		bitmap[p>>3] |= 0x80 >> (p & 7)
	}
	return nil
}

func checkWidth(bits int) error {
	for _, w := range Widths {
		if w == bits {
			return nil
		}
	}
	return errorf("the bitmap width must be 512, 256 or 128, got %d", bits)
}

func text(bitmap *[bytes]byte, bits int) string {
	width := bits / 8
	folded := make([]byte, width)
	for start := 0; start < bytes; start += width {
		for i := 0; i < width; i++ {
			folded[i] |= bitmap[start+i]
		}
	}
	var out strings.Builder
	out.Grow(bits)
	for _, b := range folded {
		fmt.Fprintf(&out, "%08b", b)
	}
	return out.String()
}

func object(v any, what, fix string) ([]string, map[string]any, error) {
	keys, values, ok := entries(v)
	if !ok {
		return nil, nil, errorf("%s must be a JSON object, got a JSON %s; %s", what, typeName(v), fix)
	}
	return keys, values, nil
}

// Bloom is the bitmap of an alert's attributes (a JSON object), as the text
// of a bit(bits) value: what the server's trigger and alerts_bloom(attrs,
// bits) store. A string or number is one element, an array one per item
// (null items none), null none, a nested object or array one opaque value.
func Bloom(attrs any, bits int) (string, error) {
	if err := checkWidth(bits); err != nil {
		return "", err
	}
	v, err := input(attrs, "the attributes")
	if err != nil {
		return "", err
	}
	keys, values, err := object(v, "alert attributes",
		`store attributes as {"<attribute>": "<value>" or ["<value>", ...]}; use {} for none`)
	if err != nil {
		return "", err
	}
	var bitmap [bytes]byte
	for _, k := range keys {
		if _, err := key(k); err != nil {
			return "", err
		}
		items, isArray := values[k].([]any)
		if !isArray {
			items = []any{values[k]}
		}
		for _, item := range items {
			if isContainer(item) && depthOf(item) > maxDepth {
				return "", errorf(tooDeep)
			}
			tag, value, err := encode(item)
			if err != nil {
				return "", err
			}
			if tag != 0 {
				if err := set(&bitmap, k, tag, value); err != nil {
					return "", err
				}
			}
		}
	}
	return text(&bitmap, bits), nil
}

// Mask is the mask of a filter whose every attribute has one value (an AND
// of single values), as the text of a bit(bits) value: a row may match when
// bitmap & mask = mask; what the server's alerts_mask(filter, bits)
// returns. One-of arrays and nulls are refused, as there.
func Mask(filter any, bits int) (string, error) {
	if err := checkWidth(bits); err != nil {
		return "", err
	}
	f, err := input(filter, "the filter")
	if err != nil {
		return "", err
	}
	if _, _, ok := entries(f); ok && depthOf(f) > maxDepth {
		return "", errorf("a nested value is too deep to index; values nested more than 127 levels deep are not supported")
	}
	keys, values, err := object(f, "the filter", `write filters as {"<attribute>": "<value>"}; {} matches every row`)
	if err != nil {
		return "", err
	}
	for _, k := range keys {
		if _, err := key(k); err != nil {
			return "", err
		}
		short := k
		if len(short) > 60 {
			short = short[:60]
		}
		switch values[k].(type) {
		case []any:
			return "", errorf(`the value of "%s" is a one-of array, which one mask cannot express: build one mask per value and OR the tests`, short)
		case nil:
			return "", errorf(`the filter value for "%s" is null: drop the key to not filter on it`, short)
		}
	}
	var bitmap [bytes]byte
	for _, k := range keys {
		tag, value, err := encode(values[k])
		if err != nil {
			return "", err
		}
		if err := set(&bitmap, k, tag, value); err != nil {
			return "", err
		}
	}
	return text(&bitmap, bits), nil
}
