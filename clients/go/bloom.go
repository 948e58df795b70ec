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
	"sort"
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

// element is one element's bytes: tag, the key's length (u32 BE), key,
// value; what both the bitmap and the tenant keys hash.
func element(k string, tag byte, value []byte) ([]byte, error) {
	kb, err := key(k)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 0, 5+len(kb)+len(value))
	buf = append(buf, tag)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(kb)))
	buf = append(buf, kb...)
	return append(buf, value...), nil
}

func set(bitmap *[bytes]byte, el []byte) {
	h := xxh3.Hash(el)
	for i := 0; i < hashes; i++ {
		p := (h >> (9 * i)) & 511
		bitmap[p>>3] |= 0x80 >> (p & 7)
	}
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

// elements is the element bytes of an attributes object (see Bloom).
func elements(attrs any) ([][]byte, error) {
	v, err := input(attrs, "the attributes")
	if err != nil {
		return nil, err
	}
	keys, values, err := object(v, "alert attributes",
		`store attributes as {"<attribute>": "<value>" or ["<value>", ...]}; use {} for none`)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, k := range keys {
		if _, err := key(k); err != nil {
			return nil, err
		}
		items, isArray := values[k].([]any)
		if !isArray {
			items = []any{values[k]}
		}
		for _, item := range items {
			if isContainer(item) && depthOf(item) > maxDepth {
				return nil, errorf(tooDeep)
			}
			tag, value, err := encode(item)
			if err != nil {
				return nil, err
			}
			if tag != 0 {
				el, err := element(k, tag, value)
				if err != nil {
					return nil, err
				}
				out = append(out, el)
			}
		}
	}
	return out, nil
}

// Bloom is the bitmap of an alert's attributes (a JSON object), as the text
// of a bit(bits) value: what the server's trigger and alerts_bloom(attrs,
// bits) store. A string or number is one element, an array one per item
// (null items none), null none, a nested object or array one opaque value.
func Bloom(attrs any, bits int) (string, error) {
	if err := checkWidth(bits); err != nil {
		return "", err
	}
	els, err := elements(attrs)
	if err != nil {
		return "", err
	}
	var bitmap [bytes]byte
	for _, el := range els {
		set(&bitmap, el)
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
		el, err := element(k, tag, value)
		if err != nil {
			return "", err
		}
		set(&bitmap, el)
	}
	return text(&bitmap, bits), nil
}
