package alertsbloom

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The encoding of one attribute value: numbers canonicalised as the
// server does, nested values as canonical JSON text.

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
